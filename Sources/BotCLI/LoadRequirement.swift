/// `--require loss<1%,rtt<200ms,bitrate>300kbit,estimate>500kbit,started>=100%`: upper bounds
/// apply to the fleet's p95 (loss, rtt), lower bounds to its p5 (bitrate, estimate); `started`
/// and `feedback` are the share of bots that started and that heard back from the receiver.
struct LoadRequirement: Equatable {
    enum Metric: String { case loss, rtt, bitrate, estimate, started, feedback }
    var text: String
    var metric: Metric
    var upper: Bool
    var inclusive: Bool
    var limit: Double

    static func parseList(_ text: String) throws(UsageError) -> [LoadRequirement] {
        var out: [LoadRequirement] = []
        for item in text.split(separator: ",") { out.append(try parse(String(item))) }
        guard !out.isEmpty else { throw UsageError("empty --require") }
        return out
    }

    static func parse(_ item: String) throws(UsageError) -> LoadRequirement {
        guard let at = item.firstIndex(where: { $0 == "<" || $0 == ">" }) else {
            throw UsageError("invalid --require '\(item)' (e.g. loss<1%, rtt<200ms, bitrate>300kbit, estimate>500kbit, started>=100%)")
        }
        var end = item.index(after: at)
        if end < item.endIndex, item[end] == "=" { end = item.index(after: end) }
        let op = String(item[at..<end])
        let name = String(item[..<at]), value = String(item[end...])
        guard let metric = Metric(rawValue: name) else {
            throw UsageError("unknown --require metric '\(name)' (loss, rtt, bitrate, estimate, started, feedback)")
        }
        let limit: Double
        switch metric {
        case .loss, .started, .feedback:
            guard value.hasSuffix("%"), let v = Double(value.dropLast()), v >= 0, v <= 100 else {
                throw UsageError("--require \(name) takes a percentage, e.g. \(name)\(op)1%")
            }
            limit = v / 100
        case .rtt:
            limit = Double(try ValueParsers.duration(value, option: "require")) / 1000
        case .bitrate, .estimate:
            limit = Double(try ValueParsers.bitrate(value, option: "require"))
        }
        return LoadRequirement(text: item, metric: metric, upper: op.hasPrefix("<"), inclusive: op.count == 2, limit: limit)
    }

    /// The figure the requirement is checked against.
    func figure(_ r: LoadReport) -> Double? {
        switch metric {
        case .loss: return r.metrics.loss.percentile(0.95)
        case .rtt: return r.metrics.rtt.percentile(0.95)
        case .bitrate: return r.metrics.bitrate.percentile(0.05)
        case .estimate: return r.metrics.estimate.percentile(0.05)
        case .started: return r.requested > 0 ? Double(r.started) / Double(r.requested) : nil
        case .feedback: return r.requested > 0 ? Double(r.withFeedback) / Double(r.requested) : nil
        }
    }

    func met(by v: Double) -> Bool {
        if upper { return inclusive ? v <= limit : v < limit }
        return inclusive ? v >= limit : v > limit
    }
}
