import Fleet
import Platform

/// `load --metrics`: the fleet in Prometheus text exposition (format 0.0.4) while it runs,
/// rendered once a second by the load's watch loop (a scrape copies the last text). Series do
/// not grow with the fleet: counters and gauges over all bots, and one classic histogram per
/// per-bot quantity whose buckets hold the bots' current values (a snapshot of the fleet's
/// distribution, not a stream of observations), labelled only `role`, `codec` and `shard` —
/// so `histogram_quantile(0.95, sum by (le) (pubbot_load_bot_loss_ratio_bucket))` is the
/// fleet's p95 across every shard scraped, as locust's bucket counts merge across workers.
/// Driver lag is a cumulative histogram of turns (`rate()` applies).
enum FleetMetrics {
    /// Fixed bucket upper bounds, in the series' units.
    static let bitrateBounds: [Double] = [50e3, 100e3, 200e3, 300e3, 500e3, 700e3, 1e6, 1.5e6, 2e6, 3e6, 5e6, 10e6]
    static let lossBounds: [Double] = [0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1]
    static let rttBounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
    static let joinBounds: [Double] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    static func render(
        _ report: LoadReport, states: [BotState: Int], subscribers: (connected: Int, total: Int)?, lag: DriverLags, saturated: Bool,
        codec: String, shard: String
    ) -> String {
        var out = ""
        func labels(_ extra: [(String, String)] = []) -> String {
            let all = [("role", "publisher"), ("codec", codec), ("shard", shard)] + extra
            return "{" + all.map { "\($0.0)=\"\($0.1.replacingBackslashesAndQuotes)\"" }.joined(separator: ",") + "}"
        }
        func family(_ name: String, _ type: String, _ help: String, _ samples: [String]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n" + samples.joined(separator: "\n") + "\n"
        }
        func number(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v) }
        func histogram(_ name: String, _ help: String, _ bounds: [Double], _ values: [Double]) {
            var samples: [String] = []
            for b in bounds {
                samples.append("\(name)_bucket\(labels([("le", number(b))])) \(values.filter { $0 <= b }.count)")
            }
            samples.append("\(name)_bucket\(labels([("le", "+Inf")])) \(values.count)")
            samples.append("\(name)_sum\(labels()) \(number(values.reduce(0, +)))")
            samples.append("\(name)_count\(labels()) \(values.count)")
            family(name, "histogram", help, samples)
        }
        family(
            "pubbot_load_bots", "gauge", "Publisher bots by state (pending, running, done, failed).",
            [BotState.pending, .running, .done, .failed].map { "pubbot_load_bots\(labels([("state", $0.rawValue)])) \(states[$0] ?? 0)" })
        family(
            "pubbot_load_bots_with_feedback", "gauge", "Publisher bots that have heard RTCP from the receiver or server.",
            ["pubbot_load_bots_with_feedback\(labels()) \(report.withFeedback)"])
        let t = report.totals
        for (name, help, value) in [
            ("pubbot_load_packets_sent_total", "RTP packets the bots sent.", t.packetsSent),
            ("pubbot_load_bytes_sent_total", "RTP bytes (header and payload) the bots sent.", t.bytesSent),
            ("pubbot_load_retransmissions_total", "RTX packets sent in answer to NACKs.", t.retransmissions),
            ("pubbot_load_nack_received_total", "Generic NACKs the bots received.", t.nackReceived),
            ("pubbot_load_pli_received_total", "Picture loss indications the bots received.", t.pliReceived),
            ("pubbot_load_key_frames_sent_total", "Key frames the bots sent.", t.keyFramesSent),
            ("pubbot_load_packets_lost_reported_total", "Packets the receivers reported lost.", t.packetsLostReported)
        ] {
            family(name, "counter", help, ["\(name)\(labels()) \(value)"])
        }
        let live = report.bots.filter { $0.state == .running || $0.state == .done }
        histogram(
            "pubbot_load_bot_bitrate_bps", "Each bot's bitrate sent since it started (bits/s).", bitrateBounds,
            live.map { Double($0.bitrate) })
        histogram(
            "pubbot_load_bot_estimate_bps", "Each bot's send-side bandwidth estimate (bits/s).", bitrateBounds,
            live.compactMap { $0.estimate.map(Double.init) })
        histogram(
            "pubbot_load_bot_loss_ratio", "Each bot's loss reported by the receiver (lost ÷ sent).", lossBounds,
            live.compactMap(\.loss))
        histogram(
            "pubbot_load_bot_rtt_seconds", "Each bot's round-trip time from receiver reports.", rttBounds,
            live.compactMap { $0.rtt.map { $0 / 1000 } })
        let joins = live.compactMap { b -> Double? in
            guard let ice = b.iceMs else { return nil }
            return Double(ice + (b.dtlsMs ?? 0)) / 1000
        }
        if !joins.isEmpty { histogram("pubbot_load_bot_join_seconds", "WHIP bots: ICE then DTLS, seconds.", joinBounds, joins) }
        if let subscribers {
            family(
                "pubbot_load_subscribers", "gauge", "WHEP subscriber bots connected, and asked for.",
                [
                    "pubbot_load_subscribers\(labels([("state", "connected")])) \(subscribers.connected)",
                    "pubbot_load_subscribers\(labels([("state", "asked")])) \(subscribers.total)"
                ])
        }
        // Driver lag: every turn each kind of driver ran, cumulative since the start.
        var lagSamples: [String] = []
        for g in lag.groups where g.lag.count > 0 {
            let d = [("driver", g.name)]
            var cumulative = 0
            for (i, b) in LagMeter.bounds.enumerated() {
                cumulative += g.lag.counts[i]
                lagSamples.append("pubbot_load_driver_lag_seconds_bucket\(labels(d + [("le", String(Double(b) / 1e6))])) \(cumulative)")
            }
            lagSamples.append("pubbot_load_driver_lag_seconds_bucket\(labels(d + [("le", "+Inf")])) \(g.lag.count)")
            lagSamples.append("pubbot_load_driver_lag_seconds_sum\(labels(d)) \(Double(g.lag.sumMicros) / 1e6)")
            lagSamples.append("pubbot_load_driver_lag_seconds_count\(labels(d)) \(g.lag.count)")
        }
        if !lagSamples.isEmpty {
            out +=
                "# HELP pubbot_load_driver_lag_seconds How late pubbot's own drivers ran their timed work (turns, seconds late).\n"
                + "# TYPE pubbot_load_driver_lag_seconds histogram\n" + lagSamples.joined(separator: "\n") + "\n"
        }
        family(
            "pubbot_load_saturated", "gauge",
            "1 while pubbot itself is the bottleneck (its drivers over 50 ms late at p99 in the last second).",
            ["pubbot_load_saturated\(labels()) \(saturated ? 1 : 0)"])
        return out
    }
}
