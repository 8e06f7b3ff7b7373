import PublisherEngine
import WebRTCClient
import Stats
import Platform

/// `--ice-restart-at`: at each time a PATCH asks the server for an ICE restart (RFC 9725 §4.3.3)
/// on a thread of its own (the HTTP exchange blocks), and the answer is applied (`apply`: the
/// publisher's or the WHEP subscriber's network thread takes it); a refusal is said and the
/// session goes on. The outcome of each, for the summary.
final class ICERestarts: Sendable {
    struct Outcome: Sendable {
        var atMicros: Int64
        var error: String?
        /// The new pair's selection after the answer was applied (ms), read from the transport.
        var recoveryMs: Int?
        var text: String {
            if let error { return "failed: \(error) (the session goes on)" }
            return recoveryMs.map { "new pair selected \($0) ms after the answer" } ?? "answered; no new pair selected yet"
        }
        var json: JSONValue {
            .object([
                ("atSeconds", .double(Double(atMicros) / 1e6)), ("outcome", .string(error == nil ? "restarted" : "failed")),
                ("error", error.map { .string($0) } ?? .null), ("recoveryMs", recoveryMs.map { .int(Int64($0)) } ?? .null)
            ])
        }
    }
    let outcomes = Locked<[Outcome]>([])
    let thread: JoinableThread?
    let stop = Locked(false)
    let joined = Locked(false)
    /// The transport's last restart recovery (ms), once it has one.
    let recovery: @Sendable () -> Int?

    init(
        _ times: [Int64], request: @escaping @Sendable () -> Result<PublisherControl.ICERestart, WHIPConnectError>,
        apply: @escaping @Sendable (PublisherControl.ICERestart) -> Void, stopped: @escaping @Sendable () -> Bool,
        recovery: @escaping @Sendable () -> Int?
    ) {
        self.recovery = recovery
        guard !times.isEmpty else {
            thread = nil
            return
        }
        let start = Clock.monotonicMicros()
        let outcomes = self.outcomes, stop = self.stop
        thread = JoinableThread(name: "pubbot-ice-restart") {
            for at in times {
                while Clock.monotonicMicros() < start + at {
                    if stop.value || stopped() { return }
                    Clock.sleep(micros: min(50_000, max(1, start + at - Clock.monotonicMicros())))
                }
                switch request() {
                case let .success(r):
                    apply(r)
                    outcomes.withLock { $0.append(Outcome(atMicros: at)) }
                case let .failure(e):
                    Output.err("warning: ICE restart at \(Units.fixed(Double(at) / 1e6, 1)) s: \(e) — the session goes on\n")
                    outcomes.withLock { $0.append(Outcome(atMicros: at, error: e.description)) }
                }
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
