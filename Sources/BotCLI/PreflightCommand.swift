import HTTPSignaling
import Impairment
import MediaCodecs
import PublisherEngine
import ICE
import ReceiverEngine
import Transport
import Stats
import Preflight
import PreflightRunner
import RTPCore
import Signalling
import Platform
import WebRTCClient
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
            "junit": .value, "verdict-thresholds": .value, "whep": .value, "whep-token": .value, "ice-restart-at": .repeated,
            "ice-recover-after": .value, "dump-frames": .value, "camera": .value
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
        return execute(try plan(o))
    }

    /// Where the pre-flight sends.
    enum Target {
        /// The embedded loopback receiver (a fresh key), behind the emulated link `impairment`.
        case embedded(impairment: ImpairmentSchedule?)
        /// A remote `pubbot receive` (SDES: the configuration holds its address and key).
        case remote
        /// A WebRTC server: the verdict comes from its feedback over ICE/DTLS-SRTP.
        case whip(WHIPOptions)
    }

    /// What the command line asks for, validated: nothing is opened or sent yet but the stats
    /// output.
    struct Plan {
        var config: PublisherConfig
        var target: Target
        /// With `--whep`: pubbot subscribes to what it publishes through the server.
        var whep: WHIPOptions?
        var cnameGiven: Bool
        var thresholds: VerdictThresholds
        var requirement: String?
        var stats: (StatsStream, Int64)?
        var junit: String?
        var json: Bool
        var whipOptions: WHIPOptions? { if case let .whip(w) = target { w } else { nil } }
        /// `--ice-restart-at` (µs into the main phase, in order) and `--ice-recover-after`: ICE
        /// restarts of the main phase's session, as `publish` makes them.
        var iceRestarts: [Int64] = []
        var iceRecoverAfter: Int64?
        /// `--dump-frames DIR`: the embedded receiver's measured frames as Y4M.
        var dumps: FrameDumps?
        /// `--camera`: the camera the browser-equivalent resolution is predicted for.
        var camera = BrowserResolution.Size(width: 1280, height: 720)
    }

    static func plan(_ o: ParsedOptions) throws(UsageError) -> Plan {
        let limit = try o.value("duration").map { d throws(UsageError) in try ValueParsers.duration(d, option: "duration") } ?? 15_000_000
        guard limit >= 2_000_000, limit <= 600_000_000 else { throw UsageError("--duration must be between 2s and 10m") }
        if let r = o.value("require"), !requirements.contains(r) {
            throw UsageError("invalid --require '\(r)' (one of \(requirements.joined(separator: ", ")))")
        }
        let thresholds = try o.value("verdict-thresholds").map { t throws(UsageError) in try verdictThresholds(t) } ?? VerdictThresholds()
        let suite = try CommonOptions.suite(o)
        let whipOptions = try CommonOptions.whipOptions(o)
        let whep = try CommonOptions.whepOptions(o, whip: whipOptions, needs: "pubbot subscribes to what it publishes through the server")
        let target: Target
        let destination: SocketAddress
        let key: SRTPKey
        if let options = whipOptions {
            for flag in ["to", "sdp", "key", "srtp-suite"] where o.value(flag) != nil {
                throw UsageError("--\(flag) does not go with --whip (the server's answer and DTLS decide the transport)")
            }
            (target, key) = (.whip(options), SRTPKey.random(suite: .gcm))
            destination = try CommonOptions.address("127.0.0.1:9", option: "whip") // replaced by the answer's
        } else if o.value("to") != nil || o.value("sdp") != nil {
            if o.value("impair") != nil {
                throw UsageError("--impair applies to the embedded receiver; with --to, impair the remote one (pubbot receive --impair)")
            }
            (destination, key) = try remoteReceiver(o, suite: suite)
            target = .remote
        } else {
            if o.value("key") != nil { throw UsageError("--key is for a remote receiver (--to); the embedded one uses a fresh key") }
            key = SRTPKey.random(suite: suite)
            destination = try CommonOptions.address("127.0.0.1:9", option: "to") // replaced by the embedded receiver's
            target = .embedded(
                impairment: try o.value("impair").map { t throws(UsageError) in try ValueParsers.impairment(t, option: "impair") })
        }
        var pc = PublisherConfig(destination: destination, key: key)
        try CommonOptions.apply(o, to: &pc)
        if pc.layers.contains(where: { $0.spatialLayers > 1 }) {
            // The verdict's tiers are simulcast layers (or one encoding's sizes): a spatial mode has no tier to judge.
            throw UsageError("--scalability with spatial layers is for publish and simulate; preflight measures with simulcast")
        }
        if o.has("audio-only") { pc.sendVideo = false; pc.layers = [] }
        // Toward a real server the emulated link is the uplink, after the pacer (UplinkEmulator).
        if whipOptions != nil {
            pc.uplinkImpairment = try o.value("impair").map { t throws(UsageError) in try ValueParsers.impairment(t, option: "impair") }
        }
        pc.durationMicros = limit
        // Measure beyond what the ladder uses: the highest tier needs 5.55 Mbps with simulcast.
        pc.probeCeiling = 12_000_000
        pc.padToEstimate = true
        if let r = o.value("require"), paths.contains(r), whipOptions == nil {
            throw UsageError("--require \(r) is a connectivity path: it needs --whip URL")
        }
        var plan = Plan(
            config: pc, target: target, whep: whep, cnameGiven: o.value("cname") != nil, thresholds: thresholds,
            requirement: o.value("require"), stats: try CommonOptions.stats(o), junit: o.value("junit"), json: o.has("json"))
        for r in o.all("ice-restart-at") {
            guard whipOptions != nil else {
                throw UsageError("--ice-restart-at needs --whip (the restart is a PATCH to the session, RFC 9725 §4.3.3)")
            }
            let at = try ValueParsers.duration(r, option: "ice-restart-at")
            guard at > 0 else { throw UsageError("--ice-restart-at must be after the start") }
            if at >= limit { throw UsageError("--ice-restart-at \(r) is not before the run's end (--duration)") }
            plan.iceRestarts.append(at)
        }
        plan.iceRestarts.sort()
        plan.camera = try BrowserEquivalent.camera(o.value("camera"))
        plan.iceRecoverAfter = try CommonOptions.iceRecoverAfter(o, whip: whipOptions != nil)
        if let dir = o.value("dump-frames") {
            guard case .embedded = target else {
                throw UsageError("--dump-frames is for the embedded receiver; a remote `pubbot receive` takes --dump-frames itself")
            }
            plan.dumps = try ReceiveCommand.frameDumps(dir, decoding: true)
        }
        return plan
    }

    /// A remote `pubbot receive`: its address and key from `--to` and `--key`, or from its `--sdp`.
    static func remoteReceiver(_ o: ParsedOptions, suite: SRTPSuite) throws(UsageError) -> (SocketAddress, SRTPKey) {
        guard let path = o.value("sdp") else {
            guard o.value("key") != nil else { throw UsageError("--to needs the receiver's --key B64 (or --sdp FILE)") }
            return (try CommonOptions.address(o.value("to")!, option: "to"), try CommonOptions.key(o, suite: suite))
        }
        guard o.value("key") == nil else { throw UsageError("give either --key or --sdp, not both") }
        guard let text = ReceiveCommand.readFile(path) else { throw UsageError("cannot read the SDP file '\(path)'") }
        let sd: SessionDescription
        do { sd = try SessionDescription.parse(text) } catch { throw UsageError("invalid SDP '\(path)': \(error)") }
        guard let c = sd.media.first(where: { $0.crypto != nil })?.crypto, let sdpSuite = SRTPSuite(sdesName: c.suite) else {
            throw UsageError("the SDP '\(path)' has no usable a=crypto line")
        }
        let key: SRTPKey
        do { key = try SRTPKey(base64: c.inlineKey, suite: sdpSuite) } catch { throw UsageError("the SDP's key is invalid: \(error)") }
        let to = o.value("to") ?? (sd.address.contains(":") ? "[\(sd.address)]" : sd.address) + ":\(sd.media[0].port)"
        return (try CommonOptions.address(to, option: "to"), key)
    }

    /// Starts what the target needs, checks each connectivity path (WHIP), runs the phases and
    /// reports: 0, 1 (`--require` not met), 2 (a peer or the machine failed), 130 (interrupted).
    static func execute(_ plan: Plan) -> Int32 {
        var pc = plan.config
        var receiver: ReceiverEngine?
        if case let .embedded(impairment) = plan.target {
            do {
                var rc = ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0), key: pc.key)
                rc.impairment = impairment
                rc.sourceContent = pc.content
                if let dumps = plan.dumps { rc.frameSinks = { ssrc in dumps.sink(ssrc: ssrc) } }
                let r = try ReceiverEngine(config: rc)
                receiver = r
                pc.destination = r.localAddress
            } catch {
                Output.err("Error: cannot start the embedded receiver: \(error)\n")
                return 2
            }
        }
        if plan.whipOptions != nil && !plan.cnameGiven { pc.cname = WHIPConnection.randomCNAME() }
        let whipSessions = Locked<[WHIPConnection]>([])
        // Every way out DELETEs what was created (each phase ends its own; this catches the rest).
        defer { for w in whipSessions.value { w.end() } }
        // The round trip through the server: subscribed once the main phase's publisher is up,
        // ended when that phase ends (the audio-only phase has no video to look at).
        let probe = plan.whep.map(WHEPProbe.init)
        let probeResult = Locked<WHEPProbe.Result?>(nil)
        let restartOutcomes = Locked<[ICERestarts.Outcome]>([])
        var connector = PreflightRunner.Connector.plain
        var connectivity: [PathResult] = []
        if let options = plan.whipOptions {
            do {
                connector = whipConnector(
                    options, certificate: try DTLSCertificate(), sessions: whipSessions, probe: probe, result: probeResult,
                    restarts: (plan.iceRestarts, plan.iceRecoverAfter, restartOutcomes))
                // The connectivity pre-flight: each path on its own, before the media test.
                Output.progress("connectivity: trying each path (host, server-reflexive, relay)…")
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
            pc, receiver: receiver, thresholds: plan.thresholds, observer: observer(plan.stats), connector: connector,
            minimumMicros: plan.whep == nil ? 0 : 9_500_000)
        if let e = plan.dumps?.finish() { Output.err("warning: --dump-frames: \(e)\n") }
        if outcome.phase.interrupted { Output.endProgress(); return 130 }
        guard let verdict = outcome.verdict, outcome.phase.answered, outcome.phase.startError == nil,
            outcome.phase.publisher?.network.transport?.failure == nil
        else {
            return failed(outcome.phase, plan: plan, destination: pc.destination, connectivity: connectivity)
        }
        if let e = outcome.audioOnlyError { Output.err("warning: the audio-only phase could not start: \(e)\n") }
        if probe != nil && probeResult.value == nil { probeResult.withLock { $0 = probe?.stop() } }
        let subscriber = probeResult.value
        Output.endProgress()
        let met = plan.requirement.map { r in
            paths.contains(r) ? connectivity.contains { $0.path == r && $0.reachable } : verdict.meets(r)
        }
        writeJUnit(plan.junit, paths: connectivity, verdict: verdict, requirement: plan.requirement, failure: nil)
        // What a browser would send on this link, from the settled estimate (video only).
        let browser =
            pc.sendVideo
            ? BrowserEquivalent.predict(
                estimate: verdict.measurement.estimate, audioBitrate: pc.sendAudio ? pc.audioBitrate : 0, camera: plan.camera,
                codec: pc.videoCodec, content: pc.content) : nil
        let report = Summary(
            outcome: outcome, verdict: verdict, met: met, connectivity: connectivity, whip: whipSessions.value.first,
            subscriber: subscriber,
            restarts: restartOutcomes.value, browser: browser)
        if let w = whipSessions.value.first { Output.deviations(w.resource, w.warnings) }
        Output.out(
            plan.json
                ? report.json(plan).serialized(pretty: true) + "\n"
                : report.text(plan, destination: pc.destination, embedded: receiver != nil))
        if let e = subscriber?.error {
            Output.err("Error: WHEP subscriber: \(e)\n")
            return 2
        }
        if let met { return met ? 0 : 1 }
        return 0
    }

    /// The live progress line and the stats stream (`--stats`), from the runner's samples.
    static func observer(_ stats: (StatsStream, Int64)?) -> PreflightRunner.Observer {
        var nextStats: Int64?
        return PreflightRunner.Observer(
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
    }

    /// Each phase's publisher through the WHIP server: a session per phase (DELETEd when the
    /// phase ends), the first one with the WHEP subscriber watching.
    static func whipConnector(
        _ options: WHIPOptions, certificate: DTLSCertificate, sessions: Locked<[WHIPConnection]>, probe: WHEPProbe?,
        result: Locked<WHEPProbe.Result?>,
        restarts plan: (times: [Int64], recoverAfter: Int64?, outcomes: Locked<[ICERestarts.Outcome]>) = ([], nil, Locked([]))
    ) -> PreflightRunner.Connector {
        PreflightRunner.Connector { base in
            let w: WHIPConnection
            do { w = try WHIPConnection.open(options, base: base, certificate: certificate, sleep: { Clock.sleep(micros: $0) }) } catch {
                return .failure(.init(message: "\(error)"))
            }
            sessions.withLock { $0.append(w) }
            let p: Publisher
            do { p = try Publisher(config: w.config, socket: w.socket, webrtc: (w.transport, w.sessionLocal), tcp: w.turnTCP) } catch {
                w.end()
                return .failure(.init(message: "\(error)"))
            }
            let main = sessions.value.count == 1
            // The main phase's session restarts as `publish` would (scheduled, or on consent loss).
            var watch: (@Sendable () -> (what: String, candidates: [ICECandidate])?)?
            if main { watch = { w.interfaceChange() } }
            let restarts = ICERestarts(
                main ? plan.times : [], recoverAfter: main ? plan.recoverAfter : nil,
                consentAge: { p.snapshot().network.transport?.consentAgeMicros },
                interfaceChange: watch, request: { w.requestICERestart() },
                apply: { p.restartICE($0) }, stopped: { p.control.stopRequested },
                recovery: { p.snapshot().network.transport?.lastRestartRecoveryMicros.map { Int($0 / 1000) } })
            let end: @Sendable () -> Void = {
                restarts.finish()
                if main { plan.outcomes.value = restarts.outcomes.value }
                _ = w.end()
            }
            guard let probe, main else { return .success((p, end)) }
            probe.start(delayMicros: 1_500_000)
            return .success(
                (
                    p,
                    {
                        result.withLock { $0 = probe.stop() }
                        end()
                    }
                ))
        }
    }

    /// One message for one failure, the JUnit file, exit 2.
    static func failed(_ phase: PreflightRunner.Phase, plan: Plan, destination: SocketAddress, connectivity: [PathResult]) -> Int32 {
        Output.endProgress()
        let message: String, failure: String
        if let f = phase.publisher?.network.transport?.failure {
            (message, failure) = ("Error: \(f)\n", f.reason)
        } else if let e = phase.startError {
            // The receiver was never asked anything.
            message = plan.whipOptions == nil ? "Error: the publisher could not start: \(e)\n" : "Error: \(e)\n"
            failure = "the publisher could not start"
        } else if let url = plan.whipOptions?.endpoint {
            if let t = phase.publisher?.network.transport, t.srtpCipher == nil {
                message =
                    "Error: no media path to the WHIP server at \(SignalingClient.redacted(url)): ICE and DTLS did not finish\(t.failure.map { " (\($0))" } ?? " within 12 s")\n"
            } else {
                message =
                    "Error: no RTCP from the WHIP server at \(SignalingClient.redacted(url)) within 3 s of ICE and DTLS finishing: it does not send receiver feedback\n"
            }
            failure = "no feedback from the WHIP server"
        } else {
            message =
                "Error: no answer from the receiver at \(destination) within 3 s — check the address and port, that `pubbot receive` is running there with the same key (--key/--sdp) and SRTP suite, and that no firewall drops UDP in either direction\n"
            failure = "no answer from the receiver"
        }
        Output.err(message)
        writeJUnit(plan.junit, paths: connectivity, verdict: nil, requirement: plan.requirement, failure: failure)
        return 2
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
