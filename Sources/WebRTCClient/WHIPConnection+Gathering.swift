import Synchronization
import HTTPSignaling
import Signalling
import WebRTC
public import ICE
import DTLS
public import Transport
import PublisherEngine
import RTPCore
import Crypto
import Platform

/// Gathering a session's candidates (RFC 8445 §5.1.1): the host one, server-reflexive ones from
/// STUN, a relayed one from TURN (RFC 8656), and those from the servers a 201 announces.
extension WHIPConnection {
    /// This socket's candidates: the host one, server-reflexive ones from the STUN servers, and a
    /// relayed one from the first TURN server that allocates (RFC 8656) — as the policy allows.
    /// `hosts`: the host candidates (default the one of `local`); `local` is the base STUN and
    /// TURN are asked from.
    public static func gather(
        _ options: WHIPOptions, socket: UDPSocket, local: STUNAddress, hosts: [ICECandidate]? = nil
    ) throws(WHIPConnectError) -> (candidates: [ICECandidate], turn: TURNClient?, turnTCP: (any TURNStream)?, turnFailures: [String]) {
        let hosts = hosts ?? [ICECandidate.host(local)]
        var candidates = hosts
        var stunServers: [STUNAddress] = []
        var turnServers: [(address: STUNAddress, tcp: Bool, tls: Bool, host: String)] = []
        for s in options.iceServers {
            guard let a = try? SocketAddress(host: s.host, port: s.port), let sa = STUNAddress(a) else {
                throw WHIPConnectError("--ice-server '\(s)': cannot resolve it")
            }
            if s.isTURN { turnServers.append((sa, s.transport != .udp, s.transport == .tls, s.host)) } else { stunServers.append(sa) }
        }
        if options.policy == .relay && turnServers.isEmpty {
            throw WHIPConnectError(
                "--ice-policy relay needs a TURN server (--ice-server turn:HOST:PORT with --turn-username and --turn-credential)")
        }
        if !turnServers.isEmpty && (options.turnUsername == nil || options.turnCredential == nil) {
            throw WHIPConnectError("a turn: server needs --turn-username and --turn-credential (or PUBBOT_TURN_CREDENTIAL)")
        }
        if options.policy != .relay && options.policy != .host {
            candidates += gatherReflexive(socket: socket, hosts: hosts, servers: stunServers)
        }
        // A relayed candidate from the first TURN server that allocates (RFC 8656), on this socket.
        var turn: TURNClient?
        var turnTCP: (any TURNStream)?
        var turnFailures: [String] = []
        for server in turnServers where turn == nil && options.policy != .host {
            switch allocate(
                socket: socket, base: local, server: server.address, tcp: server.tcp,
                tls: server.tls ? (server.host, options.turnCAFile) : nil,
                username: options.turnUsername!, password: options.turnCredential!)
            {
            case let .success((t, stream)): turn = t; turnTCP = stream
            case let .failure(e): turnFailures.append(e.description)
            }
        }
        if let t = turn, let relay = t.relay {
            candidates.append(
                ICECandidate(
                    foundation: "relay" + String(CRC32.checksum(relay.ip), radix: 16), priority: ICECandidate.priority(kind: .relay),
                    address: relay, kind: .relay, relatedAddress: t.mapped ?? local))
        }
        if options.policy == .relay {
            guard turn != nil else { throw WHIPConnectError("no relay candidate: " + turnFailures.joined(separator: "; ")) }
            candidates.removeAll { $0.kind != .relay }
        }
        return (candidates, turn, turnTCP, turnFailures)
    }

    /// RFC 9725 §4.6: candidates from the STUN/TURN servers the endpoint announced in its 201,
    /// used where the user gave none of that kind; what they give is to be trickled (§4.3.2) — an
    /// ICE-lite or full server that does not take PATCH still learns a relayed address from its
    /// checks (a peer-reflexive candidate, RFC 8445 §7.3.1.3). The allocation, if one is made,
    /// goes into `turn`; the summary says what came of them.
    static func gatherAnnounced(
        _ announced: [(url: ICEServerURL, username: String, credential: String)], options: WHIPOptions, socket: UDPSocket,
        local: STUNAddress, hosts: [ICECandidate]? = nil, existing: [ICECandidate], turn: inout TURNClient?,
        turnTCP: inout (any TURNStream)?,
        turnFailures: inout [String], summary: inout [(String, String)]
    ) -> [ICECandidate] {
        var fresh: [ICECandidate] = []
        let stunGiven = options.iceServers.contains { !$0.isTURN }
        if !stunGiven && options.policy != .relay && options.policy != .host {
            let stun = announced.filter { !$0.url.isTURN }.compactMap { s -> STUNAddress? in
                (try? SocketAddress(host: s.url.host, port: s.url.port)).flatMap { STUNAddress($0) }
            }
            fresh += gatherReflexive(socket: socket, hosts: hosts ?? [.host(local)], servers: stun).filter { !existing.contains($0) }
        }
        if turn == nil && options.policy != .host {
            for s in announced where s.url.isTURN && turn == nil {
                guard let a = try? SocketAddress(host: s.url.host, port: s.url.port), let server = STUNAddress(a) else {
                    turnFailures.append("\(s.url) (announced by the server): cannot resolve it")
                    continue
                }
                switch allocate(
                    socket: socket, base: local, server: server, tcp: s.url.transport != .udp,
                    tls: s.url.transport == .tls ? (s.url.host, options.turnCAFile) : nil, username: s.username,
                    password: s.credential)
                {
                case let .success((t, stream)):
                    turn = t
                    turnTCP = stream
                    if let relay = t.relay {
                        fresh.append(
                            ICECandidate(
                                foundation: "relay" + String(CRC32.checksum(relay.ip), radix: 16),
                                priority: ICECandidate.priority(kind: .relay), address: relay, kind: .relay,
                                relatedAddress: t.mapped ?? local))
                        summary.append(
                            (
                                "relay",
                                "\(relay) via TURN \(t.server) over \(stream is TLSStream ? "TLS" : t.overTCP ? "TCP" : "UDP") (announced by the server, RFC 9725 §4.6; \((t.allocatedMicros ?? 0) - (t.startedMicros ?? 0)) µs to allocate)"
                            ))
                    }
                case let .failure(e): turnFailures.append("\(e.description) (announced by the server)")
                }
            }
        }
        if options.policy == .relay { fresh.removeAll { $0.kind != .relay } }
        summary.append(
            (
                "serverICEServers",
                fresh.isEmpty
                    ? "\(announced.count) announced (Link, RFC 9725 §4.6), none gave a candidate"
                    : "\(announced.count) announced (Link, RFC 9725 §4.6): \(fresh.map(\.kind.rawValue).joined(separator: ", ")) gathered"
            ))
        return fresh
    }

