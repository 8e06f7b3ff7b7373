import Foundation
import Testing
import Transport

/// `load --metrics` scraped by the real thing: Debian's Prometheus (installed by scripts/setup)
/// scrapes a running fleet every second; PromQL over its HTTP API gives the fleet's
/// percentiles within one bucket of the final report's, and `promtool check metrics` finds
/// nothing to say about the exposition.
@Suite(.serialized) struct LoadMetricsTests {
    static let prometheus = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let promtool = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// A free loopback port (bound then released: Prometheus takes a port number, not a socket).
    func freePort() throws -> Int {
        let s = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0))
        return s.localAddress.port
    }

    func get(_ url: String) -> Data? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-sf", "--max-time", "5", url]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = Pipe()
        guard (try? p.run()) != nil else { return nil }
        let d = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return p.terminationStatus == 0 ? d : nil
    }

    /// One instant query's scalar value at `time` (seconds since the epoch).
    func query(_ base: String, _ promql: String, at time: Double) -> Double? {
        let q = promql.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        guard let d = get("\(base)/api/v1/query?query=\(q)&time=\(time)"),
            let doc = try? JSONSerialization.jsonObject(with: d) as? [String: Any], let data = doc["data"] as? [String: Any],
            let result = data["result"] as? [[String: Any]], let value = result.first?["value"] as? [Any], let text = value.last as? String
        else { return nil }
        return Double(text)
    }

    /// Which of the exposition's buckets a value falls in.
    func bucket(_ v: Double, _ bounds: [Double]) -> Int { bounds.firstIndex { v <= $0 * 1.000001 } ?? bounds.count }

    @Test func prometheusScrapesARunningFleetAndAgreesWithTheReport() throws {
        guard let prometheus = Self.prometheus, let promtool = Self.promtool else {
            print("skipped: no prometheus/promtool on this machine (scripts/setup installs Debian's prometheus)")
            return
        }
        let dir = NSTemporaryDirectory() + "pubbot-prom-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let metricsPort = try freePort(), promPort = try freePort()
        let reportPath = dir + "/load.json"
        // The fleet: 20 bots for 12 s against the embedded receiver, metrics on a loopback port.
        let load = Process()
        load.executableURL = BinaryTests.binary
        load.arguments = [
            "load", "--bots", "20", "--duration", "12s", "--ramp", "1s", "--metrics", "127.0.0.1:\(metricsPort)", "--report", reportPath
        ]
        load.standardOutput = Pipe()
        load.standardError = Pipe()
        try """
        global:
          scrape_interval: 1s
          scrape_timeout: 900ms
        scrape_configs:
          - job_name: pubbot-load
            static_configs:
              - targets: ['127.0.0.1:\(metricsPort)']
        """.write(toFile: dir + "/prometheus.yml", atomically: true, encoding: .utf8)
        let prom = Process()
        prom.executableURL = URL(fileURLWithPath: prometheus)
        prom.arguments = [
            "--config.file=\(dir)/prometheus.yml", "--storage.tsdb.path=\(dir)/data", "--web.listen-address=127.0.0.1:\(promPort)"
        ]
        prom.standardOutput = Pipe()
        let promLog = Pipe()
        prom.standardError = promLog
        try prom.run()
        defer { if prom.isRunning { prom.terminate(); prom.waitUntilExit() } }
        let base = "http://127.0.0.1:\(promPort)"
        var ready = false
        for _ in 0..<100 where !ready {
            ready = get(base + "/-/ready") != nil
            if !ready { Thread.sleep(forTimeInterval: 0.1) }
        }
        try #require(ready, "prometheus did not start")
        try load.run()
        defer { if load.isRunning { load.terminate() } }
        // Mid-run: the exposition itself, through promtool.
        Thread.sleep(forTimeInterval: 6)
        let text = try #require(get("http://127.0.0.1:\(metricsPort)/metrics"), "no /metrics while the fleet runs")
        try text.write(to: URL(fileURLWithPath: dir + "/metrics.txt"))
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/bin/sh")
        check.arguments = ["-c", "'\(promtool)' check metrics < '\(dir)/metrics.txt'"]
        let checkOut = Pipe()
        check.standardOutput = checkOut
        check.standardError = checkOut
        try check.run()
        let lint = String(decoding: checkOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        check.waitUntilExit()
        #expect(check.terminationStatus == 0 && lint.isEmpty, "promtool: \(lint)")
        let series = String(decoding: text, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") }.count
        #expect(series < 2_000)
        load.waitUntilExit()
        #expect(load.terminationStatus == 0)
        let end = Date().timeIntervalSince1970
        // What Prometheus saw: a scrape a second once its first came (it spreads its first
        // scrape over the interval after discovering the target), several of them answered.
        let scrapes = query(base, "sum_over_time(up{job=\"pubbot-load\"}[30s])", at: end - 1.5) ?? 0
        #expect(scrapes >= 4, "\(scrapes) scrapes answered")
        let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reportPath))) as! [String: Any]
        let metrics = doc["metrics"] as! [String: Any]
        // The fleet's percentiles across shards, as a dashboard asks, against the report's: the
        // last scrape is at most a second before the report's final figures.
        let bitrateBounds: [Double] = [50e3, 100e3, 200e3, 300e3, 500e3, 700e3, 1e6, 1.5e6, 2e6, 3e6, 5e6, 10e6]
        let rttBounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
        for (q, key) in [(0.5, "p50"), (0.95, "p95")] {
            let promBitrate = try #require(
                query(base, "histogram_quantile(\(q), sum by (le) (pubbot_load_bot_bitrate_bps_bucket))", at: end - 1.5))
            let reportBitrate = try #require((metrics["bitrate"] as? [String: Any])?[key] as? Double)
            #expect(abs(bucket(promBitrate, bitrateBounds) - bucket(reportBitrate, bitrateBounds)) <= 1, "bitrate \(key)")
        }
        // Loss p95 too (a bot's loss is cumulative, so it moves little in the last second; RTT is
        // not compared: each receiver report moves it, and on a loaded machine one scrape apart
        // spans two of its buckets).
        let promLoss = try #require(query(base, "histogram_quantile(0.95, sum by (le) (pubbot_load_bot_loss_ratio_bucket))", at: end - 1.5))
        let reportLoss = try #require((metrics["loss"] as? [String: Any])?["p95"] as? Double)
        let lossBounds: [Double] = [0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1]
        #expect(abs(bucket(promLoss, lossBounds) - bucket(reportLoss, lossBounds)) <= 1, "loss p95: \(promLoss) vs \(reportLoss)")
        #expect(query(base, "count(pubbot_load_bot_rtt_seconds_bucket)", at: end - 1.5) == Double(rttBounds.count + 1))
        let bots = query(base, "sum(pubbot_load_bots{state=\"running\"})", at: end - 1.5)
        #expect(bots == 20)
        let sent = try #require(query(base, "sum(pubbot_load_packets_sent_total)", at: end - 1.5))
        let reported = try #require((doc["totals"] as? [String: Any])?["packetsSent"] as? Int)
        #expect(sent > 0 && sent <= Double(reported) && sent >= Double(reported) * 0.7, "\(sent) of \(reported)")
    }
}
