#if canImport(Glibc)
import Glibc
#endif
import MediaCodecs
import PublisherEngine
import Transport
import Stats

/// `pubbot publish`: send to a receiver until the duration ends or Ctrl-C.
enum PublishCommand {
    static let spec: OptionSpec = {
        var o = CommonOptions.media
        for (k, v) in ["to": OptionSpec.Kind.repeated, "key": .value, "sdp-out": .value, "no-bundle": .flag, "no-audio": .flag,
                       "no-video": .flag, "cname": .value, "no-congestion-control": .flag, "sender-stats": .flag] { o[k] = v }
        return OptionSpec(options: o, planned: [
"replay": "replay mode comes with load testing",
            "rtc-stats": "the RTC stats report comes with the stats work",
            "metrics": "Prometheus metrics are planned", "vitals": "session vitals are planned",
        ])
    }()

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        let o = try ParsedOptions.parse(args, spec: spec, command: "publish")
        if o.helpRequested { Output.out(Help.help("publish")! + "\n"); return 0 }
        let tos = o.all("to")
        guard let to = tos.first else { throw UsageError("missing --to HOST:PORT") }
        guard tos.count == 1 else { throw UsageError("several --to (a relayed session) are not available in this version yet") }
        if o.has("no-audio") && o.has("no-video") { throw UsageError("--no-audio and --no-video together leave nothing to send") }
        let destination = try CommonOptions.address(to, option: "to")
        let suite = try CommonOptions.suite(o)
        var pc = PublisherConfig(destination: destination, key: try CommonOptions.key(o, suite: suite))
        try CommonOptions.apply(o, to: &pc)
        pc.bundle = !o.has("no-bundle")
        pc.sendAudio = !o.has("no-audio")
        pc.sendVideo = !o.has("no-video")
        if let c = o.value("cname") { pc.cname = c }
        if o.has("no-congestion-control") { pc.congestionControl = false }
        pc.senderStats = o.has("sender-stats")
        if let d = o.value("duration") { pc.durationMicros = try ValueParsers.duration(d, option: "duration") }
        if !pc.bundle && destination.port + 2 * (pc.layers.count + 1) > 65535 { throw UsageError("--no-bundle needs \(2 * (pc.layers.count + 1)) ports from \(destination.port)") }

        let stats = try CommonOptions.stats(o)
        let publisher: Publisher
        do { publisher = try Publisher(config: pc) } catch {
            Output.err("Error: \(error)\n")
            return 2
        }
        if let path = o.value("sdp-out") {
            let sdp = publisher.plan.sessionDescription().render()
            guard writeFile(path, sdp) else {
                Output.err("Error: cannot write the SDP to '\(path)'\n")
                return 2
            }
            Output.err("SDP written to \(path) (it contains the SRTP key)\n")
        }
        publisher.start()
        Output.err("publishing to \(destination)\(pc.bundle ? " (bundle)" : " (one port per stream)") from \(publisher.localAddress); Ctrl-C to stop\n")
        var warnedUnreachable = false
        var warnedNoFeedback = false
        var nextStats = Clock.monotonicMicros() + (stats?.1 ?? 0)
        while !publisher.control.stopRequested && !Signals.isInterrupted {
            Clock.sleep(micros: 100_000)
            let p = publisher.snapshot()
            if let (stream, interval) = stats, Clock.monotonicMicros() >= nextStats { stream.emit(p); nextStats += interval }
            let sent = p.streams.reduce(0) { $0 + $1.packetsSent }
            let bytes = p.streams.reduce(0) { $0 + $1.payloadBytesSent + $1.headerBytesSent }
            let secs = max(0.001, Double(p.elapsedMicros) / 1e6)
            Output.progress("publish \(Units.fixed(secs, 1))s  \(sent) pkts  \(Units.bitrate(Int(Double(bytes * 8) / secs)))")
            if pc.congestionControl && pc.bundle && !warnedNoFeedback && p.elapsedMicros > 3_000_000 && p.network.transportFeedbackReceived == 0 {
                warnedNoFeedback = true
                Output.endProgress()
                Output.err("warning: no transport-cc feedback from \(destination) after 3 s: the estimate is backing off and upper layers stay off. If the receiver does not send transport-cc (ffmpeg, gst-launch), use --no-congestion-control\n")
            }
            if p.network.portUnreachable > 0 && !warnedUnreachable {
                warnedUnreachable = true
                Output.endProgress()
                Output.err("warning: \(destination) answers 'port unreachable' — is a receiver listening there?\n")
            }
        }
        let interrupted = Signals.isInterrupted
        publisher.stop()
        publisher.wait()
        Output.endProgress()
        let p = publisher.snapshot()
        if o.has("json") {
            Output.out(JSONValue.object([("type", .string("summary")), ("command", .string("publish")),
                                         ("durationMs", .int(p.elapsedMicros / 1000)), ("streams", .array(p.streams.map(Report.outboundJSON))),
                                         ("encodeMs", .object([("videoLayers", .array(p.media.encodeMicros.map { .int($0 / 1000) })),
                                                               ("audio", .int(p.media.audioEncodeMicros / 1000))])),
                                         ("framesSkipped", .int(Int64(p.media.framesSkipped))),
                                         ("portUnreachable", .int(Int64(p.network.portUnreachable))),
                                         ("sendErrors", .int(Int64(p.network.sendErrors)))]).serialized(pretty: true) + "\n")
        } else {
            Output.out(Report.publisherTable(PublisherSnapshotView(streams: p.streams, elapsedMicros: p.elapsedMicros)))
        }
        if let e = p.media.error { Output.err("Error: encoder failed: \(e)\n"); return 2 }
        return interrupted ? 130 : 0
    }

    static func writeFile(_ path: String, _ text: String) -> Bool {
        guard let f = fopen(path, "w") else { return false }
        defer { fclose(f) }
        return fputs(text, f) >= 0
    }
}
