public import ReceiverEngine
public import WebRTCClient
public import Platform
import Transport
import DTLS
import ICE

/// The subscriber bots of `load --whip … --whep … --subscribers S`: each a real WHEP subscriber
/// (its own socket, ICE, DTLS, feedback, reassembly) whose sans-IO `ReceiverSession` runs on one
/// of a few event loops (epoll) — no thread per subscriber. Set-up threads POST the offers
/// (the HTTP exchange blocks), `spacingMicros` apart, and hand each subscription to its loop.
/// Only the first `decoders` subscribers decode (glass-to-glass latency from the stamps, decoded
/// frame rate); every subscriber counts packets, completed frames and freezes from the frames'
/// completion times. Subscriber k watches room k mod M, publisher (k / M) mod P-per-room of it
/// (the URL's `{room}` and `{publisher}`).
public final class SubscriberFleet: @unchecked Sendable {
    public struct Config: Sendable {
        public var options: WHIPOptions
        public var count: Int
        public var rooms: Int
        public var publishersPerRoom: Int
        /// Event loops the subscribers' sessions run on.
        public var loops: Int
        /// How many subscribers decode (the first ones); the rest count without decoding.
        public var decoders: Int
        public var spacingMicros: Int64 = 50_000
        /// Threads doing the HTTP exchanges (each blocks for one round trip).
        public var setupThreads = 4

        public init(options: WHIPOptions, count: Int, rooms: Int, publishersPerRoom: Int, loops: Int, decoders: Int) {
            self.options = options
            self.count = count
            self.rooms = max(1, rooms)
            self.publishersPerRoom = max(1, publishersPerRoom)
            self.loops = max(1, loops)
            self.decoders = decoders
        }
    }

    public struct Member: Sendable {
        public var number: Int
        public var room: Int
        public var decodes: Bool
        public var connected = false
        public var error: String?
        public var snapshot: ReceiverSnapshot?
    }

    public let config: Config
    public let members: Locked<[Member]>
    let endpoints: [String]
    let loops: [SubscriberLoop]
    var loopThreads: [JoinableThread] = []
    var setupThreads: [JoinableThread] = []
    let stopping = Locked(false)
    let certificate: DTLSCertificate?

    public init(config: Config) {
        self.config = config
        members = Locked((0..<config.count).map { Member(number: $0, room: $0 % config.rooms, decodes: $0 < config.decoders) })
        endpoints = (0..<config.count).map {
            WHIPOptions.expand(config.options.endpoint, room: $0 % config.rooms, publisher: ($0 / config.rooms) % config.publishersPerRoom)
        }
        // One certificate for every subscriber (its fingerprint goes in each offer; DTLS keys are per session).
        certificate = try? DTLSCertificate()
        loops = (0..<config.loops).map { _ in SubscriberLoop() }
    }

    /// Subscribers connected now (ICE and DTLS done).
    public var connected: Int { members.value.filter(\.connected).count }

    /// How late the loops ran their subscribers' timers.
    public var lag: LagMeter {
        var all = LagMeter()
        for l in loops { all.add(l.published.value.lag) }
        return all
    }

    /// The loops' CPU time so far, microseconds.
    public var cpuMicros: Int64 { loops.reduce(0) { $0 + $1.published.value.cpuMicros } }

    /// Starts the loops and the set-up threads.
    public func start() {
        let members = self.members
        for (k, loop) in loops.enumerated() {
            loopThreads.append(JoinableThread(name: "pubbot-subs-\(k)") { loop.run(members: members) })
        }
        let threads = max(1, min(config.setupThreads, config.count))
        let start = Clock.monotonicMicros()
        for t in 0..<threads {
            let numbers = Array(stride(from: t, to: config.count, by: threads))
            setupThreads.append(
                JoinableThread(name: "pubbot-whep-\(t)") { [self] in
                    for k in numbers {
                        Clock.sleep(untilMicros: start + Int64(k) * config.spacingMicros)
                        if stopping.value { return }
                        subscribe(k)
                    }
                })
        }
    }

