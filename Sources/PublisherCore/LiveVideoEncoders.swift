public import MediaCodecs
import RTPCore

/// A publisher's live video: each layer's synthetic picture drawn on its capture tick and
/// encoded, with the key-frame and target gate and the CPU adaptation. One type for both
/// clocks — the media thread's real one (`MediaLoop`) and a simulation's virtual one
/// (`LiveFeeder`): the clocks come in as arguments, the frames go out through `emit`.
///
/// Under CPU overuse (`CPUAdaptation`) simulcast holds its top layers back; one encoding lowers
/// its resolution instead, one step of `ResolutionSteps` per adaptation, on a new encoder that
/// starts with a key frame — as a browser sending one encoding does.
public struct LiveVideoEncoders {
    public let layers: [VideoLayerConfig]
    public private(set) var encoders: [any VideoEncoder] = []
    var pictures: [I420Frame]
    let source: SyntheticVideoSource
    let codec: VideoCodec
    let keyFrameIntervalMicros: Int64
    let intervals: [Int64]
    let startMicros: Int64
    public private(set) var nextVideo: [Int64]
    /// The target each layer's encoder was last given (a rebuilt encoder takes it again).
    var targets: [Int]
    public var gate: LayerGate
    public private(set) var cpu: CPUAdaptation
    /// One encoding whose resolution steps down under CPU overuse (not simulcast, not spatial SVC).
    let scalesResolution: Bool
    /// Frame ticks that came due on running layers (encoded, or skipped because encoding ran late).
    public private(set) var framesDue = 0

    public init(config: PublisherConfig, startMicros: Int64) throws(CodecError) {
        layers = config.sendVideo ? config.layers : []
        codec = config.videoCodec
        keyFrameIntervalMicros = config.keyFrameIntervalMicros
        for l in layers {
            encoders.append(try Self.makeEncoder(codec, l, keyFrameIntervalMicros: config.keyFrameIntervalMicros))
        }
        pictures = layers.map { I420Frame(width: $0.width, height: $0.height) }
        source = SyntheticVideoSource(seed: config.sourceSeed, content: config.content)
        intervals = layers.map { Int64(1_000_000 / max(1, $0.fps)) }
        self.startMicros = startMicros
        nextVideo = layers.map { _ in startMicros }
        targets = layers.map(\.targetBitrate)
        gate = LayerGate(layers: layers.count)
        scalesResolution = layers.count == 1 && layers[0].spatialLayers == 1
        let steps = scalesResolution ? ResolutionSteps.count(width: layers[0].width, height: layers[0].height) : max(0, layers.count - 1)
        cpu = CPUAdaptation(steps: steps, now: startMicros)
    }

    static func makeEncoder(_ codec: VideoCodec, _ l: VideoLayerConfig, keyFrameIntervalMicros: Int64) throws(CodecError)
        -> any VideoEncoder
    {
        try codec.makeEncoder(config: l, keyFrameInterval: LibvpxEncoder.frames(in: keyFrameIntervalMicros, fps: l.fps))
    }

    /// Simulcast layers that run now (the lowest `layers - held`); one encoding always runs.
    public var runningLayers: Int { scalesResolution ? layers.count : layers.count - cpu.level }

    /// The earliest next capture, nil without video.
    public var nextWake: Int64? { nextVideo.min() }

    /// A layer's new target (0 suspends it; a suspended layer resumes on a key frame).
    public mutating func setTarget(layer i: Int, bitrate: Int) throws(CodecError) {
        guard i < encoders.count, gate.setTarget(layer: i, bitrate: bitrate) else { return }
        targets[i] = bitrate
        try encoders[i].setTargetBitrate(bitrate)
    }

    /// A session event (a layer's target or a key-frame request).
    public mutating func apply(_ event: PublisherSessionEvent) throws(CodecError) {
        if let (layer, bitrate) = gate.apply(event), layer < encoders.count {
            targets[layer] = bitrate
            try encoders[layer].setTargetBitrate(bitrate)
        }
    }

    /// Encodes every layer whose frame is due at `now` and hands the frames to `emit`, then
    /// lets the CPU adaptation judge the turn.
    /// - Parameters:
    ///   - wallOffset: wall-clock minus this clock, microseconds (the stamp drawn into the picture).
    ///   - clock: this clock read after encoding (a frame that ran late skips the ticks it missed).
    ///   - cpuClock: the thread's CPU time (the draw and encode costs; `{ 0 }` in virtual time).
    public mutating func encodeDue(
        now: Int64, wallOffset: Int64, clock: () -> Int64, cpuClock: () -> Int64, counters c: inout MediaCounters,
        emit: (EncodedVideoFrame) -> Void
    ) throws(CodecError) {
        for i in encoders.indices where now >= nextVideo[i] {
            try encode(layer: i, now: now, wallOffset: wallOffset, clock: clock, cpuClock: cpuClock, counters: &c, emit: emit)
        }
        if let change = cpu.update(now: now, framesDue: framesDue, framesSkipped: c.framesSkipped) {
            if scalesResolution {
                try rescale()
            } else if change == .up {
                gate.requestKeyFrame(layer: runningLayers - 1) // a layer brought back restarts on a key frame
            }
        }
        c.cpuLayersHeld = scalesResolution ? 0 : cpu.level
        c.cpuResolutionSteps = scalesResolution ? cpu.level : 0
        c.cpuResolutionChanges = cpu.changes
    }

