public import Transport
public import Stats
public import Impairment
import RTPCore
import MediaCodecs
import Congestion

/// How the receiver is set up.
public struct ReceiverConfig: Sendable {
    public var listen: SocketAddress
    public var key: SRTPKey
    public var decodeVideo = true
    public var videoPayloadTypes: Set<UInt8> = [96]
    public var audioPayloadTypes: Set<UInt8> = [111]
    /// RTX (RFC 4588) payload types; packets are matched to their stream by repaired-rtp-stream-id.
    public var rtxPayloadTypes: Set<UInt8> = [97]
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
    /// Publishers (source addresses) served at once, and streams in all; packets beyond are refused.
    public var maxPublishers = 64
    /// VP8 decoding is for the first this many publishers; the others' frames are reassembled
    /// and checked but not decoded (a fleet's video does not fit a small machine's decoders).
    public var decodedPublishers = Int.max
    public var maxStreams = 256

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
    public var publishers: [String] = []
    public var streamPublisher: [Int] = []
    /// Feedback answered by ICMP port unreachable (a publisher that has gone).
    public var feedbackUnreachable = 0
    /// Packets refused because `maxPublishers` or `maxStreams` was reached.
    public var refusedOverCapacity = 0
    public var rejected: RejectedPackets
    public var packetsAccepted: Int
    public var rtcpReceived: Int
    public var rtcpSent = 0
    public var pliSent = 0
    public var transportFeedbackSent = 0
    public var nackSent = 0
    /// RTX packets that carried a lost packet, and padding-only RTX (probes).
    public var retransmissionsReceived = 0
    public var rtxPaddingReceived = 0
    /// The publisher's last sender-side stats (RTCP APP "SSTS"), if it sends them.
    public var senderStats: SenderSideStats?
    public var senderStatsReceived = 0
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

/// The receiving side (`pubbot receive`, embedded in `preflight`): unprotects, demultiplexes by
/// SSRC, reassembles and decodes every stream, reads the video stamps, and counts every packet
/// it refuses by cause. Runs on its own thread.
public final class LoopbackReceiver: Sendable {
    public let config: ReceiverConfig
    public let localAddress: SocketAddress
    let socketHandoff: Handoff<UDPSocket>
    let state: Locked<ReceiverSnapshot>
    let stopFlag = Locked(false)
    let thread = Locked<JoinableThread?>(nil)

    public typealias StartError = EngineSetupError

    public init(config: ReceiverConfig) throws(StartError) {
        self.config = config
        let socket: UDPSocket
        do { socket = try UDPSocket(bind: config.listen, receiveBuffer: 8 << 20) } catch { throw .socket(error) }
        do { _ = try SRTPSession(key: config.key, direction: .inbound) } catch { throw .srtp(error) }
        localAddress = socket.localAddress
        socketHandoff = Handoff(socket)
        state = Locked(ReceiverSnapshot(streams: [], rejected: RejectedPackets(), packetsAccepted: 0, rtcpReceived: 0, senderReports: 0, byes: 0))
    }

    public func start() {
        let config = self.config, handoff = socketHandoff, state = self.state, stopFlag = self.stopFlag
        let t = JoinableThread(name: "pubbot-recv") {
            do {
                let loop = try ReceiveLoop(config: config, socket: handoff.take(), state: state)
                loop.run(stop: stopFlag)
            } catch {
                state.withLock { $0.lastError = "\(error)" }
            }
        }
        thread.withLock { $0 = t }
    }

    public func stop() { stopFlag.value = true }

    public func wait() {
        let t = thread.withLock { t -> JoinableThread? in let c = t; t = nil; return c }
        t?.join()
    }

    public func snapshot() -> ReceiverSnapshot { state.value }
}

/// The receive loop, owned by the receiver thread.
final class ReceiveLoop {
    let config: ReceiverConfig
    let socket: UDPSocket
    let srtp: SRTPSession
    let state: Locked<ReceiverSnapshot>
    let batch = PacketBatch(capacity: 32)
    var streams: [UInt32: ReceiveStream] = [:]
    var order: [UInt32] = []
    var snap: ReceiverSnapshot
    var emulator: LinkEmulator?
    let delayLine: DelayLine?
    var downlink: LinkEmulator?
    let downlinkLine: DelayLine?
    let srtpOut: SRTPSession
    /// Publishers by source address: feedback for each goes back there.
    var peers: [PeerSession] = []
    var peerIndex: [SocketAddress: Int] = [:]
    let ssrc = SecureRandom.uint32() | 1
    let out = PacketBatch(capacity: 1)

