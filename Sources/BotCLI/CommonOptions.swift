import HTTPSignaling
import WebRTCClient
import ICE
#if canImport(Glibc)
    import Glibc
#endif
import MediaCodecs
import PublisherEngine
import Transport
import RTPCore
import Stats

/// Option handling shared by publish and preflight.
enum CommonOptions {
    static let media: [String: OptionSpec.Kind] = [
        "duration": .value, "layers": .value, "fps": .value, "temporal-layers": .value, "scalability": .value, "srtp-suite": .value,
        "keyframe-interval": .value, "json": .flag, "mtu": .value, "stats": .value, "stats-interval": .value,
        "condition-thresholds": .value, "audio-fallback": .flag, "codec": .value, "content": .value
    ]

    static func suite(_ o: ParsedOptions) throws(UsageError) -> SRTPSuite {
        guard let s = o.value("srtp-suite") else { return .aesCm }
        guard let suite = SRTPSuite(rawValue: s.lowercased()) else { throw UsageError("invalid --srtp-suite '\(s)' (use aes-cm or gcm)") }
        return suite
    }

    /// The ladder from `--layers`/`--fps`/`--temporal-layers`; `relayed` (several `--to`) keeps
    /// the 30 fps default rates at lower frame rates (`VideoLayerConfig.defaults`).
    static func layers(_ o: ParsedOptions, relayed: Bool = false) throws(UsageError) -> [VideoLayerConfig] {
        var tl = try ValueParsers.temporalLayers(o.value("temporal-layers"))
        var spatial = 1
        if let text = o.value("scalability") {
            (spatial, tl) = try ValueParsers.scalability(text)
            if let t = o.value("temporal-layers"), try ValueParsers.temporalLayers(t) != tl {
                throw UsageError("--scalability \(text) and --temporal-layers \(t) disagree (give one)")
            }
        }
        guard spatial > 1 else { return try ladder(o, temporalLayers: tl, relayed: relayed) }
        // Spatial layers: one stream, its top the ladder's largest layer.
        let top = try ladder(o, temporalLayers: tl, relayed: relayed).max { $0.width * $0.height < $1.width * $1.height }!
        return [VideoLayerConfig.spatial(top: top, spatialLayers: spatial)]
    }

    static func ladder(_ o: ParsedOptions, temporalLayers tl: Int, relayed: Bool) throws(UsageError) -> [VideoLayerConfig] {
        var fps = 30
        if let f = o.value("fps") {
            guard let v = Int(f), ValueParsers.frameRates.contains(v) else {
                throw UsageError("invalid --fps '\(f)' (\(ValueParsers.frameRateList))")
            }
            fps = v
        }
        if let l = o.value("layers") { return try ValueParsers.ladder(l, temporalLayers: tl, defaultFps: fps, relayed: relayed) }
        return VideoLayerConfig.ladder(top: 1280, 720, fps: fps, temporalLayers: tl, scaledByFrameRate: !relayed)
    }

    static func apply(_ o: ParsedOptions, to c: inout PublisherConfig, relayed: Bool = false) throws(UsageError) {
        c.layers = try layers(o, relayed: relayed)
        if let text = o.value("codec") {
            let codecs = try ValueParsers.codecs(text)
            c.videoCodec = codecs[0]
            c.videoCodecPreference = codecs
        }
        let spatialCodecs: [VideoCodec] = [.vp9, .av1]
        if let l = c.layers.first(where: { $0.spatialLayers > 1 }),
            !spatialCodecs.contains(c.videoCodec) || c.videoCodecPreference.contains(where: { !spatialCodecs.contains($0) })
        {
            throw UsageError("--scalability \(l.scalabilityMode): spatial layers are built for VP9 and AV1 (use --codec vp9 or av1)")
        }
        if let t = o.value("content") { c.content = try ValueParsers.content(t) }
        if let t = o.value("condition-thresholds") { c.conditionThresholds = try conditionThresholds(t) }
        c.audioFallback = o.has("audio-fallback")
        if let d = o.value("keyframe-interval") {
            c.keyFrameIntervalMicros = try ValueParsers.duration(d, option: "keyframe-interval")
        }
        if let m = o.value("mtu") {
            guard let v = Int(m), (300...1400).contains(v) else { throw UsageError("invalid --mtu '\(m)' (RTP packet size 300…1400)") }
            c.maxPacketSize = v
        }
    }

    static func key(_ o: ParsedOptions, suite: SRTPSuite) throws(UsageError) -> SRTPKey {
        guard let k = o.value("key") else { return .random(suite: suite) }
        do { return try SRTPKey(base64: k, suite: suite) } catch { throw UsageError("invalid --key: \(error)") }
    }

