public import ReceiverEngine
public import MediaCodecs
public import WebRTCClient
public import Platform
import Transport
import DTLS
import ICE

/// The subscriber bots of `load --whip … --whep … --subscribers S`: each a real WHEP subscriber
/// (its own socket, ICE, DTLS, feedback, reassembly) whose sans-IO `ReceiverSession` runs on one
/// of a few event loops (epoll) — no thread per subscriber. Set-up threads POST the offers
/// (the HTTP exchange blocks), `spacingMicros` apart, and hand each subscription to its loop.
/// `decoders` decoders rotate over the subscribers (glass-to-glass latency from the stamps,
/// decoded frame rate): each loop decodes its share of them at a time and moves them on to its
/// next connected subscribers every `rotationMicros`, at the same moments on every loop, so the
/// key frames the new decoders ask for come together (a decoding cost that stays flat however
/// many subscribers there are, as live777's livewrk decodes one rotating session); with as many
/// decoders as subscribers every one decodes all along. Every subscriber counts packets,
/// completed frames and freezes from the frames' completion times. Subscriber k watches room
/// k mod M, publisher (k / M) mod P-per-room of it (the URL's `{room}` and `{publisher}`).
public final class SubscriberFleet: @unchecked Sendable {
    public struct Config: Sendable {
        public var options: WHIPOptions
        public var count: Int
        public var rooms: Int
        public var publishersPerRoom: Int
        /// Event loops the subscribers' sessions run on.
        public var loops: Int
        /// How many subscribers decode at a time (rotating); the rest count without decoding.
        public var decoders: Int
        /// How long a decoder stays on one subscriber.
        public var rotationMicros: Int64 = 10_000_000
        public var spacingMicros: Int64 = 50_000
        /// Threads doing the HTTP exchanges (each blocks for one round trip).
        public var setupThreads = 4
        /// The scene pubbot's live publishers draw (`load --content`): what decoded frames are
        /// measured against (PSNR-Y, SSIM-Y; `PictureQuality`). A stream that is not pubbot's
        /// synthetic source reads no stamp and is not measured.
        public var content = SyntheticVideoSource.Content.natural
        /// `load --ice-restart-at`: each subscriber asks its server for an ICE restart this long
        /// after it subscribed (µs, in order; RFC 9725 §4.3.3 as WHEP keeps it).
        public var iceRestartsAfter: [Int64] = []
        /// `load --ice-recover-after`: a restart when the subscription's path has answered no
        /// consent check for this long (RFC 7675), again every grace while it stays silent.
        public var iceRecoverAfter: Int64?
        /// A change of the local interfaces restarts each subscription's ICE on its host
        /// candidates anew, as the publisher bots do.
        public var watchInterfaces = true

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
        /// The subscriber decoded (all along, or while a rotating decoder was on it).
        public var decodes: Bool
        /// How long a decoder was on it, seconds.
        public var decoderSeconds = 0.0
        public var connected = false
        public var error: String?
        public var snapshot: ReceiverSnapshot?
        /// ICE restarts asked of the server (scheduled, by the consent watch, on an interface
        /// change), those it refused and the last refusal, those the consent watch and an
        /// interface change set off, and how long the last one took to select a new pair.
        public var iceRestartsAsked = 0
        public var iceRestartsRefused = 0
        public var iceRestartError: String?
        public var iceRecoveries = 0
        public var interfaceRestarts = 0
        public var iceRestartRecoveryMs: Int?
    }

    public let config: Config
    public let members: Locked<[Member]>
    let endpoints: [String]
    let loops: [SubscriberLoop]
    var loopThreads: [JoinableThread] = []
    var setupThreads: [JoinableThread] = []
    /// The subscriptions' ICE restarts: asked for by the loops (or the interface watch), made by
    /// threads of their own (the PATCH blocks), answered back to the loop.
    let restarts = SubscriberRestarts()
    var restartThreads: [JoinableThread] = []
    let stopping = Locked(false)
    let certificate: DTLSCertificate?

