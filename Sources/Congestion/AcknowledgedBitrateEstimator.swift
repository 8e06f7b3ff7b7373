/// Throughput of what the receiver acknowledged, over a sliding window of arrival time.
public struct AcknowledgedBitrateEstimator: Sendable {
    public static let windowMicros: Int64 = 500_000
    var samples: [(arrival: Int64, size: Int)] = []
    var bytes = 0

    public init() {}

    public mutating func add(_ results: [PacketResult]) {
        for r in results {
            guard let t = r.receiveMicros else { continue }
            samples.append((t, r.size))
            bytes += r.size
        }
        guard let newest = samples.last?.arrival else { return }
        var drop = 0
        while drop < samples.count && newest - samples[drop].arrival > Self.windowMicros { bytes -= samples[drop].size; drop += 1 }
        if drop > 0 { samples.removeFirst(drop) }
    }

    /// Bits per second, once the window spans at least 150 ms.
    public var bitrate: Int? {
        guard let first = samples.first?.arrival, let last = samples.last?.arrival, last - first >= 150_000 else { return nil }
        return Int(Double(bytes - samples[0].size) * 8 * 1e6 / Double(last - first))
    }
}
