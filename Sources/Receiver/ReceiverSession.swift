public import Net
public import SRTP
import Stats
import Impairment
import RTPCore
import MediaCodecs
import Congestion

/// The receiving side of every publisher on one port, sans-IO (no clock, socket, thread or
/// lock): the router terminating each publisher's uplink (SRTP, demux, a `PeerSession` per
/// source address with its transport-cc, NACK, PLI and reports) and the subscriber behind it
/// (reassembly, decoding, stamps, freezes), with the `--impair` uplink and `--downlink-impair`
/// emulators (pure, time passed in) where the receiver applies them. In: `handleDatagram`,
/// `step(now:)` (delivers what the emulated links hold, sends feedback; returns when to be
/// called next). Out: `pollTransmit` (SRTCP feedback to each publisher), `snapshot`. The driver
/// is `ReceiverEngine` (its thread reads the socket and the clock). The Receiver module depends
/// on no clock, thread or socket (Package.swift; `scripts/test` builds with
/// `--explicit-target-dependency-import-check error`): the compiler keeps it sans-IO.
public final class ReceiverSession {
    public let config: ReceiverConfig
    let srtp: SRTPSession
    var streams: [UInt32: ReceiveStream] = [:]
    var order: [UInt32] = []
    var snap: ReceiverSnapshot
    var emulator: LinkEmulator?
    let delayLine: DelayLine?
    var downlink: LinkEmulator?
    let downlinkLine: DelayLine?
    let srtpOut: SRTPSession
    /// SDES: the session a new source address's first packets are tried in (see `handle`).
    var spare: SRTPSession?
    /// Publishers by source address: feedback for each goes back there.
    var peers: [PeerSession] = []
    var peerIndex: [SocketAddress: Int] = [:]
    /// The publishers' next feedback times (a min-heap of publisher indices), and those with a
    /// key frame to ask for before then.
    var feedbackHeap = DeadlineHeap()
    var lastSource: (SocketAddress, Int)?
    var feedbackDue: [PeerSession] = []
    let ssrc: UInt32
    /// The audio streams' reports come from a second SSRC (video, NACK, PLI and transport-cc from `ssrc`).
    let audioSSRC: UInt32
    /// Feedback waiting for the driver (SRTCP, one datagram a slot), and where each goes.
    /// One slot to write and protect a compound in; the protected datagrams then wait, in order,
    /// in `outBytes` (grown as needed: a step may owe feedback to hundreds of publishers).
    let scratch = PacketBatch(capacity: 1)
    var outBytes: [UInt8] = []
    var outPackets: [(end: Int, destination: SocketAddress, source: SocketAddress?)] = []
    /// The socket is on the wildcard address with a host candidate per interface (a WHEP
    /// subscriber's): the driver says where each datagram arrived, and each datagram here names
    /// its source — the transport's own, feedback from the selected pair's base.
    public var namesSources = false
    /// Report-interval jitter, seeded: a run in virtual time repeats exactly.
    var random: SplitMix64
    /// Wall clock − monotonic clock: wall times are `now + wallOffsetMicros`. The driver keeps it
    /// current (each loop turn): the wall clock may step (NTP, a VM's clock sync), and the
    /// glass-to-glass latency compares the publisher's wall clock at capture with ours at decode.
    public var wallOffsetMicros: Int64
    /// WebRTC (`--whip-listen`): the publishers the endpoint answered, found by our ICE ufrag
    /// until their checks arrive, then by source address.
    let webrtc: WebRTCListenConfig?
    var rtcPeers: [WebRTCPeer] = []
    var rtcPending: [String: WebRTCPeer] = [:]
    var rtcByAddress: [SocketAddress: WebRTCPeer] = [:]
    /// After an ICE restart (RFC 9725 §4.3.3): the session's new ufrag → the peer and its new
    /// password, so a check from an address not seen before finds it.
    var rtcRestarted: [String: (peer: WebRTCPeer, password: String)] = [:]
    /// What became of the sessions that ended (their slots freed), the last `endedKept`.
    var rtcEnded: [WebRTCPublisherState] = []
    var endedResources: [String] = []

