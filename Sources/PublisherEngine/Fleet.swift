import Synchronization
public import Transport
public import MediaCodecs
public import Stats

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
    public var localAddress: String?
    public var startedMicros: Int64?
    public var stoppedMicros: Int64?
    public var streams: [OutboundStreamStats]
    public var network: NetworkCounters
    public var keyFramesSent = 0
    public var error: String?
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

    public init(config: FleetConfig, library: ReplayLibrary) {
        self.config = config
        self.library = library
        slots = (0..<config.bots).map { i in
            let n = config.firstBot + i
            return Locked(BotSnapshot(number: n, room: config.rooms.isEmpty ? 0 : n % config.rooms.count, state: .pending, streams: [],
                                      network: NetworkCounters()))
        }
        published = (0..<config.bots).map { _ in Locked(([], NetworkCounters())) }
        loopCPU = (0..<max(1, config.loops)).map { _ in Locked(0) }
    }

    /// CPU time of the bots' event loops together (not the rest of the process), microseconds.
    public var loopsCPUMicros: Int64 { loopCPU.reduce(0) { $0 + $1.value } }

    public func start() {
        let start = Clock.monotonicMicros()
        startMicros.value = start
        var ts: [JoinableThread] = []
        for l in 0..<max(1, config.loops) {
            let assigned = Array(stride(from: l, to: config.bots, by: max(1, config.loops)))
            ts.append(JoinableThread(name: "pubbot-fleet-\(l)") { [self] in FleetLoop(fleet: self, number: l, assigned: assigned, startMicros: start).run() })
        }
        threads.withLock { $0 = ts }
    }

    /// Asks every bot to stop (BYE) and the loops to end.
    public func stop() { stopFlag.store(true, ordering: .releasing) }
    var stopRequested: Bool { stopFlag.load(ordering: .acquiring) }

    public func wait() {
        let ts = threads.withLock { t -> [JoinableThread] in let c = t; t = []; return c }
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

/// One event loop: starts its bots on the ramp, feeds them replay frames on their clocks, runs
/// their network turns when due or when their socket is readable, and polls all their sockets
/// at once.
final class FleetLoop {
    let fleet: Fleet
    let number: Int
    let assigned: [Int]
    let startMicros: Int64
    var bots: [ReplayBot] = []
    var ready: [Bool] = []
    /// Only readable sockets come back from a wait (a poll over every bot's socket on each
    /// wake-up cost more than the bots' own work at 200 bots).
    let readiness: ReadinessSet?

    init(fleet: Fleet, number: Int, assigned: [Int], startMicros: Int64) {
        self.fleet = fleet
        self.number = number
        self.assigned = assigned
        self.startMicros = startMicros
        readiness = try? ReadinessSet()
    }

    func startTime(_ i: Int) -> Int64 {
        startMicros + Int64(Double(i) * 1e6 / max(0.001, fleet.config.rampPerSecond))
    }

    func run() {
        var pending = assigned[...]
        let end = startMicros + fleet.config.durationMicros
        var stopping = false
        var nextCPU: Int64 = 0
        defer { fleet.loopCPU[number].value = Clock.threadCPUMicros() }
        while true {
            let now = Clock.monotonicMicros()
            if now >= nextCPU { fleet.loopCPU[number].value = Clock.threadCPUMicros(); nextCPU = now + 100_000 }
            if !stopping && (fleet.stopRequested || now >= end) {
                stopping = true
                for b in bots { b.control.requestStop() }
                pending = []
            }
            while let i = pending.first, startTime(i) <= now {
                pending = pending.dropFirst()
                startBot(i, now: now)
            }
            var wake = now + 20_000
            var live = 0
            for k in bots.indices {
                let b = bots[k]
                if b.done { continue }
                live += 1
                let readable = ready[k]
                ready[k] = false
                if now < b.nextWake && !readable { wake = min(wake, b.nextWake); continue }
                let mediaWake = stopping ? Int64.max : b.mediaTick(now: now)
                if readable { b.io.read(into: b.network, now: now) }
                b.network.exchange(with: b.control)
                let next = b.network.step(now: now)
                b.network.exchange(with: b.control)
                b.io.flush(b.network)
                if now >= b.nextPublish { b.published.withLock { $0 = b.network.statistics }; b.nextPublish = now + b.network.config.publishIntervalMicros }
                if let w = next {
                    b.nextWake = min(w, mediaWake, b.nextPublish)
                    wake = min(wake, b.nextWake)
                } else {
                    b.network.finish(now: now)
                    b.io.flush(b.network)
                    b.published.withLock { $0 = b.network.statistics }
                    b.done = true
                    readiness?.remove(b.io.socket)
                    fleet.slots[b.slot].withLock { $0.state = .done; $0.stoppedMicros = Clock.monotonicMicros(); $0.keyFramesSent = b.keyFramesSent }
                    live -= 1
                }
            }
            if pending.isEmpty && live == 0 { break }
            if let i = pending.first { wake = min(wake, startTime(i)) }
            // Timer slack: sleep at least 2 ms unless something is already due, so a loop of a
            // hundred bots wakes a few hundred times a second rather than on every bot's timer
            // (a bot's packets leave up to 2 ms late; readable sockets still wake it at once).
            let until = wake - Clock.monotonicMicros()
            let timeout = until <= 0 ? 0 : max(until, 2_000)
            if let readiness, !bots.isEmpty {
                readiness.wait(timeoutMicros: timeout) { k in if k < ready.count { ready[k] = true } }
            } else if readiness == nil && !bots.isEmpty {
                // No epoll: poll every socket (slower with many bots, same behaviour).
                var flags = [UInt8](repeating: 0, count: bots.count)
                _ = waitReadable(bots.map { $0.done ? -1 : $0.io.socket.fd }, ready: &flags, timeoutMicros: timeout)
                for k in flags.indices where flags[k] != 0 { ready[k] = true }
            } else {
                Clock.sleep(micros: timeout)
            }
        }
    }

    func startBot(_ slot: Int, now: Int64) {
        let number = fleet.config.firstBot + slot
        let rooms = fleet.config.rooms
        var c = rooms.isEmpty ? fleet.config.template : rooms[number % rooms.count]
        c.cname = "pubbot-bot-\(number)"
        c.seed = UInt64(number + 1)
        do throws(EngineSetupError) {
            let bot = try ReplayBot(slot: slot, config: c, library: fleet.library, live: fleet.config.live, published: fleet.published[slot],
                                    startMicros: now)
            readiness?.add(bot.io.socket, tag: bots.count)
            bots.append(bot)
            ready.append(false)
            fleet.slots[slot].withLock {
                $0.state = .running
                $0.startedMicros = now
                $0.localAddress = bot.io.socket.localAddress.description
            }
        } catch {
            fleet.slots[slot].withLock { $0.state = .failed; $0.error = "\(error)" }
        }
    }
}

/// A replay bot: a PublisherSession driven by its fleet loop, and a cursor per layer into the replay
/// loops. It still reacts: a PLI jumps the layer to its next key frame, the allocator suspends
/// and resumes layers (resuming on a key frame).
final class ReplayBot {
    let slot: Int
    let control: PublisherControl
    let network: PublisherSession
    let io: SessionSocket
    let published: Locked<([OutboundStreamStats], NetworkCounters)>
    var nextPublish: Int64 = 0
    let library: ReplayLibrary
    let live: SharedEncoder?
    /// Live mode: the next frame number to take per layer and for audio, and layers waiting
    /// for a key frame (at the start, after a PLI or a resume).
    var liveNext: [Int] = []
    var liveAudioNext = 0
    var waitingKey: [Bool] = []
    /// Replay mode: the loops, their cursors and the layers' suspend/key-frame state.
    var replay: ReplayCursor
    var nextVideo: [Int64]
    /// Live mode: suspended layers.
    var suspended: [Bool]
    var audioIndex: UInt32 = 0
    var nextAudio: Int64
    var seenGeneration = 0
    var nextWake: Int64 = 0
    var done = false
    var liveKeyFramesSent = 0
    var keyFramesSent: Int { live == nil ? replay.keyFramesSent : liveKeyFramesSent }

    init(slot: Int, config: PublisherConfig, library: ReplayLibrary, live: SharedEncoder? = nil,
         published: Locked<([OutboundStreamStats], NetworkCounters)>, startMicros: Int64) throws(EngineSetupError) {
        self.slot = slot
        self.library = library
        self.live = live
        self.published = published
        let plan = StreamPlan(config: config)
        control = PublisherControl(layerTargets: config.layers.map(\.targetBitrate))
        let socket: UDPSocket
        do { socket = try UDPSocket(for: config.destination) } catch { throw .socket(error) }
        io = SessionSocket(socket)
        do {
            network = try PublisherSession(config: config, plan: plan,
                                      startMicros: startMicros, wallOffsetMicros: Clock.wallMicros() - Clock.monotonicMicros())
        } catch { throw .srtp(error) }
        let n = config.sendVideo ? min(config.layers.count, live?.layers.count ?? library.layers.count) : 0
        if let live {
            liveNext = (0..<n).map { live.videoFrames(layer: $0, from: .max).1 }
            liveAudioNext = live.audioFrames(from: .max).1
            waitingKey = Array(repeating: true, count: n)
            for i in 0..<n { live.requestKeyFrame(layer: i) }
        }
        // Bots start at different points of the loop, so a fleet's key frames do not line up.
        replay = ReplayCursor(library: library, layers: live == nil ? n : 0, offset: slot * 7)
        nextVideo = Array(repeating: startMicros, count: n)
        suspended = Array(repeating: false, count: n)
        nextAudio = config.sendAudio && !library.audio.isEmpty ? startMicros : .max
        network.begin(now: startMicros)
        network.exchange(with: control)
        io.flush(network)
    }

    /// Live mode: hands over what the shared encoder made since the last turn.
    func liveTick(_ live: SharedEncoder, now: Int64) -> Int64 {
        let gen = control.targetGeneration.load(ordering: .acquiring)
        if gen != seenGeneration {
            seenGeneration = gen
            for (i, t) in control.currentTargets().enumerated() where i < suspended.count {
                if t <= 0 { suspended[i] = true }
                else if suspended[i] { suspended[i] = false; waitingKey[i] = true; live.requestKeyFrame(layer: i) }
            }
        }
        let requests = control.takeKeyFrameRequests()
        for i in waitingKey.indices where requests & (1 << UInt64(i)) != 0 { live.requestKeyFrame(layer: i) }
        if network.config.sendAudio {
            let (frames, next) = live.audioFrames(from: liveAudioNext)
            liveAudioNext = next
            for f in frames { network.sendAudio(f) }
        }
        for i in liveNext.indices {
            let (frames, next) = live.videoFrames(layer: i, from: liveNext[i])
            liveNext[i] = next
            for f in frames where !suspended[i] {
                if waitingKey[i] && !f.isKeyFrame { continue } // a decoder could not use it
                waitingKey[i] = false
                if f.isKeyFrame { liveKeyFramesSent += 1 }
                network.sendVideo(f)
            }
        }
        return now + 5_000
    }

    /// Hands the frames due by `now` to the network loop; returns when the next one is due.
    func mediaTick(now: Int64) -> Int64 {
        if let live { return liveTick(live, now: now) }
        let gen = control.targetGeneration.load(ordering: .acquiring)
        if gen != seenGeneration {
            seenGeneration = gen
            for (i, t) in control.currentTargets().enumerated() { replay.gate.setTarget(layer: i, bitrate: t) }
        }
        replay.gate.requestKeyFrames(control.takeKeyFrameRequests())
        while now >= nextAudio {
            let bytes = library.audio[Int(audioIndex) % library.audio.count]
            network.sendAudio(EncodedAudioFrame(bytes: bytes, frameNumber: audioIndex, captureMicros: nextAudio))
            audioIndex &+= 1
            nextAudio += 20_000
            if now - nextAudio > 200_000 { nextAudio = now } // far behind: skip rather than burst
        }
        var wake = nextAudio
        for i in nextVideo.indices {
            let layer = library.layers[i]
            let interval = Int64(1_000_000 / max(1, layer.config.fps))
            if now >= nextVideo[i] {
                if let f = replay.frame(layer: i, captureMicros: nextVideo[i]) { network.sendVideo(f) }
                nextVideo[i] += interval
                while nextVideo[i] + interval <= now { nextVideo[i] += interval } // a late loop skips ticks
            }
            wake = min(wake, nextVideo[i])
        }
        return wake
    }
}
