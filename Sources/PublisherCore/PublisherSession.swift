import MediaCodecs
public import Stats
import Net
public import SRTP
public import Congestion
public import WebRTC
import RTPCore
public import ICE
public import Impairment

/// Counters the network thread publishes.
public struct NetworkCounters: Sendable, Equatable {
    public init() {}
    public var rtcpSent = 0
    public var rtcpReceived = 0
    /// Incoming packets that failed SRTCP authentication or parsing.
    public var rtcpRejected = 0
    public var sendErrors = 0
    /// Sends refused because the destination port is closed (ICMP port unreachable).
    public var portUnreachable = 0
    /// Packets dropped because the socket buffer was full: none since a full buffer is
    /// back-pressure (`sendDeferred`); kept for the stats documents.
    public var sendBufferDrops = 0
    /// Datagram-waits: each time a datagram stayed in the outbox because the socket (or the
    /// qdisc behind it: ENOBUFS) refused it, and how many times the socket refused.
    public var sendDeferred = 0
    public var sendBlocked = 0
    /// Frames not sent because every packet slot was queued in the pacer.
    var framesDroppedNoSlot = 0
    public var paddingPacketsSent = 0
    public var nackReceived = 0
    public var retransmissionsSent = 0
    /// NACKed packets no longer in the history (too old or already resent within an RTT).
    var retransmissionsUnavailable = 0
    public var transportFeedbackReceived = 0
    public var rembReceived = 0
    public var lastError: String?
    /// ICE/DTLS figures of a WebRTC session (nil with SDES).
    public var transport: TransportStats?
    /// When the first media packet left the pacer (the session's clock, µs; nil before): with
    /// the WHIP connection's start, the time to first media.
    public var firstMediaMicros: Int64?
    /// The emulated uplink's own counts (`--impair` toward a real server; nil without): what it
    /// dropped never reached the network, so it is told apart from what the network lost.
    public var uplink: LinkEmulator.Counters?
    /// Frames the encoders made before ICE and DTLS were done, or delta frames before a
    /// stream's first key frame (not sent).
    public var framesBeforeConnected = 0
    public var byeSent = false
    /// The send-side estimate and what the allocator made of it.
    public var estimate: NetworkEstimate?
    public var allocation: Allocation?
    var pacerQueuePackets = 0
    /// Network condition of the uplink (`NetworkConditionScorer`), with hysteresis.
    public var networkCondition: NetworkCondition = .unknown
    public var networkConditionReason: NetworkConditionReason = .unknown
    /// Condition changes and layer changes, oldest first (the last 256), numbered.
    public var events: [PublisherEvent] = []
    var eventsEmitted = 0
    var senderStatsSent = 0
    public var audioFallbackActive = false
}

/// What a publisher session asks of the media source feeding it.
public enum PublisherSessionEvent: Sendable, Equatable {
    /// A receiver asked for a key frame on this layer (PLI/FIR), already throttled.
    case keyFrameRequest(layer: Int)
    /// The allocator's new target for a layer; 0 suspends it (resume on a key frame).
    case layerTarget(layer: Int, bitrate: Int)
}

/// Something a stats consumer should hear about once (the stats stream's events, `StatsStream.swift`).
public struct PublisherEvent: Sendable, Equatable {
    public enum Kind: String, Sendable { case networkConditionChanged, videoQualityChanged }
    public var number: Int
    public var kind: Kind
    public var wallMillis: Int64
    /// networkConditionChanged: the new condition and reason. videoQualityChanged: what changed
    /// (`layerSuspended`, `layerResumed`) and why (`bandwidth`).
    public var condition: NetworkCondition?
    public var reason: String
    public var change: String?
    public var rid: String?
    public var width: Int?
    public var height: Int?
}

