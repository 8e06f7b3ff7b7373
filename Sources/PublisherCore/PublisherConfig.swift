public import MediaCodecs
public import Net
public import SRTP
public import Stats
public import RTPCore
public import Congestion
public import Impairment

/// Everything a publisher needs to know before it starts.
public struct PublisherConfig: Sendable {
    public var destination: SocketAddress
    /// BUNDLE (default): every stream and RTCP on one 5-tuple (rtcp-mux). Otherwise stream i goes to
    /// port + 2i with RTCP on port + 2i + 1, so a stock player can open the SDP.
    public var bundle = true
    public var layers: [VideoLayerConfig]
    public var sendAudio = true
    public var sendVideo = true
    public var key: SRTPKey
    /// nil: run until `stop()`.
    public var durationMicros: Int64?
    /// Largest RTP packet before SRTP (header + descriptor + payload).
    public var maxPacketSize = 1200
    /// Time between automatic key frames; 0 = only on request (WebRTC behaviour). Each layer
    /// turns it into frames at its own frame rate.
    public var keyFrameIntervalMicros: Int64 = 0
    public var cname: String
    /// The audio stream's SSRC when the offer already announced it (`a=ssrc`, a WebRTC offer's
    /// section without RIDs); nil: drawn with the others.
    public var audioSSRC: UInt32?
    /// The video stream's SSRC and its RTX SSRC when the offer announced them (one encoding
    /// without RIDs, `a=ssrc` and `a=ssrc-group:FID`); nil: drawn with the others.
    public var videoSSRC: UInt32?
    public var videoRTXSSRC: UInt32?
    public var seed: UInt64 = 1
    /// The synthetic picture's seed, apart from `seed` (a simulation's or a fleet's publishers
    /// each have their own session seed but draw one picture): what a receiver's
    /// `ReceiverConfig.sourceSeed` measures against.
    public var sourceSeed: UInt64 = 1
    /// What the synthetic camera sees (`--content`): the scene's cost in bits at a given quantizer.
    public var content = SyntheticVideoSource.Content.natural
    public var audioBitrate = 32_000
    /// Sender report interval (RTCP), microseconds.
    public var reportIntervalMicros: Int64 = 1_000_000
    /// The video codec every layer is encoded with (a WebRTC session: the answer's choice).
    public var videoCodec = VideoCodec.vp8 {
        didSet { (videoPayloadType, rtxPayloadType) = Self.payloadTypes(videoCodec) }
    }
    /// `--codec h264,vp8`: what a WHIP offer lists, most preferred first; empty: `videoCodec` alone.
    public var videoCodecPreference: [VideoCodec] = []
    public var videoPayloadType: UInt8 = 96
    public var audioPayloadType: UInt8 = 111
    /// RTX for the video payload type (RFC 4588, `apt=96`).
    public var rtxPayloadType: UInt8 = 97

    /// pubbot's own payload types per codec, for sessions without an answer (SDES): what its
    /// WHIP offer lists too — VP8 96 (RTX 97), H.264 102 (RTX 103).
    public static func payloadTypes(_ codec: VideoCodec) -> (media: UInt8, rtx: UInt8) { codec.payloadTypes }

    /// Send RTX (RFC 4588) for retransmissions (BUNDLE only); off when the answer has no RTX.
    public var rtx = true
    /// Tag each simulcast layer with its RID (BUNDLE only); off when simulcast was refused.
    public var sendRIDs = true
    /// Simulcast refused: one video RTP stream carrying the best layer the estimate allows (the
    /// encoders of the others pause); switches happen on the new layer's key frame.
    public var singleEncoding = false
    /// Header-extension IDs per kind (the answer's numbers in a WebRTC session).
    public var audioExtensions = RTPExtensionIDs.standard
    public var videoExtensions = RTPExtensionIDs.standard
    /// What the receiver feeds back (the answer's rtcp-fb): transport-cc, only REMB, or only reports.
    public var feedback = BandwidthEstimator.Feedback.transportCC
    /// Run send-side bandwidth estimation, probing and allocation (BUNDLE mode only).
    public var congestionControl = true
    /// Network-condition scoring (`NetworkConditionScorer`, `--condition-thresholds`).
    public var conditionThresholds = NetworkConditionThresholds()
    /// Audio fallback (`--audio-fallback`, the Commands article): drop all video while the network condition is critical, keep
    /// audio, and bring video back once the estimate carries the lowest layer again.
    public var audioFallback = false
    /// Send the sender-side stats track (RTCP APP "SSTS") about once a second.
    public var senderStats = false
    /// Pre-flight: let the estimate (and probing) go up to this, beyond what the ladder uses, to
    /// measure what the link can carry. nil: 1.25 × the ladder's total maximum.
    public var probeCeiling: Int?
    /// Pre-flight: fill the link up to the estimate with RTP padding whenever the media sends
    /// less, so the estimator measures the link rather than what the ladder happens to use.
    public var padToEstimate = false
    /// Packet slots for pacing (each holds one MTU-sized packet); fleets of bots use fewer.
    public var packetSlots = 2048
    /// Packets per video stream kept for retransmission (a power of two; ~1.4 kB each).
    public var retransmissionHistory = 1024
    /// When set, each video stream keeps only about this many seconds of packets at its layer's
    /// maximum bitrate (at least 64, at most `retransmissionHistory`): libwebrtc keeps a packet
    /// for max(1 s, 3 × RTT) (`modules/rtp_rtcp/source/rtp_packet_history.h`
    /// kMinPacketDuration, kMinPacketDurationRtt). Fleets set it: a fixed 512-packet ring per
    /// stream was 1.4 MB of a two-layer bot's 2.3 MB.
    public var retransmissionHistorySeconds: Double?
    /// How often the network loop copies its figures out for snapshots.
    public var publishIntervalMicros: Int64 = 100_000
    /// Where the estimate starts before probing (libwebrtc: 300 kbps).
    public var startBitrate = 300_000
    /// An emulated uplink in front of the socket (`--impair` toward a real server): its drivers
    /// put every datagram through it (`UplinkEmulator`).
    public var uplinkImpairment: ImpairmentSchedule?

    public init(
        destination: SocketAddress, layers: [VideoLayerConfig] = VideoLayerConfig.ladder(top: 1280, 720), key: SRTPKey,
        cname: String = "pubbot"
    ) {
        self.destination = destination
        self.layers = layers
        self.key = key
        self.cname = cname
    }
}
