public import Transport
public import Stats
import RTPCore
import MediaCodecs

/// How the receiver is set up.
public struct ReceiverConfig: Sendable {
    public var listen: SocketAddress
    public var key: SRTPKey
    public var decodeVideo = true
    public var videoPayloadTypes: Set<UInt8> = [96]
    public var audioPayloadTypes: Set<UInt8> = [111]

    public init(listen: SocketAddress, key: SRTPKey) {
        self.listen = listen
        self.key = key
    }
}

/// What the receiver has seen so far.
public struct ReceiverSnapshot: Sendable, Equatable {
    public var streams: [InboundStreamStats]
    public var rejected: RejectedPackets
    public var packetsAccepted: Int
    public var rtcpReceived: Int
    public var senderReports: Int
    public var byes: Int
    public var firstPacketMicros: Int64?
    public var lastPacketMicros: Int64?
    public var lastError: String?

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

    init(config: ReceiverConfig, socket: UDPSocket, state: Locked<ReceiverSnapshot>) throws(SRTPError) {
        self.config = config
        self.socket = socket
        self.state = state
        srtp = try SRTPSession(key: config.key, direction: .inbound)
        snap = state.value
    }

    func run(stop: Locked<Bool>) {
        var nextPublish = Clock.monotonicMicros()
        while !stop.value {
            _ = socket.wait(timeoutMicros: 20_000)
            drain()
            let now = Clock.monotonicMicros()
            if now >= nextPublish { publish(final: false); nextPublish = now + 100_000 }
        }
        drain()
        publish(final: true)
    }

    func publish(final: Bool) {
        if final { for s in streams.values { s.finalize() } }
        snap.streams = order.compactMap { streams[$0]?.stats }
        let s = snap
        state.withLock { $0 = s }
    }

    func drain() {
        for _ in 0..<64 {
            let n: Int
            do { n = try socket.receive(into: batch) } catch { snap.lastError = error.description; return }
            if n == 0 { return }
            let now = Clock.monotonicMicros(), wall = Clock.wallMicros()
            for i in 0..<n { handle(i, now: now, wall: wall) }
        }
    }

    func handle(_ i: Int, now: Int64, wall: Int64) {
        let len = Int(batch.lengths[i])
        guard len <= PacketBatch.maxPacketSize else { snap.rejected.oversized += 1; return }
        let p = batch.slot(i).baseAddress!
        let bytes = p.assumingMemoryBound(to: UInt8.self)
        switch RTPDemux.classify(Span(_unsafeStart: bytes, count: len)) {
        case .other:
            snap.rejected.notRTP += 1
        case .rtcp:
            do {
                let plain = try srtp.unprotectRTCP(p, length: len)
                var it = RTCPCompoundIterator()
                let span = Span(_unsafeStart: bytes, count: plain)
                while let packet = try it.next(in: span) {
                    switch packet {
                    case .senderReport: snap.senderReports += 1
                    case let .goodbye(bye):
                        snap.byes += 1
                        for s in bye.ssrcs { streams[s]?.stats.byeReceived = true }
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
            let kind: MediaKind
            if config.videoPayloadTypes.contains(header.payloadType) { kind = .video }
            else if config.audioPayloadTypes.contains(header.payloadType) { kind = .audio }
            else { snap.rejected.unknownPayloadType += 1; return }
            snap.packetsAccepted += 1
            if snap.firstPacketMicros == nil { snap.firstPacketMicros = now }
            snap.lastPacketMicros = now
            let stream: ReceiveStream
            if let s = streams[header.ssrc] { stream = s } else {
                guard streams.count < 256 else { snap.rejected.malformed += 1; return }
                stream = ReceiveStream(ssrc: header.ssrc, kind: kind, payloadType: header.payloadType, decodeVideo: config.decodeVideo)
                streams[header.ssrc] = stream
                order.append(header.ssrc)
            }
            stream.receive(header: header, extensions: ext, packet: span, nowMicros: now, wallMicros: wall)
        }
    }

    func count(_ e: SRTPError) {
        switch e {
        case .authenticationFailed: snap.rejected.authenticationFailed += 1
        case .replayed, .tooOld: snap.rejected.replayed += 1
        default: snap.rejected.malformed += 1
        }
    }
}