    /// `--condition-thresholds loss=0.5/2/5/10,estimate=75%,window=5s,hold=2`: the loss
    /// percentages below which the condition is excellent/good/fair/warning, the estimate share
    /// `good` needs, the loss window and the hysteresis (defaults in the Commands article).
    static func conditionThresholds(_ text: String) throws(UsageError) -> NetworkConditionThresholds {
        var t = NetworkConditionThresholds()
        for item in text.split(separator: ",") {
            let kv = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else {
                throw UsageError("invalid --condition-thresholds '\(item)' (e.g. loss=0.5/2/5/10,estimate=75%,window=5s,hold=2)")
            }
            switch kv[0] {
            case "loss":
                let v = kv[1].split(separator: "/").compactMap { Double($0) }
                guard v.count == 4, v.allSatisfy({ $0 > 0 && $0 <= 100 }), v == v.sorted(), Set(v).count == 4 else {
                    throw UsageError("--condition-thresholds loss needs four increasing percentages, e.g. loss=0.5/2/5/10")
                }
                (t.excellentLoss, t.goodLoss, t.fairLoss, t.warningLoss) = (v[0] / 100, v[1] / 100, v[2] / 100, v[3] / 100)
            case "estimate":
                let n = kv[1].hasSuffix("%") ? String(kv[1].dropLast()) : kv[1]
                guard let v = Double(n), v > 0, v <= 100 else {
                    throw UsageError("--condition-thresholds estimate is a percentage, e.g. estimate=75%")
                }
                t.goodEstimateShare = v / 100
            case "window":
                t.windowMicros = try ValueParsers.duration(kv[1], option: "condition-thresholds")
                guard t.windowMicros >= 1_000_000 else { throw UsageError("--condition-thresholds window must be at least 1s") }
            case "hold":
                guard let v = Int(kv[1]), (1...60).contains(v) else { throw UsageError("--condition-thresholds hold is 1…60 evaluations") }
                t.holdEvaluations = v
            default: throw UsageError("unknown --condition-thresholds key '\(kv[0])' (loss, estimate, window, hold)")
            }
        }
        return t
    }

    /// `--stats FILE|-` and `--stats-interval D` (default 1 s).
    static func stats(_ o: ParsedOptions) throws(UsageError) -> (StatsStream, Int64)? {
        guard let (writer, interval) = try statsWriter(o) else { return nil }
        return (StatsStream(writer), interval)
    }

    static func statsWriter(_ o: ParsedOptions) throws(UsageError) -> (JSONLinesWriter, Int64)? {
        guard let target = o.value("stats") else {
            if o.value("stats-interval") != nil { throw UsageError("--stats-interval needs --stats FILE|-") }
            return nil
        }
        let interval =
            try o.value("stats-interval").map { d throws(UsageError) in try ValueParsers.duration(d, option: "stats-interval") }
            ?? 1_000_000
        guard interval >= 100_000 else { throw UsageError("--stats-interval must be at least 100ms") }
        guard let writer = JSONLinesWriter(target: target) else { throw UsageError("cannot open '\(target)' for --stats") }
        return (writer, interval)
    }

    static func address(_ text: String, option: String) throws(UsageError) -> SocketAddress {
        do { return try SocketAddress(parsing: text) } catch {
            throw UsageError("invalid --\(option) '\(text)': expected HOST:PORT, e.g. 127.0.0.1:5004 or [::1]:5004")
        }
    }

    /// The options every WHIP command takes.
    static let whip: [String: OptionSpec.Kind] = [
        "whip": .value, "token": .value, "ice-server": .repeated, "ice-interface": .repeated,
        "turn-username": .value, "turn-credential": .value, "ice-policy": .value, "turn-ca": .value, "strict": .flag,
        "no-trickle": .flag, "ca-file": .value, "no-ipv6": .flag
    ]

    /// `--no-ipv6`: this run's signalling and media over IPv4 only — names resolve to IPv4
    /// addresses (the endpoint, STUN and TURN servers), libcurl connects over IPv4, the media
    /// socket binds an IPv4 address and offers IPv4 candidates (a host whose IPv6 path is broken
    /// while its name has an AAAA record; RFC 8421 dual-stack agents prefer IPv6). An IPv6
    /// literal among the URLs is refused here, not left to fail to resolve.
    static func noIPv6(_ o: ParsedOptions, urls: [String], iceServers: [ICEServerURL] = [], command: String? = nil) throws(UsageError) {
        guard o.has("no-ipv6") else { return }
        for url in urls {
            guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { continue }
            if url[colon...].dropFirst(3).hasPrefix("[") {
                throw UsageError(
                    "--no-ipv6 with an IPv6 endpoint '\(SignalingClient.redacted(url))' (give its IPv4 address or a name)", command: command
                )
            }
        }
        for s in iceServers where s.host.contains(":") {
            throw UsageError("--no-ipv6 with an IPv6 --ice-server '\(s.host)'", command: command)
        }
        SocketAddress.ipv4Only = true
        SignalingClient.ipv4Only = true
    }

