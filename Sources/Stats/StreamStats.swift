/// What a stream carries.
public enum MediaKind: String, Sendable { case audio, video }

/// Sender-side counters of one RTP stream (one simulcast layer or the audio), copied out of the
/// network loop once per interval.
public struct OutboundStreamStats: Sendable, Equatable {
    public var ssrc: UInt32
    public var kind: MediaKind
    public var mid: String
    public var rid: String?
    public var codec: String
    public var width: Int
    public var height: Int
    public var scalabilityMode: String?
    public var packetsSent: Int = 0
    /// Payload bytes (RFC 3550 octet count: no RTP header, no padding).
    public var payloadBytesSent: Int = 0
    /// RTP header + padding bytes (W3C headerBytesSent).
    public var headerBytesSent: Int = 0
    public var framesSent: Int = 0
    public var keyFramesSent: Int = 0
    public var framesEncoded: Int = 0
    public var targetBitrate: Int = 0
    /// From receiver reports: round-trip time (LSR/DLSR), loss fraction of the last report,
    /// cumulative loss, and interarrival jitter in seconds.
    public var roundTripTimeMillis: Double?
    public var fractionLost: Double = 0
    public var packetsLostReported: Int = 0
    public var remoteJitterSeconds: Double?
    /// `none` or `bandwidth` (the allocator holds the layer below target or off); `cpu` when
    /// encoding falls behind real time.
    public var qualityLimitationReason = QualityLimitationReason.none
    public var pliReceived = 0
    public var nackReceived = 0
    public var retransmittedPacketsSent = 0
    public var retransmittedBytesSent = 0
    public var firReceived = 0
    /// VP9 spatial layers of this stream (`L2T*_KEY`, `L3T*_KEY`), lowest first; empty otherwise.
    public var spatialLayers: [SpatialLayerStats] = []

    /// One spatial layer's share of a stream: its size, its part of the stream's target, and the
    /// frames and encoded bytes of it that were sent.
    public struct SpatialLayerStats: Sendable, Equatable {
        public var width: Int
        public var height: Int
        /// The layer's part of the stream's target bitrate (0–1).
        public var rateShare: Double
        public var framesSent = 0
        public var bytesSent = 0

        public init(width: Int, height: Int, rateShare: Double) {
            self.width = width
            self.height = height
            self.rateShare = rateShare
        }
    }

    public init(
        ssrc: UInt32, kind: MediaKind, mid: String, rid: String?, codec: String, width: Int = 0, height: Int = 0,
        scalabilityMode: String? = nil
    ) {
        self.ssrc = ssrc
        self.kind = kind
        self.mid = mid
        self.rid = rid
        self.codec = codec
        self.width = width
        self.height = height
        self.scalabilityMode = scalabilityMode
    }

    /// One media packet on the wire (one access to the stats where the sender holds them in an
    /// array: one uniqueness check, not three).
    @inlinable
    public mutating func countSent(payload: Int, header: Int) {
        packetsSent += 1
        payloadBytesSent += payload
        headerBytesSent += header
    }

    /// One retransmission on the wire (RFC 4588).
    @inlinable
    public mutating func countRetransmission(payload: Int) {
        retransmittedPacketsSent += 1
        retransmittedBytesSent += payload
    }
}