    /// One WHEP subscription: the POST, the session, handed to loop k mod loops.
    func subscribe(_ k: Int) {
        var options = config.options
        options.endpoint = endpoints[k]
        do throws(WHIPConnectError) {
            guard let certificate else { throw WHIPConnectError("no DTLS certificate could be made") }
            let bind = try WHIPConnection.bindAddress(options)
            let socket: UDPSocket
            do { socket = try UDPSocket(bind: bind) } catch { throw WHIPConnectError("cannot bind \(bind): \(error)") }
            guard let local = STUNAddress(socket.localAddress) else {
                throw WHIPConnectError("the local address \(socket.localAddress) is not usable for ICE")
            }
            let subscription = try WHEPSubscription.open(
                options, local: local, certificate: certificate, sleep: { Clock.sleep(micros: $0) })
            var rc = ReceiverConfig(listen: socket.localAddress, key: .random(suite: .gcm))
            rc.maxPublishers = 1
            rc.decodedPublishers = k < config.decoders ? Int.max : 0
            rc.nonDecodingFollowsChain = true // a viewer that does not decode still asks as one would
            rc.deadlineSteps = true
            rc.webrtc = WebRTCListenConfig(certificate: certificate, local: local)
            let now = Clock.monotonicMicros()
            let session: ReceiverSession
            do {
                session = try ReceiverSession(
                    config: rc, startMicros: now, wallOffsetMicros: Clock.wallMicros() - now,
                    seed: UInt64(SecureRandom.uint32()) << 32 | UInt64(SecureRandom.uint32()))
            } catch {
                subscription.end()
                throw WHIPConnectError("\(error)")
            }
            loops[k % loops.count].hand(SubscriberBot(number: k, session: session, socket: socket, subscription: subscription))
        } catch {
            members.withLock { $0[k].error = error.description }
        }
    }

    /// Ends every subscription (DELETE) and keeps what each saw.
    public func stop() {
        stopping.value = true
        for t in setupThreads { t.join() }
        setupThreads = []
        for l in loops { l.stop.value = true }
        for t in loopThreads { t.join() }
        loopThreads = []
        let all = loops.flatMap { $0.finished() }
        // DELETEs in parallel (16 at a time): one after another, a server that stopped answering
        // would hold the run for each one's HTTP timeout in turn.
        let enders = (0..<min(16, all.count)).map { t in
            JoinableThread(name: "pubbot-whep-end-\(t)") {
                for b in stride(from: t, to: all.count, by: 16).map({ all[$0] }) { b.subscription?.end() }
            }
        }
        for t in enders { t.join() }
        for b in all {
            let snap = b.session.snapshot(final: true)
            members.withLock {
                $0[b.number].snapshot = snap
                $0[b.number].connected = false
                let video = snap.streams.first { $0.kind == .video }
                if let t = snap.webrtcPublishers.first, t.state == .failed {
                    $0[b.number].error = t.failure?.reason ?? "the transport failed"
                } else if $0[b.number].decodes ? (video?.framesDecoded ?? 0) == 0 : (video?.framesAssembled ?? 0) == 0 {
                    $0[b.number].error = $0[b.number].decodes ? "no video frame decoded" : "no video frame received"
                }
            }
        }
        members.withLock {
            for k in $0.indices where $0[k].snapshot == nil && $0[k].error == nil { $0[k].error = "never subscribed (the run ended first)" }
        }
    }
}

/// A subscriber on a loop: its session, socket and subscription. One thread at a time owns it:
/// the set-up thread that made it, then (through the inbox's lock) its loop, then `stop` once
/// the loop has ended.
final class SubscriberBot: @unchecked Sendable {
    let number: Int
    let session: ReceiverSession
    let socket: UDPSocket
    /// The WHEP subscription; nil for the benchmark's SDES subscribers.
    let subscription: WHEPSubscription?
    var nextWake: Int64 = 0
    var lastStep: Int64 = 0
    var nextPublish: Int64 = 0

    init(number: Int, session: ReceiverSession, socket: UDPSocket, subscription: WHEPSubscription?) {
        self.number = number
        self.session = session
        self.socket = socket
        self.subscription = subscription
    }
}

/// One event loop of subscribers: reads the sockets epoll says are readable (with the kernel's
/// arrival times), steps each session when its timer is due (a min-heap of deadlines), sends
/// what they give. Work is per ready socket and per due timer — never a walk over every
/// subscriber per wake-up (that walk, a clock read and a step check for each of 250 subscribers
/// on every datagram, was most of the loops' CPU at 500 subscribers).
final class SubscriberLoop: @unchecked Sendable {
    let inbox = Locked<[SubscriberBot]>([])
    let stop = Locked(false)
    let published = Locked((lag: LagMeter(), cpuMicros: Int64(0)))
    var bots: [SubscriberBot] = []
    var readyList: [Int] = []
    var timers = DeadlineHeap()
    let readiness = try? ReadinessSet()
    let batch = PacketBatch(capacity: 32)
    /// After a wake-up that found datagrams, the loop lets this long pass before it waits again,
    /// so one wake-up serves many sockets (the arrival times are the kernel's: nothing reported
    /// moves).
    static let coalesceMicros: Int64 = 1_000

