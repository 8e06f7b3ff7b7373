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
}