/// Everything one publisher connection does, sans-IO (the shape of str0m's `Rtc`): no clock,
/// socket, thread or lock inside. In: `handle(_:)` (encoded frames), `handleDatagram(_:length:now:)`,
/// `step(now:)` (timers; returns when to be called next, nil once stopped), `stop()`. Out:
/// `pollTransmit` (protected datagrams, in order), `pollEvent` (key-frame requests, layer
/// targets), `statistics`. Inside: packetization into arena slots, the pacer, transport-wide
/// sequence numbers and abs-send-time, SRTP, the RTX history and retransmissions, RTCP sender
/// reports / BYE / sender-side stats, RR/PLI/FIR/NACK handling, the bandwidth estimator, the
/// allocator, network-condition scoring and audio fallback. Drivers: `PublisherNetworkLoop` in
/// the PublisherEngine module (the publisher's network thread) and `FleetLoop` (many bots a
/// thread). The module depends on no clock, thread, socket or OS random (Package.swift; `scripts/test`
/// builds with `--explicit-target-dependency-import-check error`): the compiler keeps it sans-IO.
public final class PublisherSession {
    public let config: PublisherConfig
    public let plan: StreamPlan
    /// SRTP each way: from the configured key (SDES), or replaced by DTLS's keys on connecting.
    var srtpOut: SRTPSession
    var srtpIn: SRTPSession
    /// WebRTC (WHIP): ICE, DTLS and consent on the session's socket; media waits for them.
    let webrtc: WebRTCTransport?
    /// The socket's address as ICE names it (the local host candidate).
    let webrtcLocal: STUNAddress?
    /// Where everything goes once the transport is connected (the selected pair's remote).
    var connectedRemote: SocketAddress?
    /// The socket is on the wildcard address (a host candidate per interface): every datagram
    /// names its source — media and RTCP the selected pair's base (`mediaSource`), ICE and DTLS
    /// their own.
    let namesSources: Bool
    var mediaSource: SocketAddress?
    var mediaStarted = false
    /// The TURN server, when the selected pair runs through its relay (media is wrapped for it).
    var relayServer: SocketAddress?
    var transportStatusMicros: Int64 = .min / 2
    /// When the transport next has timed work, as its last step said (`.max`: none); nil when
    /// it must be stepped on the next turn (a datagram reached it, or it was never stepped).
    var transportDue: Int64?
    /// Single encoding: the layer the allocator wants and the one on the wire (it changes on the
    /// wanted layer's key frame; -1 before the first).
    var singleWanted = 0
    var singleActive = -1
    /// What the session asks of its media source, oldest first, until `pollEvent` takes it.
    var events: [PublisherSessionEvent] = []
    var eventsHead = 0
    /// Set by `stop`: drain the pacer (up to a second), then end.
    public internal(set) var stopRequested = false
    var senders: [RTPStreamSender] = []
    var audioIndex: Int?
    var videoIndex: [Int] = []
    var transportSequence: UInt16 = 1
    var counters = NetworkCounters()
    /// Always on in use. Tests turn it off to count the allocations of pubbot's own send path
    /// apart from SRTP's (AES-CM's HMAC re-initialisation in OpenSSL allocates).
    var protectionEnabled = true

    // Pacing: packets wait as arena slot numbers.
    let arena: PacketArena
    /// What each queued arena slot holds, by slot number.
    var slots: [SlotInfo]
    var pacer: Pacer
    /// Datagrams ready to go, in order (protected, in arena slots), until the driver takes them
    /// with `pollTransmit`: slot, pointer, length on the wire, destination. Fixed buffers of the
    /// arena's capacity, allocated once (as arrays, each write checked their uniqueness: four
    /// checks per packet, 2 % of a replay fleet's CPU by perf); freed in `deinit`.
    let outSlots: UnsafeMutablePointer<Int>
    /// The slots of the frame being packetized, queued in the pacer once it is whole (or given
    /// back when the arena runs out part way through a frame whose count is not known).
    let frameSlots: UnsafeMutablePointer<Int32>
    let outPointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    let outLengths: UnsafeMutablePointer<UInt32>
    let outDestinations: UnsafeMutablePointer<SocketAddress>
    /// Each datagram's source, when the session names them (`namesSources`).
    let outSources: UnsafeMutablePointer<SocketAddress?>
    public internal(set) var outCount = 0
    /// How many datagrams at the front of the outbox are control (RTCP, STUN, DTLS): they go ahead
    /// of media the socket deferred, as libwebrtc sends RTCP outside its pacer queue
    /// (`modules/rtp_rtcp/source/rtcp_sender.cc` hands reports straight to the transport).
    var outControlCount = 0

