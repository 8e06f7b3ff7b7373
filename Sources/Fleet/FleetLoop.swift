import PublisherEngine
import Platform
import Transport
import MediaCodecs
import Stats
import WebRTCClient
import ICE

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
    /// How late each bot's timed turn ran (now − the wake it asked for).
    var lag = LagMeter()
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
        // The interfaces, read once a second; when their addresses change each WHIP bot looks
        // at its own host candidates (`WHIPConnection.interfaceChange`) and restarts ICE on the
        // new ones, as `publish` does.
        var nextInterfaces = startMicros + 1_000_000
        var addresses = Set(LocalInterfaces.list().map(\.ip))
        defer {
            fleet.loopCPU[number].value = Clock.threadCPUMicros()
            fleet.loopLag[number].value = lag
        }
        while true {
            let now = Clock.monotonicMicros()
            if now >= nextCPU {
                fleet.loopCPU[number].value = Clock.threadCPUMicros()
                fleet.loopLag[number].value = lag
                nextCPU = now + 100_000
            }
            if !stopping && (fleet.stopRequested || now >= end) {
                stopping = true
                for b in bots { b.control.requestStop() }
                pending = []
            }
            if fleet.config.whip != nil && now >= nextInterfaces {
                nextInterfaces = now + 1_000_000
                let list = LocalInterfaces.list()
                let current = Set(list.map(\.ip))
                if current != addresses {
                    addresses = current
                    for b in bots where !b.done && b.whip != nil {
                        b.interfacesChanged = list
                        b.nextWake = 0 // its turn now
                    }
                }
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
                // A timed turn (not a readable socket): how late it runs. The loop's 2 ms timer
                // slack is in it by design; more is the loop falling behind.
                if now >= b.nextWake && b.nextWake > 0 { lag.record(lateMicros: now - b.nextWake) }
                let mediaWake = stopping ? Int64.max : b.mediaTick(now: now)
                if readable { b.io.read(into: b.network, now: now, notBefore: b.lastTurn) }
                b.lastTurn = now
                if !stopping, let w = b.whip, b.restartsAsked < fleet.config.iceRestartsAfter.count,
                    now >= b.startedAt + fleet.config.iceRestartsAfter[b.restartsAsked]
                {
                    b.restartsAsked += 1
                    _ = restart(b, w, now: now)
                    b.recovery?.scheduledRestart(at: now - b.startedAt)
                }
                if let list = b.interfacesChanged {
                    b.interfacesChanged = nil
                    if !stopping, let w = b.whip, let change = w.interfaceChange(list: list) {
                        _ = restart(b, w, now: now, candidates: change.candidates)
                        b.recovery?.scheduledRestart(at: now - b.startedAt)
                        fleet.slots[b.slot].withLock { $0.iceRestartsOnInterfaceChange += 1 }
                    }
                }
                // The consent watch (`--ice-recover-after`), four times a second.
                if !stopping, let w = b.whip, let grace = fleet.config.iceRecoverAfter, now >= b.nextRecoveryCheck {
                    b.nextRecoveryCheck = now + 250_000
                    if b.recovery == nil { b.recovery = ICERecoveryPolicy(graceMicros: grace, maxAttempts: 8) }
                    if let age = b.network.consentAge(now: now), b.recovery?.shouldRestart(now: now - b.startedAt, consentAge: age) != nil {
                        let ok = restart(b, w, now: now)
                        b.recovery?.attempted(succeeded: ok, at: now - b.startedAt)
                        fleet.slots[b.slot].withLock { $0.iceRecoveries += 1 }
                    }
                }
                b.network.exchange(with: b.control)
                let next = b.network.step(now: now)
                b.network.exchange(with: b.control)
                b.io.flush(b.network)
                if now >= b.nextPublish {
                    b.published.withLock {
                        $0 = b.network.statistics; $0.1.uplink = b.io.uplink?.counters
                    }
                    b.nextPublish = now + b.network.config.publishIntervalMicros
                }
                if let w = next {
                    b.nextWake = min(w, mediaWake, b.nextPublish, b.io.nextDue.map { max($0, now + 200) } ?? .max)
                    wake = min(wake, b.nextWake)
                } else {
                    b.network.finish(now: now)
                    b.io.flush(b.network)
                    b.io.releaseHeld(b.network, now: .max)
                    b.published.withLock {
                        $0 = b.network.statistics; $0.1.uplink = b.io.uplink?.counters
                    }
                    b.done = true
                    readiness?.remove(b.io.socket)
                    if let tcp = b.io.tcp { readiness?.remove(fd: tcp.fd) }
                    b.whip?.end() // DELETE (RFC 9725 §4.3)
                    let failure = b.network.statistics.1.transport?.failure
                    fleet.slots[b.slot].withLock {
                        $0.state = failure == nil ? .done : .failed
                        if let failure { $0.error = failure.reason }
                        $0.stoppedMicros = Clock.monotonicMicros()
                        $0.keyFramesSent = b.keyFramesSent
                    }
                    live -= 1
                }
            }
            if pending.isEmpty && live == 0 { break }
            if let i = pending.first { wake = min(wake, startTime(i)) }
            // The next ICE restart a bot is due for.
            for b in bots where !b.done && !stopping && b.restartsAsked < fleet.config.iceRestartsAfter.count {
                wake = min(wake, b.startedAt + fleet.config.iceRestartsAfter[b.restartsAsked])
            }
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

    /// An ICE restart by PATCH (RFC 9725 §4.3.3). The exchange blocks this loop for one HTTP
    /// round trip, as each bot's offer did at its start; the bots' starts are spread by the ramp,
    /// so are their restarts. The answer goes into the bot's session at once; a refusal is
    /// counted and the session goes on.
    /// True when the server answered and the restart was applied.
    /// `candidates`: the bot's ICE candidates anew (its interfaces changed).
    func restart(_ b: ReplayBot, _ w: WHIPConnection, now: Int64, candidates: [ICECandidate]? = nil) -> Bool {
        switch w.requestICERestart() {
        case var .success(r):
            if let candidates { r.localCandidates = candidates }
            b.network.restartICE(
                local: r.local, remote: r.remote, remoteCandidates: r.remoteCandidates, localCandidates: r.localCandidates,
                now: Clock.monotonicMicros())
            fleet.slots[b.slot].withLock { $0.iceRestartsAsked += 1 }
            return true
        case let .failure(e):
            fleet.slots[b.slot].withLock {
                $0.iceRestartsAsked += 1
                $0.iceRestartsRefused += 1
                $0.iceRestartError = e.description
            }
            return false
        }
    }

    func startBot(_ slot: Int, now: Int64) {
        let number = fleet.config.firstBot + slot
        let rooms = fleet.config.rooms
        var c = rooms.isEmpty ? fleet.config.template : rooms[number % rooms.count]
        c.cname = "pubbot-bot-\(number)"
        c.seed = UInt64(number + 1)
        var connection: WHIPConnection?
        if let whip = fleet.config.whip {
            var options = whip.options
            let certificate = whip.certificate
            // The offer/answer exchange blocks this loop for one HTTP round trip; the ramp spreads them.
            c.cname = WHIPConnection.randomCNAME()
            let r = max(1, fleet.config.whipRooms)
            options.endpoint = WHIPOptions.expand(options.endpoint, room: number % r, publisher: number / r)
            do {
                connection = try WHIPConnection.open(options, base: c, certificate: certificate, sleep: { Clock.sleep(micros: $0) })
            } catch {
                fleet.slots[slot].withLock {
                    $0.state = .failed; $0.error = error.description
                }
                return
            }
        }
        do throws(EngineSetupError) {
            let bot = try ReplayBot(
                slot: slot, config: c, library: fleet.library, live: fleet.config.live, published: fleet.published[slot],
                startMicros: Clock.monotonicMicros(), whip: connection)
            readiness?.add(bot.io.socket, tag: bots.count)
            if let tcp = bot.io.tcp { readiness?.add(fd: tcp.fd, tag: bots.count) } // TURN over TCP/TLS
            bots.append(bot)
            ready.append(false)
            fleet.slots[slot].withLock {
                $0.state = .running
                $0.startedMicros = now
                $0.localAddress = bot.io.socket.localAddress
                $0.negotiated = connection?.summary ?? []
            }
        } catch {
            connection?.end()
            fleet.slots[slot].withLock {
                $0.state = .failed; $0.error = "\(error)"
            }
        }
    }
}
