public import Transport
public import ICE
@_exported public import Receiver
import Stats
import Impairment
import RTPCore
import MediaCodecs
import Congestion
public import Platform

/// The receiving side (`pubbot receive`, embedded in `preflight`): unprotects, demultiplexes by
/// SSRC, reassembles and decodes every stream, reads the video stamps, and counts every packet
/// it refuses by cause. Runs on its own thread.
public final class ReceiverEngine: Sendable {
    public let config: ReceiverConfig
    public let localAddress: SocketAddress
    let socketHandoff: Handoff<UDPSocket>
    let state: Locked<ReceiverSnapshot>
    let stopFlag = Locked(false)
    /// How late the receive thread ran its timers, and its CPU time (published with the snapshot).
    let driverLoad = Locked((lag: LagMeter(), cpuMicros: Int64(0)))

    /// How late the receive thread ran what was due (feedback, emulated links), and its CPU time
    /// so far, microseconds.
    public var load: (lag: LagMeter, cpuMicros: Int64) { driverLoad.value }
    let thread = Locked<JoinableThread?>(nil)
    /// WHIP endpoint → receive thread: publishers to add and sessions to end.
    let commands = Locked<[Command]>([])
    /// Wakes the receive thread when a command comes (it may be waiting up to 20 ms for its
    /// next timer, and the WHIP endpoint's POST waits for the command to be taken).
    let commandSignal = try? EventSignal()
    enum Command: Sendable {
        case add(WebRTCPublisherSpec, seed: UInt64), remove(String)
        case restart(String, local: ICEAgent.Credentials, remote: ICEAgent.Credentials, candidates: [ICECandidate], locals: [ICECandidate]?)
        case trickle(String, [ICECandidate])
    }
    /// Receive thread → WHIP endpoint: sessions that ended on their own (abandoned, failed,
    /// consent lost, closed by the peer), whose slots are free.
    let ended = Locked<[String]>([])

    /// The WHIP sessions (resources) that ended since the last call.
    public func takeEndedResources() -> [String] {
        ended.withLock { e in
            let taken = e; e = []; return taken
        }
    }

    /// A publisher the WHIP endpoint answered (from the HTTP thread); the receive thread takes it
    /// within a few milliseconds.
    /// Returns once the receive thread has it (≤ ~25 ms), so the publisher's first ICE check,
    /// sent as soon as the answer arrives, finds it instead of waiting for a retransmission.
    public func addPublisher(_ spec: WebRTCPublisherSpec) {
        let seed = UInt64(SecureRandom.uint32()) << 32 | UInt64(SecureRandom.uint32())
        commands.withLock { $0.append(.add(spec, seed: seed)) }
        commandSignal?.signal()
        let deadline = Clock.monotonicMicros() + 100_000
        while commands.withLock({ !$0.isEmpty }) && Clock.monotonicMicros() < deadline && thread.value != nil { Clock.sleep(micros: 500) }
    }

    /// A WHIP ICE restart by PATCH (RFC 9725 §4.3.3): the publisher's transport takes the new
    /// credentials on the receive thread, which is woken.
    /// Returns once the receive thread has it (≤ ~25 ms), as `addPublisher`: the client's first
    /// check under the new credentials, sent as soon as the 200 arrives, would otherwise be
    /// refused and wait for its retransmission (250 ms: the p95 of 50 bots' restarts before).
    /// `localCandidates`, when given, replace the session's own (a WHEP subscriber whose
    /// interfaces changed).
    public func restartPublisher(
        resource: String, local: ICEAgent.Credentials, remote: ICEAgent.Credentials, candidates: [ICECandidate],
        localCandidates: [ICECandidate]? = nil
    ) {
        commands.withLock { $0.append(.restart(resource, local: local, remote: remote, candidates: candidates, locals: localCandidates)) }
        commandSignal?.signal()
        let deadline = Clock.monotonicMicros() + 100_000
        while commands.withLock({ !$0.isEmpty }) && Clock.monotonicMicros() < deadline && thread.value != nil { Clock.sleep(micros: 500) }
    }

