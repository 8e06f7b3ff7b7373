/// RTP/RTCP demultiplexing on one port (RFC 5761 §4): with V=2, a second byte of 192–223
/// (payload type 64–95 with the marker bit) is RTCP.
public enum RTPDemux {
    public enum Kind: Sendable, Equatable { case rtp, rtcp, other }

    @inlinable
    public static func classify(_ bytes: Span<UInt8>) -> Kind {
        guard bytes.count >= 2, bytes[0] >> 6 == 2 else { return .other }
        let pt = bytes[1]
        return (192...223).contains(pt) ? .rtcp : .rtp
    }
}
