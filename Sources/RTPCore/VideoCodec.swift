/// A video codec pubbot sends and receives, with its RTP payload format and SDP name.
public enum VideoCodec: String, Sendable, CaseIterable, Equatable, Hashable {
    /// VP8 (RFC 6386), payload format RFC 7741.
    case vp8
    /// H.264 Constrained Baseline (ITU-T H.264), payload format RFC 6184, packetization mode 1.
    case h264

    /// The encoding name of `a=rtpmap` (RFC 7741 §6.1, RFC 6184 §8.1), and the W3C stats'
    /// `mimeType` subtype.
    public var sdpName: String {
        switch self {
        case .vp8: "VP8"
        case .h264: "H264"
        }
    }

    /// The `--codec` spelling → codec, case-insensitive (`h264` or `H264`, also `avc`).
    public init?(name: some StringProtocol) {
        switch name.lowercased() {
        case "vp8": self = .vp8
        case "h264", "avc", "h.264": self = .h264
        default: return nil
        }
    }
}

extension VideoCodec {
    /// The `a=fmtp` parameters pubbot offers and sends with: H.264 Constrained Baseline level 3.1
    /// (`42e01f`, 1280x720 at 30 fps), packetization mode 1, level asymmetry allowed (RFC 6184
    /// §8.1; what Chrome offers first).
    public var fmtp: String? {
        switch self {
        case .vp8: nil
        case .h264: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"
        }
    }
}
