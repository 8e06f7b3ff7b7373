/// Unwraps 16-bit RTP sequence numbers into a monotonic 64-bit space (tolerating reordering
/// of less than half the range), as every loss counter and jitter buffer needs.
public struct SequenceUnwrapper: Sendable {
    private var last: Int64?

    public init() {}

    @inlinable
    static func forwardDistance(from a: UInt16, to b: UInt16) -> Int { Int(b &- a) }

    public mutating func unwrap(_ seq: UInt16) -> Int64 {
        guard let last else {
            self.last = Int64(seq)
            return Int64(seq)
        }
        let lastLow = UInt16(truncatingIfNeeded: last)
        let delta = Int64(Int16(bitPattern: seq &- lastLow))
        let value = last + delta
        if value > last { self.last = value }
        return value
    }
}
