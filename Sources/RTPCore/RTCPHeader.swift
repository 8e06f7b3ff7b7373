/// The common RTCP header (RFC 3550 §6.4.1).
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P|  count  |      PT       |             length            |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
/// `length` is the packet size in 32-bit words minus one.
struct RTCPHeader: Equatable, Sendable {
    public static let size = 4

    public var padding: Bool
    /// Report count, source count or feedback message type (FMT), depending on the packet type.
    public var count: UInt8
    var packetType: UInt8
    /// Whole packet size in bytes, header included.
    public var packetSize: Int

    public init(padding: Bool = false, count: UInt8, packetType: UInt8, packetSize: Int) {
        self.padding = padding
        self.count = count
        self.packetType = packetType
        self.packetSize = packetSize
    }

    public static func parse(_ b: Span<UInt8>, at offset: Int) throws(RTPParseError) -> RTCPHeader {
        guard offset + size <= b.count else { throw .truncated }
        guard b[offset] >> 6 == 2 else { throw .badVersion }
        let words = Int(b.be16(offset + 2))
        let bytes = (words + 1) * 4
        guard offset + bytes <= b.count else { throw .badLength }
        return RTCPHeader(padding: b[offset] & 0x20 != 0, count: b[offset] & 0x1F, packetType: b[offset + 1], packetSize: bytes)
    }

    func write(to w: inout ByteWriter) {
        w.u8(0x80 | (padding ? 0x20 : 0) | (count & 0x1F))
        w.u8(packetType)
        w.u16(UInt16(packetSize / 4 - 1))
    }
}

enum RTCPPacketType {
    public static let senderReport: UInt8 = 200
    public static let receiverReport: UInt8 = 201
    public static let sourceDescription: UInt8 = 202
    public static let goodbye: UInt8 = 203
    public static let application: UInt8 = 204
    public static let transportFeedback: UInt8 = 205
    static let payloadFeedback: UInt8 = 206
}
