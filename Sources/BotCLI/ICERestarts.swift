import PublisherEngine
import ICE
import WebRTCClient
import Stats
import Platform

/// `--ice-restart-at`: at each time a PATCH asks the server for an ICE restart (RFC 9725 §4.3.3)
/// on a thread of its own (the HTTP exchange blocks), and the answer is applied (`apply`: the
/// publisher's or the WHEP subscriber's network thread takes it); a refusal is said and the
/// session goes on. `--ice-recover-after D`: also when the path has answered no consent check
/// for D (RFC 7675: the path is gone; a browser's application restarts ICE then), again every
/// D while it stays silent, until consent runs out at 30 s; three refusals in a row end the
/// attempts. The outcome of each, for the summary.
final class ICERestarts: Sendable {
    /// Restarts asked for by the consent watch, at most.
    static let maxRecoveries = 8

    struct Outcome: Sendable {
        var atMicros: Int64
        /// Why: nil for a scheduled restart; the silence that set a recovery off.
        var trigger: String? = nil
        var error: String?
        /// The new pair's selection after the answer was applied (ms), read from the transport.
        var recoveryMs: Int?
        var text: String {
            if let error { return "failed: \(error) (the session goes on)" }
            return recoveryMs.map { "new pair selected \($0) ms after the answer" } ?? "answered; no new pair selected yet"
        }
        var json: JSONValue {
            .object([
                ("atSeconds", .double(Double(atMicros) / 1e6)), ("trigger", .string(trigger ?? "scheduled")),
                ("outcome", .string(error == nil ? "restarted" : "failed")),
                ("error", error.map { .string($0) } ?? .null), ("recoveryMs", recoveryMs.map { .int(Int64($0)) } ?? .null)
            ])
        }
    }
    let outcomes = Locked<[Outcome]>([])
    /// A restart has been asked for (set before its PATCH goes): the server may close the old
    /// path's port before its answer is applied here.
    let requested = Locked(false)
    let thread: JoinableThread?
    let stop = Locked(false)
    let joined = Locked(false)
    /// The transport's last restart recovery (ms), once it has one.
    let recovery: @Sendable () -> Int?

    /// - `interfaceChange`: asked once a second; what changed among the local interfaces and the
    ///   ICE agent's candidates anew (`WHIPConnection.interfaceChange`), or nil. A change restarts
    ///   ICE on the new candidates at once, as a browser does on a network change.
    init(
        _ times: [Int64], recoverAfter: Int64? = nil, consentAge: @escaping @Sendable () -> Int64? = { nil },
        interfaceChange: (@Sendable () -> (what: String, candidates: [ICECandidate])?)? = nil,
        request: @escaping @Sendable () -> Result<PublisherControl.ICERestart, WHIPConnectError>,
        apply: @escaping @Sendable (PublisherControl.ICERestart) -> Void, stopped: @escaping @Sendable () -> Bool,
        recovery: @escaping @Sendable () -> Int?
    ) {
        self.recovery = recovery
        guard !times.isEmpty || recoverAfter != nil || interfaceChange != nil else {
            thread = nil
            return
        }
        let start = Clock.monotonicMicros()
        let outcomes = self.outcomes, stop = self.stop, requested = self.requested
        thread = JoinableThread(name: "pubbot-ice-restart") {
            var pending = times[...]
            var policy = recoverAfter.map { ICERecoveryPolicy(graceMicros: $0, maxAttempts: Self.maxRecoveries) }
            func perform(_ at: Int64, trigger: String?, candidates: [ICECandidate]? = nil) -> Bool {
                requested.value = true
                switch request() {
                case var .success(r):
                    r.localCandidates = candidates
                    apply(r)
                    outcomes.withLock { $0.append(Outcome(atMicros: at, trigger: trigger)) }
                    return true
                case let .failure(e):
                    let why = trigger.map { " (\($0))" } ?? ""
                    Output.err("warning: ICE restart at \(Units.fixed(Double(at) / 1e6, 1)) s\(why): \(e) — the session goes on\n")
                    outcomes.withLock { $0.append(Outcome(atMicros: at, trigger: trigger, error: e.description)) }
                    return false
                }
            }
            var nextWatch: Int64 = 0
            var nextInterfaces: Int64 = 1_000_000
            while !(stop.value || stopped()) {
                let now = Clock.monotonicMicros() - start
                if let interfaceChange, now >= nextInterfaces {
                    nextInterfaces = now + 1_000_000
                    if let change = interfaceChange() {
                        Output.err("ICE restart: the local interfaces changed (\(change.what))\n")
                        _ = perform(now, trigger: "interface change: \(change.what)", candidates: change.candidates)
                        policy?.scheduledRestart(at: now)
                    }
                }
                if let at = pending.first, now >= at {
                    pending = pending.dropFirst()
                    _ = perform(at, trigger: nil)
                    policy?.scheduledRestart(at: now)
                } else if policy != nil && now >= nextWatch {
                    // Four times a second (a snapshot is not free).
                    nextWatch = now + 250_000
                    if let age = consentAge(), let why = policy?.shouldRestart(now: now, consentAge: age) {
                        policy?.attempted(succeeded: perform(now, trigger: why), at: now)
                    }
                }
                if pending.isEmpty && policy == nil && interfaceChange == nil { return }
                Clock.sleep(micros: 50_000)
            }
        }
    }

    /// The last restart's recovery, once the transport reports it.
    func tick() {
        guard thread != nil, let ms = recovery() else { return }
        outcomes.withLock { list in
            if let i = list.lastIndex(where: { $0.error == nil }), list[i].recoveryMs == nil { list[i].recoveryMs = ms }
        }
    }

    /// Stops the schedule and waits for a PATCH in flight; once.
    func finish() {
        stop.value = true
        guard
            !joined.withLock({ j in
                defer { j = true }; return j
            })
        else { return }
        thread?.join()
        tick()
    }
}