    /// `--ice-recover-after D` (WHIP): restart ICE when the path has answered no consent check
    /// for D — at least 7 s (consent is checked every 4–6 s, RFC 7675 §5.1) and under the 30 s
    /// after which consent is lost.
    static func iceRecoverAfter(_ o: ParsedOptions, whip: Bool) throws(UsageError) -> Int64? {
        guard let text = o.value("ice-recover-after") else { return nil }
        guard whip else { throw UsageError("--ice-recover-after needs --whip (the restart is a PATCH to the session, RFC 9725 §4.3.3)") }
        let d = try ValueParsers.duration(text, option: "ice-recover-after")
        guard (7_000_000..<30_000_000).contains(d) else {
            throw UsageError("--ice-recover-after must be 7s…29s (consent is checked every 4–6 s and lost after 30 s)")
        }
        return d
    }

    /// `--ca-file FILE`: the CA certificates (PEM) the https exchanges of this run verify the
    /// server with (a private CA; default the system's store). Checked readable here.
    static func caFile(_ o: ParsedOptions, command: String? = nil) throws(UsageError) {
        guard let path = o.value("ca-file") else { return }
        guard let f = fopen(path, "r") else {
            throw UsageError("cannot read the --ca-file '\(path)' (\(String(cString: strerror(errno))))", command: command)
        }
        fclose(f)
        SignalingClient.caFile = path
    }

    /// `--whip URL` and what goes with it (secrets also from PUBBOT_WHIP_TOKEN and
    /// PUBBOT_TURN_CREDENTIAL); nil without --whip, where the other WHIP options are refused.
    /// `--whep URL [--whep-token T]` beside `--whip` (preflight, load): the token from
    /// `--whep-token`, `PUBBOT_WHEP_TOKEN` or the WHIP one; the WHIP interface. `needs` says
    /// why --whip is required.
    static func whepOptions(_ o: ParsedOptions, whip: WHIPOptions?, needs: String) throws(UsageError) -> WHIPOptions? {
        guard let url = o.value("whep") else {
            if o.value("whep-token") != nil { throw UsageError("--whep-token needs --whep URL") }
            return nil
        }
        guard let w = whip else { throw UsageError("--whep needs --whip URL (\(needs))") }
        guard url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://"), url.count > 8 else {
            throw UsageError("invalid --whep '\(SignalingClient.redacted(url))' (an http:// or https:// URL of a WHEP endpoint)")
        }
        var s = WHIPOptions(
            endpoint: url, token: o.value("whep-token") ?? getenv("PUBBOT_WHEP_TOKEN").map { String(cString: $0) } ?? w.token)
        s.interfaces = w.interfaces
        s.strict = w.strict
        return s
    }

    static func whipOptions(_ o: ParsedOptions) throws(UsageError) -> WHIPOptions? {
        guard let url = o.value("whip") else {
            for flag in ["token", "ice-server", "ice-interface", "turn-username", "turn-credential", "ice-policy", "turn-ca"]
            where o.value(flag) != nil {
                throw UsageError("--\(flag) needs --whip URL")
            }
            if o.has("strict") { throw UsageError("--strict needs --whip URL") }
            if o.has("no-trickle") { throw UsageError("--no-trickle needs --whip URL") }
            if o.has("no-ipv6") { throw UsageError("--no-ipv6 needs --whip URL") }
            if o.value("ca-file") != nil && o.value("whep") == nil { throw UsageError("--ca-file needs --whip URL (or --whep URL)") }
            return nil
        }
        guard url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://"), url.count > 8 else {
            throw UsageError("invalid --whip '\(SignalingClient.redacted(url))' (an http:// or https:// URL of a WHIP endpoint)")
        }
        func env(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        var w = WHIPOptions(endpoint: url, token: o.value("token") ?? env("PUBBOT_WHIP_TOKEN"))
        try caFile(o)
        for s in o.all("ice-server") {
            do { w.iceServers.append(try ICEServerURL.parse(s)) } catch { throw UsageError("invalid --ice-server \(error)") }
        }
        try noIPv6(o, urls: [url] + [o.value("whep")].compactMap { $0 }, iceServers: w.iceServers)
        w.turnCAFile = o.value("turn-ca")
        w.strict = o.has("strict")
        w.trickle = !o.has("no-trickle")
        w.interfaces = o.all("ice-interface")
        w.turnUsername = o.value("turn-username")
        w.turnCredential = o.value("turn-credential") ?? env("PUBBOT_TURN_CREDENTIAL")
        if let p = o.value("ice-policy") {
            guard let policy = WHIPOptions.Policy(rawValue: p) else {
                throw UsageError("invalid --ice-policy '\(p)' (all, relay or no-host)")
            }
            w.policy = policy
        }
        let hasTURN = w.iceServers.contains(where: \.isTURN)
        if hasTURN && (w.turnUsername == nil || w.turnCredential == nil) {
            throw UsageError("a turn: --ice-server needs --turn-username and --turn-credential (or PUBBOT_TURN_CREDENTIAL)")
        }
        if w.policy == .relay && !hasTURN { throw UsageError("--ice-policy relay needs a --ice-server turn:HOST:PORT") }
        return w
    }
}
