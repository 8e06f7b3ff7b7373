import Synchronization
public import Transport
public import MediaCodecs
public import Stats
public import PublisherEngine
public import Platform
public import WebRTCClient
public import DTLS

/// A load test in one process (`pubbot load`): many replay bots on a few event loops (threads),
/// never a thread per bot. Each bot is a whole publisher — its own socket (so a server sees one
/// 5-tuple per publisher, as with real clients), SSRCs, SRTP sessions, estimator, pacer and
/// allocator — fed from a shared `ReplayLibrary` instead of its own encoders.
public struct FleetConfig: Sendable {
    /// Destination, key, SRTP suite and the rest of what every bot shares.
    public var template: PublisherConfig
    public var bots: Int
    /// Event loops (threads); bots are dealt round-robin.
    public var loops: Int
    /// Bots started per second.
    public var rampPerSecond: Double
    /// From the fleet's start to the stop of every bot.
    public var durationMicros: Int64
    /// Number of the first bot (a shard's offset), for names.
    public var firstBot = 0
    /// Rooms: bot number n publishes with `rooms[n % rooms.count]` (its destination and key)
    /// instead of `template`.
    public var rooms: [PublisherConfig] = []
    /// Live mode (`--encode`): every bot sends this encoder's frames instead of the replay loops.
    public var live: SharedEncoder?
    /// WHIP (`load --whip`): each bot POSTs its own offer and runs its own ICE and DTLS; one
    /// certificate serves the fleet (its fingerprint is in every offer).
    public var whip: (options: WHIPOptions, certificate: DTLSCertificate)?
    /// WHIP rooms: bot n is in room n mod `whipRooms`, publisher n / `whipRooms` of it (the
    /// endpoint's `{room}` and `{publisher}`).
    public var whipRooms = 1
    /// `load --ice-restart-at`: each WHIP bot asks its server for an ICE restart this long after
    /// its own start (µs, in order; RFC 9725 §4.3.3).
    public var iceRestartsAfter: [Int64] = []
    /// `load --ice-recover-after`: each WHIP bot restarts ICE when its path has answered no
    /// consent check this long (`ICERecoveryPolicy`).
    public var iceRecoverAfter: Int64?

    public init(template: PublisherConfig, bots: Int, loops: Int, rampPerSecond: Double, durationMicros: Int64) {
        self.template = template
        self.bots = bots
        self.loops = loops
        self.rampPerSecond = rampPerSecond
        self.durationMicros = durationMicros
    }
}

public enum BotState: String, Sendable { case pending, running, done, failed }

/// One bot's figures.
public struct BotSnapshot: Sendable {
    public var number: Int
    public var room = 0
    public var state: BotState
    public var localAddress: SocketAddress?
    public var startedMicros: Int64?
    public var stoppedMicros: Int64?
    public var streams: [OutboundStreamStats]
    public var network: NetworkCounters
    public var keyFramesSent = 0
    public var error: String?
    /// WHIP: what the answer decided, and the ICE/DTLS figures (in `network.transport`).
    public var negotiated: [(String, String)] = []
    /// ICE restarts asked of the server (`--ice-restart-at`), those it refused, and the last
    /// refusal (the recovery of those applied is in `network.transport`).
    public var iceRestartsAsked = 0
    public var iceRestartsRefused = 0
    public var iceRestartError: String?
    /// Of the restarts asked, those the consent watch set off (`--ice-recover-after`).
    public var iceRecoveries = 0
    /// Of the restarts asked, those a change of the local interfaces set off.
    public var iceRestartsOnInterfaceChange = 0
}

public final class Fleet: Sendable {
    public let config: FleetConfig
    let library: ReplayLibrary
    let slots: [Locked<BotSnapshot>]
    let published: [Locked<([OutboundStreamStats], NetworkCounters)>]
    let stopFlag = Atomic<Bool>(false)
    let threads = Locked<[JoinableThread]>([])
    public let startMicros: Locked<Int64> = Locked(0)
    /// CPU time used by each event loop's thread so far (updated about every 100 ms).
    let loopCPU: [Locked<Int64>]
    /// How late each loop ran its bots' turns (published with the CPU time).
    let loopLag: [Locked<LagMeter>]

    public init(config: FleetConfig, library: ReplayLibrary) {
        self.config = config
        self.library = library
        slots = (0..<config.bots).map { i in
            let n = config.firstBot + i
            return Locked(
                BotSnapshot(
                    number: n, room: config.rooms.isEmpty ? n % max(1, config.whipRooms) : n % config.rooms.count, state: .pending,
                    streams: [],
                    network: NetworkCounters()))
        }
        published = (0..<config.bots).map { _ in Locked(([], NetworkCounters())) }
        loopCPU = (0..<max(1, config.loops)).map { _ in Locked(0) }
        loopLag = (0..<max(1, config.loops)).map { _ in Locked(LagMeter()) }
    }

    /// CPU time of the bots' event loops together (not the rest of the process), microseconds.
    public var loopsCPUMicros: Int64 { loopCPU.reduce(0) { $0 + $1.value } }

    /// How late the loops ran their bots' turns so far, all loops together (updated about every
    /// 100 ms): a saturated fleet runs its turns tens of milliseconds late.
    public var loopsLag: LagMeter {
        var all = LagMeter()
        for l in loopLag { all.add(l.value) }
        return all
    }

    public func start() {
        let start = Clock.monotonicMicros()
        startMicros.value = start
        var ts: [JoinableThread] = []
        for l in 0..<max(1, config.loops) {
            let assigned = Array(stride(from: l, to: config.bots, by: max(1, config.loops)))
            ts.append(
                JoinableThread(name: "pubbot-fleet-\(l)") { [self] in
                    FleetLoop(fleet: self, number: l, assigned: assigned, startMicros: start).run()
                })
        }
        threads.withLock { $0 = ts }
    }

    /// Asks every bot to stop (BYE) and the loops to end.
    public func stop() { stopFlag.store(true, ordering: .releasing) }
    var stopRequested: Bool { stopFlag.load(ordering: .acquiring) }

    public func wait() {
        let ts = threads.withLock { t -> [JoinableThread] in
            let c = t; t = []; return c
        }
        for t in ts { t.join() }
    }

    public func snapshot() -> [BotSnapshot] {
        slots.indices.map { i in
            var s = slots[i].value
            let (streams, net) = published[i].value
            s.streams = streams
            s.network = net
            return s
        }
    }
}