    // Congestion control (BUNDLE only: it needs transport-cc feedback).
    var estimator: BandwidthEstimator?
    var allocator: BitrateAllocator
    var appliedTargets: [Int]
    var scorer: NetworkConditionScorer
    /// Audio fallback in force (video off because the condition went critical).
    var inAudioFallback = false
    var fallbackRecoveryCount = 0
    var fallbackTransition = false
    var fallbackCooldownUntil: Int64 = 0
    var rtxWindowStart: Int64 = 0
    var rtxWindowBytes = 0
    var nextScore: Int64 = 0
    var lastRTCPMicros: Int64 = 0
    var lastTransportFeedbackMicros: Int64 = 0
    /// The time of the call being handled (monotonic µs): the loop never reads a clock, its
    /// driver passes the time in (`begin`, `step`, `finish`).
    var nowMicros: Int64 = 0
    /// Wall clock − monotonic clock, fixed at start: wall times (NTP in reports, abs-send-time,
    /// event timestamps) are `nowMicros + wallOffsetMicros`.
    let wallOffsetMicros: Int64
    var wallMicros: Int64 { nowMicros + wallOffsetMicros }

    deinit {
        outSlots.deinitialize(count: arena.capacity)
        outSlots.deallocate()
        frameSlots.deinitialize(count: arena.capacity)
        frameSlots.deallocate()
        outPointers.deinitialize(count: arena.capacity)
        outPointers.deallocate()
        outLengths.deinitialize(count: arena.capacity)
        outLengths.deallocate()
        outDestinations.deinitialize(count: arena.capacity)
        outDestinations.deallocate()
        outSources.deinitialize(count: arena.capacity)
        outSources.deallocate()
    }

    /// - Parameter webrtc: a WebRTC transport and the local address its datagrams arrive on;
    ///   nil for SDES (the configured key, the configured destination).
    public init(
        config: PublisherConfig, plan: StreamPlan, startMicros: Int64, wallOffsetMicros: Int64,
        webrtc: (WebRTCTransport, STUNAddress)? = nil
    ) throws(SRTPError) {
        self.config = config
        self.webrtc = webrtc?.0
        webrtcLocal = webrtc?.1
        namesSources = webrtc?.1.ip.allSatisfy { $0 == 0 } ?? false
        mediaStarted = webrtc == nil // SDES: keys and destination are known from the start
        self.plan = plan
        events.reserveCapacity(16)
        random = SplitMix64(seed: config.seed &* 0x9E37_79B9_7F4A_7C15 &+ 0x5EED)
        self.wallOffsetMicros = wallOffsetMicros
        nowMicros = startMicros
        arena = PacketArena(capacity: config.packetSlots)
        srtpOut = try SRTPSession(key: config.key, direction: .outbound)
        srtpIn = try SRTPSession(key: config.key, direction: .inbound)
        for (i, s) in plan.streams.enumerated() {
            senders.append(
                RTPStreamSender(
                    plan: s, layer: s.layer.map { config.layers[$0] }, startMicros: startMicros, bundle: plan.bundle,
                    codec: config.videoCodec, rtxPayloadType: config.rtxPayloadType,
                    historyPackets: PublisherSession.historyPackets(config, layer: s.layer.map { config.layers[$0] }),
                    extensions: s.kind == .audio ? config.audioExtensions : config.videoExtensions))
            if s.kind == .audio { audioIndex = i } else { videoIndex.append(i) }
        }
        outSlots = .allocate(capacity: arena.capacity)
        outSlots.initialize(repeating: 0, count: arena.capacity)
        frameSlots = .allocate(capacity: arena.capacity)
        frameSlots.initialize(repeating: 0, count: arena.capacity)
        outPointers = .allocate(capacity: arena.capacity)
        outPointers.initialize(repeating: nil, count: arena.capacity)
        outLengths = .allocate(capacity: arena.capacity)
        outLengths.initialize(repeating: 0, count: arena.capacity)
        outDestinations = .allocate(capacity: arena.capacity)
        outDestinations.initialize(repeating: config.destination, count: arena.capacity)
        outSources = .allocate(capacity: arena.capacity)
        outSources.initialize(repeating: nil, count: arena.capacity)
        slots = [SlotInfo](repeating: SlotInfo(stream: -1, payload: 0), count: arena.capacity)
        let layers = config.sendVideo ? config.layers : []
        allocator = BitrateAllocator(
            audioBitrate: config.sendAudio ? config.audioBitrate : 0,
            layers: layers.map {
                LayerLimits(
                    min: $0.minBitrate, target: $0.targetBitrate, max: $0.maxBitrate,
                    start: LayerLimits.singlecastStartBitrate(width: $0.width, height: $0.height))
            })
        appliedTargets = layers.map(\.targetBitrate)
        allocator.singleEncoding = config.singleEncoding
        singleWanted = max(0, layers.count - 1)
        scorer = NetworkConditionScorer(thresholds: config.conditionThresholds)
        pacer = Pacer(pacingRate: Int(2.5 * Double(allocator.totalMax)))
        if plan.bundle && config.congestionControl && !layers.isEmpty {
            let ceiling = max(Int(Double(allocator.totalMax) * 1.25), config.probeCeiling ?? 0)
            var e = BandwidthEstimator(
                startBitrate: config.startBitrate, minBitrate: 30_000, maxBitrate: ceiling, feedback: config.feedback)
            e.setMaxBitrate(ceiling)
            estimator = e
            pacer.paddingPacketSize = 255 // RTP padding holds at most 255 bytes
        }
        if let t = self.webrtc { counters.transport = t.stats }
    }

