public import PublisherEngine
public import DTLS
import WebRTC
public import ICE
import RTPCore
import Transport
import Platform
import HTTPSignaling

/// One path of the connectivity pre-flight: could a WebRTC session be set up over it, how long
/// ICE and DTLS took, and the round trip ICE measured — or why not.
public struct PathResult: Sendable, Equatable {
    /// `host-udp`, `srflx-udp`, `relay-udp`, `relay-tcp`, `relay-tls`.
    public var path: String
    public var reachable: Bool
    /// From the first ICE check to DTLS done (ms).
    public var connectMs: Double?
    public var rttMs: Double?
    /// The selected pair or the mapped address, or the reason it failed.
    public var detail: String
    /// The server came from the endpoint's own list (its 201's `Link` headers, RFC 9725 §4.6).
    public var announced = false

    public init(path: String, reachable: Bool, connectMs: Double?, rttMs: Double?, detail: String, announced: Bool = false) {
        self.path = path
        self.reachable = reachable
        self.connectMs = connectMs
        self.rttMs = rttMs
        self.detail = detail
        self.announced = announced
    }

    /// The relay path a TURN server's transport gives: `relay-udp`, `relay-tcp` or `relay-tls`.
    public static func relayPath(_ server: ICEServerURL) -> String {
        server.transport == .udp ? "relay-udp" : server.transport == .tcp ? "relay-tcp" : "relay-tls"
    }

    /// This path, marked as coming from the endpoint's own servers (RFC 9725 §4.6), `note` added
    /// to its detail.
    public func announcedByServer(_ note: String = " (announced by the server)") -> PathResult {
        var r = self
        r.announced = true
        r.detail += note
        return r
    }
}

extension WHIPOptions {
    /// These options for one relay path tried on its own: only `servers`, the relay policy, and
    /// the credentials of a server the endpoint announced where given.
    public func relayOnly(_ servers: [ICEServerURL], username: String? = nil, credential: String? = nil) -> WHIPOptions {
        var o = self
        o.policy = .relay
        o.iceServers = servers
        if let username { o.turnUsername = username }
        if let credential { o.turnCredential = credential }
        return o
    }
}

/// The connectivity pre-flight (as Twilio's Preflight and Daily's connectivity test): before the
/// media test, each path the options allow is tried on its own — host UDP (a WHIP session
/// offering only the host candidate), server-reflexive (each STUN server: is it reachable, what
/// does it map), relay UDP (a session offering only the TURN relay) — each with its own WHIP
/// session, ICE and DTLS, ended with close_notify, a Refresh of 0 and a DELETE.
public enum ConnectivityCheck {
    public static func run(
        _ options: WHIPOptions, base: PublisherConfig, certificate: DTLSCertificate,
        sleep: @escaping (Int64) -> Void
    ) -> [PathResult] {
        var results: [PathResult] = []
        var host = options
        host.policy = .host
        host.iceServers = []
        var announced: [ICEServerLink] = []
        results.append(session("host-udp", host, base: base, certificate: certificate, sleep: sleep, announced: &announced))
        for s in options.iceServers where !s.isTURN { results.append(reflexive(s)) }
        let turn = options.iceServers.filter(\.isTURN)
        let kinds: [(String, [ICEServerURL])] = [
            ("relay-udp", turn.filter { $0.transport == .udp }), ("relay-tcp", turn.filter { $0.transport == .tcp }),
            ("relay-tls", turn.filter { $0.transport == .tls })
        ]
        for (name, servers) in kinds where !servers.isEmpty {
            var ignored: [ICEServerLink] = []
            results.append(
                session(name, options.relayOnly(servers), base: base, certificate: certificate, sleep: sleep, announced: &ignored))
        }
        // The endpoint's own servers (RFC 9725 §4.6), each kind the user gave none of, tried as
        // its own path too: a path that works only through them is said to come from the server.
        let stunGiven = options.iceServers.contains { !$0.isTURN }
        for s in WHIPConnection.serverICEServers(announced, options: options) {
            if !s.url.isTURN {
                guard !stunGiven else { continue }
                results.append(reflexive(s.url).announcedByServer())
                continue
            }
            let relay = options.relayOnly([s.url], username: s.username, credential: s.credential)
            let name = PathResult.relayPath(s.url)
            var ignored: [ICEServerLink] = []
            results.append(
                session(name, relay, base: base, certificate: certificate, sleep: sleep, announced: &ignored)
                    .announcedByServer(" (\(s.url), announced by the server)"))
        }
        return results
    }

