/// One simulcast layer: resolution, frame rate, bitrates, temporal layers and RID.
public struct VideoLayerConfig: Equatable, Sendable {
    public var width: Int
    public var height: Int
    public var fps: Int
    /// Bitrates in bits per second (defaults from libwebrtc's simulcast table, see the Commands article, "Defaults and where they come from").
    public var minBitrate: Int
    public var targetBitrate: Int
    public var maxBitrate: Int
    /// 1 (L1T1), 2 (L1T2) or 3 (L1T3).
    public var temporalLayers: Int
    public var rid: String
    /// Spatial layers in the one stream (VP9 SVC, `L2T*_KEY`/`L3T*_KEY`): each half the size of
    /// the one above, the top at `width`×`height`, predicted from the layer below on key pictures
    /// only (libwebrtc's default for VP9 SVC). 1: no spatial layering.
    public var spatialLayers = 1

    public init(
        width: Int, height: Int, fps: Int = 30, minBitrate: Int, targetBitrate: Int, maxBitrate: Int,
        temporalLayers: Int = 1, rid: String
    ) {
        self.width = width
        self.height = height
        self.fps = fps
        self.minBitrate = minBitrate
        self.targetBitrate = targetBitrate
        self.maxBitrate = maxBitrate
        self.temporalLayers = temporalLayers
        self.rid = rid
    }

    /// `L1T1`…`L1T3` (simulcast layers are single spatial layers), `L2T1_KEY`…`L3T3_KEY`.
    public var scalabilityMode: String {
        spatialLayers > 1 ? "L\(spatialLayers)T\(temporalLayers)_KEY" : "L1T\(temporalLayers)"
    }

    /// The size of spatial layer `s` (0 lowest): the top halved per layer below it, rounded to
    /// even as libvpx rounds (`vp9_svc_layercontext.c` get_layer_resolution).
    public func spatialSize(_ s: Int) -> (width: Int, height: Int) {
        let den = 1 << max(0, spatialLayers - 1 - s)
        var w = width / den, h = height / den
        w += w % 2
        h += h % 2
        return (w, h)
    }

    /// One stream of `spatialLayers` spatial layers topped by `top`: each spatial layer's rates
    /// are those a simulcast layer of its size gets (`defaults`), and the stream's are their
    /// sums (its minimum the lowest layer's).
    public static func spatial(
        top: VideoLayerConfig, spatialLayers: Int
    ) -> VideoLayerConfig {
        var c = top
        c.spatialLayers = max(1, min(3, spatialLayers))
        guard c.spatialLayers > 1 else { return c }
        let each = (0..<c.spatialLayers).map { s in
            let (w, h) = c.spatialSize(s)
            return defaults(width: w, height: h, fps: top.fps, rid: top.rid)
        }
        // The top layer's own rates as given (a --layers ladder may have set them), the lower ones by size.
        let scale = Double(top.targetBitrate) / Double(max(1, each.last!.targetBitrate))
        c.minBitrate = Int(Double(each[0].minBitrate) * scale)
        c.targetBitrate = Int(Double(each.map(\.targetBitrate).reduce(0, +)) * scale)
        c.maxBitrate = Int(Double(each.map(\.maxBitrate).reduce(0, +)) * scale)
        return c
    }

    /// Each spatial layer's share of the stream's rate, lowest first (by the rates a simulcast
    /// layer of its size gets); [1] with one layer.
    public var spatialRateShares: [Double] {
        guard spatialLayers > 1 else { return [1] }
        let t = (0..<spatialLayers).map { s in
            let (w, h) = spatialSize(s)
            return Double(Self.defaults(width: w, height: h, rid: "").targetBitrate)
        }
        let sum = t.reduce(0, +)
        return t.map { $0 / sum }
    }

    /// Layer defaults by size (libwebrtc `simulcast.cc` kSimulcastFormats: min/target/max kbps,
    /// for 30 fps), interpolated by pixel count between rows.
    ///
    /// `scaledByFrameRate`: below 30 fps the three rates shrink in proportion to the frame rate,
    /// as a routed publisher's do ("lowering the frame rate proportionally reduces the bandwidth
    /// used by the stream" — OpenTok publisher guide, `Publisher settings`); a relayed publisher
    /// keeps the 30 fps rates at any frame rate (the same guide: in relayed sessions lowering
    /// the frame rate does not reduce the bandwidth). Above 30 fps the 30 fps rates apply.
    public static func defaults(
        width: Int, height: Int, fps: Int = 30, temporalLayers: Int = 1, rid: String,
        scaledByFrameRate: Bool = true
    ) -> VideoLayerConfig {
        // (pixels, max, target, min) in kbps
        let table: [(Int, Int, Int, Int)] = [
            (1920 * 1080, 5000, 4000, 800), (1280 * 720, 2500, 2500, 600), (960 * 540, 1200, 1200, 350),
            (640 * 360, 700, 500, 150), (480 * 270, 450, 350, 150), (320 * 180, 200, 150, 30), (0, 200, 150, 30)
        ]
        let px = width * height
        var kbps = (table[0].1, table[0].2, table[0].3)
        if px < table[0].0 {
            for i in 1..<table.count where px >= table[i].0 {
                let hi = table[i - 1], lo = table[i]
                let f = Double(px - lo.0) / Double(max(1, hi.0 - lo.0))
                func mix(_ a: Int, _ b: Int) -> Int { Int(Double(b) + f * Double(a - b)) }
                kbps = (mix(hi.1, lo.1), mix(hi.2, lo.2), mix(hi.3, lo.3))
                break
            }
        }
        let scale = scaledByFrameRate ? min(1, Double(max(1, fps)) / 30) : 1
        return VideoLayerConfig(
            width: width, height: height, fps: fps,
            minBitrate: Int(Double(kbps.2 * 1000) * scale),
            targetBitrate: Int(Double(kbps.1 * 1000) * scale),
            maxBitrate: Int(Double(kbps.0 * 1000) * scale), temporalLayers: temporalLayers, rid: rid)
    }

    /// The default three-layer ladder for a top resolution (each lower layer half the size).
    public static func ladder(
        top width: Int, _ height: Int, layers: Int = 3, fps: Int = 30, temporalLayers: Int = 1,
        scaledByFrameRate: Bool = true
    ) -> [VideoLayerConfig] {
        let rids = ["q", "h", "f"]
        var out: [VideoLayerConfig] = []
        for i in 0..<layers {
            let div = 1 << (layers - 1 - i)
            out.append(
                .defaults(
                    width: (width / div) & ~1, height: (height / div) & ~1, fps: fps, temporalLayers: temporalLayers,
                    rid: layers == 3 ? rids[i] : String(i), scaledByFrameRate: scaledByFrameRate))
        }
        return out
    }
}
