/// What a link does to packets at one moment: random or bursty loss, delay, jitter and a rate
/// cap with a bounded drop-tail queue.
public struct ImpairmentSettings: Equatable, Sendable {
    /// Average loss, 0…100 %.
    public var lossPercent: Double = 0
    /// Mean loss-burst length in packets (Gilbert–Elliott); 1 means independent losses.
    public var burstLength: Double = 1
    public var delayMicros: Int64 = 0
    /// Each packet gets a uniform extra delay in [0, 2·jitter] around `delay − jitter` (never
    /// negative); packets are never reordered.
    public var jitterMicros: Int64 = 0
    /// Bottleneck rate (bits/s, counting 28 bytes of IP+UDP per packet); nil = unlimited.
    public var rateBps: Int?
    /// Most queueing delay the bottleneck holds before it drops (drop-tail).
    public var queueMicros: Int64 = 200_000
    /// Token bucket depth in bytes at the rate cap (Linux `tbf … burst`): after an idle spell
    /// this many bytes pass at once before the rate applies; the queue then holds `queue` of
    /// waiting at the rate on top (tbf's limit is rate × latency + burst, `tc-tbf(8)`). 0: none.
    public var bucketBytes = 0

    public init() {}

    public var isNeutral: Bool { lossPercent == 0 && delayMicros == 0 && jitterMicros == 0 && rateBps == nil }
}

/// A sequence of impairment steps in time (`0s:rate=3mbit;10s:rate=600kbit;20s:loss=100%`).
/// Each step changes only the parameters it names; the others carry over from the step before.
public struct ImpairmentSchedule: Equatable, Sendable {
    public struct Step: Equatable, Sendable {
        public var startMicros: Int64
        public var settings: ImpairmentSettings
    }

    public var steps: [Step]

    public init(_ settings: ImpairmentSettings = ImpairmentSettings()) { steps = [Step(startMicros: 0, settings: settings)] }

    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    static let keys = "loss, burst, delay, jitter, rate, queue, bucket"

    /// Parses `loss=2%,burst=4,delay=40ms,jitter=10ms,rate=800kbit,queue=200ms`, or a schedule of
    /// `;`-separated steps each starting with `TIME:`.
    public static func parse(_ text: String) throws(ParseError) -> ImpairmentSchedule {
        let parts = text.split(separator: ";", omittingEmptySubsequences: false).map { String($0).trimmed }
        guard !parts.isEmpty, !text.trimmed.isEmpty else {
            throw ParseError(message: "empty impairment (expected e.g. loss=2%,rate=800kbit)")
        }
        var schedule = ImpairmentSchedule()
        schedule.steps = []
        var current = ImpairmentSettings()
        for (i, part) in parts.enumerated() {
            var body = Substring(part), start: Int64 = 0
            if let colon = part.firstIndex(of: ":"), !part[..<colon].contains("=") {
                do { start = try ValueSyntax.duration(String(part[..<colon])) } catch {
                    throw ParseError(message: "step \(i + 1): \(error)")
                }
                body = part[part.index(after: colon)...]
            } else if parts.count > 1 {
                throw ParseError(message: "step \(i + 1) '\(part)' needs a start time (e.g. 10s:rate=600kbit)")
            }
            if let last = schedule.steps.last, start <= last.startMicros {
                throw ParseError(message: "step \(i + 1) starts at or before the previous step")
            }
            if i == 0 && start != 0 { schedule.steps.append(Step(startMicros: 0, settings: current)) }
            for item in body.split(separator: ",") {
                let kv = item.split(separator: "=", maxSplits: 1).map { String($0).trimmed }
                guard kv.count == 2, !kv[1].isEmpty else { throw ParseError(message: "'\(item)' is not key=value (keys: \(keys))") }
                do {
                    switch kv[0].lowercased() {
                    case "loss": current.lossPercent = try ValueSyntax.percent(kv[1])
                    case "burst":
                        guard let b = Double(kv[1]), b >= 1, b <= 1000 else {
                            throw ParseError(message: "burst must be a mean burst length in packets, 1…1000")
                        }
                        current.burstLength = b
                    case "delay": current.delayMicros = try ValueSyntax.duration(kv[1])
                    case "jitter": current.jitterMicros = try ValueSyntax.duration(kv[1])
                    case "rate": current.rateBps = kv[1] == "0" || kv[1].lowercased() == "none" ? nil : try ValueSyntax.bitrate(kv[1])
                    case "queue":
                        current.queueMicros = try ValueSyntax.duration(kv[1])
                        guard current.queueMicros >= 1_000 else { throw ParseError(message: "queue must hold at least 1ms") }
                    case "bucket":
                        current.bucketBytes = try ValueSyntax.bytes(kv[1])
                        guard current.bucketBytes <= 100_000_000 else { throw ParseError(message: "bucket is limited to 100mb") }
                    default: throw ParseError(message: "unknown impairment '\(kv[0])' (keys: \(keys))")
                    }
                } catch let e as ParseError { throw e } catch { throw ParseError(message: "\(kv[0]): \(error)") }
                guard current.delayMicros <= 10_000_000, current.jitterMicros <= 10_000_000 else {
                    throw ParseError(message: "delay and jitter are limited to 10s")
                }
            }
            schedule.steps.append(Step(startMicros: start, settings: current))
        }
        return schedule
    }

