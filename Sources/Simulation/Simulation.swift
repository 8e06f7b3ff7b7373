public import PublisherEngine
public import LoopbackReceiver
public import MediaCodecs
import Transport
import Stats

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
    let publisher: PublisherSession
    let receiver: ReceiverSession
    var feeder: MediaFeeder
    /// Simulated monotonic time (µs); the run starts at `origin`.
    public private(set) var now: Int64
    public let origin: Int64 = 1_000_000
    let wallOffset: Int64
    let publisherAddress: SocketAddress
    var scratch = [UInt8](repeating: 0, count: PacketBatch.slotSize)
    public private(set) var finished = false

    /// Why a simulation could not be set up (SRTP or a codec refused its configuration).
    public struct SetupError: Error, CustomStringConvertible {
        public var description: String
    }

    public init(config: SimulationConfig) throws(SetupError) {
        self.config = config
        now = origin
        wallOffset = config.epochMicros - origin
        var random = SplitMix64(seed: config.seed &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        var p = config.publisher
        p.seed = config.seed
        var ssrcs: [UInt32] = []
        while ssrcs.count < 16 {
            let s = UInt32(truncatingIfNeeded: random.next())
            if s != 0 && !ssrcs.contains(s) { ssrcs.append(s) }
        }
        let plan = StreamPlan(config: p, ssrcs: ssrcs)
        do { publisherAddress = try SocketAddress(host: "127.0.0.1", port: 50_000) } catch { throw SetupError(description: "\(error)") }
        do {
            publisher = try PublisherSession(config: p, plan: plan, startMicros: origin, wallOffsetMicros: wallOffset)
            receiver = try ReceiverSession(config: config.receiver, startMicros: origin, wallOffsetMicros: wallOffset, seed: random.next())
        } catch { throw SetupError(description: "cannot set up SRTP: \(error)") }
        switch config.media {
        case let .replay(library): feeder = ReplayFeeder(library: library, config: p, start: origin)
        case .sized: feeder = SizedFeeder(config: p, start: origin)
        case .encode:
            do { feeder = try LiveFeeder(config: p, start: origin, wallOffset: wallOffset) } catch {
                throw SetupError(description: "encoder: \(error)")
            }
        }
        publisher.begin(now: origin)
    }

    public var wallMicros: Int64 { now + wallOffset }
    public var elapsedMicros: Int64 { now - origin }

    /// Runs to the end of the configured duration (then stops the publisher, lets its pacer
    /// drain and delivers the BYE), calling `onInterval` every `intervalMicros` of simulated
    /// time and once more at the end (`final` true).
    public func run(intervalMicros: Int64, onInterval: (_ final: Bool) -> Void) {
        let end = origin + config.durationMicros
        var nextInterval = origin + intervalMicros
        var stopping = false
        while true {
            if !stopping && now >= end {
                stopping = true
                publisher.stop()
            }
            if !stopping {
                feeder.tick(now: now, into: publisher)
            }
            let publisherWake = publisher.step(now: now)
            exchangeEvents()
            deliverPublisherDatagrams()
            let receiverWake = receiver.step(now: now)
            deliverFeedback()
            exchangeEvents()
            if now >= nextInterval && now <= end {
                onInterval(false)
                nextInterval += intervalMicros
            }
            guard let publisherWake else { break }
            var next = min(publisherWake, receiverWake, nextInterval)
            if !stopping { next = min(next, feeder.nextDue, end) }
            now = next > now ? next : now + 100
        }
        publisher.finish(now: now)
        deliverPublisherDatagrams()
        // Let the emulated link deliver what it still holds (the BYE among it), up to 2 s.
        let drainEnd = now + 2_000_000
        while now < drainEnd {
            let wake = receiver.step(now: now)
            receiver.pollTransmit { _, _ throws(SocketError) in } // the publisher has gone
            if receiver.linkIsEmpty { break }
            now = max(now + 100, wake)
        }
        finished = true
        onInterval(true)
    }

    func exchangeEvents() {
        while let e = publisher.pollEvent() { feeder.apply(e) }
    }

    func deliverPublisherDatagrams() {
        let receiver = self.receiver, from = publisherAddress, now = self.now
        publisher.pollTransmit { pointers, lengths, count, _ throws(SocketError) in
            for i in 0..<count { receiver.handleDatagram(pointers[i]!, length: Int(lengths[i]), from: from, now: now) }
            return count
        }
    }

    func deliverFeedback() {
        let publisher = self.publisher, now = self.now
        scratch.withUnsafeMutableBytes { buffer in
            receiver.pollTransmit { bytes, _ throws(SocketError) in
                let n = min(bytes.count, buffer.count)
                buffer.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: n)
                publisher.handleDatagram(buffer.baseAddress!, length: n, now: now)
            }
        }
    }

    /// The publisher as `publish` reports it.
    public var publisherSnapshot: PublisherSnapshot {
        var (streams, network) = publisher.statistics
        let media = feeder.counters
        for i in streams.indices {
            if let layer = publisher.plan.streams.first(where: { $0.ssrc == streams[i].ssrc })?.layer, layer < media.framesEncoded.count {
                streams[i].framesEncoded = media.framesEncoded[layer]
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
}

/// Replay loops, as a fleet bot sends them (`ReplayCursor`).
struct ReplayFeeder: MediaFeeder {
    var replay: ReplayCursor
    let sendAudio: Bool
    var nextVideo: [Int64]
    var audio: AudioClock
    var counters: MediaCounters

    init(library: ReplayLibrary, config: PublisherConfig, start: Int64) {
        let n = config.sendVideo ? min(config.layers.count, library.layers.count) : 0
        replay = ReplayCursor(library: library, layers: n)
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

/// Live encoders at simulated time: the synthetic picture drawn for each capture tick, VP8
/// per layer (targets and key frames from the session), Opus every 20 ms.
struct LiveFeeder: MediaFeeder {
    let layers: [VideoLayerConfig]
    let encoders: [VP8Encoder]
    var pictures: [I420Frame]
    let source: SyntheticVideoSource
    let opus: OpusAudioEncoder?
    var audioSource = SyntheticAudioSource()
    var pcm = [Int16](repeating: 0, count: OpusAudioEncoder.frameSamples)
    var opusOut = [UInt8]()
    let start: Int64
    let wallOffset: Int64
    var nextVideo: [Int64]
    var audio: AudioClock
    var gate: LayerGate
    var counters: MediaCounters

    init(config: PublisherConfig, start: Int64, wallOffset: Int64) throws(CodecError) {
        layers = config.sendVideo ? config.layers : []
        var encoders: [VP8Encoder] = []
        for l in layers { encoders.append(try VP8Encoder(config: l, keyFrameInterval: VP8Encoder.frames(in: config.keyFrameIntervalMicros, fps: l.fps))) }
        self.encoders = encoders
        pictures = layers.map { I420Frame(width: $0.width, height: $0.height) }
        source = SyntheticVideoSource(seed: config.seed)
        opus = config.sendAudio ? try OpusAudioEncoder(bitrate: config.audioBitrate) : nil
        self.start = start
        self.wallOffset = wallOffset
        nextVideo = layers.map { _ in start }
        audio = AudioClock(start: config.sendAudio ? start : .max)
        gate = LayerGate(layers: layers.count)
        counters = MediaCounters(layers: layers.count)
    }

    var nextDue: Int64 { nextVideo.reduce(audio.next, min) }

    mutating func apply(_ event: PublisherSessionEvent) {
        if let (layer, bitrate) = gate.apply(event) { try? encoders[layer].setTargetBitrate(bitrate) }
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
        for i in encoders.indices where now >= nextVideo[i] {
            let capture = nextVideo[i]
            nextVideo[i] += Int64(1_000_000 / max(1, layers[i].fps))
            let admission = gate.admit(layer: i)
            if admission == .skip { continue }
            let number = UInt32(truncatingIfNeeded: (capture - start) / 33_333)
            source.fill(&pictures[i], frameNumber: number, captureMillis: UInt32(truncatingIfNeeded: (capture + wallOffset) / 1000))
            let force = admission == .keyFrame
            let encoded: EncodedVideoFrame?
            do { encoded = try encoders[i].encode(&pictures[i], layer: i, frameNumber: number, captureMicros: capture, forceKeyFrame: force, clock: { 0 }) } catch {
                continue
            }
            if force && encoded?.isKeyFrame != true { gate.keyFrameMissed(layer: i) } // dropped: ask again next tick
            guard let frame = encoded else { continue }
            counters.framesEncoded[i] += 1
            if frame.isKeyFrame { counters.keyFramesEncoded[i] += 1 }
            session.handle(.video(frame))
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
                bytes = [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, UInt8(l.width & 0xFF), UInt8(l.width >> 8), UInt8(l.height & 0xFF), UInt8(l.height >> 8)]
            } else {
                bytes = [0x31, 0x02, 0x00]
            }
            bytes += [UInt8](repeating: 0, count: max(0, size - bytes.count))
            session.handle(.video(EncodedVideoFrame(layer: i, bytes: bytes, isKeyFrame: key, width: l.width, height: l.height,
                                                    frameNumber: frameCount[i], captureMicros: capture, temporalID: nil, layerSync: false, encodeMicros: 0)))
            frameCount[i] &+= 1
            counters.framesEncoded[i] += 1
            if key { counters.keyFramesEncoded[i] += 1 }
        }
    }
}
