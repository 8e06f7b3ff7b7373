public import Net
public import SRTP
public import Stats
public import Impairment
public import RTPCore
public import MediaCodecs

/// How the receiver is set up.
public struct ReceiverConfig: Sendable {
    public var listen: SocketAddress
    public var key: SRTPKey
    public var decodeVideo = true
    /// pubbot's own payload types (SDES sessions): VP8 96, H.264 102, VP9 98, their RTX 97, 103, 99.
    public var videoPayloadTypes = Set(VideoCodec.allCases.map(\.payloadTypes.media))
    public var videoCodecs = Dictionary(uniqueKeysWithValues: VideoCodec.allCases.map { ($0.payloadTypes.media, $0) })
    public var audioPayloadTypes: Set<UInt8> = [111]
    /// RTX (RFC 4588) payload types; packets are matched to their stream by repaired-rtp-stream-id.
    public var rtxPayloadTypes = Set(VideoCodec.allCases.map(\.payloadTypes.rtx))
    /// Impairment applied to every arriving packet before it is processed (uplink emulation).
    public var impairment: ImpairmentSchedule?
    public var impairmentSeed: UInt64 = 1
    /// Impairment between the router and the subscriber (the subscriber's own downlink): applied
    /// after feedback to the publisher is generated, before reassembly and decoding.
    public var downlinkImpairment: ImpairmentSchedule?
    /// `--prefer 360p`: the router forwards to the subscriber only the simulcast stream whose
    /// height is the largest not above this (the lowest when all are above).
    public var preferredHeight: Int?
    /// `--prefer …@15`: only temporal layers up to this frame rate reach the subscriber's decoder.
    public var preferredFrameRate: Int?
    /// Decoded frames whose stamp reads are measured against the picture the stamp names
    /// (PSNR-Y, `PictureQuality`): pubbot's synthetic source with this seed (1: what `publish`,
    /// `preflight` and the replay loops draw).
    public var measureQuality = true
    public var sourceSeed: UInt64 = 1
    /// The scene the measured publisher draws (`--content`; its publish's own option).
    public var sourceContent = SyntheticVideoSource.Content.natural
    /// `--capture-size`: the publisher captures at this size and scales each layer down from it
    /// (a browser; `PictureQuality.captureSize`): references are the source drawn there and
    /// scaled as libwebrtc scales, and the sample is also measured at this size. nil: pubbot's
    /// own publisher, which draws every layer natively.
    public var captureSize: (width: Int, height: Int)?
    /// The share of a core each publisher's quality measurements may take (`QualityBudget`), and
    /// the decoding thread's CPU clock the driver hands in (nil: no budget, every frame measured).
    public var qualityShare = 0.15
    public var cpuClock: (@Sendable () -> Int64)?
    /// `--dump-frames`: a sink for each decoded video stream's measured frames (by SSRC).
    public var frameSinks: (@Sendable (UInt32) -> (any DecodedFrameSink)?)?
    /// Publishers (source addresses) served at once, and streams in all; packets beyond are refused.
    public var maxPublishers = 64
    /// Decoding (video and Opus) is for the first this many publishers; the others' frames are
    /// reassembled and checked but not decoded (a fleet's media does not fit a small machine's
    /// decoders).
    public var decodedPublishers = Int.max
    /// Steps on its own deadlines — the next feedback timer of a publisher that has one due, a
    /// transport's timer — looking only at publishers whose timer is due (the fleet's
    /// subscribers, the receive engine: hundreds of sessions or publishers per thread). Off, it
    /// steps every 10 ms and looks at every publisher each time, the cadence the virtual-time
    /// scenarios' closed loops were tuned on (on deadlines, a 4 → 0.8 → 4 Mbit/s scenario
    /// climbed back 6 s later: left to look into).
    public var deadlineSteps = false
    /// A video stream that does not decode still follows the reference chain as a viewer's
    /// decoder would (a lost frame asks for a key frame; frames until one are not shown): the
    /// fleet's sampled subscribers. Off, a non-decoding stream counts every completed frame as
    /// shown and never asks.
    public var nonDecodingFollowsChain = false
    public var maxStreams = 256
    /// WebRTC publishers (WHIP): ICE-lite and DTLS on the socket, keys per publisher.
    public var webrtc: WebRTCListenConfig?

