import RTPCore

/// A pure, seeded model of a network path with time passed in: decides for each packet whether it
/// is lost and when it is delivered. Used on real sockets (the receiver delays what it reads) and
/// by in-memory tests.
public struct LinkEmulator: Sendable {
    public struct Counters: Equatable, Sendable {
        public var packets = 0
        public var delivered = 0
        public var droppedByLoss = 0
        public var droppedByQueue = 0
        /// Largest queueing delay seen at the rate cap, µs.
        public var maxQueueMicros: Int64 = 0
    }

    /// IP + UDP header bytes counted against the rate cap per packet.
    static let perPacketOverhead = 28

    public let schedule: ImpairmentSchedule
    let startMicros: Int64
    var rng: SplitMix64
    var badState = false
    var linkFreeAt: Int64 = .min
    /// Token bucket (`bucket=`): bytes of credit at `tokensAt`; starts full, as tbf's does.
    var tokens: Double?
    var tokensAt: Int64 = 0
    var lastDelivery: Int64 = .min
    public private(set) var counters = Counters()

    public init(schedule: ImpairmentSchedule, seed: UInt64, startMicros: Int64) {
        self.schedule = schedule
        self.startMicros = startMicros
        rng = SplitMix64(seed: seed)
    }

    /// Settings in force at `now`.
    public func settings(now: Int64) -> ImpairmentSettings { schedule.settings(at: now - startMicros) }

    /// Offers one packet of `size` bytes at `now`; returns its delivery time, or nil if it is lost.
    public mutating func admit(size: Int, now: Int64) -> Int64? {
        let s = settings(now: now)
        counters.packets += 1
        if lose(s) { counters.droppedByLoss += 1; return nil }
        var t = now
        if let rate = s.rateBps, s.bucketBytes > 0 {
            // tbf (`sch_tbf.c`): a packet leaves once the bucket holds its bytes; tokens refill at
            // the rate up to the bucket's depth; a packet that would wait longer than `queue` past
            // what the bucket passes at once is dropped (tbf's limit: rate × latency + burst).
            let bytes = Double(size + Self.perPacketOverhead), depth = Double(max(s.bucketBytes, size + Self.perPacketOverhead))
            let start = max(now, linkFreeAt)
            let have = min(depth, (tokens ?? depth) + Double(rate) / 8 * Double(start - tokensAt) / 1e6)
            let leave = have >= bytes ? start : start + Int64(((bytes - have) * 8 * 1e6 / Double(rate)).rounded(.up))
            let queued = leave - now
            if queued > s.queueMicros + Int64(Double(s.bucketBytes) * 8 * 1e6 / Double(rate)) { counters.droppedByQueue += 1; return nil }
            counters.maxQueueMicros = max(counters.maxQueueMicros, queued)
            tokens = have >= bytes ? have - bytes : 0
            tokensAt = have >= bytes ? start : leave
            linkFreeAt = leave
            t = leave
        } else if let rate = s.rateBps {
            let start = max(now, linkFreeAt)
            let queued = start - now
            if queued > s.queueMicros { counters.droppedByQueue += 1; return nil }
            counters.maxQueueMicros = max(counters.maxQueueMicros, queued)
            linkFreeAt = start + Int64(size + Self.perPacketOverhead) * 8 * 1_000_000 / Int64(rate)
            t = linkFreeAt
        }
        var extra = s.delayMicros
        if s.jitterMicros > 0 {
            extra += Int64(rng.next() % UInt64(2 * s.jitterMicros + 1)) - s.jitterMicros
        }
        t += max(0, extra)
        t = max(t, lastDelivery) // a path does not reorder here
        lastDelivery = t
        counters.delivered += 1
        return t
    }

    /// Gilbert–Elliott: in the bad state every packet is lost, in the good state none; the state
    /// changes per packet so that losses average `loss` with bursts of `burst` packets on average.
    mutating func lose(_ s: ImpairmentSettings) -> Bool {
        let p = s.lossPercent / 100
        if p <= 0 { badState = false; return false }
        if p >= 1 { return true }
        if s.burstLength <= 1 { return rng.unit() < p }
        let leaveBad = 1 / s.burstLength
        let enterBad = min(1, p * leaveBad / (1 - p))
        badState = badState ? rng.unit() >= leaveBad : rng.unit() < enterBad
        return badState
    }
}
