import MediaCodecs
public import Net
import RTPCore
public import Signalling
public import Stats

/// The RTP streams a publisher sends: one per simulcast layer plus the audio, each with its own
/// SSRC, MID/RID and destination. The plan is fixed at start and also drives the SDP.
public struct StreamPlan: Sendable {
    public struct Stream: Sendable {
        public var kind: MediaKind
        public var layer: Int? // simulcast layer index for video
        public var ssrc: UInt32
        public var payloadType: UInt8
        public var clockRate: Int
        public var mid: String
        public var rid: String?
        public var destination: SocketAddress
        public var rtcpDestination: SocketAddress
        /// RTX stream (RFC 4588) for this video layer: its own SSRC, payload type 97 (BUNDLE only).
        var rtxSSRC: UInt32?
        /// Random bits for the stream's first sequence number, RTP timestamp and picture ID
        /// (RFC 3550 §5.1: unpredictable), drawn here so the session itself reads no OS random.
        var initialRandom: UInt64 = 0
        public var port: Int { destination.port }
    }

    public let streams: [Stream]
    public let bundle: Bool
    public let config: PublisherConfig

    /// `random` gives the unpredictable bits (SSRCs not given, first sequence numbers and
    /// timestamps): the caller's — a driver's OS random source, a simulation's seed — never drawn
    /// here.
    public init(config: PublisherConfig, ssrcs: [UInt32]? = nil, random: () -> UInt64) {
        self.config = config
        bundle = config.bundle
        var out: [Stream] = []
        var ssrcIterator = (ssrcs ?? []).makeIterator()
        var used = Set<UInt32>()
        // Given SSRCs (a simulation): everything else follows from them, deterministically.
        var seeded = ssrcs.map { SplitMix64(seed: $0.reduce(0x5EED) { $0 &* 0x100_0000_01B3 ^ UInt64($1) }) }
        func nextRandom() -> UInt64 {
            if seeded != nil { return seeded!.next() }
            return random()
        }
        func nextSSRC() -> UInt32 {
            if let s = ssrcIterator.next() { used.insert(s); return s }
            while true {
                let s = UInt32(truncatingIfNeeded: random() >> 32)
                if s != 0 && !used.contains(s) { used.insert(s); return s }
            }
        }
        let base = config.destination
        func dest(_ i: Int) -> (SocketAddress, SocketAddress) {
            if config.bundle { return (base, base) }
            let p = base.port + 2 * i
            return (base.withPort(p), base.withPort(p + 1))
        }
        var index = 0
        if config.sendAudio {
            let (d, r) = dest(index)
            let audioSSRC =
                config.audioSSRC.map { s -> UInt32 in
                    used.insert(s); return s
                } ?? nextSSRC()
            out.append(
                Stream(
                    kind: .audio, layer: nil, ssrc: audioSSRC, payloadType: config.audioPayloadType, clockRate: 48_000,
                    mid: "0", rid: nil, destination: d, rtcpDestination: r, initialRandom: nextRandom()))
            index += 1
        }
        if config.sendVideo {
            // One stream for all layers when simulcast was refused: it starts as the top layer.
            let planned = config.singleEncoding ? Array(config.layers.enumerated().suffix(1)) : Array(config.layers.enumerated())
            for (i, l) in planned {
                let (d, r) = dest(index)
                // One encoding whose SSRCs the offer announced keeps them.
                let announced = config.singleEncoding ? config.videoSSRC : nil
                let ssrc =
                    announced.map { s -> UInt32 in
                        used.insert(s); return s
                    } ?? nextSSRC()
                let rtx: UInt32? =
                    config.bundle && config.rtx
                    ? (announced != nil
                        ? config.videoRTXSSRC.map { s -> UInt32 in
                            used.insert(s); return s
                        } : nil) ?? nextSSRC() : nil
                out.append(
                    Stream(
                        kind: .video, layer: i, ssrc: ssrc, payloadType: config.videoPayloadType, clockRate: 90_000,
                        mid: config.bundle ? (config.sendAudio ? "1" : "0") : String(index),
                        rid: config.bundle && config.sendRIDs ? l.rid : nil, destination: d, rtcpDestination: r,
                        rtxSSRC: rtx, initialRandom: nextRandom()))
                index += 1
            }
        }
        streams = out
    }

    /// The SDP that describes exactly these streams. Contains the SRTP key: write it only to a
    /// file the user asked for.
    public func sessionDescription() -> SessionDescription {
        let key = config.key
        let crypto = SessionDescription.Crypto(suite: key.suite.sdesName, inlineKey: key.revealBase64())
        let ext: [(id: UInt8, uri: String)] = [RTPExtension.absSendTime, .transportSequenceNumber, .mid, .rid, .repairedRid].map {
            ($0.id, $0.uri)
        }
        var media: [SessionDescription.Media] = []
        for s in streams {
            if bundle && s.kind == .video && media.contains(where: { $0.kind == .video }) {
                media[media.count - 1].ssrcs.append((s.ssrc, config.cname))
                if let rtx = s.rtxSSRC { media[media.count - 1].rtxSSRCs.append((s.ssrc, rtx)) }
                if let rid = s.rid { media[media.count - 1].rids.append(rid) }
                continue
            }
            let audio = s.kind == .audio
            media.append(
                SessionDescription.Media(
                    kind: SDPMediaKind(s.kind.rawValue), port: s.port, payloadType: s.payloadType,
                    codec: audio ? "opus" : config.videoCodec.sdpName,
                    clockRate: s.clockRate,
                    channels: audio ? 2 : nil, fmtp: audio ? "minptime=10;useinbandfec=1" : config.videoCodec.fmtp, mid: s.mid,
                    rtcpMux: bundle,
                    crypto: crypto,
                    extensions: bundle ? ext : [], ssrcs: [(s.ssrc, config.cname)], rids: s.rid.map { [$0] } ?? []))
            if let rtx = s.rtxSSRC {
                media[media.count - 1].rtxPayloadType = config.rtxPayloadType
                media[media.count - 1].rtxSSRCs.append((s.ssrc, rtx))
            }
        }
        return SessionDescription(
            sessionID: UInt64(streams.first?.ssrc ?? 1), address: config.destination.host, bundle: bundle, media: media)
    }
}
