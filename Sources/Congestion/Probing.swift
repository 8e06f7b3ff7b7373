/// A burst of packets sent at a set rate to measure what the path can carry.
public struct ProbeCluster: Equatable, Sendable {
    public var id: Int
    public var bitrate: Int
    public var minPackets: Int
    public var minBytes: Int
    var sentPackets = 0
    public var sentBytes = 0

    var isComplete: Bool { sentPackets >= minPackets && sentBytes >= minBytes }
}

/// Start-up and follow-up probing (libwebrtc `probe_controller.cc`): at start,
/// clusters at 3× and 6× the start rate; while a result exceeds 0.7 × its probe rate, probe again
/// at 2× the result, up to `maxBitrate`.
public struct ProbeController: Sendable {
    public var maxBitrate: Int
    var nextID = 1
    var pending: [ProbeCluster] = []
    var lastProbeBitrate = 0
    var waitingForResult: Int?
    var requestedAt: Int64 = 0
    static let clusterMicros: Int64 = 40_000

    public init(maxBitrate: Int) { self.maxBitrate = maxBitrate }

    mutating func make(_ bitrate: Int) -> ProbeCluster {
        let rate = min(bitrate, maxBitrate)
        defer { nextID += 1 }
        // Enough bytes to last ~40 ms at the probe rate, and at least 5 packets.
        return ProbeCluster(
            id: nextID, bitrate: rate, minPackets: 5, minBytes: max(6_000, Int(Int64(rate) * Self.clusterMicros / 8_000_000)))
    }

    public mutating func start(startBitrate: Int, now: Int64) {
        pending = [make(3 * startBitrate), make(6 * startBitrate)]
        lastProbeBitrate = pending.last!.bitrate
        waitingForResult = pending.last!.id
        requestedAt = now
    }

    /// The next cluster to send, if any.
    public mutating func nextCluster() -> ProbeCluster? { pending.isEmpty ? nil : pending.removeFirst() }

    /// A probe measured `bitrate`: probe further while the path keeps up.
    public mutating func onResult(cluster: Int, bitrate: Int, now: Int64) {
        if let p = periodicProbe, p.id == cluster {
            periodicProbe = nil
            let headroom = Double(bitrate) > 1.2 * Double(p.estimate)
            periodicInterval = headroom ? Self.periodicIntervalMicros : min(24_000_000, periodicInterval * 2)
            if headroom { headroomFoundAt = now }
        }
        guard cluster == waitingForResult else { return }
        waitingForResult = nil
        if Double(bitrate) > 0.7 * Double(lastProbeBitrate) && lastProbeBitrate < maxBitrate {
            let next = make(2 * bitrate)
            if next.bitrate > lastProbeBitrate {
                pending.append(next)
                lastProbeBitrate = next.bitrate
                waitingForResult = next.id
                requestedAt = now
            }
        }
    }

    /// While the estimate is below what the publisher would use (`desired`), probe at twice the
    /// estimate every `interval` (like libwebrtc's ALR probing, so a link that got faster is
    /// found in a second or two instead of by +8 %/s).
    public static let periodicIntervalMicros: Int64 = 3_000_000
    var lastPeriodicProbe: Int64 = 0
    /// Grows (×2, up to 24 s) while periodic probes find no headroom, so a link that really is
    /// at capacity is not poked every 3 s; back to 3 s when a probe finds more.
    public private(set) var periodicInterval: Int64 = ProbeController.periodicIntervalMicros
    var periodicProbe: (id: Int, estimate: Int)?

    /// When a periodic probe last found headroom (its result raised the estimate).
    var headroomFoundAt: Int64?

    /// The delay-based detector saw overuse. Within a second of a periodic probe that "found"
    /// headroom, the headroom was not there: a token-bucket shaper (a policer's or tbf's burst)
    /// passed the probe at line rate after the link had idled below its rate. Such a probe counts
    /// as finding none, so the interval grows instead of the burst being re-read every 3 s.
    public mutating func onOveruse(now: Int64) {
        guard let t = headroomFoundAt, now - t <= 1_000_000 else { return }
        headroomFoundAt = nil
        periodicInterval = min(24_000_000, periodicInterval * 2)
    }

