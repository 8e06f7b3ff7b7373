#if canImport(Glibc)
    import HTTPSignaling
    import Glibc
#endif
import MediaCodecs
import PublisherEngine
import ICE
import Transport
import Stats
import Platform
import WebRTCClient
import DTLS

/// `pubbot publish`: send to a receiver until the duration ends or Ctrl-C.
enum PublishCommand {
    static let spec: OptionSpec = {
        var o = CommonOptions.media
        for (k, v) in [
            "to": OptionSpec.Kind.repeated, "key": .value, "sdp-out": .value, "no-bundle": .flag, "no-audio": .flag,
            "no-video": .flag, "cname": .value, "no-congestion-control": .flag, "sender-stats": .flag, "rtc-stats": .value,
            "metrics": .value, "vitals": .flag, "ice-restart-at": .repeated, "impair": .value, "ice-recover-after": .value
        ] { o[k] = v }
        for (k, v) in CommonOptions.whip { o[k] = v }
        return OptionSpec(
            options: o,
            planned: [
                "replay": "replay bots are `pubbot load` (e.g. --bots 1 --to HOST:PORT --key B64)"

            ])
    }()

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        let o = try ParsedOptions.parse(args, spec: spec, command: "publish")
        if o.helpRequested { Output.out(Help.help("publish")! + "\n"); return 0 }
        Output.stdoutIsStats = o.value("stats") == "-"
        return execute(try plan(o))
    }

    /// What the command line asks for, validated: nothing is opened or sent yet but the stats
    /// output.
    struct Plan {
        var config: PublisherConfig
        /// One per receiver (a relayed session); with WHIP, the answer's.
        var destinations: [SocketAddress]
        var whip: WHIPOptions?
        var cnameGiven: Bool
        var stats: (StatsStream, Int64)?
        var vitals: Bool
        var sdpOut: String?
        var metrics: (host: String, port: Int, text: String)?
        var rtcStatsPath: String?
        var json: Bool
        /// `--ice-restart-at`: when to restart ICE (µs from the start), in order.
        var iceRestarts: [Int64] = []
        /// `--ice-recover-after`: restart ICE when the path answers no consent check this long.
        var iceRecoverAfter: Int64?
    }

    static func plan(_ o: ParsedOptions) throws(UsageError) -> Plan {
        let tos = o.all("to")
        let whipOptions = try CommonOptions.whipOptions(o)
        if whipOptions != nil {
            guard tos.isEmpty else { throw UsageError("--whip and --to exclude each other (WHIP negotiates where media goes)") }
            for flag in ["key", "sdp-out", "no-bundle", "srtp-suite"] where o.has(flag) || o.value(flag) != nil {
                throw UsageError("--\(flag) is for SDES publishing (--to); with --whip the keys come from DTLS and everything is bundled")
            }
        } else {
            guard !tos.isEmpty else { throw UsageError("missing --to HOST:PORT (or --whip URL)") }
        }
        guard tos.count <= 16 else { throw UsageError("at most 16 --to (receivers) in one relayed session") }
        if o.has("no-audio") && o.has("no-video") { throw UsageError("--no-audio and --no-video together leave nothing to send") }
        var destinations: [SocketAddress] = []
        for to in tos { destinations.append(try CommonOptions.address(to, option: "to")) }
        if whipOptions != nil { destinations = [try CommonOptions.address("127.0.0.1:9", option: "to")] } // replaced by the answer's
        let suite = try CommonOptions.suite(o)
        var pc = PublisherConfig(destination: destinations[0], key: try CommonOptions.key(o, suite: suite))
        try CommonOptions.apply(o, to: &pc, relayed: destinations.count > 1)
        pc.bundle = !o.has("no-bundle")
        pc.sendAudio = !o.has("no-audio")
        pc.sendVideo = !o.has("no-video")
        if let c = o.value("cname") { pc.cname = c }
        if o.has("no-congestion-control") { pc.congestionControl = false }
        pc.senderStats = o.has("sender-stats")
        pc.uplinkImpairment = try o.value("impair").map { t throws(UsageError) in try ValueParsers.impairment(t, option: "impair") }
        if let d = o.value("duration") { pc.durationMicros = try ValueParsers.duration(d, option: "duration") }
        for d in destinations where !pc.bundle && d.port + 2 * (pc.layers.count + 1) > 65535 {
            throw UsageError("--no-bundle needs \(2 * (pc.layers.count + 1)) ports from \(d.port)")
        }
        let stats = try CommonOptions.stats(o)
        if o.has("vitals") && stats == nil { throw UsageError("--vitals writes into the stats stream: add --stats FILE|-") }
        var restarts: [Int64] = []
        for r in o.all("ice-restart-at") {
            guard whipOptions != nil else {
                throw UsageError("--ice-restart-at needs --whip (the restart is a PATCH to the session, RFC 9725 §4.3.3)")
            }
            let at = try ValueParsers.duration(r, option: "ice-restart-at")
            guard at > 0 else { throw UsageError("--ice-restart-at must be after the start") }
            if let d = pc.durationMicros, at >= d { throw UsageError("--ice-restart-at \(r) is not before the run's end (--duration)") }
            restarts.append(at)
        }
        var plan = Plan(
            config: pc, destinations: destinations, whip: whipOptions, cnameGiven: o.value("cname") != nil, stats: stats,
            vitals: o.has("vitals"), sdpOut: o.value("sdp-out"), metrics: try o.value("metrics").map(metricsAddress),
            rtcStatsPath: o.value("rtc-stats"), json: o.has("json"))
        plan.iceRestarts = restarts.sorted()
        plan.iceRecoverAfter = try CommonOptions.iceRecoverAfter(o, whip: whipOptions != nil)
        return plan
    }

    /// "9100" or ":9100" binds to loopback; a host must be given to listen elsewhere.
    static func metricsAddress(_ m: String) throws(UsageError) -> (host: String, port: Int, text: String) {
        let text = m.hasPrefix(":") ? String(m.dropFirst()) : m
        let (host, portText): (String, String) =
            text.contains(":")
            ? (String(text[..<text.lastIndex(of: ":")!]), String(text[text.index(after: text.lastIndex(of: ":")!)...]))
            : ("127.0.0.1", text)
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw UsageError("invalid --metrics '\(m)' (e.g. 9100 or 127.0.0.1:9100)")
        }
        return (host, port, m)
    }

    /// Connects (WHIP) or opens the sockets (SDES), publishes until the duration ends, Ctrl-C or
    /// a failure, and reports. 0, 130 (interrupted) or 2 (a peer or the machine failed).
    static func execute(_ plan: Plan) -> Int32 {
        var plan = plan
        var whip: WHIPConnection?
        // Every way out after the server made a session DELETEs it (RFC 9725 §4.3).
        defer { if let w = whip, let e = w.end() { Output.err("warning: could not end the WHIP session: \(e)\n") } }
        let publishers: [Publisher]
        do { (publishers, whip) = try connect(&plan) } catch {
            Output.err("Error: \(error)\n")
            return 2
        }
        if let path = plan.sdpOut, !writeSDP(path, publishers, plan.destinations) { return 2 }
        var metrics: MetricsServer?
        if let (host, port, _) = plan.metrics {
            let pubs = publishers, dests = plan.destinations
            do {
                metrics = try MetricsServer(host: host, port: port) {
                    PrometheusExposition.render(zip(pubs, dests).map { ($0.snapshot(), $1.description) })
                }
            } catch {
                Output.err("Error: \(error)\n")
                return 2
            }
            Output.err("metrics on http://\(host):\(metrics!.port)/metrics\n")
        }
        defer { metrics?.stop() }
        let monitor = Monitor(plan: plan, publishers: publishers, whip: whip)
        for publisher in publishers { publisher.start() }
        monitor.started()
        let first = publishers.first
        var watch: (@Sendable () -> (what: String, candidates: [ICECandidate])?)?
        if let whip { watch = { whip.interfaceChange() } }
        let restarts = ICERestarts(
            whip != nil && first != nil ? plan.iceRestarts : [], recoverAfter: whip != nil ? plan.iceRecoverAfter : nil,
            consentAge: { first?.snapshot().network.transport?.consentAgeMicros },
            interfaceChange: watch,
            request: { [whip] in whip.map { $0.requestICERestart() } ?? .failure(WHIPConnectError("no WHIP session")) },
            apply: { first?.restartICE($0) }, stopped: { first?.control.stopRequested ?? true },
            recovery: { first?.snapshot().network.transport?.lastRestartRecoveryMicros.map { Int($0 / 1000) } })
        defer { restarts.finish() }
        monitor.restartRequested = { restarts.requested.value }
        for (d, publisher) in zip(plan.destinations, publishers) where whip == nil {
            Output.err(
                "publishing to \(d)\(plan.config.bundle ? " (bundle)" : " (one port per stream)") from \(publisher.localAddress); Ctrl-C to stop\n"
            )
        }
        while !publishers.allSatisfy({ $0.control.stopRequested }) && !Signals.isInterrupted {
            Clock.sleep(micros: 100_000)
            monitor.tick()
            restarts.tick()
        }
        let interrupted = Signals.isInterrupted
        for publisher in publishers { publisher.stop() }
        for publisher in publishers { publisher.wait() }
        Output.endProgress()
        let snaps = publishers.map { $0.snapshot() }
        monitor.finish(snaps)
        restarts.finish()
        report(snaps, plan: plan, whip: whip, restarts: restarts.outcomes.value)
        if let e = snaps.compactMap(\.media.error).first { Output.err("Error: encoder failed: \(e)\n"); return 2 }
        if let failure = snaps.compactMap(\.network.transport?.failure).first {
            Output.err("Error: \(failure)\n")
            return 2
        }
        if interrupted { return 130 }
        if let reason = noMedia(snaps) {
            Output.err("Error: \(reason)\n")
            return 2
        }
        return 0
    }

    /// Why a run that ended without a failure still sent nothing, if it did: a WebRTC transport
    /// that never connected before the duration ran out (ICE gives up only after its own ~10 s,
    /// which a short run never reaches), or no packet on any stream. A run is a success only if
    /// media flowed (nil then).
    static func noMedia(_ snaps: [PublisherSnapshot]) -> String? {
        let seconds = Units.fixed(Double(snaps.map(\.elapsedMicros).max() ?? 0) / 1e6, 1)
        for s in snaps {
            guard let t = s.network.transport, t.srtpCipher == nil else { continue }
            return "the WebRTC transport never connected in the run's \(seconds) s (ICE \(t.iceState.rawValue), DTLS "
                + "\(t.dtlsState.rawValue)): no media was sent — with a longer --duration ICE says why when its checks run out"
        }
        let sent = snaps.reduce(0) { $0 + $1.streams.reduce(0) { $0 + $1.packetsSent } }
        return sent == 0 ? "no media was sent in the run's \(seconds) s" : nil
    }

    /// The publishers: one per receiver (a relayed session: each with its own transport,
    /// feedback, estimate and encoders, as a browser has one peer connection per remote peer),
    /// or the one a WHIP server answered for (`plan` then takes the answer's configuration).
    static func connect(_ plan: inout Plan) throws -> ([Publisher], WHIPConnection?) {
        guard let options = plan.whip else {
            return (
                try plan.destinations.map { d in
                    var c = plan.config
                    c.destination = d
                    return try Publisher(config: c)
                }, nil
            )
        }
        if !plan.cnameGiven { plan.config.cname = WHIPConnection.randomCNAME() }
        Output.err("WHIP: offering to \(SignalingClient.redacted(options.endpoint))\n")
        let certificate = try DTLSCertificate()
        let w = try WHIPConnection.open(options, base: plan.config, certificate: certificate, sleep: { Clock.sleep(micros: $0) })
        plan.destinations = [w.config.destination]
        plan.config = w.config
        let publisher: Publisher
        do { publisher = try Publisher(config: w.config, socket: w.socket, webrtc: (w.transport, w.sessionLocal), tcp: w.turnTCP) } catch {
            if let e = w.end() { Output.err("warning: could not end the WHIP session: \(e)\n") }
            throw error
        }
        Output.err(
            "WHIP session \(SignalingClient.redacted(w.resource.resourceURL)): "
                + w.summary.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
                + "\n")
        Output.deviations(w.resource, w.warnings)
        return ([publisher], w)
    }

    /// `--sdp-out`: each publisher's session description (the second receiver's in `path.2`, …).
    static func writeSDP(_ path: String, _ publishers: [Publisher], _ destinations: [SocketAddress]) -> Bool {
        for (i, publisher) in publishers.enumerated() {
            let file = i == 0 ? path : "\(path).\(i + 1)"
            guard writeFile(file, publisher.plan.sessionDescription().render()) else {
                Output.err("Error: cannot write the SDP to '\(file)'\n")
                return false
            }
            Output.err("SDP for \(destinations[i]) written to \(file) (it contains the SRTP key)\n")
        }
        return true
    }

    /// What runs every 100 ms while publishing: the live table, the stats stream and vitals, the
    /// connection line, the warnings (each once per connection); and the final stats records.
    final class Monitor {
        let plan: Plan
        let publishers: [Publisher]
        let whip: WHIPConnection?
        var vitals: VitalsRecorder?
        var sampler = ProcessVitals()
        var previousEncode: [Int64] = []
        var announcedConnection = false
        var warnedUnreachable = Set<Int>()
        var warnedNoFeedback = Set<Int>()
        /// Whether an ICE restart has been asked for (its refusals say nothing of the new path).
        var restartRequested: () -> Bool = { false }
        var nextStats: Int64
        var relayed: Bool { publishers.count > 1 }

        init(plan: Plan, publishers: [Publisher], whip: WHIPConnection?) {
            self.plan = plan
            self.publishers = publishers
            self.whip = whip
            vitals = plan.vitals ? VitalsRecorder(intervalMicros: plan.stats!.1) : nil
            nextStats = Clock.monotonicMicros() + (plan.stats?.1 ?? 0)
        }

        func started() {
            vitals?.startSession()
            _ = sampler.sample()
        }

        func tick() {
            let snaps = publishers.map { $0.snapshot() }
            if Signals.takeReportRequest() { writeRTCStats() }
            if whip != nil, !announcedConnection, let t = snaps[0].network.transport, t.srtpCipher != nil {
                announcedConnection = true
                Output.endProgress()
                Output.err(
                    "connected: ICE \(t.iceDurationMs ?? 0) ms (\(t.localCandidateType ?? "?") \(t.localAddress ?? "?") → \(t.remoteCandidateType ?? "?") \(t.remoteAddress ?? "?")), DTLS \(t.dtlsDurationMs ?? 0) ms, \(t.srtpCipher!); Ctrl-C to stop\n"
                )
            }
            if let (stream, interval) = plan.stats, Clock.monotonicMicros() >= nextStats {
                stream.emit(zip(snaps, plan.destinations).map { ($0, relayed ? $1.description : nil) })
                if vitals != nil { sampleVitals(snaps, into: stream) }
                nextStats += interval
            }
            let sent = snaps.reduce(0) { $0 + $1.streams.reduce(0) { $0 + $1.packetsSent } }
            let bytes = snaps.reduce(0) { $0 + $1.streams.reduce(0) { $0 + $1.payloadBytesSent + $1.headerBytesSent } }
            let secs = max(0.001, Double(snaps[0].elapsedMicros) / 1e6)
            Output.screen(liveTable(snaps, plan.destinations, seconds: secs, sent: sent, bytes: bytes))
            warn(snaps)
        }

        func sampleVitals(_ snaps: [PublisherSnapshot], into stream: StatsStream) {
            let wall = Clock.wallMicros() / 1000
            let (cpu, rss) = sampler.sample()
            vitals!.add(.init(wallMillis: wall, cpuPercent: cpu, rssBytes: rss))
            // Encoder time per layer in this tick (ms), summed over the connections.
            var encode = [Int64](repeating: 0, count: snaps[0].media.encodeMicros.count)
            for p in snaps { for (i, e) in p.media.encodeMicros.enumerated() where i < encode.count { encode[i] += e } }
            let delta = encode.enumerated().map { i, e in e - (i < previousEncode.count ? previousEncode[i] : 0) }
            previousEncode = encode
            vitals!.log("encoderTimeMs", .array(delta.map { .int($0 / 1000) }), wallMillis: wall)
            for chunk in vitals!.flush() { stream.out.writeRaw(chunk) }
        }

        func warn(_ snaps: [PublisherSnapshot]) {
            let pc = plan.config
            for (i, p) in snaps.enumerated() {
                if pc.congestionControl && pc.bundle && pc.feedback == .transportCC && !warnedNoFeedback.contains(i)
                    && p.elapsedMicros > 3_000_000
                    && p.network.transportFeedbackReceived == 0 && (whip == nil || p.network.transport?.srtpCipher != nil)
                {
                    warnedNoFeedback.insert(i)
                    Output.endProgress()
                    Output.err(
                        "warning: no transport-cc feedback from \(plan.destinations[i]) after 3 s: the estimate is backing off and upper layers stay off. If the receiver does not send transport-cc (ffmpeg, gst-launch), use --no-congestion-control\n"
                    )
                }
                // After an ICE restart the server may close the old path's port — as soon as it
                // takes the PATCH, before its answer is applied here (a CI run warned in that
                // window): what was in flight there answers 'port unreachable', which says
                // nothing of the new path.
                if p.network.portUnreachable > 0 && !warnedUnreachable.contains(i) && (p.network.transport?.iceRestarts ?? 0) == 0
                    && !restartRequested()
                {
                    warnedUnreachable.insert(i)
                    Output.endProgress()
                    Output.err("warning: \(plan.destinations[i]) answers 'port unreachable' — is a receiver listening there?\n")
                }
            }
        }

        /// `--rtc-stats FILE`: the W3C report, at SIGUSR1 and at the end.
        func writeRTCStats() {
            guard let path = plan.rtcStatsPath else { return }
            let report: JSONValue =
                relayed
                ? .array(
                    publishers.enumerated().map { i, pub in RTCStatsReport.build(pub.snapshot(), config: pub.config, connection: i + 1) })
                : RTCStatsReport.build(publishers[0].snapshot(), config: publishers[0].config)
            if !writeFile(path, report.serialized(pretty: true) + "\n") {
                Output.err("warning: cannot write the RTC stats report to '\(path)'\n")
            }
        }

        /// The last records: the RTC stats report, the final stats line and the vitals summary.
        func finish(_ snaps: [PublisherSnapshot]) {
            writeRTCStats()
            guard let (stream, _) = plan.stats else { return }
            stream.emit(zip(snaps, plan.destinations).map { ($0, relayed ? $1.description : nil) }, final: true)
            if vitals != nil {
                vitals!.endSession()
                for chunk in vitals!.flush() { stream.out.writeRaw(chunk) }
                stream.out.write([vitals!.summary(wallMillis: Clock.wallMicros() / 1000)])
            }
        }
    }

    /// The summary on stdout: JSON (`--json`) or a table per connection.
    static func report(_ snaps: [PublisherSnapshot], plan: Plan, whip: WHIPConnection?, restarts: [ICERestarts.Outcome] = []) {
        let relayed = snaps.count > 1
        guard plan.json else {
            for (p, d) in zip(snaps, plan.destinations) {
                if relayed { Output.out("to \(d):\n") }
                Output.out(Report.publisherTable(PublisherSnapshotView(streams: p.streams, elapsedMicros: p.elapsedMicros)))
                if let u = p.network.uplink { Output.out(UplinkReport.text(u, spec: plan.config.uplinkImpairment?.summary)) }
            }
            for r in restarts { Output.out("ICE restart at \(Units.fixed(Double(r.atMicros) / 1e6, 1)) s: \(r.text)\n") }
            if let w = whip, let ms = timeToFirstMedia(snaps[0], w) {
                Output.out("time to first media: \(ms) ms (gathering, the POST, ICE and DTLS, the first key frame)\n")
            }
            return
        }
        let docs = zip(snaps, plan.destinations).map { p, d in
            summaryJSON(p, to: d, whip: whip, impair: plan.config.uplinkImpairment?.summary)
        }
        var fields: [(String, JSONValue)] = [("type", .string("summary")), ("command", .string("publish"))]
        if relayed {
            fields.append(("connections", .array(docs)))
        } else if case let .object(f) = docs[0] {
            fields += f.filter { $0.0 != "to" }
        }
        if !plan.iceRestarts.isEmpty || plan.iceRecoverAfter != nil || !restarts.isEmpty {
            fields.append(("iceRestarts", .array(restarts.map(\.json))))
        }
        Output.out(JSONValue.object(fields).serialized(pretty: true) + "\n")
    }

    /// One connection's summary object.
    static func summaryJSON(_ p: PublisherSnapshot, to d: SocketAddress, whip: WHIPConnection?, impair: String? = nil) -> JSONValue {
        let feedback: JSONValue = .object([
            ("rtcpReceived", .int(Int64(p.network.rtcpReceived))),
            ("transportFeedbackReceived", .int(Int64(p.network.transportFeedbackReceived))),
            ("rembReceived", .int(Int64(p.network.rembReceived))),
            ("nackReceived", .int(Int64(p.network.nackReceived))),
            ("retransmissionsSent", .int(Int64(p.network.retransmissionsSent))),
            ("paddingPacketsSent", .int(Int64(p.network.paddingPacketsSent))),
            ("pliReceived", .int(Int64(p.streams.reduce(0) { $0 + $1.pliReceived })))
        ])
        var fields: [(String, JSONValue)] = [
            ("to", .string(d.description)), ("durationMs", .int(p.elapsedMicros / 1000)),
            ("streams", .array(p.streams.map(Report.outboundJSON))),
            (
                "encodeMs",
                .object([
                    ("videoLayers", .array(p.media.encodeMicros.map { .int($0 / 1000) })), ("audio", .int(p.media.audioEncodeMicros / 1000))
                ])
            ),
            ("framesSkipped", .int(Int64(p.media.framesSkipped))),
            ("audioFramesEncoded", .int(Int64(p.media.audioFramesEncoded))),
            ("audioFramesSkipped", .int(Int64(p.media.audioFramesSkipped))),
            // Top layers held back because the encoders fell behind real time (or, with one
            // encoding, the steps its resolution went down), and the changes.
            ("cpuLayersHeld", .int(Int64(p.media.cpuLayersHeld))),
            ("cpuResolutionSteps", .int(Int64(p.media.cpuResolutionSteps))),
            ("qualityLimitationResolutionChanges", .int(Int64(p.media.cpuResolutionChanges))),
            ("estimate", p.network.estimate.map { .int(Int64($0.bitrate)) } ?? .null),
            ("networkCondition", .string(p.network.networkCondition.rawValue)),
            ("portUnreachable", .int(Int64(p.network.portUnreachable))),
            ("feedback", feedback),
            ("sendErrors", .int(Int64(p.network.sendErrors))),
            // Back-pressure from the socket or qdisc (ENOBUFS): datagrams that waited, not lost.
            ("sendDeferred", .int(Int64(p.network.sendDeferred)))
        ]
        if let u = p.network.uplink { fields.append(("uplinkEmulator", UplinkReport.json(u, spec: impair))) }
        if let w = whip {
            let negotiated: [(String, JSONValue)] = [
                ("resource", .string(SignalingClient.redacted(w.resource.resourceURL))),
                ("negotiated", .object(w.summary.map { ($0.0, .string($0.1)) })),
                ("deviations", .array(w.resource.deviations.map { .string($0) }))
            ]
            let first: [(String, JSONValue)] = [("timeToFirstMediaMs", Self.timeToFirstMedia(p, w).map { .int($0) } ?? .null)]
            fields.append(
                ("whip", .object(negotiated + first + (p.network.transport.map { TransportFields.json($0, rttMillis: nil) } ?? []))))
        }
        return .object(fields)
    }

    /// From the start of the WHIP set-up (gathering, the POST, ICE, DTLS) to the first media
    /// packet on the wire, ms; nil while none went.
    static func timeToFirstMedia(_ p: PublisherSnapshot, _ w: WHIPConnection) -> Int64? {
        guard let first = p.network.firstMediaMicros, w.openedMicros > 0 else { return nil }
        return max(0, first - w.openedMicros) / 1000
    }

    /// The live view on a terminal: per connection, the estimate and condition, then per stream
    /// the target, the bitrate over the last second and the limitation reason.
    static func liveTable(_ snaps: [PublisherSnapshot], _ destinations: [SocketAddress], seconds: Double, sent: Int, bytes: Int) -> String {
        var out =
            "pubbot publish — \(Units.fixed(seconds, 1)) s, \(sent) packets, \(Units.bitrate(Int(Double(bytes * 8) / max(seconds, 0.001)))) average\n"
        for (p, d) in zip(snaps, destinations) {
            let e = p.network.estimate.map { Units.bitrate($0.bitrate) } ?? "-"
            let rtt = p.streams.compactMap(\.roundTripTimeMillis).max().map { Units.fixed($0, 1) + " ms" } ?? "-"
            out +=
                "→ \(d)  estimate \(e)  condition \(p.network.networkCondition.rawValue)  RTT \(rtt)\(p.network.audioFallbackActive ? "  AUDIO FALLBACK" : "")\n"
            var t = TextTable(
                headers: ["stream", "resolution", "target", "frames", "packets", "NACK/PLI", "limited by"], rightAligned: [2, 3, 4, 5])
            for s in p.streams {
                t.add([
                    Report.streamName(kind: s.kind, rid: s.rid, width: s.width, height: s.height),
                    s.kind == .audio ? "opus" : "\(s.width)x\(s.height)",
                    s.kind == .audio ? "-" : (s.targetBitrate == 0 ? "off" : Units.bitrate(s.targetBitrate)),
                    String(s.framesSent), String(s.packetsSent), "\(s.nackReceived)/\(s.pliReceived)",
                    s.kind == .audio ? "-" : s.qualityLimitationReason.rawValue
                ])
            }
            out += t.render()
        }
        return out
    }

    static func writeFile(_ path: String, _ text: String) -> Bool {
        guard let f = fopen(path, "w") else { return false }
        defer { fclose(f) }
        return fputs(text, f) >= 0
    }
}
