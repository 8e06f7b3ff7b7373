import RTPCore
import MediaCodecs
import Stats
import Net
import SRTP

/// One outgoing RTP stream: its header template, sequence numbers, RTP clock, VP8 picture ids
/// and counters. Packetizes frames straight into batch slots.
struct RTPStreamSender {
    let plan: StreamPlan.Stream
    let template: RTPHeaderTemplate
    var sequenceNumber: UInt16
    let timestampBase: UInt32
    let startMicros: Int64
    var pictureID: UInt16
    var tl0PicIdx: UInt8
    var stats: OutboundStreamStats
    /// Last RTP timestamp sent and the capture time it stands for (for sender reports).
    var lastTimestamp: UInt32 = 0
    var lastCaptureMicros: Int64 = 0
    var sentAny = false
    var lastKeyFrameRequestMicros: Int64 = .min / 2
    /// A key-frame request came inside the minimum interval: it is answered when the interval ends.
    var keyFrameRequestDeferred = false
    /// Extended highest sequence number and cumulative loss of the last receiver report (for
    /// the loss between reports when there is no transport-cc).
    var lastReport: (UInt32, Int32)?
    /// RTX (BUNDLE video only): header template with repaired-rtp-stream-id, own sequence numbers,
    /// and the history NACKs are answered from.
    let rtxTemplate: RTPHeaderTemplate?
    var rtxSequence: UInt16
    let history: RetransmissionBuffer?
    /// AV1's Dependency Descriptor, when negotiated: its ID, the frame number it counts, and the
    /// last frame of each chain (one per spatial layer, over its T0 frames).
    let descriptorID: UInt8?
    var descriptorFrame: UInt16 = 0
    var descriptorChainFrames: [UInt16?] = []
    /// The structure the last key picture attached.
    var descriptorStructure: FrameDependencyStructure?

    init(
        plan: StreamPlan.Stream, layer: VideoLayerConfig?, startMicros: Int64, bundle: Bool, codec: VideoCodec = .vp8,
        rtxPayloadType: UInt8 = 97,
        historyPackets: Int = 1024,
        extensions ids: RTPExtensionIDs = .standard
    ) {
        self.plan = plan
        // Outside BUNDLE (one port per stream, for stock players) no header extensions at all.
        let ids = bundle ? ids : RTPExtensionIDs(mid: nil, rid: nil, repairedRid: nil, absSendTime: nil, transportSequence: nil)
        // The descriptor's structure is more than a one-byte element holds (RFC 8285 §4.2): with
        // it, the stream's headers are all in the two-byte form, its RTX's too.
        descriptorID = plan.kind == .video && codec == .av1 ? ids.dependencyDescriptor : nil
        var strings: [(UInt8, String)] = []
        if let id = ids.mid { strings.append((id, plan.mid)) }
        if let id = ids.rid, let rid = plan.rid { strings.append((id, rid)) }
        template = RTPHeaderTemplate(
            payloadType: plan.payloadType, ssrc: plan.ssrc, strings: strings,
            transportSequence: ids.transportSequence != nil, absSendTime: ids.absSendTime != nil,
            transportSequenceID: ids.transportSequence ?? 0, absSendTimeID: ids.absSendTime ?? 0, twoByte: descriptorID != nil)
        let r = (0..<8).map { UInt8(truncatingIfNeeded: plan.initialRandom >> (56 - 8 * $0)) }
        sequenceNumber = UInt16(r[0]) << 8 | UInt16(r[1])
        // Keep the first wrap far away so tools that mishandle early wraps still work.
        sequenceNumber &= 0x7FFF
        timestampBase = UInt32(r[2]) << 24 | UInt32(r[3]) << 16 | UInt32(r[4]) << 8 | UInt32(r[5])
        pictureID = (UInt16(r[6]) << 8 | UInt16(r[7])) & 0x7FFF
        tl0PicIdx = r[6]
        self.startMicros = startMicros
        if let rtx = plan.rtxSSRC {
            var rtxStrings: [(UInt8, String)] = []
            if let id = ids.mid { rtxStrings.append((id, plan.mid)) }
            if let id = ids.repairedRid, let rid = plan.rid { rtxStrings.append((id, rid)) }
            rtxTemplate = RTPHeaderTemplate(
                payloadType: rtxPayloadType, ssrc: rtx, strings: rtxStrings,
                transportSequence: ids.transportSequence != nil, absSendTime: ids.absSendTime != nil,
                transportSequenceID: ids.transportSequence ?? 0, absSendTimeID: ids.absSendTime ?? 0, twoByte: descriptorID != nil)
            history = RetransmissionBuffer(capacity: historyPackets)
        } else {
            rtxTemplate = nil
            history = nil
        }
        rtxSequence = (UInt16(r[4]) << 8 | UInt16(r[5])) & 0x7FFF
        stats = OutboundStreamStats(
            ssrc: plan.ssrc, kind: plan.kind, mid: plan.mid, rid: plan.rid,
            codec: plan.kind == .audio ? "opus" : codec.sdpName, width: layer?.width ?? 0, height: layer?.height ?? 0,
            scalabilityMode: layer?.scalabilityMode)
        if let l = layer, l.spatialLayers > 1 {
            stats.spatialLayers = zip(0..<l.spatialLayers, l.spatialRateShares).map { s, share in
                let (w, h) = l.spatialSize(s)
                return .init(width: w, height: h, rateShare: share)
            }
        }
    }

    /// RTP timestamp for a capture instant (media clock anchored at the publisher's start).
    func rtpTimestamp(captureMicros: Int64) -> UInt32 {
        let ticks = (captureMicros - startMicros) * Int64(plan.clockRate) / 1_000_000
        return timestampBase &+ UInt32(truncatingIfNeeded: ticks)
    }
}