    public init(config: ReceiverConfig, startMicros: Int64, wallOffsetMicros: Int64, seed: UInt64) throws(SRTPError) {
        self.config = config
        self.wallOffsetMicros = wallOffsetMicros
        webrtc = config.webrtc
        random = SplitMix64(seed: seed)
        ssrc = UInt32(truncatingIfNeeded: random.next()) | 1
        audioSSRC = ssrc ^ 0x0001_0000
        outBytes.reserveCapacity(64 * 1500)
        outPackets.reserveCapacity(64)
        srtp = try SRTPSession(key: config.key, direction: .inbound)
        srtpOut = try SRTPSession(key: config.key, direction: .outbound)
        snap = ReceiverSnapshot(streams: [], rejected: RejectedPackets(), packetsAccepted: 0, rtcpReceived: 0, senderReports: 0, byes: 0)
        if let schedule = config.impairment {
            emulator = LinkEmulator(schedule: schedule, seed: config.impairmentSeed, startMicros: startMicros)
            delayLine = DelayLine(capacity: 8192)
        } else {
            delayLine = nil
        }
        if let schedule = config.downlinkImpairment {
            downlink = LinkEmulator(schedule: schedule, seed: config.impairmentSeed &+ 1, startMicros: startMicros)
            downlinkLine = DelayLine(capacity: 8192)
        } else {
            downlinkLine = nil
        }
    }

    /// Delivers what the emulated links hold until `now` and sends the feedback that is due;
    /// returns when it wants to be called again: the next feedback timer of a publisher with
    /// streams (the NACK and frame-release tick every 20 ms, transport-cc every 100 ms, reports),
    /// a transport's timer or an emulated link's next delivery — 100 ms at the latest. (It once
    /// asked for every 10 ms whatever was due: half the steps of a subscriber fleet did nothing.)
    public func step(now: Int64) -> Int64 {
        deliverDue(now: now)
        deliverDownlink(now: now)
        var wake = config.deadlineSteps ? min(now + 100_000, sendFeedback(now: now)) : now + 10_000
        if !config.deadlineSteps { _ = sendFeedback(now: now) }
        if webrtc != nil, let t = stepTransports(now: now) { wake = min(wake, t) }
        if let due = delayLine?.nextDue { wake = min(wake, due) }
        if let due = downlinkLine?.nextDue { wake = min(wake, due) }
        return max(now, wake)
    }

    /// Nothing is held in the emulated links (uplink or downlink).
    public var linkIsEmpty: Bool { delayLine?.nextDue == nil && downlinkLine?.nextDue == nil }

    /// What the receiver has seen so far; `final` closes every stream's figures (the run ended).
    /// Video decoding switched on or off for every publisher's streams, now and to come (a
    /// fleet's rotating decoders); nil: as the config says.
    var videoDecoding: Bool?

    /// Switches video decoding for the session's streams (see `ReceiveStream.setDecoding`).
    public func setVideoDecoding(_ on: Bool, now: Int64) {
        videoDecoding = on
        for s in streams.values { s.setDecoding(on && config.decodeVideo, nowMicros: now) }
        // A stream that now waits for a key frame asks at the next feedback step.
        if on {
            for p in peers where !p.videoStreams.isEmpty && !p.feedbackPending {
                p.feedbackPending = true
                feedbackDue.append(p)
            }
        }
    }