    func hand(_ bot: SubscriberBot) { inbox.withLock { $0.append(bot) } }

    /// The loop's subscribers, once it has stopped (new ones still in the inbox too).
    func finished() -> [SubscriberBot] {
        bots
            + inbox.withLock { b in
                defer { b = [] }; return b
            }
    }

    /// Steps a bot's session and sends what it gives; schedules its next step.
    @inline(__always)
    func step(_ k: Int, now t: Int64) {
        let b = bots[k]
        b.lastStep = t
        b.nextWake = min(b.session.step(now: t), t + 100_000)
        b.session.pollTransmit { bytes, to throws(SocketError) in try b.socket.send(bytes, to: to) }
        timers.push(b.nextWake, k)
    }

    func run(members: Locked<[SubscriberFleet.Member]>) {
        var lag = LagMeter()
        var nextCPU: Int64 = 0, nextPublish: Int64 = 0
        var busy = false
        while !stop.value {
            var now = Clock.monotonicMicros()
            for b in inbox.withLock({ b in
                defer { b = [] }; return b
            }) {
                try? b.socket.enableArrivalTimestamps()
                if let subscription = b.subscription {
                    b.session.addPublisher(
                        subscription.spec, seed: UInt64(SecureRandom.uint32()) << 32 | UInt64(SecureRandom.uint32()), now: now)
                }
                b.lastStep = now
                b.nextWake = now
                readiness?.add(b.socket, tag: bots.count)
                timers.push(now, bots.count)
                bots.append(b)
            }
            // Readable sockets: their datagrams, then the session's step (replies, NACKs, PLIs now).
            for k in readyList where k < bots.count {
                read(bots[k])
                step(k, now: Clock.monotonicMicros())
            }
            readyList.removeAll(keepingCapacity: true)
            // Due timers (entries a later step superseded are skipped).
            now = Clock.monotonicMicros()
            while let (due, k) = timers.peek(), due <= now {
                timers.pop()
                guard bots[k].nextWake == due else { continue }
                lag.record(lateMicros: now - due)
                step(k, now: now)
            }
            if now >= nextPublish {
                // Connected: ICE and DTLS done (media may flow). Once a second for every subscriber.
                let states = bots.map { ($0.number, $0.session.transportConnected) }
                members.withLock { m in for (n, up) in states { m[n].connected = up } }
                nextPublish = now + 1_000_000
            }
            if now >= nextCPU {
                published.value = (lag, Clock.threadCPUMicros())
                nextCPU = now + 200_000
            }
            if busy { Clock.sleep(micros: Self.coalesceMicros) }
            // Timer slack as the publishers' loops: at least 2 ms unless something is due now.
            let wake = timers.peek()?.0 ?? now + 20_000
            let until = wake - Clock.monotonicMicros()
            let timeout = until <= 0 ? 0 : max(until, 2_000)
            if let readiness, !bots.isEmpty {
                readiness.wait(timeoutMicros: min(timeout, 20_000)) { k in readyList.append(k) }
            } else {
                Clock.sleep(micros: min(timeout, 20_000))
            }
            busy = !readyList.isEmpty
        }
        for b in bots { read(b) }
        published.value = (lag, Clock.threadCPUMicros())
    }

    /// Everything waiting on the bot's socket (up to 64 batches), each datagram at its arrival time.
    /// (Level-triggered readiness: anything that arrives after a short batch wakes the loop again.)
    func read(_ b: SubscriberBot) {
        for _ in 0..<64 {
            let n: Int
            do { n = try b.socket.receive(into: batch) } catch {
                b.session.handleSocketError(error)
                if error.isConnectionRefused { continue }
                return
            }
            if n == 0 { return }
            let now = Clock.monotonicMicros()
            var at = b.lastStep
            for i in 0..<n {
                at = min(now, max(at, batch.arrival(i) ?? now))
                b.session.handleDatagram(batch.slot(i).baseAddress!, length: Int(batch.lengths[i]), from: batch.source(i), now: at)
            }
            b.lastStep = at
            // A short batch emptied the socket's queue: no second call just to hear EAGAIN.
            if n < batch.capacity { return }
        }
    }
}