    init(config: ReceiverConfig, socket: UDPSocket, state: Locked<ReceiverSnapshot>) throws(SRTPError) {
        self.config = config
        self.socket = socket
        self.state = state
        srtp = try SRTPSession(key: config.key, direction: .inbound)
        srtpOut = try SRTPSession(key: config.key, direction: .outbound)
        snap = state.value
        if let schedule = config.impairment {
            emulator = LinkEmulator(schedule: schedule, seed: config.impairmentSeed, startMicros: Clock.monotonicMicros())
            delayLine = DelayLine(capacity: 8192)
        } else {
            delayLine = nil
        }
        if let schedule = config.downlinkImpairment {
            downlink = LinkEmulator(schedule: schedule, seed: config.impairmentSeed &+ 1, startMicros: Clock.monotonicMicros())
            downlinkLine = DelayLine(capacity: 8192)
        } else {
            downlinkLine = nil
        }
    }

    func run(stop: Locked<Bool>) {
        var nextPublish = Clock.monotonicMicros()
        while !stop.value {
            var timeout: Int64 = 10_000
            if let due = delayLine?.nextDue { timeout = max(0, min(timeout, due - Clock.monotonicMicros())) }
            if let due = downlinkLine?.nextDue { timeout = max(0, min(timeout, due - Clock.monotonicMicros())) }
            _ = socket.wait(timeoutMicros: timeout)
            drain()
            deliverDue()
            deliverDownlink()
            let now = Clock.monotonicMicros()
            sendFeedback(now: now)
            if now >= nextPublish { publish(final: false); nextPublish = now + 100_000 }
        }
        drain()
        deliverDue()
        publish(final: true)
    }

    func publish(final: Bool) {
        if final { for s in streams.values { s.finalize() } }
        snap.streams = order.compactMap { streams[$0]?.stats }
        snap.streamPublisher = order.compactMap { streams[$0]?.peer }
        if snap.publishers.count != peers.count { snap.publishers = peers.map(\.address.description) }
        if let emulator { snap.impairment = emulator.counters; snap.impairment?.droppedByQueue += delayLine?.overflows ?? 0 }
        if let downlink { snap.downlinkImpairment = downlink.counters; snap.downlinkImpairment?.droppedByQueue += downlinkLine?.overflows ?? 0 }
        let s = snap
        state.withLock { $0 = s }
    }

