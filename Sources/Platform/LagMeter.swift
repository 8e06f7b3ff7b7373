#if canImport(Glibc)
    import Glibc
#endif

/// How late a driver runs what was due (its timers, a bot's next turn): the measure of a tool
/// that is itself the bottleneck. A loop with spare CPU runs its deadlines within its timer slack
/// (2 ms in the fleet's loops); a saturated one falls behind by tens or hundreds of
/// milliseconds, and every figure timed by it — latency, frame rate, loss — then measures the
/// machine, not the network. Fixed buckets, so meters add up across loops and can be subtracted
/// to give a window (as Prometheus histograms are).
public struct LagMeter: Sendable, Equatable {
    /// Upper bounds of the buckets, microseconds (the last bucket is everything above).
    public static let bounds: [Int64] = [500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000]
    public private(set) var counts = [Int](repeating: 0, count: LagMeter.bounds.count + 1)
    public private(set) var maxMicros: Int64 = 0
    /// All the lateness recorded, microseconds (a Prometheus histogram's `_sum`).
    public private(set) var sumMicros: Int64 = 0
    public var count: Int { counts.reduce(0, +) }

    public init() {}

    @inline(__always)
    public mutating func record(lateMicros: Int64) {
        let late = max(0, lateMicros)
        var i = 0
        while i < Self.bounds.count && late > Self.bounds[i] { i += 1 }
        counts[i] += 1
        sumMicros &+= late
        if late > maxMicros { maxMicros = late }
    }

    public mutating func add(_ o: LagMeter) {
        for i in counts.indices { counts[i] += o.counts[i] }
        sumMicros &+= o.sumMicros
        maxMicros = max(maxMicros, o.maxMicros)
    }

    /// What was recorded since `earlier` (the maximum is the whole run's).
    public func since(_ earlier: LagMeter) -> LagMeter {
        var d = self
        for i in counts.indices { d.counts[i] = max(0, counts[i] - earlier.counts[i]) }
        d.sumMicros = max(0, sumMicros - earlier.sumMicros)
        return d
    }

    /// The bucket bound at or under which a share `q` of the samples lie, microseconds (the
    /// largest finite bound, or the maximum seen, for the last bucket); nil without samples.
    public func percentile(_ q: Double) -> Int64? {
        let n = count
        guard n > 0 else { return nil }
        let rank = max(1, Int((Double(n) * q).rounded(.up)))
        var seen = 0
        for i in counts.indices {
            seen += counts[i]
            // The bucket's bound, but never above the largest lag seen.
            if seen >= rank { return i < Self.bounds.count ? min(Self.bounds[i], maxMicros) : maxMicros }
        }
        return maxMicros
    }
}

/// The whole machine's CPU (/proc/stat's first line): busy and total jiffies, to tell a run
/// whose machine had no idle time left from one that had.
public enum MachineCPU {
    public static func sample() -> (busy: Int64, total: Int64)? {
        let fd = open("/proc/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 512)
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, 511) }
        guard n > 0, let line = String(decoding: buf[0..<n], as: UTF8.self).split(separator: "\n").first else { return nil }
        let f = line.split(separator: " ").dropFirst().compactMap { Int64($0) }
        guard f.count >= 5 else { return nil }
        let total = f.prefix(8).reduce(0, +)
        let idle = f[3] + f[4] // idle + iowait
        return (total - idle, total)
    }

    /// Cores the process may run on.
    public static var cores: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
