public import PublisherCore
public import Receiver
public import MediaCodecs
import Net
import RTPCore
import SRTP
import Stats
#if canImport(Glibc)
    import Glibc
#endif

/// How a simulated run is set up: the same publisher and receiver configurations `publish` and
/// `receive` use (the receiver's `impairment` is the emulated uplink, exactly as
/// `receive --impair`), the media, and how long.
public struct SimulationConfig: Sendable {
    public enum Media: Sendable {
        /// Pre-encoded loops (fast: no encoding while running).
        case replay(ReplayLibrary)
        /// Live VP8/Opus encoders fed the synthetic source at simulated time (real encoder
        /// behaviour — rate control, frame drops — at the encoders' CPU cost).
        case encode
        /// An ideal encoder: every frame exactly the layer's current target ÷ frame rate (key
        /// frames 4×: the first, on request, on resume), not decodable — the receiver should
        /// reassemble without decoding. The fastest way to follow the allocator's targets.
        case sized
    }

    public var publisher: PublisherConfig
    public var receiver: ReceiverConfig
    public var media: Media
    public var durationMicros: Int64 = 60_000_000
    /// Seeds the sessions' generators and the synthetic source: the same seed gives the same run.
    public var seed: UInt64 = 1
    /// The simulated wall clock at the start, epoch µs (2026-01-01T00:00:00Z by default).
    public var epochMicros: Int64 = 1_767_225_600_000_000
    /// Publishers sending to the one receiver (a fleet): each its own session, address, SSRCs and
    /// media, the receiver routing them as `receive` does.
    public var publishers = 1
    /// Spells (simulated µs from the start) when the receiver is gone, as a killed `receive`
    /// process: the publishers' datagrams are refused (the kernel's ICMP port unreachable, seen
    /// as ECONNREFUSED on the next send) and a fresh receiver, with no memory of the streams,
    /// takes over at the end of each.
    public var receiverDown: [Range<Int64>] = []

    public init(publisher: PublisherConfig, receiver: ReceiverConfig, media: Media) {
        self.publisher = publisher
        self.receiver = receiver
        self.media = media
    }
}

/// A publisher session and a receiver session connected in virtual time: the real
/// `PublisherSession` (packetizer, pacer, SRTP, estimator, allocator, condition scoring) sends to
/// the real `ReceiverSession` (router with its uplink emulator, feedback, reassembly, decoding),
/// whose SRTCP feedback goes straight back. Nothing reads a clock: a manual clock jumps from one
/// due time to the next (media ticks, the sessions' timers, the emulated link's deliveries).
public final class Simulation {
    public let config: SimulationConfig
    let publishers: [PublisherSession]
    var receiver: ReceiverSession
    var feeders: [any MediaFeeder]
    /// Simulated monotonic time (µs); the run starts at `origin`.
    public private(set) var now: Int64
    public let origin: Int64 = 1_000_000
    var wallOffset: Int64
    let publisherAddresses: [SocketAddress]
    var scratch = [UInt8](repeating: 0, count: PacketBatch.slotSize)
    public private(set) var finished = false
    var stopAsked = false
    var receiverSeed: UInt64
    /// Receivers started after an outage.
    public private(set) var receiverRestarts = 0

    /// Why a simulation could not be set up (SRTP or a codec refused its configuration).
    public struct SetupError: Error, CustomStringConvertible {
        public var description: String
    }

