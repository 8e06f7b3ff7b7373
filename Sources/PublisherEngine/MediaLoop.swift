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
        var media = try Encoders(config: config, startMicros: startMicros)
        var seenGeneration = -1
        while !control.stopRequested {
            let now = Clock.monotonicMicros()
            if let endMicros, now >= endMicros { break }
            let gen = control.targetGeneration.load(ordering: .acquiring)
            if gen != seenGeneration {
                seenGeneration = gen
                if seenGeneration > 0 { try media.setTargets(control.currentTargets()) }
            }
            try media.encodeAudioIfDue(now: now, into: mailbox, counters: &c)
            // Requests stay pending until the layer's next frame is due (the first frame is a key frame anyway).
            media.gate.requestKeyFrames(control.takeKeyFrameRequests())
            for i in 0..<media.encoders.count where now >= media.nextVideo[i] {
                try media.encodeVideo(layer: i, now: now, into: mailbox, counters: &c)
            }
            let snapshot = c
            counters.withLock { $0 = snapshot }
            var wake = media.nextWake
            if let endMicros { wake = min(wake, endMicros) }
            Clock.sleep(untilMicros: min(wake, Clock.monotonicMicros() + 100_000))
        }
    }
}

/// The media thread's encoders and frame clocks: each layer's next capture time, the audio's,
/// the key-frame and target gate.
private struct Encoders {
    let layers: [VideoLayerConfig]
    var encoders: [any VideoEncoder] = []
    var pictures: [I420Frame]
    let source: SyntheticVideoSource
    let opus: OpusAudioEncoder?
    var audioSource = SyntheticAudioSource()
    var pcm = [Int16](repeating: 0, count: OpusAudioEncoder.frameSamples)
    var opusOut = [UInt8]()
    let intervals: [Int64]
    let startMicros: Int64
    var nextVideo: [Int64]
    var nextAudio: Int64
    var audioIndex: UInt32 = 0
    var gate: LayerGate
    static let audioInterval: Int64 = 20_000

    init(config: PublisherConfig, startMicros: Int64) throws(CodecError) {
        layers = config.sendVideo ? config.layers : []
        for l in layers {
            let interval = LibvpxEncoder.frames(in: config.keyFrameIntervalMicros, fps: l.fps)
            encoders.append(try config.videoCodec.makeEncoder(config: l, keyFrameInterval: interval))
        }
        pictures = layers.map { I420Frame(width: $0.width, height: $0.height) }
        source = SyntheticVideoSource(seed: config.seed)
        opus = config.sendAudio ? try OpusAudioEncoder(bitrate: config.audioBitrate) : nil
        intervals = layers.map { Int64(1_000_000 / max(1, $0.fps)) }
        self.startMicros = startMicros
        nextVideo = layers.map { _ in startMicros }
        nextAudio = startMicros
        gate = LayerGate(layers: layers.count)
    }

    /// The earliest next capture (at most 100 ms ahead when nothing is due).
    var nextWake: Int64 {
        var wake = opus == nil ? Int64.max : nextAudio
        for t in nextVideo { wake = min(wake, t) }
        return wake == Int64.max ? Clock.monotonicMicros() + 100_000 : wake
    }

    mutating func setTargets(_ targets: [Int]) throws(CodecError) {
        for (i, t) in targets.enumerated() where i < encoders.count {
            if gate.setTarget(layer: i, bitrate: t) { try encoders[i].setTargetBitrate(t) }
        }
    }

    mutating func encodeAudioIfDue(now: Int64, into mailbox: FrameMailbox, counters c: inout MediaCounters) throws(CodecError) {
        guard let opus, now >= nextAudio else { return }
        let captureMicros = nextAudio
        audioSource.fill(&pcm)
        let t0 = Clock.threadCPUMicros()
        try opus.encode(pcm, into: &opusOut)
        c.audioEncodeMicros += Clock.threadCPUMicros() - t0
        c.audioFramesEncoded += 1
        mailbox.push(.audio(EncodedAudioFrame(bytes: opusOut, frameNumber: audioIndex, captureMicros: captureMicros)))
        audioIndex &+= 1
        nextAudio += Self.audioInterval
    }

    /// Layer `i`'s due frame: drawn, encoded (a key frame when one was asked for) and handed on,
    /// or skipped when the gate holds the layer back.
    mutating func encodeVideo(layer i: Int, now: Int64, into mailbox: FrameMailbox, counters c: inout MediaCounters) throws(CodecError) {
        let admission = gate.admit(layer: i)
        if admission == .skip {
            nextVideo[i] += intervals[i]
            return
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
        nextVideo[i] += intervals[i]
        // Encoding fell more than a frame behind: skip ticks instead of bursting.
        let after = Clock.monotonicMicros()
        while nextVideo[i] + intervals[i] < after { nextVideo[i] += intervals[i]; c.framesSkipped += 1; c.lateFrames[i] += 1 }
    }
}
