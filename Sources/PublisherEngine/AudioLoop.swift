import MediaCodecs
import PublisherCore
import Platform

/// The audio thread: synthesizes and encodes one 20 ms Opus frame per tick on a clock of its
/// own, so the video encoders can never delay it — as a browser captures and encodes audio on a
/// real-time thread of its own (webrtc's AudioDeviceModule), apart from video.
///
/// A late wake-up encodes every frame that came due since (the capture device would have
/// buffered them); more than 200 ms behind, the missed frames are skipped and counted.
final class AudioLoop {
    let config: PublisherConfig
    let control: PublisherControl
    let mailbox: FrameMailbox
    let counters: Locked<AudioCounters>
    static let interval: Int64 = 20_000

    init(config: PublisherConfig, control: PublisherControl, mailbox: FrameMailbox, counters: Locked<AudioCounters>) {
        self.config = config
        self.control = control
        self.mailbox = mailbox
        self.counters = counters
    }

    func run(startMicros: Int64, endMicros: Int64?) {
        do throws(CodecError) {
            let opus = try OpusAudioEncoder(bitrate: config.audioBitrate)
            var source = SyntheticAudioSource()
            var pcm = [Int16](repeating: 0, count: OpusAudioEncoder.frameSamples)
            var out = [UInt8]()
            var next = startMicros
            var number: UInt32 = 0
            var c = AudioCounters()
            while !control.stopRequested {
                let now = Clock.monotonicMicros()
                if let endMicros, now >= endMicros { break }
                if now - next > 200_000 {
                    let missed = (now - next) / Self.interval
                    c.framesSkipped += Int(missed)
                    next += missed * Self.interval
                    number &+= UInt32(truncatingIfNeeded: missed)
                }
                while now >= next {
                    source.fill(&pcm)
                    let t0 = Clock.threadCPUMicros()
                    try opus.encode(pcm, into: &out)
                    c.encodeMicros += Clock.threadCPUMicros() - t0
                    c.framesEncoded += 1
                    mailbox.push(.audio(EncodedAudioFrame(bytes: out, frameNumber: number, captureMicros: next)))
                    number &+= 1
                    next += Self.interval
                }
                let snapshot = c
                counters.withLock { $0 = snapshot }
                Clock.sleep(untilMicros: endMicros.map { min($0, next) } ?? next)
            }
        } catch {
            counters.withLock { $0.error = error.description }
            control.requestStop()
            mailbox.signal.signal()
        }
    }
}

/// What the audio thread did: frames encoded, skipped (the thread woke over 200 ms late), the
/// Opus encoder's CPU time.
struct AudioCounters: Sendable {
    var framesEncoded = 0
    var framesSkipped = 0
    var encodeMicros: Int64 = 0
    var error: String?
}