    public init(config: SimulationConfig) throws(SetupError) {
        self.config = config
        now = origin
        wallOffset = config.epochMicros - origin
        var random = SplitMix64(seed: config.seed &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        var sessions: [PublisherSession] = [], feeders: [any MediaFeeder] = [], addresses: [SocketAddress] = []
        var taken: Set<UInt32> = []
        for n in 0..<max(1, config.publishers) {
            var p = config.publisher
            p.seed = config.seed &+ UInt64(n)
            if config.publishers > 1 { p.cname = "pubbot-sim-\(n)" }
            var ssrcs: [UInt32] = []
            while ssrcs.count < 16 {
                let s = UInt32(truncatingIfNeeded: random.next())
                if s != 0 && !taken.contains(s) { ssrcs.append(s); taken.insert(s) }
            }
            let plan = StreamPlan(config: p, ssrcs: ssrcs, random: { random.next() })
            do { addresses.append(try SocketAddress(host: "127.0.0.1", port: 50_000 + n)) } catch {
                throw SetupError(description: "\(error)")
            }
            do { sessions.append(try PublisherSession(config: p, plan: plan, startMicros: origin, wallOffsetMicros: wallOffset)) } catch {
                throw SetupError(description: "cannot set up SRTP: \(error)")
            }
            switch config.media {
            // Fleet members start at different points of the loops, as `load`'s bots do.
            case let .replay(library): feeders.append(ReplayFeeder(library: library, config: p, start: origin, offset: n * 7))
            case .sized: feeders.append(SizedFeeder(config: p, start: origin))
            case .encode:
                do { feeders.append(try LiveFeeder(config: p, start: origin, wallOffset: wallOffset)) } catch {
                    throw SetupError(description: "encoder: \(error)")
                }
            }
        }
        publishers = sessions
        self.feeders = feeders
        publisherAddresses = addresses
        receiverSeed = random.next()
        do {
            receiver = try ReceiverSession(config: config.receiver, startMicros: origin, wallOffsetMicros: wallOffset, seed: receiverSeed)
        } catch {
            throw SetupError(description: "cannot set up SRTP: \(error)")
        }
        for p in publishers { p.begin(now: origin) }
    }

    public var wallMicros: Int64 { now + wallOffset }
    public var elapsedMicros: Int64 { now - origin }
    public var publisherCount: Int { publishers.count }

    /// Steps the simulated wall clock by `micros` (an NTP step, a VM's clock sync): the live
    /// encoders stamp captures with the new wall time and the receiver reads its decodes by it.
    public func stepWallClock(byMicros micros: Int64) {
        wallOffset += micros
        receiver.wallOffsetMicros = wallOffset
        for i in feeders.indices { feeders[i].stepWallClock(byMicros: micros) }
    }

    /// Ends the run early (from `onInterval`): the publishers stop as at the end of the duration.
    public func stop() { stopAsked = true }

    func receiverIsDown(_ t: Int64) -> Bool { config.receiverDown.contains { $0.contains(t - origin) } }

    /// Runs to the end of the configured duration (then stops the publishers, lets their pacers
    /// drain and delivers the BYEs), calling `onInterval` every `intervalMicros` of simulated
    /// time and once more at the end (`final` true).
    public func run(intervalMicros: Int64, onInterval: (_ final: Bool) -> Void) {
        let end = origin + config.durationMicros
        var nextInterval = origin + intervalMicros
        var stopping = false
        var done = Array(repeating: false, count: publishers.count)
        var wasDown = false
        // The instants the receiver goes away or comes back.
        let faultEdges = config.receiverDown.flatMap { [origin + $0.lowerBound, origin + $0.upperBound] }
        while true {
            if !stopping && (now >= end || stopAsked) {
                stopping = true
                for p in publishers { p.stop() }
            }
            let down = receiverIsDown(now)
            if wasDown && !down { restartReceiver() }
            wasDown = down
            var next = nextInterval
            for i in publishers.indices where !done[i] {
                if !stopping { feeders[i].tick(now: now, into: publishers[i]) }
                let wake = publishers[i].step(now: now)
                exchangeEvents(i)
                deliverPublisherDatagrams(i, down: down)
                if let wake {
                    next = min(next, wake)
                } else {
                    publishers[i].finish(now: now)
                    deliverPublisherDatagrams(i, down: down)
                    done[i] = true
                }
            }
            if !down {
                next = min(next, receiver.step(now: now))
                deliverFeedback()
                for i in publishers.indices where !done[i] { exchangeEvents(i) }
            }
            if now >= nextInterval && now <= end {
                onInterval(false)
                nextInterval += intervalMicros
                next = min(next, nextInterval)
            }
            if done.allSatisfy({ $0 }) { break }
            if !stopping {
                for i in feeders.indices { next = min(next, feeders[i].nextDue) }
                next = min(next, end)
            }
            if let edge = faultEdges.first(where: { $0 > now }) { next = min(next, edge) }
            now = next > now ? next : now + 100
        }
        // Let the emulated link deliver what it still holds (the BYEs among it), up to 2 s.
        let drainEnd = now + 2_000_000
        while now < drainEnd && !receiverIsDown(now) {
            let wake = receiver.step(now: now)
            receiver.pollTransmit { _, _ throws(SocketError) in } // the publishers have gone
            if receiver.linkIsEmpty { break }
            now = max(now + 100, wake)
        }
        finished = true
        onInterval(true)
    }

    func restartReceiver() {
        receiverRestarts += 1
        var generator = SplitMix64(seed: receiverSeed)
        receiverSeed = generator.next()
        // Same configuration as the first: only its state is gone.
        if let fresh = try? ReceiverSession(config: config.receiver, startMicros: now, wallOffsetMicros: wallOffset, seed: receiverSeed) {
            receiver = fresh
        }
    }

    func exchangeEvents(_ i: Int) {
        while let e = publishers[i].pollEvent() { feeders[i].apply(e) }
    }

    func deliverPublisherDatagrams(_ i: Int, down: Bool) {
        let receiver = self.receiver, from = publisherAddresses[i], now = self.now
        var refused = false
        publishers[i].pollTransmit { pointers, lengths, count, _ throws(SocketError) in
            if down { refused = count > 0; return count } // nobody listening: the datagrams go nowhere
            for k in 0..<count { receiver.handleDatagram(pointers[k]!, length: Int(lengths[k]), from: from, now: now) }
            return count
        }
        // What a UDP socket reports after an ICMP port unreachable (Linux: on a later call).
        if refused { publishers[i].handleSocketError(SocketError("sendmmsg", errno: ECONNREFUSED)) }
    }

    func deliverFeedback() {
        let publishers = self.publishers, addresses = publisherAddresses, now = self.now
        scratch.withUnsafeMutableBytes { buffer in
            receiver.pollTransmit { bytes, destination throws(SocketError) in
                guard let i = addresses.firstIndex(of: destination) else { return }
                let n = min(bytes.count, buffer.count)
                buffer.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: n)
                publishers[i].handleDatagram(buffer.baseAddress!, length: n, now: now)
            }
        }
    }

