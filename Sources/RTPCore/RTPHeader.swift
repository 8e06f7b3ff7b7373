/// RTP fixed header (RFC 3550 §5.1), parsed as offsets into the packet so nothing is copied.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                           timestamp                           |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |           synchronization source (SSRC) identifier            |
/// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
/// |            contributing source (CSRC) identifiers             |
/// |      defined by profile       |           length              |  (if X)
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
public struct RTPHeader: Equatable, Sendable {
    static let fixedSize = 12

    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var csrcCount: Int
    /// The 16-bit "defined by profile" word of the extension block (0xBEDE, 0x100x), if X is set.
    public var extensionProfile: UInt16?
    /// Byte range of the extension elements (after the 4-byte block header).
    public var extensionRange: Range<Int>
    /// Byte range of the payload (padding excluded).
    public var payloadRange: Range<Int>
    /// Padding bytes at the end (0 when P is clear).
    public var paddingLength: Int

    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        csrcCount = 0
        extensionProfile = nil
        extensionRange = 12..<12
        payloadRange = 12..<12
        paddingLength = 0
    }

    /// Parses the header of a whole RTP packet.
    public static func parse(_ b: Span<UInt8>) throws(RTPParseError) -> RTPHeader {
        guard b.count >= fixedSize else { throw .truncated }
        let b0 = b[0]
        guard b0 >> 6 == 2 else { throw .badVersion }
        let cc = Int(b0 & 0x0F)
        var h = RTPHeader(
            marker: b[1] & 0x80 != 0, payloadType: b[1] & 0x7F,
            sequenceNumber: b.be16(2), timestamp: b.be32(4), ssrc: b.be32(8))
        h.csrcCount = cc
        var offset = fixedSize + 4 * cc
        guard offset <= b.count else { throw .truncated }
        if b0 & 0x10 != 0 {
            guard offset + 4 <= b.count else { throw .truncated }
            let profile = b.be16(offset)
            let words = Int(b.be16(offset + 2))
            let start = offset + 4
            let end = start + 4 * words
            guard end <= b.count else { throw .badLength }
            h.extensionProfile = profile
            h.extensionRange = start..<end
            offset = end
        } else {
            h.extensionRange = offset..<offset
        }
        var end = b.count
        if b0 & 0x20 != 0 {
            let pad = Int(b[b.count - 1])
            guard pad > 0, offset + pad <= b.count else { throw .badPadding }
            h.paddingLength = pad
            end -= pad
        }
        h.payloadRange = offset..<end
        return h
    }

    /// Iterates the RFC 8285 elements of this header's extension block.
    public func extensions() -> HeaderExtensionIterator {
        HeaderExtensionIterator(profile: extensionProfile ?? 0, range: extensionRange)
    }
}
