import Synchronization
public import HTTPSignaling
public import Signalling
public import WebRTC
public import ICE
public import DTLS
public import Transport
public import PublisherEngine
import RTPCore
import Crypto
import Platform
import MediaCodecs

/// Why a WHIP publish could not start: one message a person can act on, never a secret.
public struct WHIPConnectError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ d: String) { description = d }
}

/// A session the server holds (a WHIP or WHEP resource), ended once: DELETE on its URL (RFC 9725
/// §4.3), whichever way out comes first.
final class SessionEnd: Sendable {
    let resource: WHIPSession
    let token: String?
    let exchange: SignalingExchange
    /// Set by the first `end()`: a signal handler's and the run's own end may race.
    let ended = Atomic<Bool>(false)
    init(_ resource: WHIPSession, token: String?, exchange: SignalingExchange = .whip) {
        self.resource = resource
        self.token = token
        self.exchange = exchange
    }

    func end() -> WHIPError? {
        guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return nil }
        do { try SignalingClient.delete(resource, token: token, exchange: exchange) } catch { return error }
        return nil
    }
}

/// What the user asked for, for one WHIP connection.
public struct WHIPOptions: Sendable {
    public var endpoint: String
    public var token: String?
    /// `stun:HOST:PORT` servers for server-reflexive candidates (besides the endpoint's Link headers).
    public var iceServers: [ICEServerURL] = []
    /// Offer host candidates of this interface only.
    public var interface: String?
    /// Long-term credentials for the `turn:` servers (RFC 8656 §9.2; never printed).
    public var turnUsername: String?
    public var turnCredential: String?
    /// CA certificates (PEM) to verify a `turns:` server with; nil: the system's store.
    public var turnCAFile: String?
    /// Which candidates to offer and check (as `RTCConfiguration.iceTransportPolicy`; `noHost`
    /// keeps the host address out of the offer — checks still leave from it).
    public enum Policy: String, Sendable {
        case all, relay, noHost = "no-host"
        /// The host candidate alone (the connectivity pre-flight's direct-path check).
        case host
    }
    public var policy = Policy.all
    /// `--strict`: an answer that departs from RFC 9725 §4.2 (a 200 or 202, no Location, another
    /// Content-Type) is an error instead of a warning.
    public var strict = false
    /// Trickle ICE (RFC 9725 §4.3.2, RFC 8838): the offer carries the host candidate and goes at
    /// once; the server-reflexive and relayed ones, gathered while the POST is in flight, follow
    /// in one PATCH. `--no-trickle`: gather everything first, one complete offer.
    public var trickle = true
    /// A load test's URL template: `{room}` and `{publisher}` (0-based; the publisher's index in
    /// its room) filled in, e.g. `http://h/whip?room={room}` or `https://h/{room}-{publisher}/whep`.
    public static func expand(_ template: String, room: Int, publisher: Int) -> String {
        template.replacing("{room}", with: String(room)).replacing("{publisher}", with: String(publisher))
    }
    public init(endpoint: String, token: String?) {
        self.endpoint = endpoint
        self.token = token
    }
}

/// One WHIP publish set up (RFC 9725 §4.2): the socket and its host candidate, server-reflexive
/// candidates from STUN servers, the offer POSTed, the answer applied to the publisher's
/// configuration (payload types, extension IDs, RTX, simulcast, the feedback the server gives),
/// and the sans-IO transport (ICE controlling, DTLS in the role the answer left) ready to run
/// inside the publisher session. `end()` DELETEs the session.
public final class WHIPConnection: @unchecked Sendable {
    public let resource: WHIPSession
    public let negotiated: NegotiatedSession
    public let config: PublisherConfig
    public let socket: UDPSocket
    public let local: STUNAddress
    public let transport: WebRTCTransport
    /// The TURN server's TCP connection, when the relay is reached over TCP (the session's driver
    /// reads and writes it).
    public let turnTCP: (any TURNStream)?
    /// What the answer decided, for the summary and stats (name → value, in order).
    public let summary: [(String, String)]
    let ending: SessionEnd
    /// The candidates the offer carried (a restart's PATCH carries them again), and the ICE
    /// session's entity-tag (the 201's, then each restart's).
    let localCandidates: [ICECandidate]
    let entityTag: Mutex<String?>
    /// When `open` began (monotonic µs, before gathering): time to first media counts from here.
    public let openedMicros: Int64
    /// What the user should hear once (a trickle the server refused).
    public let warnings: [String]
    /// The STUN/TURN servers the endpoint announced in its 201 (RFC 9725 §4.6).
    public var announcedICEServers: [ICEServerLink] { resource.iceServers }

