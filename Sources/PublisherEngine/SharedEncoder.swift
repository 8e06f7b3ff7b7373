import Synchronization
public import MediaCodecs
public import RTPCore
import Transport
import Platform

/// One live encode shared by every bot of a process (`pubbot load --encode`): a thread encodes
/// the synthetic video of each layer and the audio on their clocks, and every bot packetizes
/// the same frames afresh. A key-frame request from any bot (PLI, a layer resumed) forces one
/// for all of them, at most one per layer per 250 ms. Measured against per-bot encoders in
/// the Figures article: per-bot encoding would cost the encoder's CPU once per bot.
public final class SharedEncoder: Sendable {
    public let layers: [VideoLayerConfig]
    public let audioBitrate: Int
    /// The last frames of each layer, and of the audio, numbered from 0.
    let video: [Locked<FrameRing<EncodedVideoFrame>>]
    let audio = Locked(FrameRing<EncodedAudioFrame>())
    let keyFrameRequests = Atomic<UInt64>(0)
    let stopFlag = Atomic<Bool>(false)
    let thread = Locked<JoinableThread?>(nil)
    /// Encoder CPU time so far (microseconds), all layers and audio.
    let encodeMicros = Atomic<Int64>(0)
    let failure = Locked<String?>(nil)

    public let codec: VideoCodec

    /// The scene every bot's frames show (`load --encode --content`).
    public let content: SyntheticVideoSource.Content

    public init(
        layers: [VideoLayerConfig], codec: VideoCodec = .vp8, audioBitrate: Int = 32_000, content: SyntheticVideoSource.Content = .natural
    ) {
        self.codec = codec
        self.content = content
        self.layers = layers.map {
            var l = $0; l.temporalLayers = 1; return l
        }
        self.audioBitrate = audioBitrate
        video = layers.map { _ in Locked(FrameRing<EncodedVideoFrame>()) }
    }

    public var encoderCPUMicros: Int64 { encodeMicros.load(ordering: .relaxed) }
    public var error: String? { failure.value }

    public func requestKeyFrame(layer: Int) {
        guard layer >= 0 && layer < 64 else { return }
        keyFrameRequests.bitwiseOr(1 << UInt64(layer), ordering: .relaxed)
    }

    public func start() {
        let t = JoinableThread(name: "pubbot-encode") { [self] in
            do throws(CodecError) { try run() } catch { failure.value = error.description }
        }
        thread.value = t
    }

    public func stop() {
        stopFlag.store(true, ordering: .releasing)
        let t = thread.withLock { t -> JoinableThread? in
            let c = t; t = nil; return c
        }
        t?.join()
    }

    /// Frames of `layer` numbered `from` or later (at most the ring's depth), and the next number.
    public func videoFrames(layer: Int, from: Int) -> ([EncodedVideoFrame], Int) { video[layer].withLock { $0.since(from) } }
    public func audioFrames(from: Int) -> ([EncodedAudioFrame], Int) { audio.withLock { $0.since(from) } }

    private func run() throws(CodecError) {
        var encoders: [any VideoEncoder] = []
        for l in layers { encoders.append(try codec.makeEncoder(config: l, keyFrameInterval: 0)) }
        var pictures = layers.map { I420Frame(width: $0.width, height: $0.height) }
        let source = SyntheticVideoSource(seed: 1, content: content)
        let opus = try OpusAudioEncoder(bitrate: audioBitrate)
        var audioSource = SyntheticAudioSource()
        var pcm = [Int16](repeating: 0, count: OpusAudioEncoder.frameSamples)
        var opusOut = [UInt8]()
        let start = Clock.monotonicMicros()
        var nextVideo = layers.map { _ in start }
        var nextAudio = start
        var audioNumber: UInt32 = 0
        var lastForced = layers.map { _ in Int64.min / 2 }
        var pending: UInt64 = 0
        while !stopFlag.load(ordering: .acquiring) {
            let now = Clock.monotonicMicros()
            pending |= keyFrameRequests.exchange(0, ordering: .relaxed)
            if now >= nextAudio {
                audioSource.fill(&pcm)
                let t0 = Clock.threadCPUMicros()
                try opus.encode(pcm, into: &opusOut)
                encodeMicros.add(Clock.threadCPUMicros() - t0, ordering: .relaxed)
                let f = EncodedAudioFrame(bytes: opusOut, frameNumber: audioNumber, captureMicros: nextAudio)
                audio.withLock { $0.append(f) }
                audioNumber &+= 1
                nextAudio += 20_000
                if now - nextAudio > 200_000 { nextAudio = now }
            }
            for i in layers.indices where now >= nextVideo[i] {
                let interval = Int64(1_000_000 / max(1, layers[i].fps))
                let capture = nextVideo[i]
                let number = UInt32(truncatingIfNeeded: (capture - start) / interval)
                source.fill(&pictures[i], frameNumber: number, captureMillis: UInt32(truncatingIfNeeded: Clock.wallMicros() / 1000))
                let force = pending & (1 << UInt64(i)) != 0 && now - lastForced[i] >= 250_000
                if force { pending &= ~(1 << UInt64(i)); lastForced[i] = now }
                let t0 = Clock.threadCPUMicros()
                let encoded = try encoders[i].encode(
                    &pictures[i], layer: i, frameNumber: number, captureMicros: capture,
                    forceKeyFrame: force, clock: Clock.monotonicMicros)
                if force && encoded?.isKeyFrame != true { pending |= 1 << UInt64(i) } // dropped: ask again next tick
                if let f = encoded { video[i].withLock { $0.append(f) } }
                encodeMicros.add(Clock.threadCPUMicros() - t0, ordering: .relaxed)
                nextVideo[i] += interval
                while nextVideo[i] + interval <= Clock.monotonicMicros() { nextVideo[i] += interval }
            }
            var wake = nextAudio
            for t in nextVideo { wake = min(wake, t) }
            Clock.sleep(untilMicros: min(wake, Clock.monotonicMicros() + 20_000))
        }
    }
}

/// The last 64 items, numbered from 0 as they were appended.
struct FrameRing<T: Sendable>: Sendable {
    var items: [T] = []
    var first = 0

    mutating func append(_ x: T) {
        items.append(x)
        if items.count > 64 {
            let drop = items.count - 64
            items.removeFirst(drop)
            first += drop
        }
    }

    var next: Int { first + items.count }

    func since(_ n: Int) -> ([T], Int) {
        let from = max(n, first)
        guard from < next else { return ([], next) }
        return (Array(items[(from - first)...]), next)
    }
}
