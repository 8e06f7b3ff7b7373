import ReceiverEngine
import WebRTCClient
import Transport
import Stats
import Platform
import Fleet

/// What the subscribers got, per room and over the fleet: glass-to-glass latency (each decoding
/// subscriber's mean), freezes, frame rate (decoded, or completed where not decoding).
struct SubscriberSummary {
    struct One {
        var number: Int
        var room: Int
        var decodes: Bool
        var error: String?
        var latencyMs: Double?
        var freezes: Int
        var freezeMs: Double
        /// Frames decoded per second while it decoded (nil: not decoding, or a rotating decoder on
        /// it for under 2 s — too short a window), and completed per second (every one).
        var fps: Double?
        var completedFps: Double
        var width: Int
        var height: Int
        var lost: Int
        var received: Int
        var iceMs: Double?
        var dtlsMs: Double?
        /// Feedback this subscriber sent the server (its key-frame requests and NACKs).
        var pliSent: Int
        var nackSent: Int
        /// Picture quality of the frames it decoded against pubbot's source (nil: none measured).
        var psnrY: Double?
        var ssimY: Double?
        /// ICE restarts asked of the server, refused, set off by the consent watch and by an
        /// interface change, and the last one's time to a new pair.
        var iceRestarts = 0
        var iceRestartsRefused = 0
        var iceRecoveries = 0
        var interfaceRestarts = 0
        var iceRestartRecoveryMs: Int?
        var iceRestartError: String?
    }
    var subscribers: [One]
    var rooms: Int
    /// Rotating decoders: how many decode at a time, and how long each stays (nil: every
    /// subscriber decoded all along).
    var rotation: (decoders: Int, seconds: Double)?

    init(_ members: [SubscriberFleet.Member], rooms: Int, rotation: (decoders: Int, seconds: Double)? = nil) {
        self.rooms = rooms
        self.rotation = rotation
        subscribers = members.map { m in
            let v = m.snapshot?.streams.first { $0.kind == .video }
            let t = m.snapshot?.webrtcPublishers.first
            return One(
                number: m.number, room: m.room, decodes: m.decodes, error: m.error, latencyMs: v?.latencyMeanMillis,
                freezes: v?.freezeCount ?? 0, freezeMs: v?.totalFreezesDurationMillis ?? 0,
                fps: m.decodes ? v.flatMap(Self.decodedFrameRate) : nil, completedFps: v?.completedFrameRate ?? 0,
                width: v?.width ?? 0, height: v?.height ?? 0, lost: max(0, v?.packetsLost ?? 0), received: v?.packetsReceived ?? 0,
                iceMs: t?.transport?.iceMillis, dtlsMs: t?.transport?.dtlsMillis,
                pliSent: m.snapshot?.pliSent ?? 0, nackSent: m.snapshot?.nackSent ?? 0, psnrY: v?.psnrYMean, ssimY: v?.ssimYMean,
                iceRestarts: m.iceRestartsAsked, iceRestartsRefused: m.iceRestartsRefused, iceRecoveries: m.iceRecoveries,
                interfaceRestarts: m.interfaceRestarts, iceRestartRecoveryMs: m.iceRestartRecoveryMs, iceRestartError: m.iceRestartError)
        }
    }

    var failed: Int { subscribers.filter { $0.error != nil }.count }

    /// Frames decoded per second of decoding (from each decoding period's first decoded frame:
    /// a rotating decoder's wait for its key frame is not counted against it); nil for less
    /// than 2 s of it.
    static func decodedFrameRate(_ v: InboundStreamStats) -> Double? {
        v.decodingMillis >= 2000 ? Double(v.framesDecoded) * 1000 / v.decodingMillis : nil
    }

    static func rounded(_ v: Double?, _ scale: Double) -> JSONValue { v.map { .double(($0 * scale).rounded() / scale) } ?? .null }

