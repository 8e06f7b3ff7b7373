import PublisherEngine
import WebRTCClient
import ICE
import Platform
import Transport

/// The WHEP subscribers' ICE restarts (RFC 9725 §4.3.3, as WHEP keeps it): a loop asks for one
/// (a scheduled time, a silent path) or the interface watch does (an address gone or new), a
/// worker thread makes the PATCH — it blocks for one HTTP round trip, which no event loop may —
/// and hands the server's answer back to the subscriber's loop, which applies it to the session
/// (`SubscriberLoop.apply`).
final class SubscriberRestarts: Sendable {
    enum Trigger: Sendable {
        case scheduled
        /// The consent watch: why (`no consent answer for 8.2 s`).
        case consentWatch(String)
        /// What changed among the local interfaces.
        case interfaceChange(String)
    }

    struct Request: @unchecked Sendable {
        let bot: SubscriberBot
        let loop: SubscriberLoop
        let trigger: Trigger
        /// The subscriber's host candidates anew (an interface change).
        let candidates: [ICECandidate]?
    }

    struct Answer: @unchecked Sendable {
        let bot: SubscriberBot
        let trigger: Trigger
        let candidates: [ICECandidate]?
        let result: Result<PublisherControl.ICERestart, WHIPConnectError>
    }

    let queue = Locked<[Request]>([])
    /// Every subscription made, with its loop (the interface watch asks each one).
    let registered = Locked<[(bot: SubscriberBot, loop: SubscriberLoop)]>([])

    func register(_ bot: SubscriberBot, loop: SubscriberLoop) { registered.withLock { $0.append((bot, loop)) } }

    func ask(_ r: Request) { queue.withLock { $0.append(r) } }

    /// A worker: takes the requests in turn until the fleet stops; with `watchInterfaces` it also
    /// reads the local interfaces once a second and, when their addresses change, asks each
    /// subscription whose host candidates changed (`WHEPSubscription.interfaceChange`) for a
    /// restart on the new ones.
    func work(watchInterfaces: Bool, stopping: Locked<Bool>) {
        var addresses = watchInterfaces ? Set(LocalInterfaces.list().map(\.ip)) : []
        var nextInterfaces = Clock.monotonicMicros() + 1_000_000
        while !stopping.value {
            if watchInterfaces && Clock.monotonicMicros() >= nextInterfaces {
                nextInterfaces = Clock.monotonicMicros() + 1_000_000
                let list = LocalInterfaces.list()
                let current = Set(list.map(\.ip))
                if current != addresses {
                    addresses = current
                    for (bot, loop) in registered.value {
                        guard let change = bot.subscription?.interfaceChange(list: list) else { continue }
                        ask(Request(bot: bot, loop: loop, trigger: .interfaceChange(change.what), candidates: change.candidates))
                    }
                }
            }
            guard
                let r = queue.withLock({ q -> Request? in
                    q.isEmpty ? nil : q.removeFirst()
                })
            else {
                Clock.sleep(micros: 20_000)
                continue
            }
            guard let subscription = r.bot.subscription else { continue }
            let result = subscription.requestICERestart()
            r.loop.restartAnswers.withLock {
                $0.append(Answer(bot: r.bot, trigger: r.trigger, candidates: r.candidates, result: result))
            }
        }
    }
}