    /// A TURN allocation on the media socket itself (its relayed address becomes a candidate), in
    /// at most ~6 s; the client then lives on inside the transport (refresh, permissions, channels).
    static func allocate(
        socket: UDPSocket, base: STUNAddress, server: STUNAddress, tcp: Bool, tls: (host: String, caFile: String?)?, username: String,
        password: String
    ) -> Result<(TURNClient, (any TURNStream)?), WHIPConnectError> {
        let seed = SecureRandom.bytes(8).reduce(0) { $0 << 8 | UInt64($1) }
        guard let to = SocketAddress(server) else { return .failure(WHIPConnectError("TURN server \(server): not a usable address")) }
        var stream: (any TURNStream)?
        if tcp {
            let connection: TCPStream
            do { connection = try TCPStream(connectingTo: to, timeoutMillis: 5_000) } catch {
                return .failure(WHIPConnectError("the TURN server \(server) is unreachable over TCP: \(error)"))
            }
            if let (host, caFile) = tls {
                do { stream = try TLSStream(tcp: connection, host: host, caFile: caFile) } catch {
                    return .failure(WHIPConnectError(error.description))
                }
            } else {
                stream = connection
            }
        }
        let t = TURNClient(
            server: server, base: base, username: username, password: password, seed: seed,
            hmacSHA1: { Crypto.hmacSHA1(key: $0, data: $1) },
            longTermKey: { Crypto.stunLongTermKey(username: $0, realm: $1, password: $2) },
            overTCP: tcp)
        func send() {
            while let b = t.pollTransmit() {
                if let stream {
                    b.bytes.withUnsafeBytes { stream.write($0) }
                } else {
                    b.bytes.withUnsafeBytes { try? socket.send($0, to: to, from: socket.isWildcard ? SocketAddress(base) : nil) }
                }
            }
        }
        t.start(now: Clock.monotonicMicros())
        SetUpLoop(socket: socket, stream: stream).run(
            for: 7_000_000, idle: 50_000, done: { t.state != .allocating || stream?.closed == true }, step: { t.step(now: $0) },
            flush: send,
            datagram: { bytes, from, _, now in
                if stream == nil && from == to { _ = t.handle(bytes, now: now) }
            },
            message: { m, now in _ = t.handle(m, now: now) })
        send()
        var reason =
            stream?.closed == true ? "the TURN server \(server) closed the TCP connection" : "the TURN server \(server) does not answer"
        while let e = t.pollEvent() { if case let .failed(r) = e { reason = r.description } }
        return t.state == .allocated ? .success((t, stream)) : .failure(WHIPConnectError(reason))
    }

    /// Server-reflexive candidates: the gatherer's Binding requests on the media socket itself (so
    /// the mapping is the one media will use), for at most ~4.5 s.
    static func gatherReflexive(socket: UDPSocket, hosts: [ICECandidate], servers: [STUNAddress]) -> [ICECandidate] {
        var found: [ICECandidate] = []
        for r in queryReflexive(socket: socket, hosts: hosts, servers: servers) {
            if case let .reflexive(c, _, _, redundant, _) = r, !redundant, !found.contains(c) { found.append(c) }
        }
        return found
    }

    /// Runs an `ICEGatherer` on `socket` until every server answered or gave up (≤ 4.5 s) and
    /// returns what it found, in order (also the connectivity pre-flight's STUN check).
    static func queryReflexive(socket: UDPSocket, hosts: [ICECandidate], servers: [STUNAddress]) -> [ICEGatherer.Result] {
        guard !servers.isEmpty, let host = hosts.first else { return [] }
        let seed = SecureRandom.bytes(8).reduce(0) { $0 << 8 | UInt64($1) }
        let g = ICEGatherer(hosts: hosts, servers: servers, seed: seed)
        var results: [ICEGatherer.Result] = []
        SetUpLoop(socket: socket).run(
            for: 4_500_000, idle: 50_000, done: { g.isDone }, step: { g.step(now: $0) },
            flush: {
                while let t = g.pollTransmit() { socket.send(t) }
                while let r = g.pollResult() { results.append(r) }
            },
            datagram: { bytes, from, to, now in
                if let from = STUNAddress(from) {
                    _ = g.handle(bytes, from: from, to: to.flatMap { STUNAddress($0) } ?? host.address, now: now)
                }
            })
        return results
    }
}
