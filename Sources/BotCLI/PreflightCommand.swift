import WHIP
import MediaCodecs
import PublisherEngine
import LoopbackReceiver
import Transport
import Stats
import Preflight
import PreflightRunner
import RTPCore
import Platform
import WHIPPublish
import DTLS
#if canImport(Glibc)
    import Glibc
#endif

/// `pubbot preflight`: embedded receiver + publisher over loopback, per-layer results.
enum PreflightCommand {
    static let spec: OptionSpec = {
        var o = CommonOptions.media
        for (k, v) in [
            "audio-only": OptionSpec.Kind.flag, "impair": .value, "to": .value, "key": .value, "sdp": .value, "require": .value,
            "junit": .value, "verdict-thresholds": .value, "whep": .value, "whep-token": .value
        ] { o[k] = v }
        for (k, v) in CommonOptions.whip { o[k] = v }
        return OptionSpec(options: o)
    }()

    /// Tiers and "audio", as --require accepts them.
    static let requirements = Tier.all.map(\.name) + ["audio"] + paths
    /// Paths of the connectivity pre-flight (with --whip), as --require accepts them.
    static let paths = ["host-udp", "srflx-udp", "relay-udp", "relay-tcp", "relay-tls"]

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        let o = try ParsedOptions.parse(args, spec: spec, command: "preflight")
        if o.helpRequested { Output.out(Help.help("preflight")! + "\n"); return 0 }
        Output.stdoutIsStats = o.value("stats") == "-"
        let limit = try o.value("duration").map { d throws(UsageError) in try ValueParsers.duration(d, option: "duration") } ?? 15_000_000
        guard limit >= 2_000_000, limit <= 600_000_000 else { throw UsageError("--duration must be between 2s and 10m") }
        if let r = o.value("require"), !requirements.contains(r) {
            throw UsageError("invalid --require '\(r)' (one of \(requirements.joined(separator: ", ")))")
        }
        let thresholds = try o.value("verdict-thresholds").map { t throws(UsageError) in try verdictThresholds(t) } ?? VerdictThresholds()
        let suite = try CommonOptions.suite(o)