/// Receiver-side counters of one RTP stream.
public struct InboundStreamStats: Sendable, Equatable {
    public var ssrc: UInt32
    public var kind: MediaKind
    public var payloadType: UInt8
    /// The video codec the payload type stands for (`VP8`, `H264`); nil for audio.
    public var codec: String?
    public var mid: String?
    public var rid: String?
    public var packetsReceived: Int = 0
    public var payloadBytesReceived: Int = 0
    public var headerBytesReceived: Int = 0
    /// expected − received (RFC 3550 A.3); duplicates count as received.
    public var packetsLost: Int = 0
    public var framesAssembled: Int = 0
    public var framesDecoded: Int = 0
    /// Time spent decoding, milliseconds: from each decoding period's first decoded frame to its
    /// end (the stream's last packet, or a rotating decoder moving on).
    public var decodingMillis = 0.0
    public var keyFramesDecoded: Int = 0
    public var framesDropped: Int = 0
    public var decodeErrors: Int = 0
    public var width: Int = 0
    public var height: Int = 0
    /// Times the decoded resolution changed (a simulcast layer switch by the sender or an SFU).
    public var resolutionChanges: Int = 0
    /// Frames whose stamp was read back after decoding.
    public var stampsRead: Int = 0
    /// Stamps whose frame number did not increase.
    public var stampsOutOfOrder: Int = 0
    public var lastFrameNumber: UInt32?
    /// End-to-end latency from the stamps (capture → decoded), milliseconds.
    public var latencyMeanMillis: Double?
    public var latencyP95Millis: Double?
    /// Picture quality of the decoded frames measured against the synthetic source (PSNR of the
    /// luma plane, dB): frames measured, their mean and 10th percentile.
    public var framesMeasured: Int = 0
    public var psnrYMean: Double?
    public var psnrYP10: Double?
    /// Decoded frames left unmeasured because measuring had used its share of the CPU
    /// (`QualityBudget`): decoding is never slowed for it.
    public var framesNotMeasured: Int = 0
    /// SSIM of the luma plane on a sample of those frames (every fourth): how many, mean, p10.
    public var ssimFramesMeasured: Int = 0
    public var ssimYMean: Double?
    public var ssimYP10: Double?
    /// PSNR of the luma at the capture size (the decoded picture scaled up to it against the
    /// source drawn there) on the same sample, when the sender declared its capture size (a
    /// sender that scales, `receive --capture-size`): how many, mean, p10.
    public var captureFramesMeasured: Int = 0
    public var psnrYCaptureMean: Double?
    public var psnrYCaptureP10: Double?
    /// Audio: decoded samples and the peak level seen (never-silent check).
    public var samplesDecoded: Int = 0
    public var audioPeak: Int = 0
    public var firstPacketMicros: Int64?
    public var lastPacketMicros: Int64?
    public var byeReceived = false
    /// W3C freezes and pauses measured on decoded frames (webrtc-stats inbound-rtp definitions):
    /// a freeze is a gap ≥ max(3 × mean, mean + 150 ms) over the last 30 frame intervals, a pause
    /// a gap > 5 s (not counted as a freeze). Durations in milliseconds.
    public var freezeCount = 0
    public var totalFreezesDurationMillis = 0.0
    public var pauseCount = 0
    public var totalPausesDurationMillis = 0.0
    /// The router's view: packets lost on the publisher's uplink (expected − received, before any
    /// downlink or repair), and SRTP datagram bytes as they arrived (UDP payload).
    public var uplinkPacketsLost = 0
    public var wireBytesReceived = 0
    /// Lost packets recovered through RTX.
    public var packetsRecovered = 0
    /// Padding-only packets (bandwidth probes).
    public var paddingPackets = 0
    /// Packets whose Dependency Descriptor (AV1) was read, and those that could not be.
    public var dependencyDescriptors = 0
    public var dependencyDescriptorErrors = 0

    public init(ssrc: UInt32, kind: MediaKind, payloadType: UInt8) {
        self.ssrc = ssrc
        self.kind = kind
        self.payloadType = payloadType
    }

    /// Payload bit rate over the stream's active time.
    public var bitrate: Int {
        guard let f = firstPacketMicros, let l = lastPacketMicros, l > f else { return 0 }
        return Int(Double(payloadBytesReceived * 8) * 1e6 / Double(l - f))
    }
}

/// Packets a receiver refused, by cause (hostile input is counted, never fatal).
public struct RejectedPackets: Sendable, Equatable {
    public var authenticationFailed = 0
    public var replayed = 0
    public var malformed = 0
    public var oversized = 0
    public var unknownPayloadType = 0
    public var notRTP = 0
    /// Well-formed packets whose SSRC another publisher already uses (a collision or a spoof).
    public var ssrcCollision = 0
    /// WebRTC: media or DTLS from an address no ICE check selected, STUN for no known session.
    public var unknownSource = 0

    public init() {}

    public var total: Int {
        authenticationFailed + replayed + malformed + oversized + unknownPayloadType + notRTP + ssrcCollision + unknownSource
    }
}

/// Why a video layer is held below what it would send (W3C webrtc-stats
/// `RTCQualityLimitationReason`; pubbot has no `other`).
public enum QualityLimitationReason: String, Sendable, Equatable, CaseIterable {
    /// Not limited.
    case none
    /// The allocator holds the layer below its target, or off, for the estimate.
    case bandwidth
    /// Encoding falls behind real time.
    case cpu
}
