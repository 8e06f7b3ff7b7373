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
    /// Offer host candidates of these interfaces only (`--ice-interface`, repeatable); empty:
    /// every usable one.
    public var interfaces: [String] = []
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
    let entityTag: Mutex<String?>
    /// The host candidates' plan and the candidates offered (replaced when the interfaces
    /// change and ICE restarts on the new ones).
    let hosts: HostWatch
    /// The address a publisher session is given as its local one: the socket's own — the
    /// wildcard address when there is a host candidate per interface (the session then names
    /// each datagram's source), else the host candidate's.
    public var sessionLocal: STUNAddress { STUNAddress(socket.localAddress).flatMap { $0.ip.allSatisfy { $0 == 0 } ? $0 : nil } ?? local }
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
        let plan = try Self.hostPlan(options)
        let (socket, hosts): (UDPSocket, [ICECandidate])
        do { (socket, hosts) = try plan.openSocket() } catch { throw WHIPConnectError("cannot open the media socket: \(error)") }
        // The first host (the address routed toward the endpoint) is where STUN and TURN are
        // asked from.
        let local = hosts[0].address
        let openedMicros = Clock.monotonicMicros()
        // Trickle ICE (RFC 9725 §4.3.2): with servers to ask, the offer goes with the host
        // candidate at once and the rest is gathered while the POST is in flight. The relay and
        // no-host policies have nothing to offer before gathering: they gather first.
        let trickling = options.trickle && options.policy == .all && !options.iceServers.isEmpty
        var candidates: [ICECandidate]
        var (turn, turnTCP, turnFailures): (TURNClient?, (any TURNStream)?, [String]) = (nil, nil, [])
        if !trickling {
            let g = try gather(options, socket: socket, local: local, hosts: hosts)
            (candidates, turn, turnTCP, turnFailures) = (g.candidates, g.turn, g.turnTCP, g.turnFailures)
        } else {
            candidates = hosts
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
                    let g = try gather(options, socket: socket, local: local, hosts: hosts)
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
                announced, options: options, socket: socket, local: local, hosts: hosts, existing: candidates, turn: &turn,
                turnTCP: &turnTCP,
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

        let families = plan.families
        let remotes = n.candidates.filter { families.contains($0.address.ip.count) }
        guard let first = remotes.first(where: { $0.address.ip.count == local.ip.count }) ?? remotes.first,
            let destination = SocketAddress(first.address)
        else {
            throw refuse(
                "the answer has no ICE candidate pubbot can reach from \(hosts.map(\.address.ipText).joined(separator: ", ")) (trickle ICE by PATCH is not supported)"
            )
        }
        if hosts.count > 1 || plan.isWildcard { summary.append(("hostCandidates", plan.text)) }
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
            resource: resource, negotiated: n, config: c, socket: socket, local: local, hostPlan: plan, hostOptions: options,
            transport: WebRTCTransport(ice: ice, dtls: dtls, turn: turn), turnTCP: turnTCP, summary: summary, token: options.token,
            localCandidates: options.policy == .noHost ? candidates.filter { $0.kind != .host } : candidates,
            openedMicros: openedMicros, warnings: warnings)
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
        if let name = options.interfaces.first {
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
        hostPlan: HostPlan? = nil, hostOptions: WHIPOptions? = nil, transport: WebRTCTransport, turnTCP: (any TURNStream)?,
        summary: [(String, String)], token: String?,
        localCandidates: [ICECandidate], openedMicros: Int64 = 0, warnings: [String] = []
    ) {
        hosts = HostWatch(plan: hostPlan, offered: localCandidates, options: hostOptions, port: socket.localAddress.port)
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
}