    func drain() {
        for _ in 0..<64 {
            let n: Int
            do { n = try socket.receive(into: batch) } catch {
                // A publisher that left answers our feedback with ICMP port unreachable: not ours to fix.
                if error.errno == 111 { snap.feedbackUnreachable += 1; continue }
                snap.lastError = error.description
                return
            }
            if n == 0 { return }
            let now = Clock.monotonicMicros(), wall = Clock.wallMicros()
            for i in 0..<n {
                let len = Int(batch.lengths[i])
                guard len <= PacketBatch.maxPacketSize else { snap.rejected.oversized += 1; continue }
                let p = batch.slot(i).baseAddress!
                let from = batch.source(i)
                if emulator != nil, let line = delayLine {
                    // The emulated path decides loss and delivery time; delivery happens in deliverDue.
                    if let due = emulator!.admit(size: len, now: now) { line.push(p, length: len, due: due, from: from) }
                    else if len >= 12, p.load(as: UInt8.self) >> 6 == 2, !(192...223).contains(p.load(fromByteOffset: 1, as: UInt8.self)) {
                        // Attribute the drop to its SSRC (cleartext in the SRTP header) for the stats.
                        let ssrc = UInt32(bigEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
                        if snap.uplinkDropsBySSRC.count < 1024 || snap.uplinkDropsBySSRC[ssrc] != nil { snap.uplinkDropsBySSRC[ssrc, default: 0] += 1 }
                    }
                } else {
                    handle(p, length: len, now: now, wall: wall, from: from)
                }
            }
        }
    }

    func deliverDue() {
        guard let line = delayLine else { return }
        let now = Clock.monotonicMicros()
        let wall = Clock.wallMicros()
        while let (p, len, from) = line.popDue(now: now) { handle(p, length: len, now: now, wall: wall, from: from) }
    }

    func deliverDownlink() {
        guard let line = downlinkLine else { return }
        let now = Clock.monotonicMicros()
        let wall = Clock.wallMicros()
        while let (p, len, from) = line.popDue(now: now) {
            if let from, let i = peerIndex[from] { subscriberReceive(p, length: len, now: now, wall: wall, peer: peers[i]) }
        }
    }

    /// The subscriber side: reassembly and decoding of a plain RTP packet (media or RTX).
    func subscriberReceive(_ p: UnsafeMutableRawPointer, length: Int, now: Int64, wall: Int64, peer: PeerSession) {
        let span = Span(_unsafeStart: p.assumingMemoryBound(to: UInt8.self), count: length)
        guard let header = try? RTPHeader.parse(span), let ext = try? RTPExtensionValues.parse(span, header: header) else { return }
        if config.rtxPayloadTypes.contains(header.payloadType) {
            receiveRetransmission(header, ext, span, now: now, wall: wall, peer: peer)
        } else if let stream = streams[header.ssrc], stream.peer == peer.index {
            guard forwarded(stream) else { return }
            stream.receive(header: header, extensions: ext, packet: span, nowMicros: now, wallMicros: wall)
        }
    }

    /// With `--prefer`, whether the router forwards this stream to the subscriber.
    func forwarded(_ stream: ReceiveStream) -> Bool {
        guard let want = config.preferredHeight, stream.stats.kind == .video else { return true }
        let heights = peers[stream.peer].order.compactMap { streams[$0] }.filter { $0.stats.kind == .video }.compactMap(\.routerHeight)
        guard let h = stream.routerHeight, !heights.isEmpty else { return false } // not known yet: wait for its key frame
        let pick = heights.filter { $0 <= want }.max() ?? heights.min()!
        return h == pick
    }

    /// Passes a packet the router accepted on to the subscriber, through the downlink if emulated.
    func forward(_ p: UnsafeMutableRawPointer, length: Int, now: Int64, wall: Int64, peer: PeerSession) {
        if downlink != nil, let line = downlinkLine {
            if let due = downlink!.admit(size: length, now: now) { line.push(p, length: length, due: due, from: peer.address) }
        } else {
            subscriberReceive(p, length: length, now: now, wall: wall, peer: peer)
        }
    }

    /// The session of the publisher sending from `from` (created on its first authenticated
    /// packet; nil when `maxPublishers` are already served).
    func session(_ from: SocketAddress?) -> PeerSession? {
        guard let from else { return nil }
        if let i = peerIndex[from] { return peers[i] }
        guard peers.count < config.maxPublishers else { return nil }
        let peer = PeerSession(index: peers.count, address: from, ssrc: ssrc)
        peers.append(peer)
        peerIndex[from] = peer.index
        return peer
    }

    func handle(_ p: UnsafeMutableRawPointer, length len: Int, now: Int64, wall: Int64, from: SocketAddress?) {
        let bytes = p.assumingMemoryBound(to: UInt8.self)
        switch RTPDemux.classify(Span(_unsafeStart: bytes, count: len)) {
        case .other:
            snap.rejected.notRTP += 1
        case .rtcp:
            do {
                let plain = try srtp.unprotectRTCP(p, length: len)
                guard let peer = session(from) else { snap.refusedOverCapacity += 1; return }
                var it = RTCPCompoundIterator()
                let span = Span(_unsafeStart: bytes, count: plain)
                while let packet = try it.next(in: span) {
                    switch packet {
                    case let .senderReport(sr):
                        snap.senderReports += 1
                        if let st = streams[sr.ssrc], st.peer == peer.index { st.lastSenderReport = (NTPTime.compact(sr.ntpTime), now) }
                    case let .application(app):
                        if let sst = SenderSideStats(app) { snap.senderStats = sst; snap.senderStatsReceived += 1 }
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
        case .rtp:
            let plain: Int
            do { plain = try srtp.unprotectRTP(p, length: len) } catch { count(error); return }
            let span = Span(_unsafeStart: bytes, count: plain)
            let header: RTPHeader
            let ext: RTPExtensionValues
            do {
                header = try RTPHeader.parse(span)
                ext = try RTPExtensionValues.parse(span, header: header)
            } catch {
                snap.rejected.malformed += 1
                return
            }
            guard let peer = session(from) else { snap.refusedOverCapacity += 1; return }
            if config.rtxPayloadTypes.contains(header.payloadType) {
                if let tw = ext.transportSequenceNumber { peer.feedback.onPacket(transportSequence: tw, arrivalMicros: now) }
                snap.packetsAccepted += 1
                forward(p, length: plain, now: now, wall: wall, peer: peer)
                return
            }
            let kind: MediaKind
            if config.videoPayloadTypes.contains(header.payloadType) { kind = .video }
            else if config.audioPayloadTypes.contains(header.payloadType) { kind = .audio }
            else { snap.rejected.unknownPayloadType += 1; return }
            let stream: ReceiveStream
            if let s = streams[header.ssrc] {
                // The same SSRC from another publisher: a collision (or a spoof), not this stream.
                guard s.peer == peer.index else { snap.rejected.malformed += 1; return }
                stream = s
            } else {
                guard streams.count < config.maxStreams, peer.order.count < 32 else { snap.refusedOverCapacity += 1; return }
                stream = ReceiveStream(ssrc: header.ssrc, kind: kind, payloadType: header.payloadType,
                                       decodeVideo: config.decodeVideo && peer.index < config.decodedPublishers)
                stream.preferredFrameRate = config.preferredFrameRate
                stream.peer = peer.index
                streams[header.ssrc] = stream
                order.append(header.ssrc)
                peer.order.append(header.ssrc)
            }
            snap.packetsAccepted += 1
            if snap.firstPacketMicros == nil { snap.firstPacketMicros = now }
            snap.lastPacketMicros = now
            if let tw = ext.transportSequenceNumber { peer.feedback.onPacket(transportSequence: tw, arrivalMicros: now) }
            if let mid = ext.mid, stream.stats.mid == nil { stream.stats.mid = mid }
            if let rid = ext.rid, stream.stats.rid == nil { stream.stats.rid = rid }
            stream.routerObserve(header: header, nowMicros: now)
            if kind == .video && stream.routerHeight == nil { stream.learnResolution(span.extracting(header.payloadRange)) }
            stream.stats.wireBytesReceived += len
            forward(p, length: plain, now: now, wall: wall, peer: peer)
        }
    }

    // MARK: feedback

    /// Receiver reports + SDES about once a second, and a PLI (throttled) for every stream that
    /// lost its reference chain.
    func sendFeedback(now: Int64) {
        for peer in peers where !peer.order.isEmpty { sendFeedback(peer, now: now) }
    }

    func sendFeedback(_ peer: PeerSession, now: Int64) {
        if now >= peer.nextTransportFeedback {
            peer.nextTransportFeedback = now + 100_000
            sendTransportFeedback(peer)
        }
        if now >= peer.nextNack {
            peer.nextNack = now + 20_000
            sendNacks(peer, now: now)
        }
        var plis: [UInt32] = []
        for id in peer.order {
            guard let s = streams[id], s.stats.kind == .video, s.wantsKeyFrame else { continue }
            if now - (peer.lastPLI[id] ?? .min / 2) >= 500_000 { plis.append(id); peer.lastPLI[id] = now }
        }
        let reportDue = now >= peer.nextReport
        guard reportDue || !plis.isEmpty else { return }
        var blocks: [ReportBlock] = []
        if reportDue {
            peer.nextReport = now + 500_000 + Int64(SecureRandom.uint32() % 1_000_000) // 1 s ± 50 %
            for id in peer.order.prefix(31) { if let b = streams[id]?.reportBlock(nowMicros: now) { blocks.append(b) } }
        }
        let ssrc = self.ssrc
        let sent = sendRTCP(to: peer.address) { w throws(RTPWriteError) in
            try ReceiverReport(ssrc: ssrc, reports: blocks).write(to: &w)
            if reportDue { try SourceDescription(chunks: [.init(ssrc: ssrc, cname: "pubbot-receiver")]).write(to: &w) }
            for id in plis { try PictureLossIndication(senderSSRC: ssrc, mediaSSRC: id).write(to: &w) }
        }
        if sent { snap.pliSent += plis.count }
    }

    /// Writes one RTCP compound into the output slot, protects it and sends it to the publisher.
    @discardableResult
    func sendRTCP(to peer: SocketAddress, _ write: (inout ByteWriter) throws(RTPWriteError) -> Void) -> Bool {
        let slot = out.slot(0)
        var w = ByteWriter(UnsafeMutableRawBufferPointer(start: slot.baseAddress, count: PacketBatch.maxPacketSize))
        do throws(RTPWriteError) { try write(&w) } catch {
            snap.lastError = "rtcp: \(error)"
            return false
        }
        do {
            let n = try srtpOut.protectRTCP(slot.baseAddress!, length: w.count, capacity: PacketBatch.slotSize)
            try socket.send(UnsafeRawBufferPointer(start: slot.baseAddress, count: n), to: peer)
            snap.rtcpSent += 1
            return true
        } catch {
            snap.lastError = "rtcp send: \(error)"
            return false
        }
    }

    /// transport-cc feedback (RTPFB FMT 15) for everything received since the last one, every
    /// 100 ms, as reduced-size RTCP (RFC 5506).
    func sendTransportFeedback(_ peer: PeerSession) {
        for fb in peer.feedback.makeFeedback() {
            if sendRTCP(to: peer.address, { w throws(RTPWriteError) in try fb.write(to: &w) }) { snap.transportFeedbackSent += 1 }
        }
    }

    /// RTX (RFC 4588): the payload starts with the original sequence number (OSN), then the
    /// original payload; it is fed to the media stream as if it had arrived in time.
    func receiveRetransmission(_ h: RTPHeader, _ ext: RTPExtensionValues, _ packet: Span<UInt8>, now: Int64, wall: Int64, peer: PeerSession) {
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
        stream.receiveVideo(sequenceNumber: osn, timestamp: h.timestamp, marker: h.marker,
                            packet.extracting((h.payloadRange.lowerBound + 2)..<h.payloadRange.upperBound), nowMicros: now, wallMicros: wall)
    }

    /// Generic NACKs (RFC 4585) for the gaps each video stream is still waiting for.
    func sendNacks(_ peer: PeerSession, now: Int64) {
        var nacks: [GenericNACK] = []
        let ssrc = self.ssrc
        for id in peer.order {
            guard let s = streams[id], s.stats.kind == .video else { continue }
            s.releaseFrames(nowMicros: now, wallMicros: Clock.wallMicros())
            let lost = s.nack.due(now: now)
            if !lost.isEmpty { nacks.append(GenericNACK(senderSSRC: ssrc, mediaSSRC: id, lost: lost)) }
        }
        guard !nacks.isEmpty else { return }
        if sendRTCP(to: peer.address, { w throws(RTPWriteError) in for n in nacks { try n.write(to: &w) } }) { snap.nackSent += nacks.count }
    }

    func count(_ e: SRTPError) {
        switch e {
        case .authenticationFailed: snap.rejected.authenticationFailed += 1
        case .replayed, .tooOld: snap.rejected.replayed += 1
        default: snap.rejected.malformed += 1
        }
    }
}

/// One publisher as the receiver sees it: a source address with its own transport-wide
/// sequence space (transport-cc feedback), report, NACK and PLI timers and streams.
final class PeerSession {
    let index: Int
    let address: SocketAddress
    var order: [UInt32] = []
    var feedback: TransportFeedbackGenerator
    var nextTransportFeedback: Int64 = 0
    var nextNack: Int64 = 0
    var nextReport: Int64 = 0
    var lastPLI: [UInt32: Int64] = [:]
    /// RTX SSRC → media SSRC, learned from repaired-rtp-stream-id.
    var rtxToMedia: [UInt32: UInt32] = [:]

    init(index: Int, address: SocketAddress, ssrc: UInt32) {
        self.index = index
        self.address = address
        feedback = TransportFeedbackGenerator(senderSSRC: ssrc)
    }
}
