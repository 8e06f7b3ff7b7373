#if canImport(Glibc)
    import Glibc
#endif

/// A log-bucketed histogram of non-negative values (each bucket 2 % wide, plus a bucket for
/// zero), so fleet percentiles can be merged exactly across shards: merging adds bucket counts,
/// and a percentile of the merged histogram is what one process holding every value would report.
/// Percentiles are reported as the bucket's geometric middle (±1 %).
public struct Histogram: Sendable, Equatable {
    static let growth = 1.02
    /// Sparse buckets: index → count (index Int.min is the zero bucket).
    public private(set) var buckets: [Int: Int] = [:]
    public private(set) var count = 0
    public private(set) var sum = 0.0
    public private(set) var min: Double?
    public private(set) var max: Double?

    public init() {}

    static func index(_ v: Double) -> Int {
        v <= 0 ? Int.min : Int((log(v) / log(growth)).rounded(.down))
    }

    static func value(ofBucket i: Int) -> Double {
        i == Int.min ? 0 : pow(growth, Double(i) + 0.5)
    }

    public mutating func add(_ v: Double) {
        guard v.isFinite else { return }
        let x = Swift.max(0, v)
        buckets[Self.index(x), default: 0] += 1
        count += 1
        sum += x
        min = Swift.min(min ?? x, x)
        max = Swift.max(max ?? x, x)
    }

    public mutating func merge(_ o: Histogram) {
        for (k, c) in o.buckets { buckets[k, default: 0] += c }
        count += o.count
        sum += o.sum
        if let m = o.min { min = Swift.min(min ?? m, m) }
        if let m = o.max { max = Swift.max(max ?? m, m) }
    }

    /// The value below which `p` (0…1) of the values fall (nearest rank on buckets).
    public func percentile(_ p: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = Swift.max(1, Int((p * Double(count)).rounded(.up)))
        var seen = 0
        for k in buckets.keys.sorted() {
            seen += buckets[k]!
            if seen >= rank {
                let v = Self.value(ofBucket: k)
                return Swift.min(Swift.max(v, min ?? v), max ?? v)
            }
        }
        return max
    }

    public var mean: Double? { count > 0 ? sum / Double(count) : nil }

    /// `{"count":…,"sum":…,"min":…,"max":…,"buckets":[[index,count],…]}` (zero bucket: index null).
    public var json: JSONValue {
        let b: [JSONValue] = buckets.keys.sorted().map { k in
            .array([k == Int.min ? .null : .int(Int64(k)), .int(Int64(buckets[k]!))])
        }
        return .object([
            ("count", .int(Int64(count))), ("sum", .double(sum)), ("min", min.map { .double($0) } ?? .null),
            ("max", max.map { .double($0) } ?? .null), ("buckets", .array(b))
        ])
    }

    public init?(json: JSONValue) {
        guard let c = json["count"]?.intValue, let s = json["sum"]?.doubleValue, case let .array(items)? = json["buckets"] else {
            return nil
        }
        var total = 0
        for item in items {
            guard case let .array(pair) = item, pair.count == 2, let n = pair[1].intValue, n >= 0 else { return nil }
            let k: Int
            if case .null = pair[0] { k = Int.min } else if let i = pair[0].intValue { k = i } else { return nil }
            buckets[k, default: 0] += n
            total += n
        }
        guard total == c else { return nil }
        count = c
        sum = s
        min = json["min"]?.doubleValue
        max = json["max"]?.doubleValue
    }
}