    /// Publisher `i`'s streams (SSRCs, MID/RID, SDP).
    public func plan(_ i: Int = 0) -> StreamPlan { publishers[i].plan }

    /// The (first) publisher as `publish` reports it.
    public var publisherSnapshot: PublisherSnapshot { publisherSnapshot(0) }

    /// Publisher `i` as `publish` reports it.
    public func publisherSnapshot(_ i: Int) -> PublisherSnapshot {
        var (streams, network) = publishers[i].statistics
        let media = feeders[i].counters
        for k in streams.indices {
            if let layer = publishers[i].plan.streams.first(where: { $0.ssrc == streams[k].ssrc })?.layer, layer < media.framesEncoded.count
            {
                streams[k].framesEncoded = media.framesEncoded[layer]
            }
        }
        return PublisherSnapshot(streams: streams, media: media, network: network, elapsedMicros: now - origin)
    }

    /// The receiver as `receive` reports it (`final` closes the streams' figures).
    public func receiverSnapshot(final: Bool = false) -> ReceiverSnapshot { receiver.snapshot(final: final) }
}

/// The 20 ms audio frame clock of a feeder (never due when started at `.max`: no audio).
struct AudioClock {
    var next: Int64
    var number: UInt32 = 0
    init(start: Int64) { next = start }