    /// Candidates a WHIP client trickled by PATCH (RFC 9725 §4.3.2).
    public func addRemoteCandidates(resource: String, _ candidates: [ICECandidate]) {
        commands.withLock { $0.append(.trickle(resource, candidates)) }
        commandSignal?.signal()
    }

    /// A WHIP DELETE: the publisher's transport is closed.
    public func removePublisher(resource: String) {
        commands.withLock { $0.append(.remove(resource)) }
        commandSignal?.signal()
    }

    public typealias StartError = EngineSetupError

    /// - Parameter socket: one already bound (a WHEP subscriber's, on which its driver gathered
    ///   and allocated a TURN relay); nil: one bound to `config.listen`.
    public init(config: ReceiverConfig, socket given: UDPSocket? = nil) throws(StartError) {
        var config = config
        let socket: UDPSocket
        // 32 MB (doubled by the kernel; SO_RCVBUFFORCE as root): a fleet of 500 publishers on a
        // machine with no idle CPU overflowed 8 MB while the scheduler kept this thread off the
        // core (13 812 datagrams in 20 s). The datagrams' arrival times are the kernel's
        // (SO_TIMESTAMPNS), so time spent in the buffer does not bend the delays reported.
        if let given {
            socket = given
        } else {
            do {
                socket = try UDPSocket(bind: config.listen, receiveBuffer: 32 << 20)
                // A WHIP endpoint on the wildcard offers a host candidate per address (both
                // families on `[::]`): each datagram is told the address it reached and every
                // answer leaves from there — a reply from the kernel's choice of source would
                // make the check that reached another address fail (RFC 8445 §7.2.5.2.1: the
                // response must come from where the request was sent).
                if config.webrtc != nil, socket.isWildcard { try socket.enableLocalAddresses() }
            } catch { throw .socket(error) }
        }
        // Port 0 asked the kernel for one: the ICE candidate carries the port it gave.
        if config.webrtc?.local.port == 0 { config.webrtc?.setPort(UInt16(socket.localAddress.port)) }
        // One thread for every publisher: step on their deadlines, not every 10 ms for all.
        config.deadlineSteps = true
        self.config = config
        do { _ = try SRTPSession(key: config.key, direction: .inbound) } catch { throw .srtp(error) }
        localAddress = socket.localAddress
        socketHandoff = Handoff(socket)
        state = Locked(ReceiverSnapshot.empty)
    }

    public func start() {
        var measured = self.config
        // Picture quality takes at most its share of this thread (`QualityBudget`).
        if measured.cpuClock == nil { measured.cpuClock = { Clock.threadCPUMicros() } }
        let config = measured, handoff = socketHandoff, state = self.state, stopFlag = self.stopFlag, commands = self.commands,
            ended = self.ended, load = self.driverLoad, signal = self.commandSignal
        let t = JoinableThread(name: "pubbot-recv") {
            do {
                let start = Clock.monotonicMicros()
                let session = try ReceiverSession(
                    config: config, startMicros: start, wallOffsetMicros: Clock.wallMicros() - start,
                    seed: UInt64(SecureRandom.uint32()) << 32 | UInt64(SecureRandom.uint32()))
                Self.run(
                    session, socket: handoff.take(), state: state, stop: stopFlag, commands: commands, signal: signal, ended: ended,
                    load: load)
            } catch {
                state.withLock { $0.lastError = "\(error)" }
            }
        }
        thread.withLock { $0 = t }
    }

    public func stop() { stopFlag.value = true }

    public func wait() {
        let t = thread.withLock { t -> JoinableThread? in
            let c = t; t = nil; return c
        }
        t?.join()
    }

    public func snapshot() -> ReceiverSnapshot { state.value }

    /// After a turn that read datagrams, the receive thread lets this long pass before it waits
    /// again (as `load`'s subscriber loops do).
    static let coalesceMicros: Int64 = 1_000

