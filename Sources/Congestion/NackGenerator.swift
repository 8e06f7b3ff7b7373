import RTPCore

/// The receiver half of generic NACK (RFC 4585 §6.2.1): remembers gaps in a stream's sequence
/// numbers and says which to request now — none before `reorderToleranceMicros` (a packet merely
/// reordered arrives within it; 0 by default), each at most `maxRetries` times, `resendInterval` apart, never
/// older than `maxAge`. Kept in a ring indexed by sequence number (pion `nack` receive log), so a
/// late arrival is cleared in O(1) and a check allocates nothing unless something is due.
public struct NackGenerator: Sendable {
    struct Slot: Sendable { var missing = false; var firstMicros: Int64 = 0; var lastRequestMicros: Int64 = 0; var retries = 0 }

    public var maxRetries = 10
    public var resendIntervalMicros: Int64 = 100_000
    var maxAgeMicros: Int64 = 1_000_000
    /// A gap is not asked for until it is this old, for paths that reorder. 0 by default, as
    /// libwebrtc's NACK send delay (`nack_requester.cc`, WebRTC-SendNackDelayMs): at 10 ms the
    /// virtual-time capacity-step scenario recovered seconds later (RTX came a tick later, and
    /// the closed loop moved on differently).
    public var reorderToleranceMicros: Int64 = 0
    /// The span of sequence numbers followed; a gap beyond it is a restart, not loss.
    public static let maxTracked = 512
    static let ringSize = 1024 // a power of two ≥ maxTracked
    var ring = [Slot](repeating: Slot(), count: ringSize)
    var unwrapper = SequenceUnwrapper()
    var highest: Int64?
    /// The oldest sequence number that may still be marked missing.
    var oldest: Int64 = 0
    public private(set) var trackedCount = 0
    /// No packet is missing.
    public var isEmpty: Bool { trackedCount == 0 }
    /// Packets given up on (too old, asked too often, or pushed out of the span).
    public private(set) var abandoned = 0

    public init() {}

    @inline(__always) func index(_ s: Int64) -> Int { Int(s & Int64(Self.ringSize - 1)) }

    /// A packet (original or recovered) arrived.
    public mutating func onPacket(sequenceNumber: UInt16, now: Int64) {
        let s = unwrapper.unwrap(sequenceNumber)
        guard let h = highest else { highest = s; oldest = s + 1; return }
        if s == h + 1 && trackedCount == 0 { highest = s; oldest = s + 1; return } // the usual case
        if s <= h {
            // Late or recovered: no longer missing.
            if s >= oldest, ring[index(s)].missing { ring[index(s)].missing = false; trackedCount -= 1 }
            return
        }
        if s - h - 1 > Int64(Self.maxTracked) {
            // A jump of more than the span is a restart: forget the old gaps.
            clear(upTo: h + 1)
            highest = s
            oldest = s + 1
            return
        }
        for m in (h + 1)..<s {
            ring[index(m)] = Slot(missing: true, firstMicros: now, lastRequestMicros: .min / 2, retries: 0)
            trackedCount += 1
        }
        highest = s
        // Keep the span: what falls out of it is given up.
        let floor = s - Int64(Self.maxTracked)
        if oldest < floor { clear(upTo: floor) }
    }

    /// Forgets the gaps below `limit` (counting them as abandoned).
    mutating func clear(upTo limit: Int64) {
        var m = max(oldest, limit - Int64(Self.ringSize)) // nothing older can still be marked
        while m < limit {
            if ring[index(m)].missing { ring[index(m)].missing = false; trackedCount -= 1; abandoned += 1 }
            m += 1
        }
        oldest = max(oldest, limit)
    }

    /// Sequence numbers to request now (oldest first).
    public mutating func due(now: Int64) -> [UInt16] {
        guard trackedCount > 0, let h = highest else { return [] }
        var out: [UInt16] = []
        var m = oldest
        var firstStillMissing: Int64?
        while m < h {
            let i = index(m)
            if ring[i].missing {
                if now - ring[i].firstMicros > maxAgeMicros || ring[i].retries >= maxRetries {
                    ring[i].missing = false
                    trackedCount -= 1
                    abandoned += 1
                } else {
                    if firstStillMissing == nil { firstStillMissing = m }
                    if now - ring[i].firstMicros >= reorderToleranceMicros && now - ring[i].lastRequestMicros >= resendIntervalMicros {
                        ring[i].lastRequestMicros = now
                        ring[i].retries += 1
                        out.append(UInt16(truncatingIfNeeded: m))
                    }
                }
            }
            m += 1
        }
        oldest = firstStillMissing ?? h
        return out
    }
}
