import Synchronization
import MediaCodecs
import Transport
import Platform

/// The media thread: synthesizes and encodes each layer on its frame clock and the audio every
/// 20 ms, and hands encoded frames to the mailbox. Owns its encoders; created on its thread.
final class MediaLoop {
    let config: PublisherConfig
    let control: PublisherControl
    let mailbox: FrameMailbox
    let counters: Locked<MediaCounters>

    init(config: PublisherConfig, control: PublisherControl, mailbox: FrameMailbox, counters: Locked<MediaCounters>) {
        self.config = config
        self.control = control
        self.mailbox = mailbox
        self.counters = counters
    }

    func run(startMicros: Int64, endMicros: Int64?) {
        var local = MediaCounters(layers: config.layers.count)
        do throws(CodecError) {
            try loop(startMicros: startMicros, endMicros: endMicros, counters: &local)
        } catch {
            local.error = error.description
        }
        let final = local
        counters.withLock { $0 = final }
        control.requestStop()
        mailbox.signal.signal()
    }

    private func loop(startMicros: Int64, endMicros: Int64?, counters c: inout MediaCounters) throws(CodecError) {
        let layers = config.sendVideo ? config.layers : []
        var encoders: [VP8Encoder] = []
        for l in layers {
            encoders.append(try VP8Encoder(config: l, keyFrameInterval: VP8Encoder.frames(in: config.keyFrameIntervalMicros, fps: l.fps)))
        }
        var pictures = layers.map { I420Frame(width: $0.width, height: $0.height) }
        let source = SyntheticVideoSource(seed: config.seed)
        let opus = config.sendAudio ? try OpusAudioEncoder(bitrate: config.audioBitrate) : nil
        var audioSource = SyntheticAudioSource()
        var pcm = [Int16](repeating: 0, count: OpusAudioEncoder.frameSamples)
        var opusOut = [UInt8]()
        let intervals = layers.map { Int64(1_000_000 / max(1, $0.fps)) }
        var nextVideo = layers.map { _ in startMicros }
        var videoIndex = layers.map { _ in Int64(0) }
        var nextAudio = startMicros
        var audioIndex: UInt32 = 0
        var seenGeneration = -1
        var gate = LayerGate(layers: layers.count)
        let audioInterval: Int64 = 20_000

        while !control.stopRequested {
            let now = Clock.monotonicMicros()
            if let endMicros, now >= endMicros { break }
            let gen = control.targetGeneration.load(ordering: .acquiring)
            if gen != seenGeneration {
                seenGeneration = gen
                if seenGeneration > 0 {
                    for (i, t) in control.currentTargets().enumerated() where i < encoders.count {
                        if gate.setTarget(layer: i, bitrate: t) { try encoders[i].setTargetBitrate(t) }
                    }
                }
            }
            if let opus, now >= nextAudio {
                let captureMicros = nextAudio
                audioSource.fill(&pcm)
                let t0 = Clock.threadCPUMicros()
                try opus.encode(pcm, into: &opusOut)
                c.audioEncodeMicros += Clock.threadCPUMicros() - t0
                c.audioFramesEncoded += 1
                mailbox.push(.audio(EncodedAudioFrame(bytes: opusOut, frameNumber: audioIndex, captureMicros: captureMicros)))
                audioIndex &+= 1
                nextAudio += audioInterval
            }
            // Requests stay pending until the layer's next frame is due (the first frame is a key frame anyway).
            gate.requestKeyFrames(control.takeKeyFrameRequests())
            for i in 0..<encoders.count where now >= nextVideo[i] {
                let admission = gate.admit(layer: i)
                if admission == .skip {
                    nextVideo[i] += intervals[i]
                    continue
                }
                let captureMicros = nextVideo[i]
                let frameNumber = UInt32(truncatingIfNeeded: (captureMicros - startMicros) / 33_333)
                let wallMillis = UInt32(truncatingIfNeeded: (Clock.wallMicros() - (now - captureMicros)) / 1000)
                let d0 = Clock.threadCPUMicros()
                source.fill(&pictures[i], frameNumber: frameNumber, captureMillis: wallMillis)
                c.drawMicros += Clock.threadCPUMicros() - d0
                let force = admission == .keyFrame
                let encoded = try encoders[i].encode(
                    &pictures[i], layer: i, frameNumber: frameNumber, captureMicros: captureMicros,
                    forceKeyFrame: force, clock: Clock.threadCPUMicros)
                if force && encoded?.isKeyFrame != true { gate.keyFrameMissed(layer: i) } // dropped: ask again next tick
                if let frame = encoded {
                    c.framesEncoded[i] += 1
                    if frame.isKeyFrame { c.keyFramesEncoded[i] += 1 }
                    c.encodeMicros[i] += frame.encodeMicros
                    mailbox.push(.video(frame))
                }
                videoIndex[i] += 1
                nextVideo[i] += intervals[i]
                // Encoding fell more than a frame behind: skip ticks instead of bursting.
                let after = Clock.monotonicMicros()
                while nextVideo[i] + intervals[i] < after { nextVideo[i] += intervals[i]; c.framesSkipped += 1; c.lateFrames[i] += 1 }
            }
            let snapshot = c
            counters.withLock { $0 = snapshot }
            var wake = nextAudio
            if opus == nil { wake = Int64.max }
            for t in nextVideo { wake = min(wake, t) }
            if let endMicros { wake = min(wake, endMicros) }
            if wake == Int64.max { wake = Clock.monotonicMicros() + 100_000 }
            Clock.sleep(untilMicros: min(wake, Clock.monotonicMicros() + 100_000))
        }
    }
}
