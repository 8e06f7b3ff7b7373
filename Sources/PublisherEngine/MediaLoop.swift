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
        var media = try LiveVideoEncoders(config: config, startMicros: startMicros)
        var seenGeneration = -1
        while !control.stopRequested {
            let now = Clock.monotonicMicros()
            if let endMicros, now >= endMicros { break }
            let gen = control.targetGeneration.load(ordering: .acquiring)
            if gen != seenGeneration {
                seenGeneration = gen
                if seenGeneration > 0 {
                    for (i, t) in control.currentTargets().enumerated() { try media.setTarget(layer: i, bitrate: t) }
                }
            }
            // Requests stay pending until the layer's next frame is due (the first frame is a key frame anyway).
            media.gate.requestKeyFrames(control.takeKeyFrameRequests())
            try media.encodeDue(
                now: now, wallOffset: Clock.wallMicros() - now, clock: Clock.monotonicMicros, cpuClock: Clock.threadCPUMicros,
                counters: &c
            ) { mailbox.push(.video($0)) }
            let snapshot = c
            counters.withLock { $0 = snapshot }
            // The earliest next capture, at most 100 ms ahead (the stop flag is read each turn).
            var wake = min(media.nextWake ?? .max, Clock.monotonicMicros() + 100_000)
            if let endMicros { wake = min(wake, endMicros) }
            Clock.sleep(untilMicros: wake)
        }
    }
}