    var nextReport: Int64 = 0
    var stoppingSince: Int64?
    /// Report-interval jitter: seeded from the config, so a run in virtual time repeats exactly.
    var random: SplitMix64

    /// Starts the clocks (and probing) at `now`.
    public func begin(now start: Int64) {
        nowMicros = start
        nextReport = start + 200_000
        if webrtc == nil { startMedia(now: start) } else { stepTransport(now: start) }
    }

    /// Media may flow (at once with SDES; once ICE and DTLS are done with WebRTC): the
    /// estimator starts probing, the encoders get their first targets.
    func startMedia(now: Int64) {
        mediaStarted = true
        nextReport = now + 200_000
        // A WebRTC receiver joins now: what the encoders made so far was never sent, so each layer
        // starts with a key frame.
        if webrtc != nil { for i in senders.indices { requestKeyFrame(i) } }
        estimator?.start(now: now)
        if let e = estimator?.estimate { apply(e, now: now) }
    }

    /// One turn of the loop at `now`: pacer, timers (the driver has handed in the frames and
    /// datagrams that arrived). Returns when it wants the next turn, or nil once it has stopped
    /// (then call `finish`). What it sends waits in the outbox for `pollTransmit`.
    public func step(now: Int64) -> Int64? {
        nowMicros = now
        let transportWake = webrtc == nil ? nil : stepTransport(now: now)
        let stopping = stopRequested
        if !mediaStarted {
            // Waiting for ICE and DTLS: only the transport's timers run.
            if stopping { return nil }
            return transportWake ?? now + 50_000
        }
        if !pacer.isProbing, let c = estimator?.probes.nextCluster() { pacer.startProbe(c) }
        let pacerWake = pump(now: now)
        if let before = estimator?.estimate.bitrate {
            estimator?.onTimer(now: now)
            if let e = estimator?.estimate, e.bitrate != before { apply(e, now: now) }
        }
        if now >= nextReport {
            sendReports(bye: false)
            // RFC 3550 §6.3.1: randomize the interval in [0.5, 1.5] × T.
            let jitter = Int64(random.next() % 1000) - 500
            nextReport = now + config.reportIntervalMicros + config.reportIntervalMicros * jitter / 1000
        }
        if now >= nextScore { scoreCondition(now: now); nextScore = now + 1_000_000 }
        let keyFrameWake = issueDeferredKeyFrameRequests()
        if stopping {
            if stoppingSince == nil { stoppingSince = now }
            // Let the pacer drain for up to a second, then go.
            if pacer.queuedPackets == 0 || now - stoppingSince! > 1_000_000 { return nil }
        }
        var wake = nextReport
        if let p = pacerWake { wake = min(wake, p) }
        if let k = keyFrameWake { wake = min(wake, k) }
        if estimator != nil { wake = min(wake, now + 50_000) }
        if stopping { wake = min(wake, now + 5_000) }
        if let t = transportWake { wake = min(wake, t) }
        return wake
    }

    /// Sends BYE (the last datagrams; the driver still flushes them).
    public func finish(now: Int64) {
        nowMicros = now
        guard mediaStarted else { return }
        sendReports(bye: true)
        counters.byeSent = true
        if let t = webrtc {
            // close_notify after the BYE (RFC 5246 §7.2.1), on the same path.
            t.close()
            drainTransport()
            updateTransportStats(t)
        }
    }

