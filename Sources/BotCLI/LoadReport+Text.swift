import PublisherEngine
import Fleet
import ReceiverEngine
import Stats
import Platform

/// The report for a person (the table `load` prints), and where it goes.
extension LoadReport {
    /// Writes the JSON report to `path` (if given) and prints it (JSON or the table); false
    /// when the file cannot be written (said on stderr).
    func emit(to path: String?, json asJSON: Bool) -> Bool {
        let text = json().serialized(pretty: true) + "\n"
        if let path, !PublishCommand.writeFile(path, text) {
            Output.err("Error: cannot write the report to '\(path)'\n")
            return false
        }
        Output.out(asJSON ? text : human())
        return true
    }

    func human() -> String {
        var out =
            "pubbot load — \(started)/\(requested) bots started (\(failed) failed), \(withFeedback) heard back, \(Units.fixed(Double(durationMicros) / 1e6, 1)) s, shard\(shards.count > 1 ? "s" : "") \(shards.joined(separator: " "))\n\n"
        var t = TextTable(headers: ["metric", "p5", "p50", "p95", "p99", "mean"], rightAligned: [1, 2, 3, 4, 5])
        for (k, path) in Metrics.fields {
            let h = metrics[keyPath: path]
            func fmt(_ v: Double?) -> String {
                guard let v else { return "-" }
                switch k {
                case "loss": return "\(Units.fixed(v * 100, 2)) %"
                case "rtt": return "\(Units.fixed(v, 1)) ms"
                default: return Units.bitrate(Int(v))
                }
            }
            t.add([k, fmt(h.percentile(0.05)), fmt(h.percentile(0.5)), fmt(h.percentile(0.95)), fmt(h.percentile(0.99)), fmt(h.mean)])
        }
        out += t.render()
        let rs = roomSummaries()
        if rs.count > 1 {
            for r in rs {
                out +=
                    "room \(r.room) (\(r.destination ?? "?")): \(r.bots) bots, \(r.withFeedback) heard back, loss p95 \(r.loss.percentile(0.95).map { Units.fixed($0 * 100, 2) } ?? "-") %, RTT p95 \(r.rtt.percentile(0.95).map { Units.fixed($0, 1) } ?? "-") ms\n"
            }
        }
        if let w = handshakes {
            out +=
                "WHIP: \(w.ice.count) connected; ICE p50 \(Self.percentile(w.ice, 0.5)) ms, p95 \(Self.percentile(w.ice, 0.95)) ms; DTLS p50 \(Self.percentile(w.dtls, 0.5)) ms, p95 \(Self.percentile(w.dtls, 0.95)) ms"
            out += negotiated.isEmpty ? "\n" : "; " + negotiated.map { "\($0.0) \($0.1)" }.joined(separator: ", ") + "\n"
            let allocations = bots.compactMap(\.turnAllocateMicros)
            if !allocations.isEmpty {
                let rtt = bots.filter(\.relayed).compactMap(\.rtt)
                out +=
                    "TURN: \(allocations.count) allocations (p50 \(Units.fixed(Double(Self.percentile(allocations, 0.5)) / 1000, 1)) ms, p95 \(Units.fixed(Double(Self.percentile(allocations, 0.95)) / 1000, 1)) ms), \(bots.filter(\.relayed).count) bots relayed"
                out +=
                    rtt.isEmpty
                    ? "\n"
                    : ", relay RTT p50 \(Units.fixed(Self.percentileD(rtt, 0.5), 1)) ms, p95 \(Units.fixed(Self.percentileD(rtt, 0.95), 1)) ms\n"
            }
        }
        let asked = bots.compactMap(\.iceRestarts).reduce(0, +)
        if asked > 0 {
            out += Self.restartsLine(
                asked: asked, refused: bots.compactMap(\.iceRestartsRefused).reduce(0, +),
                recovery: bots.compactMap(\.iceRestartRecoveryMs), who: "bots")
        }
        out +=
            "conditions: "
            + conditions.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
            + "\n"
        out +=
            "totals: \(totals.packetsSent) packets sent, \(totals.retransmissions) RTX, \(totals.pliReceived) PLI, \(totals.keyFramesSent) key frames"
        if totals.receiverPacketsReceived > 0 {
            out += ", receiver: \(totals.receiverPacketsReceived) packets, \(totals.receiverFramesReceived) frames"
        }
        if totals.uplinkDroppedByLoss + totals.uplinkDroppedByQueue > 0 {
            out +=
                ", uplink emulator dropped \(totals.uplinkDroppedByLoss) at random and \(totals.uplinkDroppedByQueue) at its queue (before the network)"
        }
        out += "\n"
        if let c = cost {
            let perCore = c.loopCPUPercent > 0 ? Double(started) / (c.loopCPUPercent / 100) : 0
            out +=
                "cost: event loops \(Units.fixed(c.loopCPUPercent, 1)) % of a core for \(started) bots → \(Int(perCore)) bots per core (\(suite)); peak RSS \(c.peakRSSBytes >> 20) MiB, \(started > 0 ? (c.peakRSSBytes / started) >> 10 : 0) KiB per bot\n"
            if let e = c.encoderCPUPercent {
                out += "shared live encoder (--encode): \(Units.fixed(e, 1)) % of a core on top, for all bots\n"
            }
            if let s = c.subscriberCPUPercent, let subs = subscribers?.subscribers.count {
                out += "subscribers: their event loops \(Units.fixed(s, 1)) % of a core for \(subs) subscribers"
                if let r = c.rssPerSubscriberBytes { out += ", \(r >> 10) KiB RSS each (the process's growth from their join to its peak)" }
                out += "\n"
            }
            if let worst = c.lag?.worst, let p50 = worst.lag.percentile(0.5), let p99 = worst.lag.percentile(0.99) {
                let lag = worst.lag
                func ms(_ v: Int64) -> String { Units.fixed(Double(v) / 1000, 1) }
                out +=
                    "pubbot's own lag (its slowest drivers, the \(worst.name)): timed work ≤ \(ms(p50)) ms late at p50, ≤ \(ms(p99)) ms at p99, \(ms(lag.maxMicros)) ms at most"
                if let busy = c.machineBusyPercent { out += "; machine CPU \(Int(busy.rounded())) % busy of \(c.cores) cores" }
                out += "\n"
                if p99 > Self.laggingMicros && saturation == nil {
                    out += "note: pubbot's drivers lagged up to \(p99 / 1000) ms at p99 — RTT and latency below that are not resolved\n"
                }
            }
        }
        if let why = saturation {
            out +=
                "SATURATED: pubbot was the bottleneck of this run — \(why); its \(Self.saturationSpoils.joined(separator: ", ")) figures measure this machine, not the server or the network. Run fewer bots per process, or shard (--shard).\n"
        }
        let silent = bots.filter { $0.state != .failed && $0.rtcpReceived == 0 }
        if !silent.isEmpty {
            out +=
                "no feedback: bots \(silent.prefix(10).map { String($0.number) }.joined(separator: ", "))\(silent.count > 10 ? " …" : "")\n"
        }
        for b in bots where b.state == .failed { out += "bot \(b.number) failed: \(b.error ?? "?")\n" }
        if let subscribers { out += subscribers.human }
        for r in results {
            out +=
                "require \(r.0.text): \(r.1.map { Units.fixed($0 * (r.0.metric == .loss || r.0.metric == .started || r.0.metric == .feedback ? 100 : 1), 2) } ?? "-") → \(r.2 ? "met" : "NOT MET")\n"
        }
        if saturation != nil && saturationFails { out += "require: not judged — pubbot itself was saturated (exit 1)\n" }
        out += "result: \(exitCode == 0 ? "ok" : "FAILED") (exit \(exitCode))\n"
        return out
    }

    /// The restarts' line: asked, refused, how many of `who` ended on a new pair and how fast.
    static func restartsLine(asked: Int, refused: Int, recovery: [Int], who: String) -> String {
        "ICE restarts (RFC 9725 §4.3.3): \(asked) asked, \(refused) refused, \(recovery.count) \(who) on a new pair"
            + (recovery.isEmpty
                ? "\n" : " (p50 \(percentile(recovery, 0.5)) ms, p95 \(percentile(recovery, 0.95)) ms after the answer)\n")
    }
}
