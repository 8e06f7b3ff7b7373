/// The last 1024 packets of one video stream (a power-of-two ring indexed by `seq & mask`),
/// kept unprotected so a NACK can be answered with RTX (RFC 4588). Allocated once.
final class RetransmissionBuffer {
    static let slotSize = 1400
    let capacity: Int
    let mask: Int
    let storage: UnsafeMutableRawPointer
    var sequence: [Int32]
    var headerSize: [Int16]
    var length: [Int16]
    var timestamp: [UInt32]
    var marker: [Bool]
    var sentMicros: [Int64]
    var lastRetransmitMicros: [Int64]

    /// `capacity` is rounded up to a power of two (default 1024 packets, ~1.4 MB).
    init(capacity requested: Int = 1024) {
        var c = 16
        while c < requested { c <<= 1 }
        capacity = c
        mask = c - 1
        storage = .allocate(byteCount: c * Self.slotSize, alignment: 16)
        sequence = [Int32](repeating: -1, count: c)
        headerSize = [Int16](repeating: 0, count: c)
        length = [Int16](repeating: 0, count: c)
        timestamp = [UInt32](repeating: 0, count: c)
        marker = [Bool](repeating: false, count: c)
        sentMicros = [Int64](repeating: 0, count: c)
        lastRetransmitMicros = [Int64](repeating: .min / 2, count: c)
    }
    deinit { storage.deallocate() }

    /// Copies a packet (header + payload, before SRTP) in.
    func store(
        sequenceNumber: UInt16, packet: UnsafeRawPointer, headerSize h: Int, length n: Int, timestamp ts: UInt32, marker m: Bool, now: Int64
    ) {
        guard n <= Self.slotSize else { return }
        let i = Int(sequenceNumber) & mask
        (storage + i * Self.slotSize).copyMemory(from: packet, byteCount: n)
        sequence[i] = Int32(sequenceNumber)
        headerSize[i] = Int16(h)
        length[i] = Int16(n)
        timestamp[i] = ts
        marker[i] = m
        sentMicros[i] = now
        lastRetransmitMicros[i] = .min / 2
    }

    /// The stored packet's header and payload for `seq`, if it is still here and was not resent
    /// within `minInterval`.
    func take(sequenceNumber: UInt16, now: Int64, maxAge: Int64, minInterval: Int64)
        -> (header: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, timestamp: UInt32, marker: Bool)?
    {
        let i = Int(sequenceNumber) & mask
        guard sequence[i] == Int32(sequenceNumber), now - sentMicros[i] <= maxAge, now - lastRetransmitMicros[i] >= minInterval else {
            return nil
        }
        lastRetransmitMicros[i] = now
        let h = Int(headerSize[i])
        return (
            UnsafeRawBufferPointer(start: storage + i * Self.slotSize, count: h),
            UnsafeRawBufferPointer(start: storage + i * Self.slotSize + h, count: Int(length[i]) - h), timestamp[i], marker[i]
        )
    }
}