        // Target: the embedded loopback receiver, or a remote `pubbot receive`.
        var destination: SocketAddress
        var key: SRTPKey
        var receiver: LoopbackReceiver?
        let whipOptions = try CommonOptions.whipOptions(o)
        let whipURL = whipOptions?.endpoint
        let whepOptions = try CommonOptions.whepOptions(
            o, whip: whipOptions, needs: "pubbot subscribes to what it publishes through the server")
        if whipURL != nil {
            // A WebRTC server: the verdict comes from its feedback over ICE/DTLS-SRTP.
            for flag in ["to", "sdp", "key", "impair", "srtp-suite"] where o.value(flag) != nil {
                throw UsageError("--\(flag) does not go with --whip (the server's answer and DTLS decide the transport)")
            }
            key = SRTPKey.random(suite: .gcm)
            destination = try CommonOptions.address("127.0.0.1:9", option: "whip") // replaced by the answer's
        } else if o.value("to") != nil || o.value("sdp") != nil {
            if o.value("impair") != nil {
                throw UsageError("--impair applies to the embedded receiver; with --to, impair the remote one (pubbot receive --impair)")
            }
            var toText = o.value("to")
            if let path = o.value("sdp") {
                guard o.value("key") == nil else { throw UsageError("give either --key or --sdp, not both") }
                guard let text = ReceiveCommand.readFile(path) else { throw UsageError("cannot read the SDP file '\(path)'") }
                let sd: SessionDescription
                do { sd = try SessionDescription.parse(text) } catch { throw UsageError("invalid SDP '\(path)': \(error)") }
                guard let c = sd.media.first(where: { $0.crypto != nil })?.crypto, let sdpSuite = SRTPSuite(sdesName: c.suite) else {
                    throw UsageError("the SDP '\(path)' has no usable a=crypto line")
                }
                do { key = try SRTPKey(base64: c.inlineKey, suite: sdpSuite) } catch {
                    throw UsageError("the SDP's key is invalid: \(error)")
                }
                if toText == nil { toText = (sd.address.contains(":") ? "[\(sd.address)]" : sd.address) + ":\(sd.media[0].port)" }
            } else {
                guard o.value("key") != nil else { throw UsageError("--to needs the receiver's --key B64 (or --sdp FILE)") }
                key = try CommonOptions.key(o, suite: suite)
            }
            destination = try CommonOptions.address(toText!, option: "to")
        } else {
            if o.value("key") != nil { throw UsageError("--key is for a remote receiver (--to); the embedded one uses a fresh key") }
            key = SRTPKey.random(suite: suite)
            do {
                var rc = ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0), key: key)
                rc.impairment = try o.value("impair").map { t throws(UsageError) in try ValueParsers.impairment(t, option: "impair") }
                let r = try LoopbackReceiver(config: rc)
                receiver = r
                destination = r.localAddress
            } catch let e as UsageError {
                throw e
            } catch {
                Output.err("Error: cannot start the embedded receiver: \(error)\n")
                return 2
            }
        }
        var pc = PublisherConfig(destination: destination, key: key)
        try CommonOptions.apply(o, to: &pc)
        if o.has("audio-only") { pc.sendVideo = false; pc.layers = [] }
        pc.durationMicros = limit
        // Measure beyond what the ladder uses: the highest tier needs 5.55 Mbps with simulcast.
        pc.probeCeiling = 12_000_000
        pc.padToEstimate = true
        let stats = try CommonOptions.stats(o)

        var nextStats: Int64?
        let observer = PreflightRunner.Observer(
            interrupted: { Signals.isInterrupted },
            sample: { p, now in
                guard let (stream, interval) = stats else { return }
                if nextStats == nil { nextStats = now - 250_000 + interval }
                if now >= nextStats! { stream.emit(p); nextStats! += interval }
            },
            progress: { label, fraction, elapsed, estimate, answered in
                Output.progress(
                    "\(label) \(Output.bar(fraction)) \(Units.fixed(elapsed, 1))s  estimate \(estimate.map { Units.bitrate($0) } ?? "-")  \(answered ? "" : "waiting for the receiver…")"
                )
            })
        var connector = PreflightRunner.Connector.plain
        let whipSessions = Locked<[WHIPConnection]>([])
        // The round trip through the server: subscribed once the main phase's publisher is up,
        // ended when that phase ends (the audio-only phase has no video to look at).
        let probe = whepOptions.map(WHEPProbe.init)
        let probeResult = Locked<WHEPProbe.Result?>(nil)
        if let options = whipOptions {
            if o.value("cname") == nil { pc.cname = WHIPConnection.randomCNAME() }
            let certificate: DTLSCertificate
            do { certificate = try DTLSCertificate() } catch {
                Output.err("Error: \(error)\n")
                return 2
            }
            let opts = options
            connector = PreflightRunner.Connector { base in
                do {
                    let w = try WHIPConnection.open(opts, base: base, certificate: certificate, sleep: { Clock.sleep(micros: $0) })
                    whipSessions.withLock { $0.append(w) }
                    do {
                        let p = try Publisher(config: w.config, socket: w.socket, webrtc: (w.transport, w.local), tcp: w.turnTCP)
                        if let probe, whipSessions.value.count == 1 {
                            probe.start(delayMicros: 1_500_000)
                            return .success(
                                (
                                    p,
                                    {
                                        probeResult.withLock { $0 = probe.stop() }; _ = w.end()
                                    }
                                ))
                        }
                        return .success((p, { _ = w.end() }))
                    } catch {
                        w.end()
                        return .failure(.init(message: "\(error)"))
                    }
                } catch {
                    return .failure(.init(message: "\(error)"))
                }
            }
        }
        // Every way out DELETEs what was created (each phase ends its own; this catches the rest).
        defer { for w in whipSessions.value { w.end() } }
        if let r = o.value("require"), paths.contains(r), whipOptions == nil {
            throw UsageError("--require \(r) is a connectivity path: it needs --whip URL")
        }
        // The connectivity pre-flight: each path on its own, before the media test.
        var connectivity: [PathResult] = []
        if let options = whipOptions {
            Output.progress("connectivity: trying each path (host, server-reflexive, relay)…")
            do {
                connectivity = ConnectivityCheck.run(
                    options, base: pc, certificate: try DTLSCertificate(), sleep: { Clock.sleep(micros: $0) })
            } catch {
                Output.err("Error: \(error)\n")
                return 2
            }
            Output.endProgress()
        }
        // With --whep the subscriber joins 1.5 s in: let it watch at least 8 s (within --duration).
        let outcome = PreflightRunner.run(
            pc, receiver: receiver, thresholds: thresholds, observer: observer, connector: connector,
            minimumMicros: whepOptions == nil ? 0 : 9_500_000)
        let phase = outcome.phase
        if phase.interrupted { Output.endProgress(); return 130 }
        if let failure = phase.publisher?.network.transport?.failure {
            Output.endProgress()
            Output.err("Error: \(failure)\n")
            writeJUnit(o.value("junit"), paths: connectivity, verdict: nil, requirement: o.value("require"), failure: failure)
            return 2
        }
        if let e = phase.startError {
            // One message for one failure: the receiver was never asked anything.
            Output.endProgress()
            Output.err(whipURL == nil ? "Error: the publisher could not start: \(e)\n" : "Error: \(e)\n")
            writeJUnit(
                o.value("junit"), paths: connectivity, verdict: nil, requirement: o.value("require"),
                failure: "the publisher could not start")
            return 2
        }
        guard phase.answered, let verdict = outcome.verdict else {
            Output.endProgress()
            if let url = whipURL {
                if let t = phase.publisher?.network.transport, t.srtpCipher == nil {
                    Output.err(
                        "Error: no media path to the WHIP server at \(WHIPClient.redacted(url)): ICE and DTLS did not finish\(t.failure.map { " (\($0))" } ?? " within 12 s")\n"
                    )
                } else {
                    Output.err(
                        "Error: no RTCP from the WHIP server at \(WHIPClient.redacted(url)) within 3 s of ICE and DTLS finishing: it does not send receiver feedback\n"
                    )
                }
                writeJUnit(
                    o.value("junit"), paths: connectivity, verdict: nil, requirement: o.value("require"),
                    failure: "no feedback from the WHIP server")
                return 2
            }
            Output.err(
                "Error: no answer from the receiver at \(destination) within 3 s — check the address and port, that `pubbot receive` is running there with the same key (--key/--sdp) and SRTP suite, and that no firewall drops UDP in either direction\n"
            )
            writeJUnit(
                o.value("junit"), paths: connectivity, verdict: nil, requirement: o.value("require"), failure: "no answer from the receiver"
            )
            return 2
        }
        if let e = outcome.audioOnlyError { Output.err("warning: the audio-only phase could not start: \(e)\n") }
        if probe != nil && probeResult.value == nil { probeResult.withLock { $0 = probe?.stop() } }
        let subscriber = probeResult.value
        let audioOnly = outcome.audioOnly
        Output.endProgress()
        let met = o.value("require").map { r in
            paths.contains(r) ? connectivity.contains { $0.path == r && $0.reachable } : verdict.meets(r)
        }
        writeJUnit(o.value("junit"), paths: connectivity, verdict: verdict, requirement: o.value("require"), failure: nil)
        let whip = whipSessions.value.first
        if o.has("json") {
            var doc = json(verdict, phase: phase, audioOnly: audioOnly, requirement: o.value("require"), met: met, thresholds: thresholds)
            if case var .object(f) = doc, let w = whip {
                let t = phase.publisher?.network.transport
                f.append(
                    (
                        "whip",
                        .object(
                            [
                                ("endpoint", .string(WHIPClient.redacted(w.resource.resourceURL))),
                                ("negotiated", .object(w.summary.map { ($0.0, .string($0.1)) }))
                            ]
                                + (t.map { TransportFields.json($0, rttMillis: phase.measurement.roundTripTimeMillis) } ?? []))
                    ))
                f.append(
                    (
                        "connectivity",
                        .array(
                            connectivity.map { r in
                                .object([
                                    ("path", .string(r.path)), ("reachable", .bool(r.reachable)),
                                    ("connectMs", r.connectMs.map { .double(($0 * 10).rounded() / 10) } ?? .null),
                                    ("roundTripTimeMs", r.rttMs.map { .double(($0 * 100).rounded() / 100) } ?? .null),
                                    ("detail", .string(r.detail))
                                ])
                            })
                    ))
                // No direct path worked: only a relay can carry this client's media.
                f.append(("turnRequired", .bool(!connectivity.contains { $0.path == "host-udp" && $0.reachable })))
                f.append(
                    (
                        "path",
                        t.flatMap { t in t.localCandidateType.map { "\($0) → \(t.remoteCandidateType ?? "?")" } }.map { .string($0) }
                            ?? .null
                    ))
                if let subscriber { f.append(("subscriber", WHEPProbe.json(subscriber))) }
                doc = .object(f)
            }
            Output.out(doc.serialized(pretty: true) + "\n")
        } else {
            let target = whipURL.map(WHIPClient.redacted) ?? (receiver == nil ? "\(destination)" : "embedded loopback receiver")
            var text = human(verdict, phase: phase, audioOnly: audioOnly, target: target, requirement: o.value("require"), met: met)
            if !connectivity.isEmpty {
                var table = TextTable(headers: ["path", "reachable", "connect", "RTT", "detail"], rightAligned: [2, 3])
                for r in connectivity {
                    table.add([
                        r.path, r.reachable ? "yes" : "NO", r.connectMs.map { Units.fixed($0, 1) + " ms" } ?? "-",
                        r.rttMs.map { Units.fixed($0, 2) + " ms" } ?? "-", r.detail
                    ])
                }
                text += "\nconnectivity (each path on its own):\n" + table.render()
                if !connectivity.contains(where: { $0.path == "host-udp" && $0.reachable }) {
                    text += "TURN required: no direct path worked\n"
                }
            }
            if let w = whip, let t = phase.publisher?.network.transport {
                text += "\nWHIP: " + w.summary.map { "\($0.0) \($0.1)" }.joined(separator: ", ") + "\n"
                text +=
                    "ICE \(t.iceDurationMs ?? 0) ms (\(t.localCandidateType ?? "?") \(t.localAddress ?? "?") → \(t.remoteCandidateType ?? "?") \(t.remoteAddress ?? "?")), DTLS \(t.dtlsDurationMs ?? 0) ms, \(t.srtpCipher ?? "-")\n"
            }
            if let subscriber { text += WHEPProbe.text(subscriber) }
            Output.out(text)
        }
        if let e = subscriber?.error {
            Output.err("Error: WHEP subscriber: \(e)\n")
            return 2
        }
        if let met { return met ? 0 : 1 }
        return 0
    }

    /// `--verdict-thresholds share=75%,audio-mos=2.4,audio-bitrate=40kbit,video-loss=10%,simulcast=on`.
    static func verdictThresholds(_ text: String) throws(UsageError) -> VerdictThresholds {
        var t = VerdictThresholds()
        for item in text.split(separator: ",") {
            let kv = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else {
                throw UsageError("invalid --verdict-thresholds '\(item)' (e.g. share=75%,audio-mos=2.4,video-loss=10%,simulcast=on)")
            }
            let pct = Double(kv[1].hasSuffix("%") ? String(kv[1].dropLast()) : kv[1])
            switch kv[0] {
            case "share":
                guard let v = pct, v > 0, v <= 200 else { throw UsageError("share is a percentage, e.g. share=75%") }; t.tierShare = v / 100
            case "audio-mos":
                guard let v = Double(kv[1]), v >= 1, v <= 4.5 else { throw UsageError("audio-mos is 1…4.5") }; t.audioMinMOS = v
            case "video-loss":
                guard let v = pct, v >= 0, v <= 100 else { throw UsageError("video-loss is a percentage") }; t.videoMaxLoss = v / 100
            case "audio-bitrate":
                let v = try ValueParsers.bitrate(kv[1], option: "--verdict-thresholds audio-bitrate")
                guard (8_000...1_000_000).contains(v) else { throw UsageError("audio-bitrate is 8kbit…1mbit (on the wire)") }
                t.audioMinBitrate = v
            case "simulcast":
                guard ["on", "off"].contains(kv[1]) else { throw UsageError("simulcast is on or off") }
                t.simulcast = kv[1] == "on"
            default:
                throw UsageError("unknown --verdict-thresholds key '\(kv[0])' (share, audio-mos, audio-bitrate, video-loss, simulcast)")
            }
        }
        return t
    }

    static func json(
        _ v: Verdict, phase: PreflightRunner.Phase, audioOnly: Measurement?, requirement: String?, met: Bool?,
        thresholds: VerdictThresholds,
        timestampMillis: Int64 = Clock.wallMicros() / 1000
    ) -> JSONValue {
        let m = v.measurement
        func part(_ p: Verdict.Part) -> JSONValue {
            .object([("supported", .bool(p.supported)), ("reason", .string(p.reason)), ("mos", .double(p.mos))])
        }
        var f: [(String, JSONValue)] = [("type", .string("verdict")), ("timestamp", .int(timestampMillis))]
        f.append(("audio", part(v.audio)))
        f.append(("video", part(v.video)))
        var recommended: JSONValue = .null
        if let r = v.recommended {
            recommended = .object([
                ("name", .string(r.name)), ("width", .int(Int64(r.width))), ("height", .int(Int64(r.height))),
                ("frameRate", .int(Int64(r.fps)))
            ])
        }
        f.append(("recommended", recommended))
        f.append(("estimate", .int(Int64(m.estimate))))
        f.append(("packetLoss", .double((m.lossFraction * 10_000).rounded() / 10_000)))
        var window: [(String, JSONValue)] = [
            ("durationMs", m.lossWindowMillis.map { .int($0) } ?? .null),
            ("source", .string(m.lossCountedFromFeedback ? "transport-cc" : "receiver reports")),
            ("afterSettling", .bool(m.lossAfterSettling))
        ]
        if let c = m.lossCount {
            window += [
                ("packetsReported", .int(Int64(c.reported))), ("packetsLost", .int(Int64(c.lost))),
                ("transportSequenceNumbers", .object([("first", .int(c.firstSequence)), ("last", .int(c.lastSequence))]))
            ]
        }
        f.append(("packetLossWindow", .object(window)))
        f.append(("lossAtFullQueue", .double((m.lossAtFullQueue * 10_000).rounded() / 10_000)))
        f.append(("networkLoss", .double((m.networkLoss * 10_000).rounded() / 10_000)))
        f.append(
            (
                "startupLoss",
                m.startupLoss.map { c in
                    .object([
                        ("fraction", .double((c.fraction * 10_000).rounded() / 10_000)), ("packetsReported", .int(Int64(c.reported))),
                        ("packetsLost", .int(Int64(c.lost)))
                    ])
                } ?? .null
            ))
        f.append(("roundTripTimeMs", m.roundTripTimeMillis.map { JSONValue.double(($0 * 10).rounded() / 10) } ?? .null))
        f.append(("jitterMs", m.jitterMillis.map { JSONValue.double(($0 * 10).rounded() / 10) } ?? .null))
        f.append(("steady", .bool(phase.steady)))
        f.append(("durationMs", .int(m.durationMillis)))
        var audioPhase: JSONValue = .null
        if let a = audioOnly {
            audioPhase = .object([
                ("packetLoss", .double(a.lossFraction)), ("roundTripTimeMs", a.roundTripTimeMillis.map { JSONValue.double($0) } ?? .null)
            ])
        }
        f.append(("audioOnlyPhase", audioPhase))
        f.append(("require", requirement.map { JSONValue.string($0) } ?? .null))
        f.append(("requirementMet", met.map { JSONValue.bool($0) } ?? .null))
        f.append(
            (
                "thresholds",
                .object([
                    ("tierShare", .double(thresholds.tierShare)), ("audioMinMOS", .double(thresholds.audioMinMOS)),
                    ("videoMaxLoss", .double(thresholds.videoMaxLoss)), ("simulcast", .bool(thresholds.simulcast))
                ])
            ))
        let sr = streamReport(phase.publisher, phase.receiver)
        f.append(("ok", .bool(sr.problems.isEmpty)))
        f.append(("streams", .array(sr.rows)))
        f.append(("problems", .array(sr.problems.map { JSONValue.string($0) })))
        f.append(("suspended", .array(sr.suspended.map { JSONValue.string($0) })))
        return .object(f)
    }

    static func human(_ v: Verdict, phase: PreflightRunner.Phase, audioOnly: Measurement?, target: String, requirement: String?, met: Bool?)
        -> String
    {
        let m = v.measurement
        var out =
            "pubbot preflight — \(target), \(Units.fixed(Double(m.durationMillis) / 1000, 1)) s\(phase.steady ? " (estimate steady)" : " (time limit)")\n\n"
        var t = TextTable(headers: ["", "supported", "MOS", "why"])
        t.add(["audio", v.audio.supported ? "yes" : "NO", Units.fixed(v.audio.mos, 2), v.audio.reason])
        t.add(["video", v.video.supported ? "yes" : "NO", Units.fixed(v.video.mos, 2), v.video.reason])
        out += t.render()
        out += "\nrecommended: " + v.recommendation + "\n"
        let window =
            m.lossWindowMillis.map {
                " over the last \(Units.fixed(Double($0) / 1000, 1)) s" + (m.lossAfterSettling ? " after the estimate settled" : "")
                    + (m.lossCountedFromFeedback ? " (transport-cc)" : "")
            } ?? ""
        out +=
            "measured: estimate \(Units.bitrate(m.estimate)), loss \(Units.fixed(m.lossFraction * 100, 1)) %\(window), RTT \(m.roundTripTimeMillis.map { Units.fixed($0, 1) + " ms" } ?? "-"), jitter \(m.jitterMillis.map { Units.fixed($0, 1) + " ms" } ?? "-")\n"
        if m.lossAtFullQueue > 0 {
            out +=
                "of that loss, \(Units.fixed(m.lossAtFullQueue * 100, 1)) % came at a full queue (tail drop behind pubbot's own overshoot; not judged); "
                + "judged: \(Units.fixed(m.networkLoss * 100, 1)) % (packets that met no full queue)\n"
        }
        if let st = m.startupLoss, st.lost > 0 {
            out +=
                "start-up: \(Units.fixed(st.fraction * 100, 1)) % of \(st.reported) packets lost while probing (pubbot's own overshoot; not judged)\n"
        }
        if let a = audioOnly {
            out +=
                "audio-only phase: loss \(Units.fixed(a.lossFraction * 100, 1)) %, RTT \(a.roundTripTimeMillis.map { Units.fixed($0, 1) + " ms" } ?? "-")\n"
        }
        let sr = streamReport(phase.publisher, phase.receiver)
        if !sr.table.isEmpty {
            out += "\n" + sr.table + "\n" + sr.details
            if !sr.suspended.isEmpty { out += "suspended for lack of bandwidth: " + sr.suspended.joined(separator: ", ") + "\n" }
            if phase.receiver != nil {
                out += sr.problems.isEmpty ? "every stream sent was decoded\n" : "PROBLEMS:\n" + sr.problems.map { "  - \($0)\n" }.joined()
            }
        }
        if let requirement, let met { out += "\nrequire \(requirement): \(met ? "met" : "NOT met")\n" }
        return out
    }

    /// JUnit XML: one test case per requirement (audio, video, and --require), for CI dashboards.
    static func writeJUnit(_ path: String?, paths results: [PathResult] = [], verdict v: Verdict?, requirement: String?, failure: String?) {
        guard let path else { return }
        func esc(_ s: String) -> String {
            s.replacingBackslashesAndQuotes.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
                .replacing("\\\"", with: "&quot;")
        }
        var cases: [(String, String?)] = []
        if let v {
            cases.append(("audio supported", v.audio.supported ? nil : v.audio.reason))
            cases.append(("video supported", v.video.supported ? nil : v.video.reason))
            if let r = requirement {
                if paths.contains(r) {
                    cases.append(("require \(r)", results.contains { $0.path == r && $0.reachable } ? nil : "not reachable"))
                } else {
                    cases.append(
                        (
                            "require \(r)",
                            v.meets(r)
                                ? nil
                                : "recommended \(v.recommended?.name ?? (v.audio.supported ? "audio only" : "none")): \(v.video.reason)"
                        ))
                }
            }
        } else {
            cases.append(("connectivity", failure ?? "no verdict"))
        }
        // One case per path of the connectivity pre-flight (--whip).
        for r in results { cases.append(("path \(r.path)", r.reachable ? nil : r.detail)) }
        if let r = requirement, paths.contains(r), v == nil {
            cases.append(("require \(r)", results.contains { $0.path == r && $0.reachable } ? nil : "not reachable"))
        }
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuite name=\"pubbot preflight\" tests=\"\(cases.count)\" failures=\"\(cases.filter { $0.1 != nil }.count)\">\n"
        for (name, fail) in cases {
            xml += "  <testcase classname=\"pubbot.preflight\" name=\"\(esc(name))\""
            if let fail { xml += ">\n    <failure message=\"\(esc(fail))\"/>\n  </testcase>\n" } else { xml += "/>\n" }
        }
        xml += "</testsuite>\n"
        if !PublishCommand.writeFile(path, xml) { Output.err("warning: cannot write the JUnit report to '\(path)'\n") }
    }

    struct StreamReport {
        var table = ""
        var rows: [JSONValue] = []
        var problems: [String] = []
        var suspended: [String] = []
        var details = ""
    }

    /// Per stream: what was sent and what the (embedded) receiver received and decoded.
    static func streamReport(_ p: PublisherSnapshot?, _ r: ReceiverSnapshot?) -> StreamReport {
        var out = StreamReport()
        guard let p else { return out }
        if let e = p.media.error { out.problems.append("encoder: \(e)") }
        if let r, r.keyMismatchSuspected { out.problems.append(r.keyMismatchMessage) }
        var t = TextTable(
            headers: [
                "stream", "sent", "decoded", "frames sent", "frames decoded", "pkts sent", "pkts recv", "lost", "bitrate", "stamps",
                "latency mean/p95"
            ],
            rightAligned: [3, 4, 5, 6, 7, 8, 9, 10])
        // A remote receiver (--to, --whip): only what was sent is known here.
        var sentOnly = TextTable(
            headers: ["stream", "sent", "frames sent", "pkts sent", "lost (reported)", "limited by"], rightAligned: [2, 3, 4])
        for o in p.streams {
            let n = Report.streamName(kind: o.kind, rid: o.rid, width: o.width, height: o.height)
            sentOnly.add([
                n, o.kind == .audio ? "opus" : "\(o.width)x\(o.height)", String(o.framesSent), String(o.packetsSent),
                String(max(0, o.packetsLostReported)), o.kind == .audio ? "-" : o.qualityLimitationReason.rawValue
            ])
        }
        for o in p.streams {
            let inb = r?.streams.first { $0.ssrc == o.ssrc }
            let name = Report.streamName(kind: o.kind, rid: o.rid, width: o.width, height: o.height)
            let decodedRes =
                inb.map { $0.kind == .audio ? ($0.framesDecoded > 0 ? "opus" : "-") : ($0.width > 0 ? "\($0.width)x\($0.height)" : "-") }
                ?? "-"
            let lat =
                inb.flatMap { i in i.latencyMeanMillis.map { "\(Units.fixed($0, 1))/\(Units.fixed(i.latencyP95Millis ?? $0, 1)) ms" } }
                ?? "-"
            t.add([
                name, o.kind == .audio ? "opus" : "\(o.width)x\(o.height)", decodedRes, String(o.framesSent),
                String(inb?.framesDecoded ?? 0),
                String(o.packetsSent), String(inb?.packetsReceived ?? 0), String(inb?.packetsLost ?? 0), Units.bitrate(inb?.bitrate ?? 0),
                o.kind == .audio ? "-" : "\(inb?.stampsRead ?? 0)", o.kind == .audio ? "-" : lat
            ])
            if r != nil {
                if let inb {
                    if inb.framesDecoded == 0 { out.problems.append("\(name): nothing decoded") }
                    if o.kind == .video && (inb.width != o.width || inb.height != o.height) {
                        out.problems.append("\(name): decoded \(inb.width)x\(inb.height), sent \(o.width)x\(o.height)")
                    }
                    if o.kind == .video && inb.stampsRead == 0 { out.problems.append("\(name): no stamp read back") }
                } else if o.packetsSent == 0 && o.qualityLimitationReason == .bandwidth {
                    out.suspended.append(name) // the allocator switched it off: the link cannot carry it
                } else {
                    out.problems.append("\(name): nothing received")
                }
            }
            out.rows.append(.object([("sent", Report.outboundJSON(o)), ("received", inb.map(Report.inboundJSON) ?? .null)]))
        }
        out.table = r == nil ? sentOnly.render() : t.render()
        let n = p.network
        if let e = n.estimate {
            out.details +=
                "estimate \(Units.bitrate(e.bitrate)) (delay-based \(Units.bitrate(e.delayBased)), loss-based \(Units.bitrate(e.lossBased)), acknowledged \(e.acknowledged.map(Units.bitrate) ?? "-"))\n"
            if let a = n.allocation {
                let layers = a.layers.enumerated().map { i, b in
                    "\(p.streams.filter { $0.kind == .video }.dropFirst(i).first?.height ?? 0)p \(b == 0 ? "off" : Units.bitrate(b))\(a.bandwidthLimited[i] ? " (bandwidth)" : "")"
                }
                out.details += "allocation: audio \(Units.bitrate(a.audio)), " + layers.joined(separator: ", ") + "\n"
            }
            out.details +=
                "feedback: \(n.transportFeedbackReceived) transport-cc, \(n.nackReceived) NACK → \(n.retransmissionsSent) RTX (\(r?.streams.reduce(0) { $0 + $1.packetsRecovered } ?? 0) recovered), \(p.streams.reduce(0) { $0 + $1.pliReceived }) PLI, padding packets \(n.paddingPacketsSent)\n"
        }
        if let i = r?.impairment {
            out.details +=
                "impairment: \(i.packets) packets offered, \(i.droppedByLoss) lost, \(i.droppedByQueue) dropped by the queue, max queueing \(Units.fixed(Double(i.maxQueueMicros) / 1000, 0)) ms\n"
        }
        if let r, r.rejected.total > 0 {
            out.details +=
                "rejected packets: \(r.rejected.total) (auth \(r.rejected.authenticationFailed), malformed \(r.rejected.malformed))\n"
        }
        return out
    }
}