    /// Ends the session: the pacer drains (for up to a second) and `step` returns nil.
    public func stop() { stopRequested = true }

    /// The next thing the media source should do (a key frame, a layer's new target), or nil.
    public func pollEvent() -> PublisherSessionEvent? {
        guard eventsHead < events.count else {
            if eventsHead > 0 { events.removeAll(keepingCapacity: true); eventsHead = 0 }
            return nil
        }
        defer { eventsHead += 1 }
        return events[eventsHead]
    }

    /// Per-stream counters and the session's counters, for the driver to publish.
    public var statistics: ([OutboundStreamStats], NetworkCounters) {
        var c = counters
        c.pacerQueuePackets = pacer.queuedPackets
        return (senders.map(\.stats), c)
    }

    /// A frame from the encoder (or a replay loop).
    public func handle(_ item: MediaFrame) {
        switch item {
        case let .video(f): sendVideo(f)
        case let .audio(f): sendAudio(f)
        }
    }

    func emit(_ e: PublisherEvent) {
        var e = e
        counters.eventsEmitted += 1
        e.number = counters.eventsEmitted
        counters.events.append(e)
        if counters.events.count > 256 { counters.events.removeFirst(counters.events.count - 256) }
    }

    /// Scores the uplink once a second (loss from transport-cc or receiver reports, the estimate
    /// against what the ladder wants, which layers run).
    func scoreCondition(now: Int64) {
        let rrLoss = videoIndex.map { senders[$0].stats.fractionLost }.max() ?? senders.first?.stats.fractionLost
        let loss = counters.estimate?.lossFraction ?? (counters.rtcpReceived > 0 ? rrLoss : nil)
        let a = counters.allocation
        let layers = appliedTargets.count
        // Single encoding: one layer runs by design; the condition sees how far up the ladder it is.
        let active =
            config.singleEncoding ? (a?.layers.lastIndex { $0 > 0 }).map { $0 + 1 } ?? layers : a?.layers.filter { $0 > 0 }.count ?? layers
        let atTarget = a.map { !$0.bandwidthLimited.enumerated().contains { $0.element && $0.offset < active } } ?? true
        let sample = TransportSample(
            micros: now, lossFraction: loss, estimate: counters.estimate?.bitrate ?? (estimator == nil ? nil : 0),
            desired: allocator.totalTarget, activeLayers: active, totalLayers: layers, layersAtTarget: atTarget,
            lowestLayerMin: allocator.layers.first?.min ?? 0)
        if let (c, r) = scorer.add(sample) {
            emit(PublisherEvent(number: 0, kind: .networkConditionChanged, wallMillis: wallMicros / 1000, condition: c, reason: r.rawValue))
        }
        if config.audioFallback && !appliedTargets.isEmpty {
            if !inAudioFallback && scorer.condition == .critical && now >= fallbackCooldownUntil {
                inAudioFallback = true
                fallbackRecoveryCount = 0
                fallbackTransition = true
                if let e = counters.estimate { apply(e, now: now) }
                fallbackTransition = false
            } else if inAudioFallback {
                // Back when the estimate carries audio + 1.2 × the lowest layer's minimum and loss is
                // below the warning threshold, for two evaluations in a row.
                let need = Double(allocator.audioBitrate + Int(1.2 * Double(allocator.layers[0].min))) / 0.95
                let ok = Double(counters.estimate?.bitrate ?? 0) >= need && (loss ?? 0) < config.conditionThresholds.warningLoss
                fallbackRecoveryCount = ok ? fallbackRecoveryCount + 1 : 0
                if fallbackRecoveryCount >= 2 {
                    inAudioFallback = false
                    // The loss window still remembers the bad spell: don't fall back on it again.
                    fallbackCooldownUntil = now + config.conditionThresholds.windowMicros
                    fallbackTransition = true
                    if let e = counters.estimate { apply(e, now: now) }
                    fallbackTransition = false
                }
            }
            counters.audioFallbackActive = inAudioFallback
        }
        counters.networkCondition = scorer.condition
        counters.networkConditionReason = scorer.reason
    }

