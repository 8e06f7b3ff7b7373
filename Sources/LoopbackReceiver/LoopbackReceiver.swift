public import Transport
public import Stats
public import Impairment
import RTPCore
import MediaCodecs
import Congestion
import Platform

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
    /// REMB sent (a WHEP server that negotiated goog-remb without transport-cc) and the last value (bps).
    public var rembSent = 0
    public var rembBitrate: Int?
    /// RTX packets that carried a lost packet, and padding-only RTX (probes).
    public var retransmissionsReceived = 0
    public var rtxPaddingReceived = 0
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
    /// WHIP endpoint → receive thread: publishers to add and sessions to end.
    let commands = Locked<[Command]>([])
    enum Command: Sendable { case add(WebRTCPublisherSpec, seed: UInt64), remove(String) }
    /// Receive thread → WHIP endpoint: sessions that ended on their own (abandoned, failed,
    /// consent lost, closed by the peer), whose slots are free.
    let ended = Locked<[String]>([])

    /// The WHIP sessions (resources) that ended since the last call.
    public func takeEndedResources() -> [String] { ended.withLock { e in let taken = e; e = []; return taken } }

    /// A publisher the WHIP endpoint answered (from the HTTP thread); the receive thread takes it
    /// within a few milliseconds.
    /// Returns once the receive thread has it (≤ ~25 ms), so the publisher's first ICE check,
    /// sent as soon as the answer arrives, finds it instead of waiting for a retransmission.
    public func addPublisher(_ spec: WebRTCPublisherSpec) {
        let seed = UInt64(SecureRandom.uint32()) << 32 | UInt64(SecureRandom.uint32())
        commands.withLock { $0.append(.add(spec, seed: seed)) }
        let deadline = Clock.monotonicMicros() + 100_000
        while commands.withLock({ !$0.isEmpty }) && Clock.monotonicMicros() < deadline && thread.value != nil { Clock.sleep(micros: 500) }
    }

    /// A WHIP DELETE: the publisher's transport is closed.
    public func removePublisher(resource: String) { commands.withLock { $0.append(.remove(resource)) } }

    public typealias StartError = EngineSetupError

    public init(config: ReceiverConfig) throws(StartError) {
        var config = config
        let socket: UDPSocket
        do { socket = try UDPSocket(bind: config.listen, receiveBuffer: 8 << 20) } catch { throw .socket(error) }
        // Port 0 asked the kernel for one: the ICE candidate carries the port it gave.
        if config.webrtc?.local.port == 0 { config.webrtc?.local.port = UInt16(socket.localAddress.port) }
        self.config = config
        do { _ = try SRTPSession(key: config.key, direction: .inbound) } catch { throw .srtp(error) }
        localAddress = socket.localAddress
        socketHandoff = Handoff(socket)
        state = Locked(ReceiverSnapshot(streams: [], rejected: RejectedPackets(), packetsAccepted: 0, rtcpReceived: 0, senderReports: 0, byes: 0))
    }

    public func start() {
        let config = self.config, handoff = socketHandoff, state = self.state, stopFlag = self.stopFlag, commands = self.commands, ended = self.ended
        let t = JoinableThread(name: "pubbot-recv") {
            do {
                let start = Clock.monotonicMicros()
                let session = try ReceiverSession(config: config, startMicros: start, wallOffsetMicros: Clock.wallMicros() - start,
                                                  seed: UInt64(SecureRandom.uint32()) << 32 | UInt64(SecureRandom.uint32()))
                Self.run(session, socket: handoff.take(), state: state, stop: stopFlag, commands: commands, ended: ended)
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

    /// The receive thread: the driver of a `ReceiverSession` — socket, clock, publishing.
    static func run(_ session: ReceiverSession, socket: UDPSocket, state: Locked<ReceiverSnapshot>, stop: Locked<Bool>, commands: Locked<[Command]>,
                    ended: Locked<[String]>) {
        let batch = PacketBatch(capacity: 32)
        func read() {
            for _ in 0..<64 {
                let n: Int
                do { n = try socket.receive(into: batch) } catch {
                    session.handleSocketError(error)
                    if error.isConnectionRefused { continue }
                    return
                }
                if n == 0 { return }
                let now = Clock.monotonicMicros()
                for i in 0..<n { session.handleDatagram(batch.slot(i).baseAddress!, length: Int(batch.lengths[i]), from: batch.source(i), now: now) }
            }
        }
        func flush() {
            session.pollTransmit { bytes, to throws(SocketError) in try socket.send(bytes, to: to) }
        }
        var nextPublish = Clock.monotonicMicros()
        var wake = nextPublish
        var releasedSinceTrim = 0, lastTrim: Int64 = 0
        while !stop.value {
            _ = socket.wait(timeoutMicros: max(0, min(wake, nextPublish) - Clock.monotonicMicros()))
            for c in commands.withLock({ c -> [Command] in let taken = c; c = []; return taken }) {
                switch c {
                case let .add(spec, seed): session.addPublisher(spec, seed: seed, now: Clock.monotonicMicros())
                case let .remove(resource): session.removePublisher(resource: resource)
                }
            }
            read()
            let now = Clock.monotonicMicros()
            wake = min(session.step(now: now), now + 20_000)
            flush()
            let gone = session.takeEndedResources()
            if !gone.isEmpty {
                ended.withLock { $0 += gone }
                releasedSinceTrim += gone.count
            }
            // Sessions released in numbers (abandoned offers, a fleet leaving): their memory goes
            // back to the kernel, at most once a second.
            if releasedSinceTrim >= 16 && now - lastTrim >= 1_000_000 { Heap.releaseFreeMemory(); releasedSinceTrim = 0; lastTrim = now }
            if now >= nextPublish { let s = session.snapshot(final: false); state.withLock { $0 = s }; nextPublish = now + 100_000 }
        }
        read()
        session.deliverDue(now: Clock.monotonicMicros())
        let s = session.snapshot(final: true)
        state.withLock { $0 = s }
    }
}

