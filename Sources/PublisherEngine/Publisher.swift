public import Transport
import Stats
public import WebRTC
import RTPCore
public import ICE
import MediaCodecs
import Platform

/// A running publisher: a media thread (synthesize + encode video), an audio thread (Opus on its
/// own clock) and a network thread (packetize, protect, send, RTCP), with thread-safe controls
/// and snapshots.
public final class Publisher: Sendable {
    public let config: PublisherConfig
    public let plan: StreamPlan
    public let control: PublisherControl
    let mailbox: FrameMailbox
    let mediaCounters: Locked<MediaCounters>
    let audioCounters = Locked(AudioCounters())
    let networkState: Locked<([OutboundStreamStats], NetworkCounters)>
    let threads = Locked<[JoinableThread]>([])
    let startMicros: Locked<Int64>
    /// When the media thread ended (0: still running): a stopped run's elapsed time ends there.
    let mediaEndMicros = Locked<Int64>(0)
    let socketHandoff: Handoff<UDPSocket>
    /// Late-frame counts per layer at the last change, and when (for the `cpu` limitation reason).
    let lateSeen = Locked<([Int], [Int64])>(([], []))
    public let localAddress: SocketAddress

    public typealias StartError = EngineSetupError

    /// Prepares the streams and opens the socket (errors surface here, before any thread starts).
    public convenience init(config: PublisherConfig, bind: SocketAddress? = nil) throws(StartError) {
        let socket: UDPSocket
        do {
            if let bind { socket = try UDPSocket(bind: bind) } else { socket = try UDPSocket(for: config.destination) }
        } catch { throw .socket(error) }
        try self.init(config: config, socket: socket, webrtc: nil)
    }

    let tcpHandoff: Handoff<(any TURNStream)?>

    /// A WebRTC transport (ICE, DTLS) to run inside the session; media starts once it connects.
    let webrtcHandoff: Handoff<(WebRTCTransport, STUNAddress)?>

    /// A publisher on an open socket; with `webrtc`, ICE and DTLS run on it first (WHIP).
    /// - Parameter tcp: the TURN server's TCP stream when the relay is reached over TCP.
    public init(config: PublisherConfig, socket: UDPSocket, webrtc: (WebRTCTransport, STUNAddress)?, tcp: (any TURNStream)? = nil)
        throws(StartError)
    {
        tcpHandoff = Handoff(tcp)
        var config = config
        if config.layers.isEmpty { config.sendVideo = false }
        self.config = config
        plan = StreamPlan(config: config)
        control = PublisherControl(layerTargets: config.layers.map(\.targetBitrate))
        do { mailbox = try FrameMailbox() } catch { throw .socket(error) }
        mediaCounters = Locked(MediaCounters(layers: config.layers.count))
        networkState = Locked(([], NetworkCounters()))
        startMicros = Locked(0)
        localAddress = socket.localAddress
        socketHandoff = Handoff(socket)
        webrtcHandoff = Handoff(webrtc)
        // Fail early on a key SRTP refuses.
        do { _ = try SRTPSession(key: config.key, direction: .outbound) } catch { throw .srtp(error) }
    }

    /// Starts the media and network threads.
    public func start() {
        let start = Clock.monotonicMicros()
        startMicros.value = start
        let end = config.durationMicros.map { start + $0 }
        let config = self.config, plan = self.plan, control = self.control, mailbox = self.mailbox
        let mediaCounters = self.mediaCounters, networkState = self.networkState, handoff = self.socketHandoff
        let mediaEnd = self.mediaEndMicros, webrtc = self.webrtcHandoff, tcp = self.tcpHandoff
        let audioCounters = self.audioCounters
        let audio =
            config.sendAudio
            ? JoinableThread(name: "pubbot-audio") {
                AudioLoop(config: config, control: control, mailbox: mailbox, counters: audioCounters).run(
                    startMicros: start, endMicros: end)
            } : nil
        let media = JoinableThread(name: "pubbot-media") {
            MediaLoop(config: config, control: control, mailbox: mailbox, counters: mediaCounters).run(startMicros: start, endMicros: end)
            mediaEnd.value = Clock.monotonicMicros()
        }
        let network = JoinableThread(name: "pubbot-net") {
            do {
                let loop = try PublisherSession(
                    config: config, plan: plan, startMicros: start,
                    wallOffsetMicros: Clock.wallMicros() - Clock.monotonicMicros(), webrtc: webrtc.take())
                let uplink = config.uplinkImpairment.map { UplinkEmulator(schedule: $0, seed: 1, startMicros: start) }
                PublisherNetworkLoop.run(
                    loop, socket: SessionSocket(handoff.take(), tcp: tcp.take(), uplink: uplink), mailbox: mailbox, control: control,
                    published: networkState)
            } catch {
                networkState.withLock { $0.1.lastError = "srtp: \(error)" }
                control.requestStop()
            }
        }
        threads.withLock { $0 = [media, network] + (audio.map { [$0] } ?? []) }
    }

    /// An ICE restart the server answered, applied by the network thread at once (it is woken).
    public func restartICE(_ r: PublisherControl.ICERestart) {
        control.requestICERestart(r)
        mailbox.signal.signal()
    }

    /// Asks both loops to finish (the network loop flushes, then sends BYE).
    public func stop() { control.requestStop() }

    /// Waits for both threads to end.
    public func wait() {
        let ts = threads.withLock { t -> [JoinableThread] in
            let c = t; t = []; return c
        }
        for t in ts { t.join() }
    }

    public func snapshot() -> PublisherSnapshot {
        var m = mediaCounters.value
        let a = audioCounters.value
        m.audioFramesEncoded = a.framesEncoded
        m.audioEncodeMicros = a.encodeMicros
        m.audioFramesSkipped = a.framesSkipped
        if m.error == nil, let e = a.error { m.error = "audio: \(e)" }
        let (streams, net) = networkState.value
        var out = streams
        let now = Clock.monotonicMicros()
        let lateChanged = lateSeen.withLock { state -> [Int64] in
            if state.0.count != m.lateFrames.count { state = (m.lateFrames, m.lateFrames.map { _ in Int64.min / 2 }) }
            for i in m.lateFrames.indices where m.lateFrames[i] != state.0[i] { state.0[i] = m.lateFrames[i]; state.1[i] = now }
            return state.1
        }
        for i in out.indices where out[i].kind == .video {
            if let layer = plan.streams.first(where: { $0.ssrc == out[i].ssrc })?.layer, layer < m.framesEncoded.count {
                // bandwidth > cpu > other (W3C): cpu when this layer's encoder fell behind real time lately.
                // cpu too while layers are held back or the resolution is lowered for CPU
                // (libwebrtc reports the encoder's limitation on every outbound-rtp of the source).
                if out[i].qualityLimitationReason == .none
                    && (m.cpuLayersHeld > 0 || m.cpuResolutionSteps > 0
                        || (layer < lateChanged.count && now - lateChanged[layer] < 2_000_000))
                {
                    out[i].qualityLimitationReason = .cpu
                }
                // One stream for every layer when simulcast was refused: all their frames.
                out[i].framesEncoded = config.singleEncoding ? m.framesEncoded.reduce(0, +) : m.framesEncoded[layer]
                out[i].targetBitrate = config.singleEncoding ? control.currentTargets().max() ?? 0 : control.currentTargets()[layer]
            }
        }
        let s = startMicros.value, e = mediaEndMicros.value
        return PublisherSnapshot(
            streams: out, media: m, network: net, elapsedMicros: s == 0 ? 0 : (e == 0 ? now : e) - s,
            mailboxDrops: mailbox.droppedCount)
    }
}
