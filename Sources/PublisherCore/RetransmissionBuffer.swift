/// The last 1024 packets of one video stream (a power-of-two ring indexed by `seq & mask`),
/// kept unprotected so a NACK can be answered with RTX (RFC 4588). Allocated once.
final class RetransmissionBuffer {
    static let slotSize = 1400
    let capacity: Int
    let mask: Int
    let storage: UnsafeMutableRawPointer
    /// What is known of each stored packet, in one allocation beside the bytes: seven arrays
    /// cost a uniqueness check each per packet stored (by perf, the largest part of the
    /// send path's reference counting in a replay fleet).
    struct Entry {
        var sequence: Int32 = -1
        var headerSize: Int16 = 0
        var length: Int16 = 0
        var timestamp: UInt32 = 0
        var marker = false
        var sentMicros: Int64 = 0
        var lastRetransmitMicros: Int64 = .min / 2
    }
    let entries: UnsafeMutablePointer<Entry>

    /// `capacity` is rounded up to a power of two (default 1024 packets, ~1.4 MB).
    init(capacity requested: Int = 1024) {
        var c = 16
        while c < requested { c <<= 1 }
        capacity = c
        mask = c - 1
        storage = .allocate(byteCount: c * Self.slotSize, alignment: 16)
        entries = .allocate(capacity: c)
        entries.initialize(repeating: Entry(), count: c)
    }
    deinit {
        storage.deallocate()
        entries.deallocate()
    }

    /// Copies a packet (header + payload, before SRTP) in.
    func store(
        sequenceNumber: UInt16, packet: UnsafeRawPointer, headerSize h: Int, length n: Int, timestamp ts: UInt32, marker m: Bool, now: Int64
    ) {
        guard n <= Self.slotSize else { return }
        let i = Int(sequenceNumber) & mask
        (storage + i * Self.slotSize).copyMemory(from: packet, byteCount: n)
        entries[i] = Entry(
            sequence: Int32(sequenceNumber), headerSize: Int16(h), length: Int16(n), timestamp: ts, marker: m, sentMicros: now,
            lastRetransmitMicros: .min / 2)
    }

    /// The stored packet's header and payload for `seq`, if it is still here and was not resent
    /// within `minInterval`.
    func take(sequenceNumber: UInt16, now: Int64, maxAge: Int64, minInterval: Int64)
        -> (header: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, timestamp: UInt32, marker: Bool)?
    {
        let i = Int(sequenceNumber) & mask
        let e = entries[i]
        guard e.sequence == Int32(sequenceNumber), now - e.sentMicros <= maxAge, now - e.lastRetransmitMicros >= minInterval else {
            return nil
        }
        entries[i].lastRetransmitMicros = now
        let h = Int(e.headerSize)
        return (
            UnsafeRawBufferPointer(start: storage + i * Self.slotSize, count: h),
            UnsafeRawBufferPointer(start: storage + i * Self.slotSize + h, count: Int(e.length) - h), e.timestamp, e.marker
        )
    }
}
