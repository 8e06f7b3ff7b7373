import MediaCodecs
import PublisherEngine
import LoopbackReceiver
import Transport
import Stats

/// `pubbot preflight`: embedded receiver + publisher over loopback, per-layer results.
enum PreflightCommand {
    static let spec: OptionSpec = {
        var o = CommonOptions.media
        o["audio-only"] = .flag
        o["impair"] = .value
        return OptionSpec(options: o, planned: [
            "to": "remote receivers come with the verdict work", "key": "used with --to", "sdp": "used with --to",
"require": "the verdict is planned", "junit": "the verdict is planned",
        ])
    }()

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        let o = try ParsedOptions.parse(args, spec: spec, command: "preflight")
        if o.helpRequested { Output.out(Help.help("preflight")! + "\n"); return 0 }
        Output.stdoutIsStats = o.value("stats") == "-"
        let duration = try o.value("duration").map { d throws(UsageError) in try ValueParsers.duration(d, option: "duration") } ?? 5_000_000
        guard duration >= 500_000, duration <= 600_000_000 else { throw UsageError("--duration must be between 500ms and 10m") }
        let suite = try CommonOptions.suite(o)
        let key = SRTPKey.random(suite: suite)

        let receiver: LoopbackReceiver
        do {
            var rc = ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0), key: key)
            rc.impairment = try o.value("impair").map { t throws(UsageError) in try ValueParsers.impairment(t, option: "impair") }
            receiver = try LoopbackReceiver(config: rc)
        } catch let e as UsageError {
            throw e
        } catch {
            Output.err("Error: cannot start the embedded receiver: \(error)\n")
            return 2
        }
        var pc = PublisherConfig(destination: receiver.localAddress, key: key)
        try CommonOptions.apply(o, to: &pc)
        if o.has("audio-only") { pc.sendVideo = false; pc.layers = [] }
        pc.durationMicros = duration
        let publisher: Publisher
        do { publisher = try Publisher(config: pc) } catch {
            Output.err("Error: \(error)\n")
            return 2
        }
        let stats = try CommonOptions.stats(o)
        receiver.start()
        publisher.start()
        let started = Clock.monotonicMicros()
        var nextStats = started + (stats?.1 ?? 0)
        while !publisher.control.stopRequested && !Signals.isInterrupted {
            Clock.sleep(micros: 100_000)
            let p = publisher.snapshot(), r = receiver.snapshot()
            if let (stream, interval) = stats, Clock.monotonicMicros() >= nextStats { stream.emit(p); nextStats += interval }
            let elapsed = Double(Clock.monotonicMicros() - started) / 1e6
            let frac = min(1, elapsed / (Double(duration) / 1e6))
            let bar = String(repeating: "#", count: Int(frac * 20)) + String(repeating: ".", count: 20 - Int(frac * 20))
            let sent = p.streams.reduce(0) { $0 + $1.packetsSent }
            Output.progress("preflight [\(bar)] \(Units.fixed(elapsed, 1))s/\(Units.fixed(Double(duration) / 1e6, 1))s  sent \(sent) pkts  received \(r.packetsAccepted) pkts")
        }
        let interrupted = Signals.isInterrupted
        publisher.stop()
        publisher.wait()
        Clock.sleep(micros: 300_000) // let the last packets and the BYE arrive
        receiver.stop()
        receiver.wait()
        Output.endProgress()
        return report(publisher.snapshot(), receiver.snapshot(), plan: publisher.plan, json: o.has("json"), interrupted: interrupted)
    }

    static func report(_ p: PublisherSnapshot, _ r: ReceiverSnapshot, plan: StreamPlan, json: Bool, interrupted: Bool) -> Int32 {
        var problems: [String] = []
        var suspended: [String] = []
        if let e = p.media.error { problems.append("encoder: \(e)") }
        if r.keyMismatchSuspected { problems.append(r.keyMismatchMessage) }
        var t = TextTable(headers: ["stream", "sent", "decoded", "frames sent", "frames decoded", "pkts sent", "pkts recv", "lost", "bitrate", "stamps", "latency mean/p95"],
                          rightAligned: [3, 4, 5, 6, 7, 8, 9, 10])
        var rows: [JSONValue] = []
        for out in p.streams {
            let inb = r.streams.first { $0.ssrc == out.ssrc }
            let name = Report.streamName(kind: out.kind, rid: out.rid, width: out.width, height: out.height)
            let decodedRes = inb.map { $0.kind == .audio ? ($0.framesDecoded > 0 ? "opus" : "-") : ($0.width > 0 ? "\($0.width)x\($0.height)" : "-") } ?? "-"
            let lat = inb.flatMap { i in i.latencyMeanMillis.map { "\(Units.fixed($0, 1))/\(Units.fixed(i.latencyP95Millis ?? $0, 1)) ms" } } ?? "-"
            t.add([name, out.kind == .audio ? "opus" : "\(out.width)x\(out.height)", decodedRes, String(out.framesSent), String(inb?.framesDecoded ?? 0),
                   String(out.packetsSent), String(inb?.packetsReceived ?? 0), String(inb?.packetsLost ?? 0), Units.bitrate(inb?.bitrate ?? 0),
                   out.kind == .audio ? "-" : "\(inb?.stampsRead ?? 0)", out.kind == .audio ? "-" : lat])
            if let inb {
                if inb.framesDecoded == 0 { problems.append("\(name): nothing decoded") }
                if out.kind == .video && (inb.width != out.width || inb.height != out.height) {
                    problems.append("\(name): decoded \(inb.width)x\(inb.height), sent \(out.width)x\(out.height)")
                }
                if out.kind == .video && inb.stampsRead == 0 { problems.append("\(name): no stamp read back") }
            } else if out.packetsSent == 0 && out.qualityLimitationReason == "bandwidth" {
                suspended.append(name) // the allocator switched it off: the link cannot carry it
            } else {
                problems.append("\(name): nothing received")
            }
            rows.append(.object([("sent", Report.outboundJSON(out)), ("received", inb.map(Report.inboundJSON) ?? .null)]))
        }
        let ok = problems.isEmpty && !interrupted
        if json {
            let doc: JSONValue = .object([
                ("type", .string("summary")), ("command", .string("preflight")), ("ok", .bool(ok)),
                ("durationMs", .int(p.elapsedMicros / 1000)), ("streams", .array(rows)),
                ("rejected", Report.rejectedJSON(r.rejected)), ("problems", .array(problems.map { .string($0) })),
                ("suspended", .array(suspended.map { .string($0) })),
                ("estimate", p.network.estimate.map { e in .object([("bitrate", .int(Int64(e.bitrate))), ("delayBased", .int(Int64(e.delayBased))),
                                                                    ("lossBased", .int(Int64(e.lossBased))), ("lossFraction", .double(e.lossFraction))]) } ?? .null),
                ("impairment", r.impairment.map { i in .object([("packets", .int(Int64(i.packets))), ("lost", .int(Int64(i.droppedByLoss))),
                                                                ("droppedByQueue", .int(Int64(i.droppedByQueue))), ("maxQueueMs", .int(i.maxQueueMicros / 1000))]) } ?? .null),
            ])
            Output.out(doc.serialized(pretty: true) + "\n")
        } else {
            Output.out("pubbot preflight — embedded loopback receiver, \(Units.fixed(Double(p.elapsedMicros) / 1e6, 1)) s, SRTP \(plan.config.key.suite.sdesName)\n\n")
            Output.out(t.render())
            let n = p.network
            if let e = n.estimate {
                let rtt = p.streams.compactMap(\.roundTripTimeMillis).max()
                Output.out("\nestimate: \(Units.bitrate(e.bitrate)) (delay-based \(Units.bitrate(e.delayBased)), loss-based \(Units.bitrate(e.lossBased)), acknowledged \(e.acknowledged.map(Units.bitrate) ?? "-")), loss \(Units.fixed(e.lossFraction * 100, 1)) %, RTT \(rtt.map { Units.fixed($0, 1) + " ms" } ?? "-")\n")
                if let a = n.allocation {
                    let layers = a.layers.enumerated().map { i, b in "\(p.streams.first { $0.kind == .video && $0.rid == plan.streams.first { $0.layer == i }?.rid }?.height ?? 0)p \(b == 0 ? "off" : Units.bitrate(b))\(a.bandwidthLimited[i] ? " (bandwidth)" : "")" }
                    Output.out("allocation: audio \(Units.bitrate(a.audio)), " + layers.joined(separator: ", ") + "\n")
                }
                Output.out("feedback: \(n.transportFeedbackReceived) transport-cc, \(n.nackReceived) NACK → \(n.retransmissionsSent) RTX (\(r.streams.reduce(0) { $0 + $1.packetsRecovered }) recovered), \(p.streams.reduce(0) { $0 + $1.pliReceived }) PLI, padding packets \(n.paddingPacketsSent), pacer queue \(n.pacerQueuePackets)\n")
            }
            if let i = r.impairment {
                Output.out("\nimpairment: \(i.packets) packets offered, \(i.droppedByLoss) lost, \(i.droppedByQueue) dropped by the queue, max queueing \(Units.fixed(Double(i.maxQueueMicros) / 1000, 0)) ms\n")
            }
            if r.rejected.total > 0 { Output.out("\nrejected packets: \(r.rejected.total) (auth \(r.rejected.authenticationFailed), malformed \(r.rejected.malformed))\n") }
            let verdict = suspended.isEmpty ? "every stream decoded" : "every stream sent was decoded; suspended for lack of bandwidth: " + suspended.joined(separator: ", ")
            Output.out(ok ? "\nresult: \(verdict)\n" : "\nresult: FAILED\n" + problems.map { "  - \($0)\n" }.joined())
        }
        if interrupted { return 130 }
        return ok ? 0 : 2
    }
}