    /// A whole WHIP session over one kind of candidate, up to DTLS done (≤ 12 s), then ended.
    static func session(
        _ name: String, _ options: WHIPOptions, base: PublisherConfig, certificate: DTLSCertificate,
        sleep: @escaping (Int64) -> Void, announced: inout [ICEServerLink]
    ) -> PathResult {
        let w: WHIPConnection
        do { w = try WHIPConnection.open(options, base: base, certificate: certificate, sleep: sleep) } catch {
            return PathResult(path: name, reachable: false, connectMs: nil, rttMs: nil, detail: error.description)
        }
        announced = w.announcedICEServers
        defer { w.end() }
        let t = w.transport
        var failure: String?
        let tcp = w.turnTCP
        func flush() {
            while let x = t.pollTransmit() {
                guard let to = SocketAddress(x.to) else { continue }
                if let tcp, to == tcp.remote {
                    x.bytes.withUnsafeBytes { tcp.write($0) }
                } else {
                    w.socket.send(x)
                }
            }
            while let e = t.pollEvent() { if case let .failed(r) = e { failure = r.reason } }
        }
        SetUpLoop(socket: w.socket, stream: tcp).run(
            for: 12_000_000, idle: 20_000, done: { t.isConnected || failure != nil }, step: { t.step(now: $0) }, flush: flush,
            datagram: { bytes, from, to, now in
                if let from = STUNAddress(from) { _ = t.handle(bytes, from: from, to: to.flatMap { STUNAddress($0) } ?? w.local, now: now) }
            },
            message: { m, now in _ = t.handle(m, from: t.turn!.server, to: w.local, now: now) })
        let connected = t.isConnected
        let connectMs = connected ? t.dtlsConnectedMicros.flatMap { d in t.startedMicros.map { Double(d - $0) / 1000 } } : nil
        let pair = t.ice.selectedPair.map {
            "\($0.local.kind.rawValue) \($0.local.address) → \($0.remote.kind.rawValue) \($0.remote.address)"
        }
        t.close()
        flush()
        return PathResult(
            path: name, reachable: connected, connectMs: connectMs,
            rttMs: connected ? t.ice.roundTripMicros.map { Double($0) / 1000 } : nil,
            detail: connected ? (pair ?? "connected") : (failure ?? "no answer within 12 s"))
    }

    /// A STUN server: reachable, and the address it maps the media socket to.
    public static func reflexive(_ server: ICEServerURL) -> PathResult {
        guard let a = try? SocketAddress(host: server.host, port: server.port), let sa = STUNAddress(a), let source = try? a.routeSource(),
            let socket = try? UDPSocket(bind: source),
            let base = STUNAddress(socket.localAddress)
        else {
            return PathResult(
                path: "srflx-udp", reachable: false, connectMs: nil, rttMs: nil, detail: "\(server): cannot resolve or reach it")
        }
        let result = WHIPConnection.queryReflexive(socket: socket, hosts: [.host(base)], servers: [sa]).first
        switch result {
        case let .reflexive(c, _, _, redundant, rtt)?:
            return PathResult(
                path: "srflx-udp", reachable: true, connectMs: nil, rttMs: Double(rtt) / 1000,
                detail: "\(server) maps \(base) to \(c.address)\(redundant ? " (no NAT between)" : "")")
        case let .failed(_, _, reason)?:
            return PathResult(path: "srflx-udp", reachable: false, connectMs: nil, rttMs: nil, detail: "\(server): \(reason)")
        case nil:
            return PathResult(path: "srflx-udp", reachable: false, connectMs: nil, rttMs: nil, detail: "\(server) did not answer")
        }
    }
}
