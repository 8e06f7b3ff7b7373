/// A reception report block (RFC 3550 §6.4.1), 24 bytes.
///
/// ```
/// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
/// |                 SSRC_1 (SSRC of first source)                 |
/// | fraction lost |       cumulative number of packets lost       |
/// |           extended highest sequence number received           |
/// |                      interarrival jitter                      |
/// |                         last SR (LSR)                         |
/// |                   delay since last SR (DLSR)                  |
/// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
/// ```
public struct ReportBlock: Equatable, Sendable {
    public static let size = 24

    public var ssrc: UInt32
    public var fractionLost: UInt8
    /// Signed 24-bit cumulative loss.
    public var cumulativeLost: Int32
    public var extendedHighestSequence: UInt32
    public var jitter: UInt32
    public var lastSenderReport: UInt32
    public var delaySinceLastSenderReport: UInt32

    public init(
        ssrc: UInt32, fractionLost: UInt8 = 0, cumulativeLost: Int32 = 0, extendedHighestSequence: UInt32 = 0,
        jitter: UInt32 = 0, lastSenderReport: UInt32 = 0, delaySinceLastSenderReport: UInt32 = 0
    ) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequence = extendedHighestSequence
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    static func parse(_ b: Span<UInt8>, at o: Int) -> ReportBlock {
        let lost24 = b.be24(o + 5)
        let lost = lost24 & 0x80_0000 != 0 ? Int32(bitPattern: lost24 | 0xFF00_0000) : Int32(lost24)
        return ReportBlock(
            ssrc: b.be32(o), fractionLost: b[o + 4], cumulativeLost: lost,
            extendedHighestSequence: b.be32(o + 8), jitter: b.be32(o + 12),
            lastSenderReport: b.be32(o + 16), delaySinceLastSenderReport: b.be32(o + 20))
    }

    func write(to w: inout ByteWriter) {
        w.u32(ssrc)
        w.u8(fractionLost)
        let clamped = min(max(cumulativeLost, -0x80_0000), 0x7F_FFFF)
        w.u24(UInt32(bitPattern: clamped) & 0xFF_FFFF)
        w.u32(extendedHighestSequence)
        w.u32(jitter)
        w.u32(lastSenderReport)
        w.u32(delaySinceLastSenderReport)
    }
}