    /// The next frame's number and capture time, when it is due by `now`.
    mutating func take(now: Int64) -> (UInt32, Int64)? {
        guard now >= next, next != .max else { return nil }
        defer { number &+= 1; next += 20_000 }
        return (number, next)
    }
}

/// Where a simulated publisher's frames come from.
protocol MediaFeeder {
    /// Hands the frames due at `now` to the session.
    mutating func tick(now: Int64, into session: PublisherSession)
    /// A key-frame request or a layer's new target from the session.
    mutating func apply(_ event: PublisherSessionEvent)
    var nextDue: Int64 { get }
    var counters: MediaCounters { get }
    /// The wall clock stepped: frames stamped with wall time stamp the new one.
    mutating func stepWallClock(byMicros micros: Int64)
}

extension MediaFeeder {
    /// Replayed and sized frames carry no wall time.
    mutating func stepWallClock(byMicros micros: Int64) {}
}

/// Replay loops, as a fleet bot sends them (`ReplayCursor`).
struct ReplayFeeder: MediaFeeder {
    var replay: ReplayCursor
    let sendAudio: Bool
    var nextVideo: [Int64]
    var audio: AudioClock
    var counters: MediaCounters

    init(library: ReplayLibrary, config: PublisherConfig, start: Int64, offset: Int = 0) {
        let n = config.sendVideo ? min(config.layers.count, library.layers.count) : 0
        replay = ReplayCursor(library: library, layers: n, offset: offset)
        sendAudio = config.sendAudio && !library.audio.isEmpty
        nextVideo = Array(repeating: start, count: n)
        audio = AudioClock(start: sendAudio ? start : .max)
        counters = MediaCounters(layers: n)
    }

    var nextDue: Int64 { nextVideo.reduce(audio.next, min) }

    mutating func apply(_ event: PublisherSessionEvent) { _ = replay.gate.apply(event) }

    mutating func tick(now: Int64, into session: PublisherSession) {
        while let (number, capture) = audio.take(now: now) {
            let bytes = replay.library.audio[Int(number) % replay.library.audio.count]
            session.handle(.audio(EncodedAudioFrame(bytes: bytes, frameNumber: number, captureMicros: capture)))
            counters.audioFramesEncoded += 1
        }
        for i in nextVideo.indices where now >= nextVideo[i] {
            if let f = replay.frame(layer: i, captureMicros: nextVideo[i]) {
                session.handle(.video(f))
                counters.framesEncoded[i] += 1
                if f.isKeyFrame { counters.keyFramesEncoded[i] += 1 }
            }
            nextVideo[i] += Int64(1_000_000 / max(1, replay.library.layers[i].config.fps))
        }
    }
}

/// Live encoders at simulated time: the media thread's `LiveVideoEncoders` on the virtual
/// clock (targets and key frames from the session), Opus every 20 ms.
struct LiveFeeder: MediaFeeder {
    var video: LiveVideoEncoders
    let opus: OpusAudioEncoder?
    var audioSource = SyntheticAudioSource()
    var pcm = [Int16](repeating: 0, count: OpusAudioEncoder.frameSamples)
    var opusOut = [UInt8]()
    var wallOffset: Int64
    var audio: AudioClock
    var counters: MediaCounters

    init(config: PublisherConfig, start: Int64, wallOffset: Int64) throws(CodecError) {
        video = try LiveVideoEncoders(config: config, startMicros: start)
        opus = config.sendAudio ? try OpusAudioEncoder(bitrate: config.audioBitrate) : nil
        self.wallOffset = wallOffset
        audio = AudioClock(start: config.sendAudio ? start : .max)
        counters = MediaCounters(layers: video.layers.count)
    }

    var nextDue: Int64 { min(video.nextWake ?? .max, audio.next) }

    mutating func stepWallClock(byMicros micros: Int64) { wallOffset += micros }

    mutating func apply(_ event: PublisherSessionEvent) {
        do throws(CodecError) { try video.apply(event) } catch { counters.error = error.description }
    }

