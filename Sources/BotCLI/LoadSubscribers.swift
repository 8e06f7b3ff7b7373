import ReceiverEngine
import WebRTCClient
import Transport
import Stats
import Platform

/// The subscriber bots of `load --whip … --whep … --subscribers S`: each a real WHEP subscriber
/// (its own socket, ICE, DTLS, feedback, reassembly and VP8 decoding) on a receive thread of its
/// own. Subscriber k watches room k mod M, publisher (k / M) mod P-per-room of it (the URL's
/// `{room}` and `{publisher}`).
final class SubscriberFleet: @unchecked Sendable {
    struct Member: Sendable {
        var number: Int
        var room: Int
        var receiver: ReceiverEngine?
        var subscription: WHEPSubscription?
        var error: String?
        var snapshot: ReceiverSnapshot?
    }

    let options: WHIPOptions
    let members: Locked<[Member]>
    let threads = Locked<[JoinableThread]>([])

    init(options: WHIPOptions, count: Int, rooms: Int, publishersPerRoom: Int) {
        self.options = options
        members = Locked((0..<count).map { Member(number: $0, room: $0 % rooms) })
        var endpoints: [String] = []
        for k in 0..<count {
            endpoints.append(WHIPOptions.expand(options.endpoint, room: k % rooms, publisher: (k / rooms) % max(1, publishersPerRoom)))
        }
        self.endpoints = endpoints
    }
    let endpoints: [String]

    /// Subscribes every member, `spacingMicros` apart (each on its own thread: the POST blocks).
    func start(spacingMicros: Int64 = 50_000) {
        let count = members.value.count
        for k in 0..<count {
            var each = options
            each.endpoint = endpoints[k]
            let o = each, members = self.members, delay = Int64(k) * spacingMicros
            let t =
                (JoinableThread(name: "pubbot-sub-\(k)") {
                    Clock.sleep(micros: delay)
                    do throws(WHIPConnectError) {
                        let (receiver, subscription) = try WHEPReceiver.open(o)
                        members.withLock {
                            $0[k].receiver = receiver; $0[k].subscription = subscription
                        }
                    } catch {
                        members.withLock { $0[k].error = error.description }
                    }
                })
            threads.withLock { $0.append(t) }
        }
    }

    var connected: Int { members.value.filter { $0.receiver != nil }.count }

    /// Ends every subscription (DELETE) and keeps what each saw.
    func stop() {
        for t in threads.withLock({ t in
            let all = t
            t = []
            return all
        }) { t.join() }
        let snapshot = members.value
        for m in snapshot { m.receiver?.stop() }
        for (k, m) in snapshot.enumerated() {
            guard let r = m.receiver else { continue }
            r.wait()
            m.subscription?.end()
            let snap = r.snapshot()
            members.withLock {
                $0[k].snapshot = snap
                if let t = snap.webrtcPublishers.first, t.state == .failed {
                    $0[k].error = t.failure?.reason ?? "the transport failed"
                } else if !snap.streams.contains(where: { $0.kind == .video && $0.framesDecoded > 0 }) {
                    $0[k].error = "no video frame decoded"
                }
                $0[k].receiver = nil
            }
        }
    }
}

/// What the subscribers got, per room and over the fleet: glass-to-glass latency (each
/// subscriber's mean), freezes, decoded frame rate.
struct SubscriberSummary {
    struct One {
        var number: Int
        var room: Int
        var error: String?
        var latencyMs: Double?
        var freezes: Int
        var freezeMs: Double
        var fps: Double
        var width: Int
        var height: Int
        var lost: Int
        var received: Int
        var iceMs: Double?
        var dtlsMs: Double?
        /// Feedback this subscriber sent the server (its key-frame requests and NACKs).
        var pliSent: Int
        var nackSent: Int
    }
    var subscribers: [One]
    var rooms: Int

    init(_ members: [SubscriberFleet.Member], rooms: Int) {
        self.rooms = rooms
        subscribers = members.map { m in
            let v = m.snapshot?.streams.first { $0.kind == .video }
            let t = m.snapshot?.webrtcPublishers.first
            return One(
                number: m.number, room: m.room, error: m.error, latencyMs: v?.latencyMeanMillis, freezes: v?.freezeCount ?? 0,
                freezeMs: v?.totalFreezesDurationMillis ?? 0, fps: v?.receivedFrameRate ?? 0,
                width: v?.width ?? 0, height: v?.height ?? 0, lost: max(0, v?.packetsLost ?? 0), received: v?.packetsReceived ?? 0,
                iceMs: t?.transport?.iceMillis, dtlsMs: t?.transport?.dtlsMillis,
                pliSent: m.snapshot?.pliSent ?? 0, nackSent: m.snapshot?.nackSent ?? 0)
        }
    }