    /// The receive thread: the driver of a `ReceiverSession` — socket, clock, publishing.
    static func run(
        _ session: ReceiverSession, socket: UDPSocket, state: Locked<ReceiverSnapshot>, stop: Locked<Bool>, commands: Locked<[Command]>,
        signal: EventSignal?,
        ended: Locked<[String]>, load: Locked<(lag: LagMeter, cpuMicros: Int64)>
    ) {
        let batch = PacketBatch(capacity: 32)
        // The kernel's arrival time of each datagram, not the time this thread got to read it: a
        // receiver starved of the CPU for a while (a loaded test machine, a fleet) still reports
        // the path's delays in transport-cc and REMB, and the emulated links see the real spacing.
        try? socket.enableArrivalTimestamps()
        var lastStep = Clock.monotonicMicros()
        /// Reads what waits (up to 64 batches); returns how many datagrams.
        @discardableResult func read() -> Int {
            var got = 0
            for _ in 0..<64 {
                let n: Int
                do { n = try socket.receive(into: batch) } catch {
                    session.handleSocketError(error)
                    if error.isConnectionRefused { continue }
                    return got
                }
                if n == 0 { return got }
                got += n
                let now = Clock.monotonicMicros()
                var at = lastStep
                for i in 0..<n {
                    // In order, never before what the session was last told nor after now (the
                    // wall clock the kernel stamps with may have stepped).
                    at = min(now, max(at, batch.arrival(i) ?? now))
                    session.handleDatagram(
                        batch.slot(i).baseAddress!, length: Int(batch.lengths[i]), from: batch.source(i), to: batch.local(i), now: at)
                }
                lastStep = at
                if n < batch.capacity { return got } // the queue is empty: no call just to hear EAGAIN
            }
            return got
        }
        // A socket that reports where datagrams arrived (a WHEP subscriber's, a host candidate
        // per interface on the wildcard address): the session names each datagram's source.
        session.namesSources = socket.reportsLocalAddresses
        func flush() {
            session.pollTransmit { bytes, to, from throws(SocketError) in try socket.send(bytes, to: to, from: from) }
        }
        var nextPublish = Clock.monotonicMicros()
        var wake = nextPublish
        var releasedSinceTrim = 0, lastTrim: Int64 = 0
        var lag = LagMeter()
        while !stop.value {
            let due = min(wake, nextPublish)
            if socket.wait(timeoutMicros: max(0, due - Clock.monotonicMicros()), wake: signal) & 2 != 0 { signal?.drain() }
            for c in commands.withLock({ c -> [Command] in
                let taken = c; c = []; return taken
            }) {
                switch c {
                case let .add(spec, seed): session.addPublisher(spec, seed: seed, now: Clock.monotonicMicros())
                case let .remove(resource): session.removePublisher(resource: resource)
                case let .restart(resource, local, remote, candidates, locals):
                    session.restartPublisher(
                        resource: resource, local: local, remote: remote, remoteCandidates: candidates, localCandidates: locals,
                        now: Clock.monotonicMicros())
                case let .trickle(resource, candidates): session.addRemoteCandidates(resource: resource, candidates)
                }
            }
            // The wall clock may have stepped since the last turn (NTP, a VM's clock sync).
            session.wallOffsetMicros = Clock.wallMicros() - Clock.monotonicMicros()
            let got = read()
            let now = Clock.monotonicMicros()
            // How late the session's timers run (reading a backlog of datagrams counts: a thread
            // that always has some waiting is the one that falls behind).
            if now >= due { lag.record(lateMicros: now - due) }
            lastStep = now
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
            if now >= nextPublish {
                let s = session.snapshot(final: false, now: Clock.monotonicMicros())
                state.withLock { $0 = s }
                load.value = (lag, Clock.threadCPUMicros())
                nextPublish = now + 100_000
            }
            // Datagrams came: let more gather before waiting again (at most `coalesceMicros`, never
            // past the session's next deadline), so one wake-up and one `recvmmsg` serve many.
            // Nothing reported moves: each datagram carries the kernel's arrival time. (Waking
            // per datagram was a third of a 300-publisher receiver's CPU by perf: `ppoll`, the
            // context switches, `recvmmsg` calls of one or two datagrams.)
            if got > 0 {
                let pause = min(Self.coalesceMicros, wake - Clock.monotonicMicros())
                if pause > 0 { Clock.sleep(micros: pause) }
            }
        }
        read()
        session.deliverDue(now: Clock.monotonicMicros())
        let s = session.snapshot(final: true)
        state.withLock { $0 = s }
        load.value = (lag, Clock.threadCPUMicros())
    }
}
