import HTTPSignaling
import ReceiverEngine
import WebRTCClient
import ICE
import Platform

/// The connectivity pre-flight of the subscribing leg (`preflight --whep`), as the publisher's
/// (`ConnectivityCheck`): each path the options allow tried on its own — host UDP (a WHEP
/// subscription offering only the host candidate), server-reflexive (each STUN server), relay
/// over UDP TURN, and the servers the WHEP endpoint's own 201 announces (RFC 9725 §4.6, which
/// draft-ietf-wish-whep-04 §4.2 keeps) — each a subscription of its own up to DTLS done, then
/// ended (DELETE). A subscriber's receive socket is read as UDP only, so a TURN server over TCP
/// or TLS is reported as a path the subscriber cannot take rather than tried.
enum WHEPConnectivity {
    /// - Parameters:
    ///   - timeoutMicros: how long one path may take to connect (the real subscription runs
    ///     beside these checks, so a dead path must not hold the report long).
    ///   - stopped: checked between paths: the run stops early when the pre-flight ends.
    static func run(_ options: WHIPOptions, timeoutMicros: Int64 = 6_000_000, stopped: () -> Bool = { false }) -> [PathResult] {
        var results: [PathResult] = []
        var host = options
        host.policy = .host
        host.iceServers = []
        var announced: [ICEServerLink] = []
        results.append(session("host-udp", host, timeoutMicros: timeoutMicros, announced: &announced))
        for s in options.iceServers where !s.isTURN && !stopped() { results.append(ConnectivityCheck.reflexive(s)) }
        let turn = options.iceServers.filter(\.isTURN)
        for s in turn where s.transport != .udp {
            results.append(Self.notTaken(s))
        }
        let udp = turn.filter { $0.transport == .udp }
        if !udp.isEmpty && !stopped() {
            var ignored: [ICEServerLink] = []
            results.append(session("relay-udp", options.relayOnly(udp), timeoutMicros: timeoutMicros, announced: &ignored))
        }
        // The WHEP endpoint's own servers, each kind the user gave none of.
        let stunGiven = options.iceServers.contains { !$0.isTURN }
        for s in WHIPConnection.serverICEServers(announced, options: options) where !stopped() {
            if !s.url.isTURN {
                guard !stunGiven else { continue }
                results.append(ConnectivityCheck.reflexive(s.url).announcedByServer())
                continue
            }
            guard s.url.transport == .udp else {
                results.append(Self.notTaken(s.url).announcedByServer())
                continue
            }
            let relay = options.relayOnly([s.url], username: s.username, credential: s.credential)
            var ignored: [ICEServerLink] = []
            results.append(
                session("relay-udp", relay, timeoutMicros: timeoutMicros, announced: &ignored)
                    .announcedByServer(" (\(s.url), announced by the server)"))
        }
        return results
    }

    static func notTaken(_ s: ICEServerURL) -> PathResult {
        PathResult(
            path: PathResult.relayPath(s), reachable: false, connectMs: nil, rttMs: nil,
            detail: "\(s): not tried — a WHEP subscriber relays over UDP TURN only")
    }

    /// One subscription over one kind of candidate, up to DTLS done (or `timeoutMicros`), ended.
    static func session(_ name: String, _ options: WHIPOptions, timeoutMicros: Int64, announced: inout [ICEServerLink]) -> PathResult {
        var config = WHEPReceiver.defaultConfig
        config.decodedPublishers = 0 // the path is measured, not the picture
        let receiver: ReceiverEngine
        let subscription: WHEPSubscription
        do { (receiver, subscription) = try WHEPReceiver.open(options, config: config) } catch {
            return PathResult(path: name, reachable: false, connectMs: nil, rttMs: nil, detail: error.description)
        }
        announced = subscription.resource.iceServers
        let deadline = Clock.monotonicMicros() + timeoutMicros
        var state = receiver.snapshot().webrtcPublishers.first
        while (state?.state ?? .new) == .new && Clock.monotonicMicros() < deadline {
            Clock.sleep(micros: 20_000)
            state = receiver.snapshot().webrtcPublishers.first
        }
        receiver.stop()
        receiver.wait()
        subscription.end()
        let t = state?.transport
        guard state?.state == .connected, let t else {
            let why = state?.failure?.reason ?? t?.failure?.reason ?? "not connected within \(timeoutMicros / 1_000_000) s"
            return PathResult(path: name, reachable: false, connectMs: nil, rttMs: nil, detail: why)
        }
        let connectMs = t.iceDurationMicros.map { Double($0 + (t.dtlsDurationMicros ?? 0)) / 1000 }
        let pair = "\(t.localCandidateType ?? "?") \(t.localAddress ?? "?") → \(t.remoteCandidateType ?? "?") \(t.remoteAddress ?? "?")"
        return PathResult(path: name, reachable: true, connectMs: connectMs, rttMs: t.roundTripMillis, detail: pair)
    }
}
