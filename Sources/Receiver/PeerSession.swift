import Net
import SRTP
import Congestion
import RTPCore
import WebRTC
import MediaCodecs

/// One publisher as the receiver sees it: a source address with its own transport-wide
/// sequence space (transport-cc feedback), report, NACK and PLI timers and streams.
final class PeerSession {
    let index: Int
    var address: SocketAddress
    /// The transport whose TURN relay the selected pair runs through: feedback goes wrapped for
    /// the TURN server (RFC 8656 §11, §12).
    var relay: WebRTCTransport?
    var order: [UInt32] = []
    /// Its video streams (what the NACK tick looks at), in `order`'s order.
    var videoStreams: [ReceiveStream] = []
    /// The CPU its streams' picture-quality measurements may take together.
    var qualityBudget: QualityBudget?
    var feedback: TransportFeedbackGenerator
    var nextTransportFeedback: Int64 = 0
    var nextNack: Int64 = 0
    var nextReport: Int64 = 0
    /// The earliest of the timers above (the next time its feedback needs looking at).
    var nextFeedback: Int64 = 0
    /// A stream asked for a key frame since its feedback was last looked at.
    var feedbackPending = false
    var lastPLI: [UInt32: Int64] = [:]
    /// RTX SSRC → media SSRC, learned from repaired-rtp-stream-id.
    var rtxToMedia: [UInt32: UInt32] = [:]
    /// A WebRTC publisher's own: its DTLS keys' outbound SRTP, the extension IDs and payload
    /// types its offer used (nil: the receiver's configuration).
    var srtpOut: SRTPSession?
    /// An SDES publisher's own inbound session (made with the receiver's key on its first
    /// authenticated packet); WebRTC publishers' inbound keys live with their transport.
    var srtpIn: SRTPSession?
    var extensionIDs: RTPExtensionIDs?
    var audioPayloadTypes: Set<UInt8>? { didSet { kinds = nil } }
    var videoPayloadTypes: Set<UInt8>? { didSet { kinds = nil } }
    var videoCodecs: [UInt8: VideoCodec]?
    var rtxPayloadTypes: Set<UInt8>? { didSet { kinds = nil } }
    /// The three sets above (or the receiver's) as bit masks, made on the first packet after
    /// they change: a packet's payload type is looked up without hashing or retaining a set.
    var kinds: PayloadKinds?
    /// RFC 5506 negotiated (pubbot's own SDES sessions and its WHIP answers use it).
    var reducedSizeRTCP = true
    /// The feedback the answer allows (RFC 4585 §4.2: only what was negotiated is sent).
    var negotiated = NegotiatedFeedback() {
        didSet { remoteEstimator = negotiated.remb ? RemoteBitrateEstimator() : nil }
    }
    /// With REMB negotiated: the receive-side estimate it carries.
    var remoteEstimator: RemoteBitrateEstimator? { didSet { hasRemoteEstimator = remoteEstimator != nil } }
    /// Whether `remoteEstimator` is there (asked per packet: the optional itself is a struct of
    /// arrays, copied out and retained to be compared with nil).
    private(set) var hasRemoteEstimator = false

    init(index: Int, address: SocketAddress, ssrc: UInt32) {
        self.index = index
        self.address = address
        feedback = TransportFeedbackGenerator(senderSSRC: ssrc)
    }
}

/// Which payload types are RTX, video and audio: one bit each of the 7-bit payload type.
struct PayloadKinds {
    struct Mask {
        var low: UInt64 = 0, high: UInt64 = 0
        init(_ types: Set<UInt8>) {
            for t in types where t < 128 {
                if t < 64 { low |= 1 << UInt64(t) } else { high |= 1 << UInt64(t - 64) }
            }
        }
        @inline(__always) func contains(_ t: UInt8) -> Bool {
            t < 64 ? low & (1 << UInt64(t)) != 0 : t < 128 && high & (1 << UInt64(t &- 64)) != 0
        }
    }
    let rtx: Mask, video: Mask, audio: Mask
}
