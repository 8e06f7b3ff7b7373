/// End-to-end latency samples (ms) with mean and p95 over a bounded reservoir.
public struct LatencyTracker: Sendable {
    var samples: [Double] = []
    var sum = 0.0
    public private(set) var count = 0
    let capacity: Int

    public init(capacity: Int = 8192) { self.capacity = capacity }

    public mutating func add(_ ms: Double) {
        count += 1
        sum += ms
        if samples.count < capacity { samples.append(ms) } else { samples[count % capacity] = ms }
    }

    public var mean: Double? { count > 0 ? sum / Double(count) : nil }

    public func percentile(_ p: Double) -> Double? {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        let idx = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[idx]
    }
}
