public import RTPCore

/// One sent packet and, once feedback told, when it arrived.
public struct PacketResult: Equatable, Sendable {
    public var sequence: Int64
    public var sendMicros: Int64
    public var size: Int
    /// Arrival in the receiver's clock (only differences are meaningful), nil when lost.
    public var receiveMicros: Int64?
    public var probeCluster: Int?

    public init(sequence: Int64, sendMicros: Int64, size: Int, receiveMicros: Int64?, probeCluster: Int?) {
        self.sequence = sequence
        self.sendMicros = sendMicros
        self.size = size
        self.receiveMicros = receiveMicros
        self.probeCluster = probeCluster
    }
}

/// Remembers what was sent under each transport-wide sequence number (a power-of-two ring) and
/// turns transport-cc feedback into `PacketResult`s (pion `twcc` / libwebrtc feedback adapter).
public struct TransportFeedbackAdapter: Sendable {
    struct Entry: Sendable { var sequence: Int64 = -1; var sendMicros: Int64 = 0; var size = 0; var probeCluster: Int32 = -1 }
    static let capacity = 8192
    var ring = [Entry](repeating: Entry(), count: capacity)
    var lastSent: Int64 = -1
    var referenceOffset: Int64 = 0
    var lastReference: Int32?
    var reported: Int64 = -1

    public init() {}

    /// Records a packet at send time; `sequence` is the 16-bit value written into the packet.
    public mutating func onSent(sequence: UInt16, sendMicros: Int64, size: Int, probeCluster: Int? = nil) {
        let unwrapped =
            lastSent < 0 ? Int64(sequence) : lastSent + Int64(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: lastSent)))
        lastSent = max(lastSent, unwrapped)
        ring[Int(unwrapped & Int64(Self.capacity - 1))] = Entry(
            sequence: unwrapped, sendMicros: sendMicros, size: size, probeCluster: Int32(probeCluster ?? -1))
    }

    /// Results for the packets this feedback covers that are still in the history, in sequence
    /// order; packets reported again (feedback overlap) are returned once.
    public mutating func onFeedback(_ fb: TransportFeedback) -> [PacketResult] {
        guard lastSent >= 0 else { return [] }
        // The 24-bit reference time wraps every ~18 minutes: unwrap it.
        if let last = lastReference {
            let d = Int64(fb.referenceTime) - Int64(last)
            if d < -(1 << 23) { referenceOffset += 1 << 24 } else if d > 1 << 23 { referenceOffset -= 1 << 24 }
        }
        lastReference = fb.referenceTime
        let base = lastSent - Int64(UInt16(truncatingIfNeeded: lastSent) &- fb.baseSequence)
        var out: [PacketResult] = []
        out.reserveCapacity(fb.arrivals.count)
        let referenceMicros = (Int64(fb.referenceTime) + referenceOffset) * TransportFeedback.referenceTickMicros
        for (k, arrival) in fb.arrivals.enumerated() {
            let seq = base + Int64(k)
            guard seq > reported, seq <= lastSent else { continue }
            let e = ring[Int(seq & Int64(Self.capacity - 1))]
            guard e.sequence == seq else { continue }
            out.append(
                PacketResult(
                    sequence: seq, sendMicros: e.sendMicros, size: e.size, receiveMicros: arrival.map { referenceMicros + $0 },
                    probeCluster: e.probeCluster >= 0 ? Int(e.probeCluster) : nil))
        }
        if let last = out.last?.sequence { reported = max(reported, last) }
        return out
    }
}