    /// The settings in force `elapsed` µs after the start.
    public func settings(at elapsed: Int64) -> ImpairmentSettings {
        var s = steps.first?.settings ?? ImpairmentSettings()
        for step in steps where step.startMicros <= elapsed { s = step.settings }
        return s
    }

    public var isNeutral: Bool { steps.allSatisfy { $0.settings.isNeutral } }

    /// The schedule in the syntax `parse` reads, every step with every parameter in exact units
    /// (µs, bit/s): `parse(s.spec) == s`.
    public var spec: String {
        steps.map { step in
            let s = step.settings
            return
                "\(step.startMicros)us:loss=\(s.lossPercent)%,burst=\(s.burstLength),delay=\(s.delayMicros)us,jitter=\(s.jitterMicros)us,"
                + "rate=\(s.rateBps.map { "\($0)bit" } ?? "none"),queue=\(s.queueMicros)us,bucket=\(s.bucketBytes)b"
        }.joined(separator: ";")
    }
}

extension ImpairmentSchedule {
    /// The schedule as a person writes it: each step with what it changes (steps carry the
    /// rest over), in round units (`loss=10%`, `0s:rate=3mbit;10s:rate=600kbit`); `parse`
    /// reads it back to the same schedule.
    public var summary: String {
        func time(_ us: Int64) -> String {
            us % 1_000_000 == 0 ? "\(us / 1_000_000)s" : us % 1_000 == 0 ? "\(us / 1_000)ms" : "\(us)us"
        }
        func number(_ d: Double) -> String { d == d.rounded() ? String(Int(d)) : String(d) }
        func rate(_ b: Int) -> String {
            b % 1_000_000 == 0 ? "\(b / 1_000_000)mbit" : b % 1_000 == 0 ? "\(b / 1_000)kbit" : "\(b)bit"
        }
        var d = ImpairmentSettings()
        let parts = steps.map { step -> String in
            let s = step.settings
            defer { d = s }
            var kv: [String] = []
            if s.lossPercent != d.lossPercent { kv.append("loss=\(number(s.lossPercent))%") }
            if s.burstLength != d.burstLength { kv.append("burst=\(number(s.burstLength))") }
            if s.delayMicros != d.delayMicros { kv.append("delay=\(time(s.delayMicros))") }
            if s.jitterMicros != d.jitterMicros { kv.append("jitter=\(time(s.jitterMicros))") }
            if s.rateBps != d.rateBps { kv.append("rate=\(s.rateBps.map(rate) ?? "none")") }
            if s.queueMicros != d.queueMicros { kv.append("queue=\(time(s.queueMicros))") }
            if s.bucketBytes != d.bucketBytes { kv.append("bucket=\(s.bucketBytes)b") }
            if kv.isEmpty { kv.append("loss=\(number(s.lossPercent))%") }
            return kv.joined(separator: ",")
        }
        guard steps.count > 1 else { return parts.first ?? "loss=0%" }
        return zip(steps, parts).map { "\(time($0.startMicros)):\($1)" }.joined(separator: ";")
    }
}

extension String {
    /// Without the blanks around it (a slice, not a reversed copy of a reversed copy).
    var trimmed: String {
        guard let first = firstIndex(where: { $0 != " " }), let last = lastIndex(where: { $0 != " " }) else { return "" }
        return String(self[first...last])
    }
}
