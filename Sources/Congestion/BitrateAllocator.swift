/// A layer's bitrate limits (bits/s).
public struct LayerLimits: Equatable, Sendable {
    public var min: Int, target: Int, max: Int
    /// One encoding (simulcast refused): the rate needed to move up to this layer — libwebrtc's
    /// `min_start_bitrate_bps` for its size (`rtc_base/experiments/encoder_info_settings.cc`,
    /// `GetDefaultSinglecastBitrateLimits`, VP8), which a browser's single encoding waits for
    /// before it scales its resolution up; a layer already running holds down to `min`.
    public var start: Int
    public init(min: Int, target: Int, max: Int, start: Int? = nil) {
        self.min = min; self.target = target; self.max = max
        self.start = start ?? min
    }

    /// libwebrtc's VP8 singlecast start limits: the smallest row whose pixel count is at least
    /// the frame's (`api/video_codecs/video_encoder.cc` `GetEncoderBitrateLimitsForResolution`).
    public static func singlecastStartBitrate(width: Int, height: Int) -> Int {
        let rows: [(pixels: Int, start: Int)] = [
            (320 * 180, 0), (480 * 270, 200_000), (640 * 360, 300_000), (960 * 540, 500_000), (1280 * 720, 900_000)
        ]
        return rows.first { $0.pixels >= width * height }?.start ?? 900_000
    }
}

/// How the available rate is split.
public struct Allocation: Equatable, Sendable {
    public var audio: Int
    /// Per video layer, bottom-up; 0 = suspended.
    public var layers: [Int]
    /// Layers held below their target (or off) for lack of bandwidth.
    public var bandwidthLimited: [Bool]
    public var total: Int { audio + layers.reduce(0, +) }
}

/// Audio first, then simulcast layers bottom-up, each up to its target; allocation stops at the
/// first layer whose minimum cannot be met, the lowest layer always gets its minimum, and what
/// is left (up to max) goes to the top active layer (libwebrtc `simulcast_rate_allocator.cc`). A
/// suspended layer comes back only when min × 1.2 is available (hysteresis, no flapping).
public struct BitrateAllocator: Sendable {
    static let resumeHysteresis = 1.2
    public var audioBitrate: Int
    public var layers: [LayerLimits]
    public private(set) var active: [Bool]
    /// Simulcast refused (one RTP stream): the whole budget goes to the one best layer it carries —
    /// the highest whose minimum fits (× 1.2 to move up) — and every other layer is off. What a
    /// single-encoding sender does by scaling its resolution to the bandwidth.
    public var singleEncoding = false
    /// With `singleEncoding`: the layer the last allocation chose.
    var singleChosen: Int?

    public init(audioBitrate: Int, layers: [LayerLimits]) {
        self.audioBitrate = audioBitrate
        self.layers = layers
        active = layers.map { _ in true }
    }

    /// Sum of targets (what the publisher wants) and of maxima.
    public var totalTarget: Int { audioBitrate + layers.reduce(0) { $0 + $1.target } }
    public var totalMax: Int { audioBitrate + layers.reduce(0) { $0 + $1.max } }

    /// Splits an estimate that counts whole packets on the wire: first the per-packet overhead
    /// (RTP header + extensions, SRTP tag, UDP/IP — `overheadBitsPerPacket`) of the audio packets
    /// and of the video packets the layers will need (at least one per frame, one per ~1100
    /// bytes) is set aside, then the media rates are allocated. At low rates this overhead is a
    /// large share (about 26 kbps for 50 audio packets/s alone), so a fixed percentage would
    /// overshoot the link.
    public mutating func allocate(estimate: Int, overheadBitsPerPacket: Int, audioPacketsPerSecond: Int, layerFrameRates: [Int])
        -> Allocation
    {
        let audioOverhead = audioBitrate > 0 ? audioPacketsPerSecond * overheadBitsPerPacket : 0
        var a = allocate(estimate - audioOverhead)
        for _ in 0..<2 { // the overhead depends on which layers run: settle it in two passes
            var video = 0
            for (i, rate) in a.layers.enumerated() where rate > 0 {
                let fps = i < layerFrameRates.count ? layerFrameRates[i] : 30
                video += max(fps, rate / (1_100 * 8)) * overheadBitsPerPacket
            }
            a = allocate(estimate - audioOverhead - video)
        }
        return a
    }

    public mutating func allocate(_ available: Int) -> Allocation {
        let audio = min(audioBitrate, max(0, available))
        var left = max(0, available - audio)
        var out = [Int](repeating: 0, count: layers.count)
        if singleEncoding && !layers.isEmpty {
            var chosen = 0
            for i in layers.indices.reversed() {
                // The layer it carries holds down to its minimum; another (and the first) needs its
                // start rate, and at least its minimum × 1.2.
                let needed =
                    i == singleChosen ? layers[i].min : Swift.max(Int(Double(layers[i].min) * Self.resumeHysteresis), layers[i].start)
                if left >= needed { chosen = i; break }
            }
            singleChosen = chosen
            out[chosen] = max(layers[chosen].min, min(left, layers[chosen].max))
            active = layers.indices.map { $0 == chosen }
            // Layers above the chosen one are off for lack of bandwidth; those below are simply not used.
            let limited = layers.indices.map { $0 > chosen || ($0 == chosen && out[$0] < layers[$0].target) }
            return Allocation(audio: audio, layers: out, bandwidthLimited: limited)
        }
        var lastActive = -1
        for (i, l) in layers.enumerated() {
            let needed = active[i] ? l.min : Int(Double(l.min) * Self.resumeHysteresis)
            if i > 0 && left < needed { break }
            let give = i == 0 ? max(l.min, min(l.target, left)) : min(l.target, left)
            out[i] = give
            left -= min(left, give)
            lastActive = i
        }
        if lastActive >= 0 && left > 0 {
            let top = layers[lastActive]
            let extra = min(left, top.max - out[lastActive])
            out[lastActive] += max(0, extra)
        }
        for i in layers.indices { active[i] = i <= lastActive }
        let limited = layers.indices.map { out[$0] < layers[$0].target }
        return Allocation(audio: audio, layers: out, bandwidthLimited: limited)
    }
}
