import RTPCore

/// The receiver half of generic NACK (RFC 4585 §6.2.1; pion `nack` generator): remembers gaps in
/// a stream's sequence numbers and says which to request now, each at most `maxRetries` times,
/// `resendInterval` apart, and never older than `maxAge`. Bounded in size.
public struct NackGenerator: Sendable {
    struct Missing: Sendable { var seq: Int64; var firstMicros: Int64; var lastRequestMicros: Int64; var retries: Int }

    public var maxRetries = 10
    public var resendIntervalMicros: Int64 = 100_000
    public var maxAgeMicros: Int64 = 1_000_000
    public static let maxTracked = 512
    var unwrapper = SequenceUnwrapper()
    var highest: Int64?
    var missing: [Missing] = []
    /// Packets given up on (too old or asked too often).
    public private(set) var abandoned = 0

    public init() {}

    public var trackedCount: Int { missing.count }

    /// A packet (original or recovered) arrived.
    public mutating func onPacket(sequenceNumber: UInt16, now: Int64) {
        let s = unwrapper.unwrap(sequenceNumber)
        guard let h = highest else { highest = s; return }
        if s > h + 1 {
            // A gap: every sequence number in between is missing (bounded: a jump of thousands is
            // a restart, not loss worth asking for).
            let gap = s - h - 1
            if gap <= Int64(Self.maxTracked) {
                for m in (h + 1)..<s { missing.append(Missing(seq: m, firstMicros: now, lastRequestMicros: .min / 2, retries: 0)) }
                if missing.count > Self.maxTracked { abandoned += missing.count - Self.maxTracked; missing.removeFirst(missing.count - Self.maxTracked) }
            }
        }
        if s > h { highest = s } else { missing.removeAll { $0.seq == s } }
    }

    /// Sequence numbers to request now (oldest first).
    public mutating func due(now: Int64) -> [UInt16] {
        guard !missing.isEmpty else { return [] }
        var out: [UInt16] = []
        var keep: [Missing] = []
        keep.reserveCapacity(missing.count)
        for var m in missing {
            if now - m.firstMicros > maxAgeMicros || m.retries >= maxRetries { abandoned += 1; continue }
            if now - m.lastRequestMicros >= resendIntervalMicros {
                m.lastRequestMicros = now
                m.retries += 1
                out.append(UInt16(truncatingIfNeeded: m.seq))
            }
            keep.append(m)
        }
        missing = keep
        return out
    }
}