    /// One encoding at the resolution the adaptation's level asks for: a new encoder (its first
    /// frame a key frame, which carries the new size) at the layer's current target.
    mutating func rescale() throws(CodecError) {
        var l = layers[0]
        (l.width, l.height) = ResolutionSteps.size(width: l.width, height: l.height, step: cpu.level)
        l.targetBitrate = targets[0]
        encoders[0] = try Self.makeEncoder(codec, l, keyFrameIntervalMicros: keyFrameIntervalMicros)
        try encoders[0].setTargetBitrate(targets[0])
        pictures[0] = I420Frame(width: l.width, height: l.height)
        gate.requestKeyFrame(layer: 0)
    }

    /// Layer `i`'s due frame: drawn, encoded (a key frame when one was asked for) and handed on,
    /// or skipped when the gate or the CPU adaptation holds the layer back.
    mutating func encode(
        layer i: Int, now: Int64, wallOffset: Int64, clock: () -> Int64, cpuClock: () -> Int64, counters c: inout MediaCounters,
        emit: (EncodedVideoFrame) -> Void
    ) throws(CodecError) {
        if i >= runningLayers { // held back for CPU: its ticks pass unencoded
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
        let wallMillis = UInt32(truncatingIfNeeded: (captureMicros + wallOffset) / 1000)
        let d0 = cpuClock()
        source.fill(&pictures[i], frameNumber: frameNumber, captureMillis: wallMillis)
        c.drawMicros += cpuClock() - d0
        let force = admission == .keyFrame
        nextVideo[i] += intervals[i] // before encoding: a codec error does not leave the tick due
        let encoded = try encoders[i].encode(
            &pictures[i], layer: i, frameNumber: frameNumber, captureMicros: captureMicros, forceKeyFrame: force, clock: cpuClock)
        if force && encoded?.isKeyFrame != true { gate.keyFrameMissed(layer: i) } // dropped: ask again next tick
        if let frame = encoded {
            c.framesEncoded[i] += 1
            if frame.isKeyFrame { c.keyFramesEncoded[i] += 1 }
            c.encodeMicros[i] += frame.encodeMicros
            emit(frame)
        }
        // Encoding fell more than a frame behind: skip ticks instead of bursting.
        let after = clock()
        while nextVideo[i] + intervals[i] < after {
            nextVideo[i] += intervals[i]
            c.framesSkipped += 1
            c.lateFrames[i] += 1
            framesDue += 1
        }
    }
}

/// The resolutions one encoding steps through under CPU overuse, as libwebrtc's: each step down
/// asks for at most 3/5 of the pixels (`GetLowerResolutionThan`,
/// video/adaptation/video_stream_adapter.cc), and the frame adapter takes the largest scale of
/// the series 1, 3/4, 1/2, 3/8, 1/4, 3/16, 1/8 (alternately ×3/4 and ×2/3,
/// media/base/video_adapter.cc) under that — one step of the series per step down, since ×3/4
/// keeps 9/16 of the pixels — never below 320×180 pixels (`kDefaultMinPixelsPerFrame`,
/// api/video_codecs/video_encoder.h). Sizes are rounded down to even (I420's chroma).
public enum ResolutionSteps {
    static let series: [(Int, Int)] = [(1, 1), (3, 4), (1, 2), (3, 8), (1, 4), (3, 16), (1, 8)]
    static let minPixels = 320 * 180

    /// The size at `step` steps down from `width`×`height` (0: unchanged).
    public static func size(width: Int, height: Int, step: Int) -> (width: Int, height: Int) {
        let (n, d) = series[min(max(0, step), series.count - 1)]
        guard step > 0 else { return (width, height) }
        return ((width * n / d) & ~1, (height * n / d) & ~1)
    }

    /// How many steps down `width`×`height` has before the next would go under 320×180 pixels.
    public static func count(width: Int, height: Int) -> Int {
        var steps = 0
        while steps + 1 < series.count {
            let s = size(width: width, height: height, step: steps + 1)
            guard s.width * s.height >= minPixels else { break }
            steps += 1
        }
        return steps
    }
}