    public init(config: Config) {
        self.config = config
        let rotating = config.decoders < config.count
        self.rotating = rotating
        // (Rotating decoders: who decoded is known at the end.)
        members = Locked((0..<config.count).map { Member(number: $0, room: $0 % config.rooms, decodes: !rotating) })
        endpoints = (0..<config.count).map {
            WHIPOptions.expand(config.options.endpoint, room: $0 % config.rooms, publisher: ($0 / config.rooms) % config.publishersPerRoom)
        }
        // One certificate for every subscriber (its fingerprint goes in each offer; DTLS keys are per session).
        certificate = try? DTLSCertificate()
        let restarts = self.restarts
        loops = (0..<config.loops).map { l in
            let loop = SubscriberLoop()
            loop.restartsAfter = config.iceRestartsAfter
            loop.recoverAfter = config.iceRecoverAfter
            loop.restarts = restarts
            if rotating {
                // Loop l holds subscribers l, l + loops, …: its share of the decoders.
                loop.decoderShare = config.decoders / config.loops + (l < config.decoders % config.loops ? 1 : 0)
                loop.rotationMicros = config.rotationMicros
            }
            return loop
        }
    }

    /// Decoders rotate (fewer of them than subscribers).
    public let rotating: Bool

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
        // Two threads make the PATCHes (one round trip each; a server slow to answer one
        // subscriber's holds back no loop); the first also reads the interfaces once a second.
        let restartWorkers = config.iceRestartsAfter.isEmpty && config.iceRecoverAfter == nil ? 1 : 2
        if config.watchInterfaces || restartWorkers > 1 {
            for t in 0..<restartWorkers {
                let watch = t == 0 && config.watchInterfaces
                restartThreads.append(
                    JoinableThread(name: "pubbot-whep-restart-\(t)") { [restarts, stopping] in
                        restarts.work(watchInterfaces: watch, stopping: stopping)
                    })
            }
        }
        let start = Clock.monotonicMicros()
        for l in loops { l.rotationOrigin = start }
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
            // A host candidate per usable interface and family, as `receive --whep` offers.
            let plan = try WHIPConnection.hostPlan(options)
            let (socket, hosts): (UDPSocket, [ICECandidate])
            do { (socket, hosts) = try plan.openSocket() } catch {
                throw WHIPConnectError("cannot open a socket on \(plan.bind): \(error)")
            }
            let local = hosts[0].address
            let subscription = try WHEPSubscription.open(
                options, local: local, hosts: hosts, plan: plan, certificate: certificate, sleep: { Clock.sleep(micros: $0) })
            var rc = ReceiverConfig(listen: socket.localAddress, key: .random(suite: .gcm))
            rc.maxPublishers = 1
            rc.decodedPublishers = rotating ? 0 : Int.max // rotating: the loop switches decoding on
            rc.nonDecodingFollowsChain = true // a viewer that does not decode still asks as one would
            rc.sourceContent = config.content
            rc.cpuClock = { Clock.threadCPUMicros() } // the loop's thread: measuring takes its share only
            rc.deadlineSteps = true
            rc.webrtc = WebRTCListenConfig(certificate: certificate, locals: hosts.map(\.address))
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
            session.namesSources = socket.reportsLocalAddresses
            let bot = SubscriberBot(number: k, session: session, socket: socket, subscription: subscription)
            restarts.register(bot, loop: loops[k % loops.count])
            loops[k % loops.count].hand(bot)
        } catch {
            members.withLock { $0[k].error = error.description }
        }
    }

    /// Ends every subscription (DELETE) and keeps what each saw.
    public func stop() {
        stopping.value = true
        for t in setupThreads { t.join() }
        setupThreads = []
        for t in restartThreads { t.join() } // a PATCH in flight ends within its timeout
        restartThreads = []
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
        let now = Clock.monotonicMicros()
        for b in all {
            let snap = b.session.snapshot(final: true)
            let decoderSeconds = Double(b.decoderMicros + (b.decoderSince.map { now - $0 } ?? 0)) / 1e6
            members.withLock {
                $0[b.number].snapshot = snap
                $0[b.number].connected = false
                $0[b.number].decodes = !rotating || decoderSeconds > 0
                $0[b.number].decoderSeconds = rotating ? decoderSeconds : 0
                if $0[b.number].iceRestartsAsked > 0 {
                    $0[b.number].iceRestartRecoveryMs = snap.webrtcPublishers.first?.transport?.lastRestartRecoveryMicros.map {
                        Int($0 / 1000)
                    }
                }
                let video = snap.streams.first { $0.kind == .video }
                if let t = snap.webrtcPublishers.first, t.state == .failed {
                    $0[b.number].error = t.failure?.reason ?? "the transport failed"
                } else if (video?.framesAssembled ?? 0) == 0 {
                    $0[b.number].error = "no video frame received"
                } else if (video?.framesDecoded ?? 0) == 0 && (rotating ? decoderSeconds >= 3 : true) {
                    // A rotating decoder on it for seconds (a key frame asked for) and none decoded.
                    $0[b.number].error =
                        rotating ? "no video frame decoded in \(Int(decoderSeconds)) s of decoding" : "no video frame decoded"
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
    /// A rotating decoder is on it (since when), and the time one was before.
    var decoderSince: Int64?
    var decoderMicros: Int64 = 0
    /// Its index in its loop's `bots` (-1 until the loop takes it), when it subscribed, the
    /// scheduled restarts it has asked for, one in flight, and its consent watch.
    var slot = -1
    var subscribedAt: Int64 = 0
    var restartsAsked = 0
    var restartInFlight = false
    var recovery: ICERecoveryPolicy?

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
    /// Wall clock − monotonic clock, read each turn (the wall clock may step: NTP, a VM's clock
    /// sync) and handed to each session before it decodes: glass-to-glass latency is wall time.
    var wallOffset = Clock.wallMicros() - Clock.monotonicMicros()
    /// Rotating decoders: how many of this loop's subscribers decode at a time (0: none rotate
    /// here), how long each stays, the fleet's start (rotations fall at the same moments on
    /// every loop), the bots decoding now and where the next rotation picks up.
    var decoderShare = 0
    var rotationMicros: Int64 = 10_000_000
    var rotationOrigin: Int64 = 0
    var rotationEpoch: Int64 = -1
    var decoding: [Int] = []
    var decoderCursor = 0
    var nextRotationCheck: Int64 = 0
    let readiness = try? ReadinessSet()
    let batch = PacketBatch(capacity: 32)
    /// After a wake-up that found datagrams, the loop lets this long pass before it waits again,
    /// so one wake-up serves many sockets (the arrival times are the kernel's: nothing reported
    /// moves).
    static let coalesceMicros: Int64 = 1_000
    /// `SubscriberFleet.Config.iceRestartsAfter`/`iceRecoverAfter`; the fleet's restart queue;
    /// the answers its threads hand back; when the subscribers were last looked at for a restart.
    var restartsAfter: [Int64] = []
    var recoverAfter: Int64?
    var restarts: SubscriberRestarts?
    let restartAnswers = Locked<[SubscriberRestarts.Answer]>([])
    var nextRestartCheck: Int64 = 0

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
        b.session.wallOffsetMicros = wallOffset
        b.nextWake = min(b.session.step(now: t), t + 100_000)
        b.session.pollTransmit { bytes, to, from throws(SocketError) in try b.socket.send(bytes, to: to, from: from) }
        timers.push(b.nextWake, k)
    }

    func run(members: Locked<[SubscriberFleet.Member]>) {
        var lag = LagMeter()
        var nextCPU: Int64 = 0, nextPublish: Int64 = 0
        var busy = false
        while !stop.value {
            var now = Clock.monotonicMicros()
            wallOffset = Clock.wallMicros() - now
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
                b.slot = bots.count
                b.subscribedAt = now
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
            for a in restartAnswers.withLock({ a in
                defer { a = [] }; return a
            }) where a.bot.slot >= 0 {
                apply(a, now: now, members: members)
            }
            if (!restartsAfter.isEmpty || recoverAfter != nil) && now >= nextRestartCheck {
                askRestarts(now: now)
                nextRestartCheck = now + 250_000
            }
            if decoderShare > 0 && now >= nextRotationCheck {
                rotateDecoders(now: now)
                nextRotationCheck = now + 100_000
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

    /// Four times a second: a subscriber due for its next scheduled restart, or whose path has
    /// been silent past the grace (`ICERecoveryPolicy`), asks for one (one at a time each).
    func askRestarts(now: Int64) {
        guard let restarts else { return }
        for b in bots where !b.restartInFlight && b.subscription != nil {
            let age = now - b.subscribedAt
            var trigger: SubscriberRestarts.Trigger?
            if b.restartsAsked < restartsAfter.count, age >= restartsAfter[b.restartsAsked] {
                b.restartsAsked += 1
                trigger = .scheduled
            } else if let grace = recoverAfter {
                if b.recovery == nil { b.recovery = ICERecoveryPolicy(graceMicros: grace, maxAttempts: 8) }
                if let consent = b.session.transportConsentAge(now: now), let why = b.recovery?.shouldRestart(now: age, consentAge: consent)
                {
                    trigger = .consentWatch(why)
                }
            }
            guard let trigger else { continue }
            b.restartInFlight = true
            restarts.ask(SubscriberRestarts.Request(bot: b, loop: self, trigger: trigger, candidates: nil))
        }
    }

    /// The server's answer to a restart: the subscription's transport takes the new credentials
    /// and candidates (DTLS and SRTP go on); a refusal is counted and the session goes on.
    func apply(_ a: SubscriberRestarts.Answer, now: Int64, members: Locked<[SubscriberFleet.Member]>) {
        let b = a.bot
        var refusal: String?
        switch a.result {
        case var .success(r):
            if let c = a.candidates { r.localCandidates = c }
            if let resource = b.subscription?.spec.resource {
                b.session.restartPublisher(
                    resource: resource, local: r.local, remote: r.remote, remoteCandidates: r.remoteCandidates,
                    localCandidates: r.localCandidates, now: now)
            }
        case let .failure(e): refusal = e.description
        }
        if case .consentWatch = a.trigger {
            b.restartInFlight = false
            b.recovery?.attempted(succeeded: refusal == nil, at: now - b.subscribedAt)
        } else {
            if case .scheduled = a.trigger { b.restartInFlight = false }
            b.recovery?.scheduledRestart(at: now - b.subscribedAt)
        }
        members.withLock { m in
            m[b.number].iceRestartsAsked += 1
            if let refusal {
                m[b.number].iceRestartsRefused += 1
                m[b.number].iceRestartError = refusal
            }
            if case .consentWatch = a.trigger { m[b.number].iceRecoveries += 1 }
            if case .interfaceChange = a.trigger { m[b.number].interfaceRestarts += 1 }
        }
        step(b.slot, now: now) // its checks on the new credentials go out now
    }

    /// Rotating decoders: at each rotation the decoders move on to the loop's next connected
    /// subscribers (those it keeps are left alone: no key frame asked for nothing); between
    /// rotations a free decoder (subscribers still joining) takes the next one that connects.
    func rotateDecoders(now: Int64) {
        let epoch = (now - rotationOrigin) / max(1, rotationMicros)
        var next = decoding
        if epoch != rotationEpoch {
            rotationEpoch = epoch
            next = []
        }
        var looked = 0
        while next.count < decoderShare && looked < bots.count {
            let k = decoderCursor % bots.count
            decoderCursor = k + 1
            looked += 1
            if !next.contains(k) && bots[k].session.transportConnected { next.append(k) }
        }
        // Fewer connected subscribers than decoders: the ones decoding keep on.
        if next.count < decoderShare { for k in decoding where !next.contains(k) && next.count < decoderShare { next.append(k) } }
        for k in decoding where !next.contains(k) {
            let b = bots[k]
            b.session.setVideoDecoding(false, now: now)
            if let since = b.decoderSince { b.decoderMicros += now - since }
            b.decoderSince = nil
        }
        for k in next where !decoding.contains(k) {
            bots[k].session.setVideoDecoding(true, now: now)
            bots[k].decoderSince = now
            step(k, now: now) // its key-frame request goes out now
        }
        decoding = next
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
            b.session.wallOffsetMicros = wallOffset
            var at = b.lastStep
            for i in 0..<n {
                at = min(now, max(at, batch.arrival(i) ?? now))
                b.session.handleDatagram(
                    batch.slot(i).baseAddress!, length: Int(batch.lengths[i]), from: batch.source(i), to: batch.local(i), now: at)
            }
            b.lastStep = at
            // A short batch emptied the socket's queue: no second call just to hear EAGAIN.
            if n < batch.capacity { return }
        }
    }
}