    public init(listen: SocketAddress, key: SRTPKey) {
        self.listen = listen
        self.key = key
    }
}

/// What the receiver has seen so far.
public struct ReceiverSnapshot: Sendable, Equatable {
    public var streams: [InboundStreamStats]
    /// Publishers by source address, in order of arrival, and the publisher of each stream
    /// (an index into `publishers`, parallel to `streams`).
    public var publishers: [SocketAddress] = []
    public var streamPublisher: [Int] = []
    /// WebRTC publishers the endpoint answered, in order, and what became of each transport
    /// (of the ended ones, the last 256).
    public var webrtcPublishers: [WebRTCPublisherState] = []
    /// Sessions ended and freed, by cause.
    public var webrtcEndings = WebRTCEndings()
    /// Feedback answered by ICMP port unreachable (a publisher that has gone).
    var feedbackUnreachable = 0
    /// Packets refused because `maxPublishers` or `maxStreams` was reached.
    public var refusedOverCapacity = 0
    public var rejected: RejectedPackets
    public var packetsAccepted: Int
    public var rtcpReceived: Int
    public var rtcpSent = 0
    public var pliSent = 0
    public var transportFeedbackSent = 0
    public var nackSent = 0
    /// REMB sent (a WHEP server that negotiated goog-remb without transport-cc) and the last value (bps).
    public var rembSent = 0
    public var rembBitrate: Int?
    /// RTX packets that carried a lost packet, and padding-only RTX (probes).
    public var retransmissionsReceived = 0
    var rtxPaddingReceived = 0
    /// Each publisher's last sender-side stats (RTCP APP "SSTS"), if it sends them; indexed like
    /// `publishers`.
    public var senderStatsByPublisher: [SenderSideStats?] = []
    /// The first publisher's (the one a single-publisher session has).
    public var senderStats: SenderSideStats? { senderStatsByPublisher.first ?? nil }
    /// The sender-side stats of the publisher that sends stream `i` of `streams`.
    public func senderStats(stream i: Int) -> SenderSideStats? {
        guard i < streamPublisher.count, streamPublisher[i] < senderStatsByPublisher.count else { return nil }
        return senderStatsByPublisher[streamPublisher[i]]
    }
    var senderStatsReceived = 0
    /// RTP packets the uplink emulator dropped, per SSRC (what the publisher's uplink lost).
    public var uplinkDropsBySSRC: [UInt32: Int] = [:]
    public var senderReports: Int
    public var byes: Int
    public var firstPacketMicros: Int64?
    public var lastPacketMicros: Int64?
    public var lastError: String?
    /// What the link emulators did (with `--impair` and `--downlink-impair`).
    public var impairment: LinkEmulator.Counters?
    public var downlinkImpairment: LinkEmulator.Counters?

    /// Packets arrive but none authenticates: the sender uses another key or suite.
    public var keyMismatchSuspected: Bool { rejected.authenticationFailed > 0 && packetsAccepted == 0 }

    public var keyMismatchMessage: String {
        "SRTP authentication failed for all \(rejected.authenticationFailed) packets received: the sender's key or SRTP suite does not match this receiver's (check --key / --sdp and --srtp-suite)"
    }
}

extension ReceiverSnapshot {
    /// Nothing seen yet.
    public static var empty: ReceiverSnapshot {
        ReceiverSnapshot(streams: [], rejected: RejectedPackets(), packetsAccepted: 0, rtcpReceived: 0, senderReports: 0, byes: 0)
    }
}