    mutating func tick(now: Int64, into session: PublisherSession) {
        if let opus {
            while let (number, capture) = audio.take(now: now) {
                audioSource.fill(&pcm)
                if (try? opus.encode(pcm, into: &opusOut)) != nil {
                    session.handle(.audio(EncodedAudioFrame(bytes: opusOut, frameNumber: number, captureMicros: capture)))
                    counters.audioFramesEncoded += 1
                }
            }
        }
        // Virtual time: encoding takes none, so no tick is ever late and no CPU is counted.
        do throws(CodecError) {
            try video.encodeDue(now: now, wallOffset: wallOffset, clock: { now }, cpuClock: { 0 }, counters: &counters) {
                session.handle(.video($0))
            }
        } catch {
            counters.error = error.description
        }
    }
}

/// Frames of exactly the size the targets ask for (`SimulationConfig.Media.sized`): a VP8 frame
/// header (a key frame's with the layer's size, so the router learns the resolution) and filler.
struct SizedFeeder: MediaFeeder {
    let layers: [VideoLayerConfig]
    let sendAudio: Bool
    var targets: [Int]
    var nextVideo: [Int64]
    var frameCount: [UInt32]
    var gate: LayerGate
    var audio: AudioClock
    let audioBytes: [UInt8]
    var counters: MediaCounters

    init(config: PublisherConfig, start: Int64) {
        layers = config.sendVideo ? config.layers : []
        sendAudio = config.sendAudio
        targets = layers.map(\.targetBitrate)
        nextVideo = layers.map { _ in start }
        frameCount = layers.map { _ in 0 }
        gate = LayerGate(layers: layers.count)
        for i in layers.indices { gate.requestKeyFrame(layer: i) } // the first frame is a key frame
        audio = AudioClock(start: config.sendAudio ? start : .max)
        audioBytes = [UInt8](repeating: 0x55, count: max(1, config.audioBitrate / 8 / 50))
        counters = MediaCounters(layers: layers.count)
    }

    var nextDue: Int64 { nextVideo.reduce(audio.next, min) }

    mutating func apply(_ event: PublisherSessionEvent) {
        if let (layer, bitrate) = gate.apply(event) { targets[layer] = bitrate }
    }

    mutating func tick(now: Int64, into session: PublisherSession) {
        while let (number, capture) = audio.take(now: now) {
            session.handle(.audio(EncodedAudioFrame(bytes: audioBytes, frameNumber: number, captureMicros: capture)))
            counters.audioFramesEncoded += 1
        }
        for i in nextVideo.indices where now >= nextVideo[i] {
            let l = layers[i]
            let capture = nextVideo[i]
            nextVideo[i] += Int64(1_000_000 / max(1, l.fps))
            let admission = gate.admit(layer: i)
            if admission == .skip { continue }
            let key = admission == .keyFrame
            let size = min(60_000, max(20, targets[i] / 8 / max(1, l.fps) * (key ? 4 : 1)))
            var bytes: [UInt8]
            if key {
                // RFC 6386 §9.1: frame tag (key frame, shown), start code, 14-bit width and height.
                bytes = [
                    0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, UInt8(l.width & 0xFF), UInt8(l.width >> 8), UInt8(l.height & 0xFF),
                    UInt8(l.height >> 8)
                ]
            } else {
                bytes = [0x31, 0x02, 0x00]
            }
            bytes += [UInt8](repeating: 0, count: max(0, size - bytes.count))
            session.handle(
                .video(
                    EncodedVideoFrame(
                        layer: i, bytes: bytes, isKeyFrame: key, width: l.width, height: l.height,
                        frameNumber: frameCount[i], captureMicros: capture, temporalID: nil, layerSync: false, encodeMicros: 0)))
            frameCount[i] &+= 1
            counters.framesEncoded[i] += 1
            if key { counters.keyFramesEncoded[i] += 1 }
        }
    }
}