    public mutating func maybeProbe(estimate: Int, desired: Int, now: Int64) {
        guard waitingForResult == nil, pending.isEmpty, estimate < desired, estimate < maxBitrate,
            now - lastPeriodicProbe >= periodicInterval, now - requestedAt >= Self.periodicIntervalMicros
        else { return }
        lastPeriodicProbe = now
        let c = make(2 * estimate)
        periodicProbe = (c.id, estimate)
        pending.append(c)
        lastProbeBitrate = c.bitrate
        waitingForResult = c.id
        requestedAt = now
    }

    /// After an outage (or a large drop), probe straight back at the rate that worked before.
    mutating func probeForRecovery(bitrate: Int, now: Int64) {
        pending = [make(bitrate)]
        lastProbeBitrate = pending[0].bitrate
        waitingForResult = pending[0].id
        requestedAt = now
    }

    /// Gives up on a result that never came (lost feedback).
    mutating func timeOut(now: Int64) { if waitingForResult != nil && now - requestedAt > 1_000_000 { waitingForResult = nil } }
}

/// Turns the feedback for a probe cluster into a bitrate: the lower of the send and receive rates
/// over the cluster (libwebrtc `probe_bitrate_estimator.cc`, simplified).
public struct ProbeBitrateEstimator: Sendable {
    var clusters: [Int: [PacketResult]] = [:]

    public init() {}

    /// Adds results; returns (cluster, bitrate, saturated) for every cluster that now has enough
    /// received packets, in cluster order; `saturated`: the path delivered under 0.9 × the send
    /// rate, so the figure is what it holds, not a lower bound.
    public mutating func add(_ results: [PacketResult], minPackets: Int = 5) -> [(cluster: Int, bitrate: Int, saturated: Bool)] {
        var done: [(Int, Int, Bool)] = []
        for r in results {
            guard let id = r.probeCluster else { continue }
            clusters[id, default: []].append(r)
        }
        for id in clusters.keys.sorted() {
            let rs = clusters[id]!
            let received = rs.filter { $0.receiveMicros != nil }
            guard received.count >= minPackets, Double(received.count) >= 0.8 * Double(rs.count) else { continue }
            let sends = rs.map(\.sendMicros), arrivals = received.map { $0.receiveMicros! }
            let sendSpan = sends.max()! - sends.min()!, recvSpan = arrivals.max()! - arrivals.min()!
            guard sendSpan > 0, recvSpan > 0 else { continue }
            let sendRate = Double(rs.dropLast().reduce(0) { $0 + $1.size }) * 8e6 / Double(sendSpan)
            var recvRate = Double(received.dropFirst().reduce(0) { $0 + $1.size }) * 8e6 / Double(recvSpan)
            // A token-bucket shaper (a policer's or tbf's burst) passes the first bytes of a
            // cluster at line rate and the rest at its rate: the cluster's second half, in
            // arrival order, shows the rate the path holds once the burst is spent.
            let ordered = received.sorted { $0.receiveMicros! < $1.receiveMicros! }
            let tail = ordered[(ordered.count / 2)...]
            if tail.count >= 3, let first = tail.first?.receiveMicros, let last = tail.last?.receiveMicros, last > first {
                recvRate = min(recvRate, Double(tail.dropFirst().reduce(0) { $0 + $1.size }) * 8e6 / Double(last - first))
            }
            let saturated = recvRate < 0.9 * sendRate
            let rate = saturated ? recvRate * 0.95 : min(sendRate, recvRate)
            done.append((id, Int(rate), saturated))
            clusters[id] = nil
        }
        if clusters.count > 16 { clusters.removeAll() }
        return done
    }
}