    /// - Parameter now: the caller's clock, when it has one: the transports' consent ages are
    ///   read at it (an agent's own clock is its last step's).
    public func snapshot(final: Bool, now: Int64? = nil) -> ReceiverSnapshot {
        if final { for s in streams.values { s.finalize() } }
        snap.streams = order.compactMap { streams[$0]?.stats }
        snap.streamPublisher = order.compactMap { streams[$0]?.peer }
        if snap.publishers.count != peers.count { snap.publishers = peers.map(\.address) }
        if webrtc != nil {
            snap.webrtcPublishers =
                rtcEnded
                + rtcPeers.map { p in
                    var s = p.state
                    s.transport = p.transport.stats
                    if let now { s.transport?.consentAgeMicros = p.transport.ice.consentAge(at: now) }
                    return s
                }
        }
        if let emulator { snap.impairment = emulator.counters; snap.impairment?.droppedByQueue += delayLine?.overflows ?? 0 }
        if let downlink {
            snap.downlinkImpairment = downlink.counters; snap.downlinkImpairment?.droppedByQueue += downlinkLine?.overflows ?? 0
        }
        return snap
    }

    /// A receive error the driver saw on the socket.
    public func handleSocketError(_ error: SocketError) {
        // A publisher that left answers our feedback with ICMP port unreachable: not ours to fix.
        if error.isConnectionRefused { snap.feedbackUnreachable += 1 } else { snap.lastError = error.description }
    }

