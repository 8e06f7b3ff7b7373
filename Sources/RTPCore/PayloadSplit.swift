/// `total` payload bytes in `count` packets of about equal size, as libwebrtc's
/// `SplitAboutEqually` (`modules/rtp_rtcp/source/rtp_format.cc`) shares a frame — but with every
/// packet except the last the same size and the last at most `count - 1` bytes shorter
/// (libwebrtc makes its last packets one byte larger instead). A frame's packets are then one
/// run for UDP GSO, whose segments must all be one size but the last, which may be shorter
/// (Linux `udp(7)`, UDP_SEGMENT): one message a frame, not one per size.
///
/// Where that would leave the last packet empty (`count` above `ceil(total / room)`: a few bytes
/// of room), the first `total % count` packets carry one byte more instead.
public struct PayloadSplit: Sendable {
    public let count: Int
    @usableFromInline let base: Int
    @usableFromInline let largerUntil: Int
    @usableFromInline let last: Int

    @inlinable
    public init(_ total: Int, into count: Int) {
        self.count = count
        guard count > 1 else { (base, largerUntil, last) = (total, 0, total); return }
        let full = (total + count - 1) / count
        let rest = total - (count - 1) * full
        if rest >= 1 {
            (base, largerUntil, last) = (full, 0, rest)
        } else {
            (base, largerUntil, last) = (total / count, total % count, total / count)
        }
    }

    /// Payload bytes of packet `i` (`0..<count`).
    @inlinable
    public func size(of i: Int) -> Int { i == count &- 1 ? last : base &+ (i < largerUntil ? 1 : 0) }
}