    /// Sets the connection up; blocks for the STUN queries (≤ 4 s) and the HTTP exchange.
    public static func open(
        _ options: WHIPOptions, base: PublisherConfig, certificate: DTLSCertificate,
        sleep: (Int64) -> Void
    ) throws(WHIPConnectError) -> WHIPConnection {
        let bindAddress = try Self.bindAddress(options)
        let socket: UDPSocket
        do { socket = try UDPSocket(bind: bindAddress) } catch { throw WHIPConnectError("cannot open the media socket: \(error)") }
        guard let local = STUNAddress(socket.localAddress) else { throw WHIPConnectError("the media socket has no usable address") }
        let openedMicros = Clock.monotonicMicros()
        // Trickle ICE (RFC 9725 §4.3.2): with servers to ask, the offer goes with the host
        // candidate at once and the rest is gathered while the POST is in flight. The relay and
        // no-host policies have nothing to offer before gathering: they gather first.
        let trickling = options.trickle && options.policy == .all && !options.iceServers.isEmpty
        var candidates: [ICECandidate]
        var (turn, turnTCP, turnFailures): (TURNClient?, (any TURNStream)?, [String]) = (nil, nil, [])
        if !trickling {
            let g = try gather(options, socket: socket, local: local)
            (candidates, turn, turnTCP, turnFailures) = (g.candidates, g.turn, g.turnTCP, g.turnFailures)
        } else {
            candidates = [ICECandidate.host(local)]
        }
        let offered = options.policy == .noHost ? candidates.filter { $0.kind != .host } : candidates
        let (offer, ssrcs) = makeOffer(base, candidates: offered, certificate: certificate)
        let (audioSSRC, videoSSRC, videoRTXSSRC, oneEncoding) = (ssrcs.audio, ssrcs.video, ssrcs.videoRTX, ssrcs.oneEncoding)
        let (ufrag, password) = (offer.iceUfrag, offer.icePassword)
        let resource: WHIPSession
        var trickled: [ICECandidate] = []
        var gatherError: WHIPConnectError?
        if trickling {
            // The POST on a thread of its own; this one gathers on the media socket meanwhile.
            let posted = Mutex<Result<WHIPSession, WHIPError>?>(nil)
            let (endpoint, sdp, token, strict) = (options.endpoint, offer.sdp, options.token, options.strict)
            // The thread is joined before `sleep` goes out of scope.
            withoutActuallyEscaping(sleep) { sleep in
                nonisolated(unsafe) let wait = sleep
                let post = JoinableThread(name: "pubbot-whip-post") {
                    let r = Result { () throws(WHIPError) in
                        try SignalingClient.publish(endpoint: endpoint, offer: sdp, token: token, strict: strict, sleep: wait)
                    }
                    posted.withLock { $0 = r }
                }
                do throws(WHIPConnectError) {
                    let g = try gather(options, socket: socket, local: local)
                    trickled = g.candidates.filter { $0.kind != .host }
                    (turn, turnTCP, turnFailures) = (g.turn, g.turnTCP, g.turnFailures)
                } catch { gatherError = error }
                post.join()
            }
            switch posted.withLock({ $0 }) {
            case let .success(r)?: resource = r
            case let .failure(e)?: throw WHIPConnectError(e.description)
            case nil: throw WHIPConnectError("the POST did not finish")
            }
        } else {
            do {
                resource = try SignalingClient.publish(
                    endpoint: options.endpoint, offer: offer.sdp, token: options.token, strict: options.strict, sleep: sleep)
            } catch {
                throw WHIPConnectError(error.description)
            }
        }
        let answeredMicros = Clock.monotonicMicros()
        // From here on the server holds a session: end it whatever goes wrong next.
        func refuse(_ message: String) -> WHIPConnectError {
            _ = try? SignalingClient.delete(resource, token: options.token)
            return WHIPConnectError(message)
        }
        if let gatherError { throw refuse(gatherError.description) }
        candidates += trickled
        let n: NegotiatedSession
        do { n = try NegotiatedSession.from(answer: resource.answer, offer: offer) } catch { throw refuse(error.description) }
        guard n.audio != nil || n.video != nil else {
            throw refuse("the answer accepts neither Opus audio nor VP8 video (no common codec): nothing to publish")
        }
        var configured = base
        configured.audioSSRC = audioSSRC
        if oneEncoding { (configured.videoSSRC, configured.videoRTXSSRC) = (videoSSRC, videoRTXSSRC) }
        var (c, summary) = configured.applying(n, oneEncoding: oneEncoding)
        if let t = turn, let relay = t.relay {
            summary.append(
                (
                    "relay",
                    "\(relay) via TURN \(t.server) over \(turnTCP is TLSStream ? "TLS" : t.overTCP ? "TCP" : "UDP") (\((t.allocatedMicros ?? 0) - (t.startedMicros ?? 0)) µs to allocate)"
                ))
        }
        // RFC 9725 §4.6: the STUN/TURN servers the endpoint announced in its 201, used where the
        // user gave none of that kind; what they give is trickled (§4.3.2) — an ICE-lite or
        // full server that does not take PATCH still learns a relayed address from its checks
        // (a peer-reflexive candidate, RFC 8445 §7.3.1.3).
        let announced = serverICEServers(resource.iceServers, options: options)
        if !announced.isEmpty {
            let fresh = gatherAnnounced(
                announced, options: options, socket: socket, local: local, existing: candidates, turn: &turn, turnTCP: &turnTCP,
                turnFailures: &turnFailures, summary: &summary)
            candidates += fresh
            trickled += fresh
        }
        // Everything gathered after the offer went, in one PATCH with the 201's ETag and
        // end-of-candidates (RFC 9725 §4.3.2). A server that does not take it keeps the session
        // on what the offer carried (its checks may still find the rest: peer-reflexive, RFC
        // 8445 §7.3.1.3): said once.
        var warnings: [String] = []
        if !trickled.isEmpty {
            let t = trickle(trickled, resource: resource, offer: offer, n: n, token: options.token)
            let after = "\((Clock.monotonicMicros() - answeredMicros) / 1000) ms after the answer"
            summary.append(("trickle", t.text + (t.taken ? " \(after)" : "")))
            if !t.taken { warnings.append("trickle ICE: \(t.text)") }
        } else if trickling {
            summary.append(("trickle", "nothing gathered beyond the offer's host candidate"))
        }
        if !turnFailures.isEmpty { summary.append(("turnFailures", turnFailures.joined(separator: "; "))) }
        if options.policy != .all { summary.append(("icePolicy", options.policy.rawValue)) }
        summary.append(("dtlsRole", n.dtlsServer ? "server (answer setup:active)" : "client (answer setup:passive)"))

        let remotes = n.candidates.filter { $0.address.ip.count == local.ip.count }
        guard let first = remotes.first, let destination = SocketAddress(first.address) else {
            throw refuse("the answer has no ICE candidate pubbot can reach from \(local.ipText) (trickle ICE by PATCH is not supported)")
        }
        c.destination = destination
        c.bundle = true
        guard let fingerprint = DTLSCertificate.parseFingerprint(n.fingerprint) else {
            throw refuse("the answer's a=fingerprint is malformed")
        }
        let seed = SecureRandom.bytes(8).reduce(0) { $0 << 8 | UInt64($1) }
        let ice = ICEAgent(
            role: .controlling, local: .init(ufrag: ufrag, password: password), remote: .init(ufrag: n.iceUfrag, password: n.icePassword),
            tieBreaker: seed ^ 0x5A5A_5A5A, seed: seed, hmacSHA1: { Crypto.hmacSHA1(key: $0, data: $1) })
        // With the relay policy only the relayed candidate is checked (RFC 8445 §5.1.1 lets an
        // agent limit its candidates); otherwise all of them.
        for cand in candidates { ice.addLocal(cand) }
        for r in remotes { ice.addRemote(r) }
        let dtls: DTLSEndpoint
        do {
            dtls = try DTLSEndpoint(role: n.dtlsServer ? .server : .client, certificate: certificate, remoteFingerprint: fingerprint)
        } catch {
            throw refuse(error.description)
        }
        if turn != nil && options.policy != .relay { turn?.permit(first.address) } // early permission for the server's candidate
        return WHIPConnection(
            resource: resource, negotiated: n, config: c, socket: socket, local: local,
            transport: WebRTCTransport(ice: ice, dtls: dtls, turn: turn), turnTCP: turnTCP, summary: summary, token: options.token,
            localCandidates: options.policy == .noHost ? candidates.filter { $0.kind != .host } : candidates,
            openedMicros: openedMicros, warnings: warnings)
    }