    /// Splits the estimate over audio and layers and hands the layer targets to the encoders.
    func apply(_ e: NetworkEstimate, now: Int64) {
        // The estimate counts whole packets; set aside their overhead (RTP header + extensions,
        // SRTP tag, UDP/IP ≈ 70 bytes a packet) before splitting it over the media.
        let overhead = ((senders.first?.template.size ?? 28) + SRTPSession.tagLength(config.key.suite) + 28) * 8
        var a = allocator.allocate(
            estimate: e.bitrate, overheadBitsPerPacket: overhead, audioPacketsPerSecond: config.sendAudio ? 50 : 0,
            layerFrameRates: config.layers.map(\.fps))
        if inAudioFallback {
            a.layers = a.layers.map { _ in 0 }
            a.bandwidthLimited = a.bandwidthLimited.map { _ in true }
        }
        counters.estimate = e
        counters.allocation = a
        for (i, bps) in a.layers.enumerated() where i < appliedTargets.count && appliedTargets[i] != bps {
            if (appliedTargets[i] == 0) != (bps == 0) {
                let l = config.layers[i]
                emit(
                    PublisherEvent(
                        number: 0, kind: .videoQualityChanged, wallMillis: wallMicros / 1000, condition: nil,
                        reason: fallbackTransition ? "audioFallback" : "bandwidth", change: bps == 0 ? "layerSuspended" : "layerResumed",
                        rid: l.rid, width: l.width, height: l.height))
            }
            appliedTargets[i] = bps
            events.append(.layerTarget(layer: i, bitrate: bps))
        }
        if config.singleEncoding, let idx = videoIndex.first, let chosen = a.layers.lastIndex(where: { $0 > 0 }) {
            singleWanted = chosen
            senders[idx].stats.targetBitrate = a.layers[chosen]
            senders[idx].stats.qualityLimitationReason = a.bandwidthLimited[chosen...].contains(true) ? .bandwidth : .none
        } else {
            for (i, idx) in videoIndex.enumerated() where i < a.layers.count {
                senders[idx].stats.targetBitrate = a.layers[i]
                senders[idx].stats.qualityLimitationReason = a.bandwidthLimited[i] ? .bandwidth : .none
            }
        }
        pacer.pacingRate = Int(2.5 * Double(max(e.bitrate, allocator.audioBitrate)))
        if config.padToEstimate { pacer.paddingRate = e.bitrate }
        estimator?.onDesiredBitrate(max(allocator.totalTarget, config.probeCeiling ?? 0), now: now)
    }
}

/// What a queued packet slot holds: its stream, its payload size, whether it is padding or on
/// the stream's RTX SSRC, and for a media packet its sequence number, RTP timestamp and marker
/// (what the RTX history keeps once it is sent).
/// One AV1 picture's Dependency Descriptors as its packets carry them: per spatial layer's frame
/// (its packets in turn) the mandatory fields (the start and end bits are each packet's), then
/// `firstTail` on its first packet (the structure on a key picture's lowest frame) and `tail` on
/// the others (custom fields, or nothing).
struct FrameDescriptor {
    struct LayerFrame {
        var templateID: Int
        var frameNumber: UInt16
        var firstTail: [UInt8]
        var tail: [UInt8]
        /// The frame's packets (set once the packetizer has counted them).
        var packets = Int.max
    }

    var id: UInt8
    var frames: [LayerFrame]
    /// The most any of its packets' headers grow by: the element, its 2-byte head, word padding.
    var size: Int { (2 + 3 + frames.map { max($0.firstTail.count, $0.tail.count) }.max()! + 3) / 4 * 4 }
}

struct SlotInfo {
    var stream: Int16
    var payload: Int32
    var padding = false
    /// An RTX packet (retransmission or padding) of its stream.
    var rtx = false
    var sequence: UInt16 = 0
    var timestamp: UInt32 = 0
    var marker = false
}

extension PublisherSession {
    /// Packets a video stream keeps for retransmission (`PublisherConfig.retransmissionHistorySeconds`).
    static func historyPackets(_ config: PublisherConfig, layer: VideoLayerConfig?) -> Int {
        guard let seconds = config.retransmissionHistorySeconds, let layer else { return config.retransmissionHistory }
        // ~1100-byte packets at the layer's maximum bitrate.
        let packets = Int(Double(layer.maxBitrate) * seconds / 8 / 1100)
        return min(config.retransmissionHistory, max(64, packets))
    }
}
