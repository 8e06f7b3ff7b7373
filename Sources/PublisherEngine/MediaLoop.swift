import Synchronization
import MediaCodecs
import Transport
import Platform
import PublisherCore

/// The media thread: synthesizes and encodes each layer on its frame clock and hands encoded
/// frames to the mailbox (the audio has a thread of its own, `AudioLoop`). Owns its encoders;
/// created on its thread.
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
            // Requests stay pending until the layer's next frame is due (the first frame is a key frame anyway).
            media.gate.requestKeyFrames(control.takeKeyFrameRequests())
            for i in 0..<media.encoders.count where now >= media.nextVideo[i] {
                try media.encodeVideo(layer: i, now: now, into: mailbox, counters: &c)
            }
            // CPU overuse holds the top layer back; a layer brought back restarts on a key frame.
            if media.cpu.update(now: now, framesDue: media.framesDue, framesSkipped: c.framesSkipped) == .up {
                media.gate.requestKeyFrame(layer: media.cpu.runningLayers - 1)
            }
            c.cpuLayersHeld = media.cpu.layersHeld
            c.cpuResolutionChanges = media.cpu.changes
            let snapshot = c
            counters.withLock { $0 = snapshot }
            var wake = media.nextWake
            if let endMicros { wake = min(wake, endMicros) }
            Clock.sleep(untilMicros: min(wake, Clock.monotonicMicros() + 100_000))
        }
    }
}

/// The media thread's encoders and frame clocks: each layer's next capture time, the key-frame
/// and target gate.
private struct Encoders {
    let layers: [VideoLayerConfig]
    var encoders: [any VideoEncoder] = []
    var pictures: [I420Frame]
    let source: SyntheticVideoSource
    let intervals: [Int64]
    let startMicros: Int64
    var nextVideo: [Int64]
    var gate: LayerGate
    var cpu: CPUAdaptation
    /// Frame ticks that came due on running layers (encoded, or skipped because encoding ran late).
    var framesDue = 0

    init(config: PublisherConfig, startMicros: Int64) throws(CodecError) {
        layers = config.sendVideo ? config.layers : []
        for l in layers {
            let interval = LibvpxEncoder.frames(in: config.keyFrameIntervalMicros, fps: l.fps)
            encoders.append(try config.videoCodec.makeEncoder(config: l, keyFrameInterval: interval))
        }
        pictures = layers.map { I420Frame(width: $0.width, height: $0.height) }
        source = SyntheticVideoSource(seed: config.seed)
        intervals = layers.map { Int64(1_000_000 / max(1, $0.fps)) }
        self.startMicros = startMicros
        nextVideo = layers.map { _ in startMicros }
        gate = LayerGate(layers: layers.count)
        cpu = CPUAdaptation(layers: layers.count, now: startMicros)
    }

    /// The earliest next capture (at most 100 ms ahead when nothing is due).
    var nextWake: Int64 {
        var wake = Int64.max
        for t in nextVideo { wake = min(wake, t) }
        return wake == Int64.max ? Clock.monotonicMicros() + 100_000 : wake
    }

    mutating func setTargets(_ targets: [Int]) throws(CodecError) {
        for (i, t) in targets.enumerated() where i < encoders.count {
            if gate.setTarget(layer: i, bitrate: t) { try encoders[i].setTargetBitrate(t) }
        }
    }

    /// Layer `i`'s due frame: drawn, encoded (a key frame when one was asked for) and handed on,
    /// or skipped when the gate holds the layer back.
    mutating func encodeVideo(layer i: Int, now: Int64, into mailbox: FrameMailbox, counters c: inout MediaCounters) throws(CodecError) {
        if i >= cpu.runningLayers { // held back for CPU: its ticks pass unencoded
            while nextVideo[i] <= now { nextVideo[i] += intervals[i] }
            return
        }
        let admission = gate.admit(layer: i)
        if admission == .skip {
            nextVideo[i] += intervals[i]
            return
        }
        framesDue += 1
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
        while nextVideo[i] + intervals[i] < after {
            nextVideo[i] += intervals[i]
            c.framesSkipped += 1
            c.lateFrames[i] += 1
            framesDue += 1
        }
    }
}
