/// Throughput of what the receiver acknowledged, over a sliding window of arrival time.
public struct AcknowledgedBitrateEstimator: Sendable {
    public static let windowMicros: Int64 = 500_000
    /// Arrival and size of each packet acknowledged in the window (negative: a probe's).
    var samples: [(arrival: Int64, size: Int)] = []
    var bytes = 0

    public init() {}

    /// Of `bytes`, those of probe clusters.
    var probeBytes = 0

    public mutating func add(_ results: [PacketResult]) {
        for r in results {
            guard let t = r.receiveMicros else { continue }
            samples.append((t, r.probeCluster == nil ? r.size : -r.size))
            bytes += r.size
            if r.probeCluster != nil { probeBytes += r.size }
        }
        guard let newest = samples.last?.arrival else { return }
        var drop = 0
        while drop < samples.count && newest - samples[drop].arrival > Self.windowMicros {
            let size = samples[drop].size
            bytes -= abs(size)
            if size < 0 { probeBytes += size }
            drop += 1
        }
        if drop > 0 { samples.removeFirst(drop) }
    }

    /// Bits per second, once the window spans at least 150 ms.
    public var bitrate: Int? {
        guard let first = samples.first?.arrival, let last = samples.last?.arrival, last - first >= 150_000 else { return nil }
        return Int(Double(bytes - abs(samples[0].size)) * 8 * 1e6 / Double(last - first))
    }

    /// The same without the probe clusters' packets: what the link carried of media and the
    /// padding that holds the rate. A token-bucket shaper (a policer's or tbf's burst) passes a
    /// probe at line rate after the link idled below its rate — a spike in `bitrate` that is
    /// the bucket, not the link.
    public var bitrateOutsideProbes: Int? {
        guard let first = samples.first?.arrival, let last = samples.last?.arrival, last - first >= 150_000 else { return nil }
        return Int(Double(bytes - probeBytes - max(0, samples[0].size)) * 8 * 1e6 / Double(last - first))
    }
}