    var failed: Int { subscribers.filter { $0.error != nil }.count }

    static func figures(_ s: [One]) -> JSONValue {
        let ok = s.filter { $0.error == nil }
        let lat = ok.compactMap(\.latencyMs), fps = ok.map(\.fps), fr = ok.map { Double($0.freezes) }
        func p(_ v: [Double], _ q: Double) -> JSONValue { v.isEmpty ? .null : .double((LoadReport.percentileD(v, q) * 10).rounded() / 10) }
        return .object([
            ("subscribers", .int(Int64(s.count))), ("ok", .int(Int64(ok.count))),
            ("latencyMs", .object([("p50", p(lat, 0.5)), ("p95", p(lat, 0.95)), ("max", p(lat, 1))])),
            ("freezes", .object([("total", .int(Int64(ok.reduce(0) { $0 + $1.freezes }))), ("p95", p(fr, 0.95)), ("max", p(fr, 1))])),
            ("decodedFrameRate", .object([("p5", p(fps, 0.05)), ("p50", p(fps, 0.5)), ("min", p(fps, 0))])),
            ("pliSent", .int(Int64(s.reduce(0) { $0 + $1.pliSent }))), ("nackSent", .int(Int64(s.reduce(0) { $0 + $1.nackSent })))
        ])
    }

    var json: JSONValue {
        func ms(_ v: Double?) -> JSONValue { v.map { .double(($0 * 10).rounded() / 10) } ?? .null }
        return .object([
            ("fleet", Self.figures(subscribers)),
            (
                "rooms",
                .array(
                    (0..<rooms).map { r in
                        guard case let .object(f) = Self.figures(subscribers.filter { $0.room == r }) else { return .null }
                        return .object([("room", .int(Int64(r)))] + f)
                    })
            ),
            (
                "perSubscriber",
                .array(
                    subscribers.map { s in
                        .object([
                            ("subscriber", .int(Int64(s.number))), ("room", .int(Int64(s.room))),
                            ("error", s.error.map { .string($0) } ?? .null),
                            ("width", .int(Int64(s.width))), ("height", .int(Int64(s.height))),
                            ("decodedFrameRate", .double((s.fps * 10).rounded() / 10)),
                            ("freezeCount", .int(Int64(s.freezes))), ("totalFreezesDurationMs", .double(s.freezeMs.rounded())),
                            ("latencyMeanMs", ms(s.latencyMs)), ("packetsReceived", .int(Int64(s.received))),
                            ("packetsLost", .int(Int64(s.lost))),
                            ("pliSent", .int(Int64(s.pliSent))), ("nackSent", .int(Int64(s.nackSent))),
                            ("iceDurationMs", ms(s.iceMs)), ("dtlsDurationMs", ms(s.dtlsMs))
                        ])
                    })
            )
        ])
    }

    var human: String {
        func line(_ label: String, _ s: [One]) -> String {
            let ok = s.filter { $0.error == nil }
            let lat = ok.compactMap(\.latencyMs), fps = ok.map(\.fps)
            var out = "  \(label): \(ok.count)/\(s.count) decoding"
            if !lat.isEmpty {
                out +=
                    ", latency p50 \(Units.fixed(LoadReport.percentileD(lat, 0.5), 1)) ms p95 \(Units.fixed(LoadReport.percentileD(lat, 0.95), 1)) ms"
            }
            if !fps.isEmpty {
                out +=
                    ", decoded fps p5 \(Units.fixed(LoadReport.percentileD(fps, 0.05), 1)) p50 \(Units.fixed(LoadReport.percentileD(fps, 0.5), 1))"
            }
            out += ", freezes \(ok.reduce(0) { $0 + $1.freezes }), sent \(s.reduce(0) { $0 + $1.pliSent }) PLI\n"
            return out
        }
        var out = "subscribers (WHEP, through the server):\n" + line("fleet", subscribers)
        if rooms > 1 { for r in 0..<rooms { out += line("room \(r)", subscribers.filter { $0.room == r }) } }
        for s in subscribers where s.error != nil { out += "  subscriber \(s.number) (room \(s.room)): \(s.error!)\n" }
        return out
    }
}
