import MediaCodecs
import RTPCore
import Impairment

/// Parsers for the value syntaxes of the command line (the Commands article, Values): durations, rates, ladders.
enum ValueParsers {
    /// `500ms`, `15s`, `2m`, or a bare number of seconds. Returns microseconds.
    static func duration(_ text: String, option: String) throws(UsageError) -> Int64 {
        do { return try ValueSyntax.duration(text) } catch { throw UsageError("\(error) for --\(option)") }
    }

    /// `800kbit`, `2.5mbit`, `4M`, `2500k`, `32000`. Returns bits per second.
    static func bitrate(_ text: String, option: String) throws(UsageError) -> Int {
        do { return try ValueSyntax.bitrate(text) } catch { throw UsageError("\(error) for --\(option)") }
    }

    static func impairment(_ text: String, option: String) throws(UsageError) -> ImpairmentSchedule {
        do { return try ImpairmentSchedule.parse(text) } catch { throw UsageError("invalid --\(option): \(error)") }
    }

    /// The frame rates `--fps` and a ladder's `@FPS` accept (publish, preflight, media build).
    static let frameRates = [1, 5, 7, 10, 15, 20, 24, 25, 30, 60]
    static var frameRateList: String { "one of " + frameRates.map(String.init).joined(separator: ", ") }

    /// `1280x720@30:2500k,640x360@30:700k,320x180@15:150k` (fps and bitrate optional), lowest
    /// layer last or first: layers are sorted bottom-up.
    /// Layers without a rate get the size's default, scaled by the frame rate unless `relayed`
    /// (`VideoLayerConfig.defaults`); a given rate is the layer's target at its frame rate.
    static func ladder(_ text: String, temporalLayers: Int, defaultFps: Int, relayed: Bool = false) throws(UsageError) -> [VideoLayerConfig]
    {
        let parts = text.split(separator: ",").map(String.init)
        guard !parts.isEmpty, parts.count <= 4 else {
            throw UsageError("--layers needs 1 to 4 comma-separated layers, e.g. 1280x720@30:2500k,640x360@30:700k,320x180@15:150k")
        }
        var layers: [VideoLayerConfig] = []
        for p in parts {
            var spec = Substring(p), rate: Int?, fps = defaultFps
            if let c = spec.firstIndex(of: ":") {
                rate = try bitrate(String(spec[spec.index(after: c)...]), option: "layers")
                spec = spec[..<c]
            }
            if let a = spec.firstIndex(of: "@") {
                guard let f = Int(spec[spec.index(after: a)...]), frameRates.contains(f) else {
                    throw UsageError("invalid frame rate in layer '\(p)' (\(frameRateList))")
                }
                fps = f
                spec = spec[..<a]
            }
            let wh = spec.lowercased().split(separator: "x")
            guard wh.count == 2, let w = Int(wh[0]), let h = Int(wh[1]), w >= 16, h >= 16, w <= 4096, h <= 2304, w % 2 == 0, h % 2 == 0
            else {
                throw UsageError("invalid layer '\(p)' (expected WIDTHxHEIGHT[@FPS][:RATE] with even sizes, e.g. 640x360@30:700k)")
            }
            var l = VideoLayerConfig.defaults(
                width: w, height: h, fps: fps, temporalLayers: temporalLayers, rid: "", scaledByFrameRate: !relayed)
            if let rate {
                l.targetBitrate = rate
                l.maxBitrate = max(l.maxBitrate, rate)
                l.minBitrate = min(l.minBitrate, rate)
            }
            layers.append(l)
        }
        layers.sort { $0.width * $0.height < $1.width * $1.height }
        let rids = layers.count == 3 ? ["q", "h", "f"] : layers.indices.map(String.init)
        for i in layers.indices { layers[i].rid = rids[i] }
        return layers
    }

    /// `--codec h264` or a preference list `--codec h264,vp8` (a WHIP offer lists them in this
    /// order; the answer picks).
    /// A picture size `WxH` (or a name: 360p, 540p, 720p, 1080p) within `width` × `height` bounds,
    /// even when `even`; `option` names the flag in the error.
    static func size(
        _ text: String, option: String, width: ClosedRange<Int>, height: ClosedRange<Int>, even: Bool = false, names: Bool = true
    ) throws(UsageError) -> (width: Int, height: Int) {
        let named: [String: (Int, Int)] = ["360p": (640, 360), "540p": (960, 540), "720p": (1280, 720), "1080p": (1920, 1080)]
        if names, let (w, h) = named[text.lowercased()], width.contains(w), height.contains(h) { return (w, h) }
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false).map { Int($0) }
        guard parts.count == 2, let w = parts[0], let h = parts[1], width.contains(w), height.contains(h),
            !even || (w % 2 == 0 && h % 2 == 0)
        else {
            let shape = even ? "WxH, even" : "WxH"
            let list = names ? "720p, 1080p, or \(shape)" : shape
            throw UsageError(
                "invalid \(option) '\(text)' (\(list) from \(width.lowerBound)x\(height.lowerBound) to \(width.upperBound)x\(height.upperBound))"
            )
        }
        return (w, h)
    }

    /// `--content easy|natural|hard`: the synthetic camera's scene.
    static func content(_ text: String) throws(UsageError) -> SyntheticVideoSource.Content {
        guard let c = SyntheticVideoSource.Content(rawValue: text.lowercased()) else {
            throw UsageError(
                "invalid --content '\(text)' (use \(SyntheticVideoSource.Content.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return c
    }

    static func codecs(_ text: String) throws(UsageError) -> [VideoCodec] {
        var out: [VideoCodec] = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let c = VideoCodec(name: name) else {
                throw UsageError(
                    "invalid --codec '\(name)' (use \(VideoCodec.allCases.map(\.rawValue).joined(separator: ", ")), or a list like h264,vp8)"
                )
            }
            guard !out.contains(c) else { throw UsageError("--codec lists \(c.rawValue) twice") }
            out.append(c)
        }
        return out
    }

    /// A scalability mode (W3C webrtc-svc): `L1T1`–`L1T3`, or spatial layers predicted from the
    /// one below on key pictures only, `L2T1_KEY`–`L3T3_KEY`. Returns (spatial, temporal) layers.
    static func scalability(_ text: String) throws(UsageError) -> (Int, Int) {
        let t = text.uppercased()
        let modes = ["L1T1", "L1T2", "L1T3"] + (2...3).flatMap { s in (1...3).map { "L\(s)T\($0)_KEY" } }
        guard modes.contains(t) else {
            let hint =
                t.hasPrefix("L2") || t.hasPrefix("L3")
                ? " — spatial layers are built as the _KEY modes (inter-layer prediction on key pictures only)" : ""
            throw UsageError("invalid --scalability '\(text)' (use L1T1, L1T2, L1T3 or L2T1_KEY … L3T3_KEY\(hint))")
        }
        let chars = Array(t)
        return (Int(String(chars[1]))!, Int(String(chars[3]))!)
    }

    static func temporalLayers(_ text: String?) throws(UsageError) -> Int {
        guard let text else { return 1 }
        switch text.uppercased() {
        case "L1T1", "1": return 1
        case "L1T2", "2": return 2
        case "L1T3", "3": return 3
        default: throw UsageError("invalid --temporal-layers '\(text)' (use L1T1, L1T2 or L1T3)")
        }
    }
}