    static func figures(_ s: [One]) -> JSONValue {
        let ok = s.filter { $0.error == nil }
        let lat = ok.compactMap(\.latencyMs), fps = ok.map(\.completedFps), fr = ok.map { Double($0.freezes) }
        let dfps = ok.compactMap(\.fps), psnr = ok.compactMap(\.psnrY), ssim = ok.compactMap(\.ssimY)
        func p(_ v: [Double], _ q: Double) -> JSONValue { v.isEmpty ? .null : .double((LoadReport.percentileD(v, q) * 10).rounded() / 10) }
        func p2(_ v: [Double], _ q: Double) -> JSONValue {
            v.isEmpty ? .null : .double((LoadReport.percentileD(v, q) * 100).rounded() / 100)
        }
        func p4(_ v: [Double], _ q: Double) -> JSONValue {
            v.isEmpty ? .null : .double((LoadReport.percentileD(v, q) * 10000).rounded() / 10000)
        }
        return .object([
            ("subscribers", .int(Int64(s.count))), ("ok", .int(Int64(ok.count))),
            ("decoding", .int(Int64(s.filter(\.decodes).count))),
            ("latencyMs", .object([("p50", p(lat, 0.5)), ("p95", p(lat, 0.95)), ("max", p(lat, 1))])),
            ("freezes", .object([("total", .int(Int64(ok.reduce(0) { $0 + $1.freezes }))), ("p95", p(fr, 0.95)), ("max", p(fr, 1))])),
            ("decodedFrameRate", .object([("p5", p(dfps, 0.05)), ("p50", p(dfps, 0.5)), ("min", p(dfps, 0))])),
            ("completedFrameRate", .object([("p5", p(fps, 0.05)), ("p50", p(fps, 0.5)), ("min", p(fps, 0))])),
            // Over the decoding subscribers' means (each its frames' PSNR-Y mean, dB).
            (
                "psnrYDb",
                .object([
                    ("measured", .int(Int64(psnr.count))), ("p10", p2(psnr, 0.10)), ("p50", p2(psnr, 0.5)), ("min", p2(psnr, 0))
                ])
            ),
            ("ssimY", .object([("p10", p4(ssim, 0.10)), ("p50", p4(ssim, 0.5))])),
            ("pliSent", .int(Int64(s.reduce(0) { $0 + $1.pliSent }))), ("nackSent", .int(Int64(s.reduce(0) { $0 + $1.nackSent })))
        ])
    }

    /// The subscribers' ICE restarts (RFC 9725 §4.3.3): asked, refused, the subscribers whose
    /// restart selected a new pair and how long that took; null when none was asked.
    var restartsJSON: JSONValue {
        let asked = subscribers.reduce(0) { $0 + $1.iceRestarts }
        guard asked > 0 else { return .null }
        return LoadReport.restartsJSON(
            asked: asked, refused: subscribers.reduce(0) { $0 + $1.iceRestartsRefused },
            recovery: subscribers.compactMap(\.iceRestartRecoveryMs), byConsentWatch: subscribers.reduce(0) { $0 + $1.iceRecoveries },
            byInterfaceChange: subscribers.reduce(0) { $0 + $1.interfaceRestarts }, recoveredKey: "subscribersRecovered",
            extra: [("lastRefusal", subscribers.compactMap(\.iceRestartError).last.map { .string($0) } ?? .null)])
    }

