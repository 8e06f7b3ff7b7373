/// A video codec pubbot sends and receives, with its RTP payload format and SDP name.
public enum VideoCodec: String, Sendable, CaseIterable, Equatable, Hashable {
    /// VP8 (RFC 6386), payload format RFC 7741.
    case vp8
    /// H.264 Constrained Baseline (ITU-T H.264), payload format RFC 6184, packetization mode 1.
    case h264
    /// VP9 profile 0, payload format RFC 9628 (draft-ietf-payload-vp9), flexible mode.
    case vp9
    /// AV1 main profile, payload format: the AOM "RTP Payload Format for AV1" (v1.0.0).
    case av1

    /// The encoding name of `a=rtpmap` (RFC 7741 §6.1, RFC 6184 §8.1), and the W3C stats'
    /// `mimeType` subtype.
    public var sdpName: String {
        switch self {
        case .vp8: "VP8"
        case .h264: "H264"
        case .vp9: "VP9"
        case .av1: "AV1"
        }
    }

    /// The `--codec` spelling → codec, case-insensitive (`h264` or `H264`, also `avc`).
    public init?(name: some StringProtocol) {
        switch name.lowercased() {
        case "vp8": self = .vp8
        case "h264", "avc", "h.264": self = .h264
        case "vp9": self = .vp9
        case "av1": self = .av1
        default: return nil
        }
    }
}

extension VideoCodec {
    /// pubbot's own payload types for the codec and its RTX (RFC 4588): what its offers list and
    /// its SDES sessions use — VP8 96 (97), H.264 102 (103), VP9 98 (99), AV1 45 (46) as Chrome.
    public var payloadTypes: (media: UInt8, rtx: UInt8) {
        switch self {
        case .vp8: (96, 97)
        case .h264: (102, 103)
        case .vp9: (98, 99)
        case .av1: (45, 46)
        }
    }

    /// The `a=fmtp` parameters pubbot offers and sends with: H.264 Constrained Baseline level 3.1
    /// (`42e01f`, 1280x720 at 30 fps), packetization mode 1, level asymmetry allowed (RFC 6184
    /// §8.1; what Chrome offers first).
    public var fmtp: String? {
        switch self {
        case .vp8: nil
        case .h264: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"
        case .vp9: "profile-id=0"
        // Main profile, level 3.1 (idx 5), main tier: what Chrome offers (AV1 RTP format §7.2).
        case .av1: "level-idx=5;profile=0;tier=0"
        }
    }
}

extension VideoCodec {
    /// The payload format marks no frame's first packet (H.264; AV1 marks only a key frame's):
    /// the receiver finds it by looking back at the previous frame's marker packet.
    public var startsByLookingBack: Bool { self == .h264 || self == .av1 }
}
