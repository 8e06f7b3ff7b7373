import WebRTCClient
import HTTPSignaling
import Stats
#if canImport(Glibc)
    import Glibc
#endif

/// `pubbot check`: a WHIP and/or WHEP server against RFC 9725, requirement by requirement
/// (`ConformanceCheck`), as a table or JSON; exit 1 when a MUST is broken.
enum CheckCommand {
    static let spec = OptionSpec(options: [
        "whip": .value, "token": .value, "whep": .value, "whep-token": .value, "timeout": .value, "json": .flag, "ca-file": .value,
        "no-ipv6": .flag
    ])

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        let o = try ParsedOptions.parse(args, spec: spec, command: "check")
        if o.helpRequested { Output.out(Help.help("check")! + "\n"); return 0 }
        func env(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        var targets: [(SignalingExchange, String, String?)] = []
        if let url = o.value("whip") { targets.append((.whip, url, o.value("token") ?? env("PUBBOT_WHIP_TOKEN"))) }
        if let url = o.value("whep") { targets.append((.whep, url, o.value("whep-token") ?? env("PUBBOT_WHEP_TOKEN"))) }
        guard !targets.isEmpty else { throw UsageError("give --whip URL or --whep URL (or both)", command: "check") }
        try CommonOptions.caFile(o, command: "check")
        try CommonOptions.noIPv6(o, urls: targets.map(\.1), command: "check")
        if o.value("token") != nil && o.value("whip") == nil { throw UsageError("--token goes with --whip", command: "check") }
        if o.value("whep-token") != nil && o.value("whep") == nil { throw UsageError("--whep-token goes with --whep", command: "check") }
        for (exchange, url, _) in targets {
            let lower = url.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
                throw UsageError(
                    "--\(exchange == .whip ? "whip" : "whep") '\(SignalingClient.redacted(url))' is not an http:// or https:// URL",
                    command: "check")
            }
        }
        var timeout: Int64 = 10_000_000
        if let t = o.value("timeout") {
            timeout = try ValueParsers.duration(t, option: "timeout")
            guard (500_000...120_000_000).contains(timeout) else { throw UsageError("--timeout must be 500ms…120s", command: "check") }
        }
        var reports: [ConformanceReport] = []
        var failures: [String] = []
        for (exchange, url, token) in targets {
            do {
                let r = try ConformanceCheck.run(exchange: exchange, endpoint: url, token: token, timeoutMillis: Int(timeout / 1000))
                reports.append(r)
                if let why = r.unreachable { failures.append("\(exchange.name) \(r.endpoint): \(why)") }
            } catch {
                failures.append("\(exchange.name) \(SignalingClient.redacted(url)): \(error.description)")
            }
        }
        if o.has("json") {
            Output.out(
                JSONValue.object([("reports", .array(reports.map(json))), ("errors", .array(failures.map { .string($0) }))]).serialized(
                    pretty: true) + "\n")
        } else {
            for r in reports where r.unreachable == nil { Output.out(text(r)) }
        }
        for f in failures { Output.err("Error: \(f)\n") }
        if !failures.isEmpty { return 2 }
        return reports.contains { !$0.brokenMusts.isEmpty } ? 1 : 0
    }

    static func text(_ r: ConformanceReport) -> String {
        var t = TextTable(headers: ["result", "level", "section", "requirement", "seen"])
        for f in r.findings {
            t.add([f.outcome == .broken ? "BROKEN" : f.outcome.rawValue, f.level.rawValue, f.section, f.requirement, f.detail])
        }
        let musts = r.brokenMusts.count
        var out = "\(r.exchange.name) \(r.endpoint): \(r.count(.met)) met, \(r.count(.broken)) broken"
        out += musts > 0 ? " (\(musts) MUST)" : ""
        out += ", \(r.count(.notSupported)) not supported, \(r.count(.notExercised)) not exercised\n\n"
        // The last column is padded by the table: no trailing blanks on a line.
        out +=
            t.render().split(separator: "\n", omittingEmptySubsequences: false).map { line in
                var l = Substring(line)
                while l.last == " " { l = l.dropLast() }
                return String(l)
            }.joined(separator: "\n") + "\n"
        if musts > 0 {
            out += "result: \(musts) MUST broken: " + r.brokenMusts.map(\.id).joined(separator: ", ") + "\n\n"
        } else {
            out += "result: every MUST tried was met\n\n"
        }
        return out
    }

    static func json(_ r: ConformanceReport) -> JSONValue {
        .object([
            ("exchange", .string(r.exchange.name)),
            ("endpoint", .string(r.endpoint)),
            ("unreachable", r.unreachable.map { .string($0) } ?? .null),
            (
                "summary",
                .object([
                    ("met", .int(Int64(r.count(.met)))), ("broken", .int(Int64(r.count(.broken)))),
                    ("mustBroken", .int(Int64(r.brokenMusts.count))), ("notSupported", .int(Int64(r.count(.notSupported)))),
                    ("notExercised", .int(Int64(r.count(.notExercised))))
                ])
            ),
            (
                "findings",
                .array(
                    r.findings.map { f in
                        .object([
                            ("id", .string(f.id)), ("section", .string(f.section)),
                            ("level", .string(f.level == .none ? "none" : f.level.rawValue)), ("requirement", .string(f.requirement)),
                            ("outcome", .string(f.outcome.rawValue)), ("detail", .string(f.detail))
                        ])
                    })
            )
        ])
    }
}