    var json: JSONValue {
        func ms(_ v: Double?) -> JSONValue { v.map { .double(($0 * 10).rounded() / 10) } ?? .null }
        let decoders: JSONValue = rotation.map { .int(Int64($0.decoders)) } ?? .string("all")
        let rotationSeconds: JSONValue = rotation.map { .double($0.seconds) } ?? .null
        return .object([
            ("decoders", decoders), ("decoderRotationSeconds", rotationSeconds),
            ("fleet", Self.figures(subscribers)),
            ("iceRestarts", restartsJSON),
            (
                "rooms",
                .array(
                    (0..<rooms).map { r in
                        guard case let .object(f) = Self.figures(subscribers.filter { $0.room == r }) else { return .null }
                        return .object([("room", .int(Int64(r)))] + f)
                    })
            ),
            (
                "perSubscriber",
                .array(
                    subscribers.map { s in
                        var restarts: [(String, JSONValue)] = []
                        if s.iceRestarts > 0 {
                            restarts = [
                                ("iceRestarts", .int(Int64(s.iceRestarts))), ("iceRestartsRefused", .int(Int64(s.iceRestartsRefused))),
                                ("iceRestartRecoveryMs", s.iceRestartRecoveryMs.map { .int(Int64($0)) } ?? .null),
                                ("iceRecoveries", .int(Int64(s.iceRecoveries))), ("interfaceRestarts", .int(Int64(s.interfaceRestarts)))
                            ]
                        }
                        return .object(
                            [
                                ("subscriber", .int(Int64(s.number))), ("room", .int(Int64(s.room))), ("decodes", .bool(s.decodes)),
                                ("error", s.error.map { .string($0) } ?? .null),
                                ("width", .int(Int64(s.width))), ("height", .int(Int64(s.height))),
                                ("decodedFrameRate", s.fps.map { .double(($0 * 10).rounded() / 10) } ?? .null),
                                ("completedFrameRate", .double((s.completedFps * 10).rounded() / 10)),
                                ("freezeCount", .int(Int64(s.freezes))), ("totalFreezesDurationMs", .double(s.freezeMs.rounded())),
                                ("latencyMeanMs", ms(s.latencyMs)), ("packetsReceived", .int(Int64(s.received))),
                                ("psnrYMeanDb", Self.rounded(s.psnrY, 100)), ("ssimYMean", Self.rounded(s.ssimY, 10000)),
                                ("packetsLost", .int(Int64(s.lost))),
                                ("pliSent", .int(Int64(s.pliSent))), ("nackSent", .int(Int64(s.nackSent))),
                                ("iceDurationMs", ms(s.iceMs)), ("dtlsDurationMs", ms(s.dtlsMs))
                            ] + restarts)
                    })
            )
        ])
    }

    var human: String {
        func line(_ label: String, _ s: [One]) -> String {
            let ok = s.filter { $0.error == nil }
            let lat = ok.compactMap(\.latencyMs), fps = ok.compactMap(\.fps)
            var out = "  \(label): \(ok.count)/\(s.count) receiving (\(ok.filter(\.decodes).count) decoded)"
            if !lat.isEmpty {
                out +=
                    ", latency p50 \(Units.fixed(LoadReport.percentileD(lat, 0.5), 1)) ms p95 \(Units.fixed(LoadReport.percentileD(lat, 0.95), 1)) ms"
            }
            if !fps.isEmpty {
                out +=
                    ", decoded fps p5 \(Units.fixed(LoadReport.percentileD(fps, 0.05), 1)) p50 \(Units.fixed(LoadReport.percentileD(fps, 0.5), 1))"
            }
            let psnr = ok.compactMap(\.psnrY)
            if !psnr.isEmpty {
                out +=
                    ", PSNR-Y p10 \(Units.fixed(LoadReport.percentileD(psnr, 0.1), 1)) p50 \(Units.fixed(LoadReport.percentileD(psnr, 0.5), 1)) dB"
            }
            out += ", freezes \(ok.reduce(0) { $0 + $1.freezes }), sent \(s.reduce(0) { $0 + $1.pliSent }) PLI\n"
            return out
        }
        var out = "subscribers (WHEP, through the server):\n"
        if let r = rotation {
            out +=
                "  \(r.decoders) decoder\(r.decoders == 1 ? "" : "s") rotating every \(Units.fixed(r.seconds, 0)) s: latency and decoded fps are theirs; every subscriber counts frames and freezes\n"
        }
        out += line("fleet", subscribers)
        let asked = subscribers.reduce(0) { $0 + $1.iceRestarts }
        if asked > 0 {
            out +=
                "  "
                + LoadReport.restartsLine(
                    asked: asked, refused: subscribers.reduce(0) { $0 + $1.iceRestartsRefused },
                    recovery: subscribers.compactMap(\.iceRestartRecoveryMs), who: "subscribers")
        }
        if rooms > 1 { for r in 0..<rooms { out += line("room \(r)", subscribers.filter { $0.room == r }) } }
        for s in subscribers where s.error != nil { out += "  subscriber \(s.number) (room \(s.room)): \(s.error!)\n" }
        return out
    }
}