    /// This socket's candidates: the host one, server-reflexive ones from the STUN servers, and a
    /// relayed one from the first TURN server that allocates (RFC 8656) — as the policy allows.
    public static func gather(
        _ options: WHIPOptions, socket: UDPSocket, local: STUNAddress
    ) throws(WHIPConnectError) -> (candidates: [ICECandidate], turn: TURNClient?, turnTCP: (any TURNStream)?, turnFailures: [String]) {
        var candidates = [ICECandidate.host(local)]
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
            candidates += gatherReflexive(socket: socket, host: candidates[0], servers: stunServers)
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
        local: STUNAddress, existing: [ICECandidate], turn: inout TURNClient?, turnTCP: inout (any TURNStream)?,
        turnFailures: inout [String], summary: inout [(String, String)]
    ) -> [ICECandidate] {
        var fresh: [ICECandidate] = []
        let stunGiven = options.iceServers.contains { !$0.isTURN }
        if !stunGiven && options.policy != .relay && options.policy != .host {
            let stun = announced.filter { !$0.url.isTURN }.compactMap { s -> STUNAddress? in
                (try? SocketAddress(host: s.url.host, port: s.url.port)).flatMap { STUNAddress($0) }
            }
            fresh += gatherReflexive(socket: socket, host: .host(local), servers: stun).filter { !existing.contains($0) }
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

    /// The offer (fresh ICE credentials, the certificate's fingerprint, audio, simulcast RIDs or
    /// one encoding's SSRCs) and the SSRCs it announces.
    static func makeOffer(
        _ base: PublisherConfig, candidates offered: [ICECandidate], certificate: DTLSCertificate
    ) -> (WHIPOffer, (audio: UInt32, video: UInt32, videoRTX: UInt32, oneEncoding: Bool)) {
        let credentials = ICEAgent.Credentials(random: SecureRandom.bytes(32))
        var offer = WHIPOffer(
            iceUfrag: credentials.ufrag, icePassword: credentials.password, fingerprint: certificate.sdpFingerprint, candidates: offered)
        offer.audio = base.sendAudio
        offer.codecs = base.videoCodecPreference.isEmpty ? [base.videoCodec] : base.videoCodecPreference
        // One layer goes as one encoding without RIDs, as a browser sends one; more as simulcast.
        let oneEncoding = base.sendVideo && base.layers.count == 1
        offer.rids = base.sendVideo && !oneEncoding ? base.layers.map(\.rid) : []
        // A section without RIDs announces its SSRCs (and then uses them).
        let audioSSRC = base.audioSSRC ?? (SecureRandom.uint32() | 1)
        offer.audioSSRC = base.sendAudio ? audioSSRC : nil
        var videoSSRC = base.videoSSRC ?? (SecureRandom.uint32() | 2)
        while videoSSRC == audioSSRC { videoSSRC = SecureRandom.uint32() | 2 }
        var videoRTXSSRC = base.videoRTXSSRC ?? (SecureRandom.uint32() | 4)
        while videoRTXSSRC == audioSSRC || videoRTXSSRC == videoSSRC { videoRTXSSRC = SecureRandom.uint32() | 4 }
        if oneEncoding { offer.videoSSRC = (videoSSRC, base.rtx ? videoRTXSSRC : nil) }
        offer.cname = base.cname
        offer.sessionID = UInt64(SecureRandom.uint32()) << 16 | 1
        return (offer, (audioSSRC, videoSSRC, videoRTXSSRC, oneEncoding))
    }

    /// Where the media socket binds: the address the kernel routes toward the endpoint from, or
    /// the named interface's (one socket, one host candidate: ICE then knows exactly where each
    /// datagram left from). Port 0.
    public static func bindAddress(_ options: WHIPOptions) throws(WHIPConnectError) -> SocketAddress {
        guard let (host, port) = endpointHostPort(options.endpoint) else {
            throw WHIPConnectError("'\(SignalingClient.redacted(options.endpoint))' is not an http:// or https:// URL")
        }
        let server: SocketAddress
        do { server = try SocketAddress(host: host, port: port) } catch {
            throw WHIPConnectError("cannot resolve the endpoint's host '\(host)': \(error)")
        }
        if let name = options.interface {
            let addresses = LocalInterfaces.hostAddresses(interface: name, includeLoopback: true, ipv6: server.isIPv6)
                .filter { ($0.ip.count == 16) == server.isIPv6 }
            guard let a = addresses.first, let s = SocketAddress(STUNAddress(ip: a.ip, port: 0)) else {
                throw WHIPConnectError("--ice-interface \(name): no usable \(server.isIPv6 ? "IPv6" : "IPv4") address on that interface")
            }
            return s
        }
        do { return try server.routeSource() } catch { throw WHIPConnectError("no route to the endpoint \(host): \(error)") }
    }

    init(
        resource: WHIPSession, negotiated: NegotiatedSession, config: PublisherConfig, socket: UDPSocket, local: STUNAddress,
        transport: WebRTCTransport, turnTCP: (any TURNStream)?, summary: [(String, String)], token: String?,
        localCandidates: [ICECandidate], openedMicros: Int64 = 0, warnings: [String] = []
    ) {
        self.localCandidates = localCandidates
        self.openedMicros = openedMicros
        self.warnings = warnings
        entityTag = Mutex(resource.etag)
        self.turnTCP = turnTCP
        self.resource = resource
        self.negotiated = negotiated
        self.config = config
        self.socket = socket
        self.local = local
        self.transport = transport
        self.summary = summary
        ending = SessionEnd(resource, token: token)
    }

    /// Ends the session on the server (DELETE, RFC 9725 §4.3); once. Returns the failure, if any.
    @discardableResult
    public func end() -> WHIPError? { ending.end() }

    /// `http(s)://host[:port]/…` → host and port (IPv6 in brackets).
    static func endpointHostPort(_ url: String) -> (String, Int)? {
        let lower = url.lowercased()
        let https = lower.hasPrefix("https://")
        guard https || lower.hasPrefix("http://") else { return nil }
        let rest = url.dropFirst(https ? 8 : 7)
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        guard !authority.isEmpty else { return nil }
        var port = https ? 443 : 80
        var host = authority
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { guard let p = Int(after.dropFirst()), (1...65535).contains(p) else { return nil }; port = p }
        } else if let colon = authority.lastIndex(of: ":") {
            guard let p = Int(authority[authority.index(after: colon)...]), (1...65535).contains(p) else { return nil }
            port = p
            host = authority[..<colon]
        }
        return host.isEmpty ? nil : (String(host), port)
    }

    /// A random CNAME for a WebRTC session (RFC 7022 §4.2: short-term persistent, random), 16
    /// characters as libwebrtc makes it. (The length matters in practice: aiortc 1.16's SDES
    /// parser, rtp.py RtcpSdesPacket.parse, skips only two bytes after a chunk's items, right for
    /// a 16-byte CNAME, and loses the whole compound otherwise.)
    public static func randomCNAME() -> String { ICEAgent.Credentials.iceChars(SecureRandom.bytes(16)) }

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
                    b.bytes.withUnsafeBytes { try? socket.send($0, to: to) }
                }
            }
        }
        t.start(now: Clock.monotonicMicros())
        SetUpLoop(socket: socket, stream: stream).run(
            for: 7_000_000, idle: 50_000, done: { t.state != .allocating || stream?.closed == true }, step: { t.step(now: $0) },
            flush: send,
            datagram: { bytes, from, now in
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
    static func gatherReflexive(socket: UDPSocket, host: ICECandidate, servers: [STUNAddress]) -> [ICECandidate] {
        var found: [ICECandidate] = []
        for r in queryReflexive(socket: socket, host: host, servers: servers) {
            if case let .reflexive(c, _, _, redundant, _) = r, !redundant, !found.contains(c) { found.append(c) }
        }
        return found
    }

    /// Runs an `ICEGatherer` on `socket` until every server answered or gave up (≤ 4.5 s) and
    /// returns what it found, in order (also the connectivity pre-flight's STUN check).
    static func queryReflexive(socket: UDPSocket, host: ICECandidate, servers: [STUNAddress]) -> [ICEGatherer.Result] {
        guard !servers.isEmpty else { return [] }
        let seed = SecureRandom.bytes(8).reduce(0) { $0 << 8 | UInt64($1) }
        let g = ICEGatherer(hosts: [host], servers: servers, seed: seed)
        var results: [ICEGatherer.Result] = []
        SetUpLoop(socket: socket).run(
            for: 4_500_000, idle: 50_000, done: { g.isDone }, step: { g.step(now: $0) },
            flush: {
                while let t = g.pollTransmit() {
                    if let to = SocketAddress(t.to) { t.bytes.withUnsafeBytes { try? socket.send($0, to: to) } }
                }
                while let r = g.pollResult() { results.append(r) }
            },
            datagram: { bytes, from, now in
                if let from = STUNAddress(from) { _ = g.handle(bytes, from: from, to: host.address, now: now) }
            })
        return results
    }
}