    /// One datagram from `from`, arrived at `now` (`length` as received: longer than
    /// `PacketBatch.maxPacketSize` means it was truncated). With `--impair` the emulated uplink
    /// first decides whether and when it arrives (delivered by `step`).
    /// `to`: the local address it reached, on a wildcard socket (nil: the socket's own; with
    /// `--impair` the emulated uplink does not keep it either).
    public func handleDatagram(_ p: UnsafeMutableRawPointer, length len: Int, from: SocketAddress?, to: SocketAddress? = nil, now: Int64) {
        guard len <= PacketBatch.maxPacketSize else { snap.rejected.oversized += 1; return }
        if emulator != nil, let line = delayLine {
            // The emulated path decides loss and delivery time; delivery happens in deliverDue.
            // (The emulator is there: nil is a drop.)
            if let due = emulator?.admit(size: len, now: now) {
                line.push(p, length: len, due: due, from: from)
            } else if len >= 12, p.load(as: UInt8.self) >> 6 == 2, !(192...223).contains(p.load(fromByteOffset: 1, as: UInt8.self)) {
                // Attribute the drop to its SSRC (cleartext in the SRTP header) for the stats.
                let ssrc = UInt32(bigEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
                if snap.uplinkDropsBySSRC.count < 1024 || snap.uplinkDropsBySSRC[ssrc] != nil {
                    snap.uplinkDropsBySSRC[ssrc, default: 0] += 1
                }
            }
        } else {
            handle(p, length: len, now: now, wall: now + wallOffsetMicros, from: from, to: to)
        }
    }

    /// Hands on what the emulated uplink delivers by `now` (the driver calls it before waiting),
    /// each packet at the time the emulated link delivered it: a driver that woke late does not
    /// bunch the arrivals the link spaced.
    public func deliverDue(now: Int64) {
        guard let line = delayLine else { return }
        while let (p, len, from, due) = line.popDue(now: now) { handle(p, length: len, now: due, wall: due + wallOffsetMicros, from: from) }
    }

    func deliverDownlink(now: Int64) {
        guard let line = downlinkLine else { return }
        while let (p, len, from, due) = line.popDue(now: now) {
            if let from, let i = peerIndex[from] {
                subscriberReceive(p, length: len, now: due, wall: due + wallOffsetMicros, peer: peers[i])
            }
        }
    }

    /// The subscriber side: reassembly and decoding of a plain RTP packet (media or RTX).
    func subscriberReceive(_ p: UnsafeMutableRawPointer, length: Int, now: Int64, wall: Int64, peer: PeerSession) {
        let span = Span(_unsafeStart: p.assumingMemoryBound(to: UInt8.self), count: length)
        guard let header = try? RTPHeader.parse(span), let ext = try? RTPExtensionValues.parse(span, header: header, ids: peer.extensionIDs)
        else { return }
        subscriberReceive(header, ext, span, now: now, wall: wall, peer: peer, stream: nil)
    }

    /// The same with the packet parsed (the router's own parse, when no downlink sits between
    /// them) and, for media, its stream.
    func subscriberReceive(
        _ header: RTPHeader, _ ext: RTPExtensionValues, _ span: Span<UInt8>, now: Int64, wall: Int64, peer: PeerSession,
        stream known: ReceiveStream?
    ) {
        if known == nil && payloadKinds(peer).rtx.contains(header.payloadType) { // a known stream is media
            receiveRetransmission(header, ext, span, now: now, wall: wall, peer: peer)
        } else if let stream = known ?? streams[header.ssrc], stream.peer == peer.index {
            guard forwarded(stream) else { return }
            stream.receive(header: header, extensions: ext, packet: span, nowMicros: now, wallMicros: wall)
            if peer.nextNack == .max && stream.stats.kind == .video && !(stream.assembler.isEmpty && stream.nack.isEmpty) {
                peer.nextNack = now + 20_000 // something waits: the tick resumes
                if config.deadlineSteps && peer.nextNack < peer.nextFeedback {
                    peer.nextFeedback = peer.nextNack
                    feedbackHeap.push(peer.nextNack, peer.index)
                }
            }
            if stream.wantsKeyFrame && !peer.feedbackPending { // the PLI goes out on this step, not the next tick
                peer.feedbackPending = true
                feedbackDue.append(peer)
            }
        }
    }

    /// With `--prefer`, whether the router forwards this stream to the subscriber.
    func forwarded(_ stream: ReceiveStream) -> Bool {
        guard let want = config.preferredHeight, stream.stats.kind == .video else { return true }
        guard let h = stream.routerHeight else { return false } // not known yet: wait for its key frame
        // The largest height not above the preference, else the smallest (no arrays: per packet).
        var below: Int?, lowest = Int.max
        for id in peers[stream.peer].order {
            guard let s = streams[id], s.stats.kind == .video, let sh = s.routerHeight else { continue }
            lowest = min(lowest, sh)
            if sh <= want { below = max(below ?? sh, sh) }
        }
        return h == (below ?? lowest)
    }

    /// Passes a packet the router accepted on to the subscriber, through the downlink if emulated.
    func forward(_ p: UnsafeMutableRawPointer, length: Int, now: Int64, wall: Int64, peer: PeerSession) {
        if downlink != nil, let line = downlinkLine {
            if let due = downlink?.admit(size: length, now: now) { line.push(p, length: length, due: due, from: peer.address) }
        } else {
            subscriberReceive(p, length: length, now: now, wall: wall, peer: peer)
        }
    }

    /// The session of the publisher sending from `from` (created on its first authenticated
    /// packet; nil when `maxPublishers` are already served).
    /// `inbound`, the session the packet authenticated in, becomes the publisher's own when it
    /// is the spare (SDES).
    func session(_ from: SocketAddress?, adopting inbound: SRTPSession) -> PeerSession? {
        guard let from else { return nil }
        if let i = peerIndex[from] { return peers[i] }
        guard peers.count < config.maxPublishers else { return nil }
        let peer = PeerSession(index: peers.count, address: from, ssrc: ssrc)
        if webrtc == nil && inbound === spare {
            peer.srtpIn = inbound
            spare = nil
        }
        peers.append(peer)
        peerIndex[from] = peer.index
        return peer
    }

    /// A publisher's index by its source address; datagrams come in runs from one sender (a
    /// batch, a frame's packets), so the last answer is tried first.
    func peerIndexOf(_ from: SocketAddress) -> Int? {
        if let (address, i) = lastSource, address == from { return i }
        guard let i = peerIndex[from] else { return nil }
        lastSource = (from, i)
        return i
    }

    func handle(_ p: UnsafeMutableRawPointer, length len: Int, now: Int64, wall: Int64, from: SocketAddress?, to: SocketAddress? = nil) {
        let bytes = p.assumingMemoryBound(to: UInt8.self)
        // WebRTC: STUN and DTLS go to the publisher's transport; media is known by its source
        // address (the selected pair) and unprotected with that publisher's DTLS keys.
        var known: PeerSession?
        var inbound = srtp
        if webrtc == nil {
            // SDES: a publisher known by its source address has an inbound session of its own
            // (one SRTP context per peer, as pion and Janus keep; a shared one once held every
            // fleet bot's streams, which libsrtp2 walked per packet).
            // A packet from a new address is tried in a spare session, which becomes the
            // publisher's when the packet authenticates (with that packet in its replay window);
            // a packet that fails leaves the spare as it was (a stream is recorded only after
            // the tag checks, as libsrtp2 `srtp.c` clones one from its template).
            if let from, let i = peerIndexOf(from), let own = peers[i].srtpIn {
                known = peers[i]
                inbound = own
            } else if let spare = spareInbound() {
                inbound = spare
            }
        } else {
            guard len > 0, let from else { snap.rejected.notRTP += 1; return }
            let first = bytes[0]
            // RFC 7983: STUN 0–3, DTLS 20–63 and TURN ChannelData 64–79 belong to the transport.
            if first <= 3 || (20...79).contains(first) { handleTransportDatagram(p, length: len, from: from, to: to, now: now); return }
            guard let w = rtcByAddress[from], let peer = w.peer, let s = w.srtpIn else { snap.rejected.unknownSource += 1; return }
            known = peer
            inbound = s
        }
        switch RTPDemux.classify(Span(_unsafeStart: bytes, count: len)) {
        case .other: snap.rejected.notRTP += 1
        case .rtcp: handleRTCP(p, length: len, inbound: inbound, peer: known, from: from, now: now)
        case .rtp: handleRTP(p, length: len, inbound: inbound, peer: known, from: from, now: now, wall: wall)
        }
    }

    /// A compound RTCP packet from a publisher: sender reports (for the round trip), its
    /// sender-side stats, BYEs.
    func handleRTCP(
        _ p: UnsafeMutableRawPointer, length len: Int, inbound: SRTPSession, peer known: PeerSession?, from: SocketAddress?, now: Int64
    ) {
        let bytes = p.assumingMemoryBound(to: UInt8.self)
        do {
            let plain = try inbound.unprotectRTCP(p, length: len)
            guard let peer = known ?? session(from, adopting: inbound) else {
                refuse(inbound, ssrc: UInt32(bigEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
                return
            }
            var it = RTCPCompoundIterator()
            let span = Span(_unsafeStart: bytes, count: plain)
            while let packet = try it.next(in: span) {
                switch packet {
                case let .senderReport(sr):
                    snap.senderReports += 1
                    if let st = streams[sr.ssrc], st.peer == peer.index { st.lastSenderReport = (NTPTime.compact(sr.ntpTime), now) }
                case let .application(app):
                    if let sst = SenderSideStats(app) {
                        // Per publisher: a fleet's publishers each have their own.
                        while snap.senderStatsByPublisher.count <= peer.index { snap.senderStatsByPublisher.append(nil) }
                        snap.senderStatsByPublisher[peer.index] = sst
                        snap.senderStatsReceived += 1
                    }
                case let .goodbye(bye):
                    snap.byes += 1
                    for s in bye.ssrcs where streams[s]?.peer == peer.index { streams[s]?.stats.byeReceived = true }
                default: break
                }
            }
            snap.rtcpReceived += 1
        } catch let e as SRTPError {
            count(e)
        } catch {
            snap.rejected.malformed += 1
        }
    }

    /// An RTP packet from a publisher: to its stream (made on its first packet, within the
    /// limits), the feedback and the estimators, then on to the subscribers.
    func handleRTP(
        _ p: UnsafeMutableRawPointer, length len: Int, inbound: SRTPSession, peer known: PeerSession?, from: SocketAddress?, now: Int64,
        wall: Int64
    ) {
        let bytes = p.assumingMemoryBound(to: UInt8.self)
        let plain: Int
        do { plain = try inbound.unprotectRTP(p, length: len) } catch { count(error); return }
        let span = Span(_unsafeStart: bytes, count: plain)
        let header: RTPHeader
        let ext: RTPExtensionValues
        do {
            header = try RTPHeader.parse(span)
            ext = try RTPExtensionValues.parse(span, header: header, ids: known?.extensionIDs)
        } catch {
            snap.rejected.malformed += 1
            return
        }
        guard let peer = known ?? session(from, adopting: inbound) else { refuse(inbound, ssrc: header.ssrc); return }
        if let ast = ext.absSendTime, peer.hasRemoteEstimator {
            peer.remoteEstimator?.onPacket(absSendTime: ast, arrivalMicros: now, size: len)
        }
        let kinds = payloadKinds(peer)
        if kinds.rtx.contains(header.payloadType) {
            if let tw = ext.transportSequenceNumber {
                peer.feedback.onPacket(transportSequence: tw, arrivalMicros: now, ssrc: header.ssrc)
            }
            snap.packetsAccepted += 1
            if downlink == nil {
                subscriberReceive(header, ext, span, now: now, wall: wall, peer: peer, stream: nil)
            } else {
                forward(p, length: plain, now: now, wall: wall, peer: peer)
            }
            return
        }
        let kind: MediaKind
        if kinds.video.contains(header.payloadType) {
            kind = .video
        } else if kinds.audio.contains(header.payloadType) {
            kind = .audio
        } else {
            snap.rejected.unknownPayloadType += 1; return
        }
        let stream: ReceiveStream
        if let s = streams[header.ssrc] {
            // The same SSRC from another publisher: a collision (or a spoof), not this stream.
            guard s.peer == peer.index else { snap.rejected.ssrcCollision += 1; return }
            stream = s
        } else {
            guard streams.count < config.maxStreams, peer.order.count < 32 else { snap.refusedOverCapacity += 1; return }
            stream = ReceiveStream(
                ssrc: header.ssrc, kind: kind, payloadType: header.payloadType,
                codec: (peer.videoCodecs ?? config.videoCodecs)[header.payloadType] ?? .vp8,
                decodeVideo: config.decodeVideo && (videoDecoding ?? (peer.index < config.decodedPublishers)),
                decodeAudio: peer.index < config.decodedPublishers)
            stream.preferredFrameRate = config.preferredFrameRate
            if kind == .video && config.measureQuality {
                let quality = PictureQuality(seed: config.sourceSeed, content: config.sourceContent)
                quality.sink = config.frameSinks?(header.ssrc)
                quality.captureSize = config.captureSize
                if let clock = config.cpuClock {
                    quality.cpuClock = clock
                    if peer.qualityBudget == nil { peer.qualityBudget = QualityBudget(share: config.qualityShare) }
                    stream.qualityBudget = peer.qualityBudget
                }
                stream.quality = quality
            }
            stream.followsChain = config.nonDecodingFollowsChain
            stream.peer = peer.index
            streams[header.ssrc] = stream
            order.append(header.ssrc)
            peer.order.append(header.ssrc)
            if kind == .video { peer.videoStreams.append(stream) }
            if peer.order.count == 1 && config.deadlineSteps { // its feedback times start now
                peer.nextFeedback = now
                feedbackHeap.push(now, peer.index)
            }
        }
        snap.packetsAccepted += 1
        if snap.firstPacketMicros == nil { snap.firstPacketMicros = now }
        snap.lastPacketMicros = now
        if let tw = ext.transportSequenceNumber { peer.feedback.onPacket(transportSequence: tw, arrivalMicros: now, ssrc: header.ssrc) }
        if let mid = ext.mid, stream.stats.mid == nil { stream.stats.mid = mid }
        if let rid = ext.rid, stream.stats.rid == nil { stream.stats.rid = rid }
        stream.routerObserve(header: header, nowMicros: now)
        if kind == .video && stream.routerHeight == nil { stream.learnResolution(span.extracting(header.payloadRange)) }
        stream.stats.wireBytesReceived += len
        if downlink == nil { // the subscriber takes the router's parse (and stream) as it is
            subscriberReceive(header, ext, span, now: now, wall: wall, peer: peer, stream: stream)
        } else {
            forward(p, length: plain, now: now, wall: wall, peer: peer)
        }
    }

    /// The publisher's payload types by kind (its own from its offer, else the receiver's).
    @inline(__always)
    func payloadKinds(_ peer: PeerSession) -> PayloadKinds {
        if let k = peer.kinds { return k }
        let k = PayloadKinds(
            rtx: .init(peer.rtxPayloadTypes ?? config.rtxPayloadTypes), video: .init(peer.videoPayloadTypes ?? config.videoPayloadTypes),
            audio: .init(peer.audioPayloadTypes ?? config.audioPayloadTypes))
        peer.kinds = k
        return k
    }

    /// RTX (RFC 4588): the payload starts with the original sequence number (OSN), then the
    /// original payload; it is fed to the media stream as if it had arrived in time.
    func receiveRetransmission(_ h: RTPHeader, _ ext: RTPExtensionValues, _ packet: Span<UInt8>, now: Int64, wall: Int64, peer: PeerSession)
    {
        if h.payloadRange.isEmpty { snap.rtxPaddingReceived += 1; return }
        var media = peer.rtxToMedia[h.ssrc]
        if media == nil, let rid = ext.repairedRid {
            media = peer.order.first { streams[$0]?.stats.rid == rid && streams[$0]?.stats.kind == .video }
            if let m = media, peer.rtxToMedia.count < 32 { peer.rtxToMedia[h.ssrc] = m }
        }
        guard let m = media, let stream = streams[m], h.payloadRange.count >= 2 else { snap.rejected.malformed += 1; return }
        let osn = UInt16(packet[h.payloadRange.lowerBound]) << 8 | UInt16(packet[h.payloadRange.lowerBound + 1])
        snap.retransmissionsReceived += 1
        stream.stats.packetsRecovered += 1
        stream.receiveVideo(
            sequenceNumber: osn, timestamp: h.timestamp, marker: h.marker,
            packet.extracting((h.payloadRange.lowerBound + 2)..<h.payloadRange.upperBound), nowMicros: now, wallMicros: wall)
    }

    /// The spare inbound session a new SDES address's packets are tried in (nil if one cannot
    /// be made: the shared session serves).
    func spareInbound() -> SRTPSession? {
        if spare == nil { spare = try? SRTPSession(key: config.key, direction: .inbound) }
        return spare
    }

    /// A packet that authenticated but is beyond `maxPublishers`: counted, and its stream taken
    /// back out of the spare session so the spare stays empty.
    func refuse(_ inbound: SRTPSession, ssrc: UInt32) {
        snap.refusedOverCapacity += 1
        if inbound === spare { inbound.removeStream(ssrc: ssrc) }
    }

    func count(_ e: SRTPError) {
        switch e {
        case .authenticationFailed: snap.rejected.authenticationFailed += 1
        case .replayed, .tooOld: snap.rejected.replayed += 1
        default: snap.rejected.malformed += 1
        }
    }
}

/// Which RTCP feedback a session may send (all of it unless an answer said otherwise).
public struct NegotiatedFeedback: Sendable, Equatable {
    public var nack = true
    public var pli = true
    public var transportCC = true
    /// REMB from a receive-side estimate (only when transport-cc is not there to do the job).
    public var remb = false
    public init(nack: Bool = true, pli: Bool = true, transportCC: Bool = true, remb: Bool = false) {
        self.nack = nack
        self.pli = pli
        self.transportCC = transportCC
        self.remb = remb
    }
}
