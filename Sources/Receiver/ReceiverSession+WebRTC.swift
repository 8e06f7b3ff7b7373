public import RTPCore
public import DTLS
public import ICE
public import WebRTC
import Net
import SRTP
import Crypto

/// The receiver as a WebRTC endpoint (`receive --whip-listen`): how its media socket is named
/// in answers, and the certificate its DTLS uses.
public struct WebRTCListenConfig: Sendable {
    public var certificate: DTLSCertificate
    /// The host candidates (the media socket's addresses as publishers reach it): one, or on a
    /// dual-stack socket (`[::]`) one per interface and family. The first of a family is the
    /// local side of that family's pairs (the socket does not tell which address a datagram
    /// reached).
    public var locals: [STUNAddress]
    /// The first host candidate.
    public var local: STUNAddress { locals[0] }
    /// A publisher whose ICE has not connected this long after the answer is abandoned and its
    /// slot freed (its DTLS has its own deadline, `WebRTCTransport.dtlsTimeoutMicros`).
    var iceTimeoutMicros: Int64 = 15_000_000
    /// A connected publisher (the full-ICE side, RFC 8445 §8.2) that sent no consent check this
    /// long has gone (RFC 7675 §5.1: it checks every 4–6 s and gives up after 30 s itself).
    var consentTimeoutMicros: Int64 = 30_000_000
    public init(certificate: DTLSCertificate, local: STUNAddress) {
        self.init(certificate: certificate, locals: [local])
    }

    /// `locals` must not be empty.
    public init(certificate: DTLSCertificate, locals: [STUNAddress]) {
        precondition(!locals.isEmpty, "a WebRTC receiver needs a host candidate")
        self.certificate = certificate
        self.locals = locals
    }

    /// The media socket's port, once the kernel has given one.
    public mutating func setPort(_ port: UInt16) {
        for i in locals.indices { locals[i].port = port }
    }

    /// Whether a remote candidate's family is one of ours (IPv4 pairs with IPv4: RFC 8445 §6.1.2.2).
    func reaches(_ c: ICECandidate) -> Bool { locals.contains { $0.ip.count == c.address.ip.count } }

    /// Our address in `remote`'s family (the first of it; a loopback one toward a loopback peer).
    func local(toward remote: STUNAddress) -> STUNAddress {
        let family = locals.filter { $0.ip.count == remote.ip.count }
        return family.first { Self.isLoopback($0) == Self.isLoopback(remote) } ?? family.first ?? locals[0]
    }

    static func isLoopback(_ a: STUNAddress) -> Bool {
        a.ip.count == 4 ? a.ip[0] == 127 : a.ip == [UInt8](repeating: 0, count: 15) + [1]
    }
}

/// A publisher the WHIP endpoint accepted (from its offer and the answer given): the session
/// waits for its ICE checks.
public struct WebRTCPublisherSpec: Sendable, Equatable {
    public var resource: String
    public var localUfrag: String
    public var localPassword: String
    public var remoteUfrag: String
    public var remotePassword: String
    public var remoteFingerprint: [UInt8]
    public var audioPayloadTypes: Set<UInt8>
    public var videoPayloadTypes: Set<UInt8>
    /// Each video payload type's codec (one missing here is VP8).
    public var videoCodecs: [UInt8: VideoCodec] = [:]
    public var rtxPayloadTypes: Set<UInt8>
    public var extensions: RTPExtensionIDs
    /// The receiver made the offer (a WHEP subscriber, draft-ietf-wish-whep): full ICE, starting
    /// controlling (a full-ICE server starts controlling too; RFC 8445 §7.3.1.1 settles it), checks
    /// to the answer's `remoteCandidates`; DTLS server when the answer said `setup:active`.
    public var offerer = false
    /// The server made the offer and the receiver answered it (a WHEP server's 406 counter-offer,
    /// draft-ietf-wish-whep-04): full ICE, controlled — controlling when that offer was ICE-lite
    /// (`remoteLite`, RFC 8445 §6.1.1) — checks to the offer's `remoteCandidates`; DTLS client
    /// (the answer said `setup:active`).
    public var counterOffered = false
    public var remoteLite = false
    public var dtlsServer = false
    public var remoteCandidates: [ICECandidate] = []
    /// The candidates this side offered (a WHEP subscriber's host candidate): what an ICE
    /// restart's PATCH carries again.
    public var localCandidates: [ICECandidate] = []
    /// RTX SSRC → media SSRC, from the answer's `a=ssrc-group:FID` (a server that rewrites SSRCs
    /// sends no repaired-rtp-stream-id).
    public var rtxToMedia: [UInt32: UInt32] = [:]
    /// Reduced-size RTCP (RFC 5506) negotiated; otherwise every feedback compound starts with a
    /// receiver report and SDES (RFC 3550 §6.1) — Janus drops a NACK that travels alone.
    public var reducedSizeRTCP = true
    public var feedback = NegotiatedFeedback()
    /// A WHEP subscriber's TURN allocation (made by its driver on the receive socket before the
    /// offer): its relayed address is a local candidate, checks and media through it are
    /// wrapped for the server (RFC 8656), and what the server relays is unwrapped.
    public var relay: TURNRelay?
    /// Only the relayed candidate is checked from (`--ice-policy relay`).
    public var relayOnly = false

    public init(
        resource: String, localUfrag: String, localPassword: String, remoteUfrag: String, remotePassword: String,
        remoteFingerprint: [UInt8],
        audioPayloadTypes: Set<UInt8>, videoPayloadTypes: Set<UInt8>, rtxPayloadTypes: Set<UInt8>, extensions: RTPExtensionIDs
    ) {
        self.resource = resource
        self.localUfrag = localUfrag
        self.localPassword = localPassword
        self.remoteUfrag = remoteUfrag
        self.remotePassword = remotePassword
        self.remoteFingerprint = remoteFingerprint
        self.audioPayloadTypes = audioPayloadTypes
        self.videoPayloadTypes = videoPayloadTypes
        self.rtxPayloadTypes = rtxPayloadTypes
        self.extensions = extensions
    }
}

/// A TURN allocation handed from the set-up driver to the receive thread (once; only that thread
/// uses it after).
public final class TURNRelay: @unchecked Sendable, Equatable {
    public let client: TURNClient
    public init(_ client: TURNClient) { self.client = client }
    public static func == (a: TURNRelay, b: TURNRelay) -> Bool { a === b }
}

/// How the WebRTC sessions the receiver held ended, by cause: their slots are free again.
public struct WebRTCEndings: Sendable, Equatable {
    /// ICE never completed within `iceTimeoutMicros` of the answer.
    public var abandoned = 0
    /// The peer stopped its consent checks (RFC 7675).
    public var consentLost = 0
    /// ICE or DTLS failed (a wrong fingerprint, DTLS that never finished, close_notify …).
    public var failed = 0
    /// Ended by the peer (WHIP DELETE).
    public var closed = 0
    public init() {}
}

/// What became of a WebRTC publisher's transport (for the snapshot).
public struct WebRTCPublisherState: Sendable, Equatable {
    /// Where one WebRTC publisher's (or a WHEP server's) session stands.
    public enum State: String, Sendable, Equatable {
        /// Answered; ICE and DTLS under way.
        case new
        /// DTLS gave the keys: media flows.
        case connected
        /// ICE never connected within the deadline after the answer: its slot was freed.
        case abandoned
        /// The transport failed (ICE, DTLS, consent, the keys): `failure` says why.
        case failed
        /// Ended in order: DELETE, BYE or the peer's DTLS close_notify.
        case closed
    }

    public var resource: String
    public var state: State
    public var remote: String?
    /// Why it ended badly: the transport's failure, or the session's (no ICE within the
    /// deadline, consent lost, the keys refused).
    public var failure: TransportFailure?
    /// The transport's own statistics (roles, cipher, the selected pair, ICE and DTLS times —
    /// the offerer's own, a WHEP subscriber's — and the pair's round trip).
    public var transport: TransportStats?
}

/// One WebRTC publisher: its transport (ICE-lite, DTLS client) and, once connected, its keys
/// and its `PeerSession`.
final class WebRTCPeer {
    let spec: WebRTCPublisherSpec
    let transport: WebRTCTransport
    var srtpIn: SRTPSession?
    var peer: PeerSession?
    var state: WebRTCPublisherState
    /// When the endpoint handed it over (the answer went out).
    let addedMicros: Int64
    var consentLost = false
    /// When the transport's own timers (consent checks, DTLS retransmissions) next want it
    /// stepped once it is connected; 0 after a datagram reached it (step it again).
    var transportWake: Int64 = 0
    init(spec: WebRTCPublisherSpec, transport: WebRTCTransport, now: Int64) {
        self.spec = spec
        self.transport = transport
        addedMicros = now
        state = WebRTCPublisherState(resource: spec.resource, state: .new)
    }
}

extension ReceiverSession {
    /// A publisher the endpoint answered: ICE-lite agent (controlled) with the answer's
    /// credentials, DTLS client (the answer said `setup:active`) checking the offer's fingerprint.
    /// Or the server a WHEP subscriber offered to (`spec.offerer`): full ICE, controlling, checks
    /// to its candidates, DTLS in the role its answer left; or whose counter-offer it answered
    /// (`spec.counterOffered`): full ICE, controlled, DTLS client.
    public func addPublisher(_ spec: WebRTCPublisherSpec, seed: UInt64, now: Int64) {
        guard let w = webrtc, rtcPending[spec.localUfrag] == nil else { return }
        let full = spec.offerer || spec.counterOffered
        let controlling = spec.offerer || (spec.counterOffered && spec.remoteLite)
        let ice = ICEAgent(
            role: controlling ? .controlling : .controlled, local: .init(ufrag: spec.localUfrag, password: spec.localPassword),
            remote: .init(ufrag: spec.remoteUfrag, password: spec.remotePassword), tieBreaker: seed, lite: !full, seed: seed,
            hmacSHA1: { Crypto.hmacSHA1(key: $0, data: $1) })
        if !spec.relayOnly {
            // A subscriber's offered host candidates as offered (their priorities, network-id and
            // -cost); an endpoint's are its socket's addresses.
            let offered = full ? spec.localCandidates.filter { $0.kind == .host } : []
            if offered.isEmpty { for l in w.locals { ice.addLocal(.host(l)) } } else { for c in offered { ice.addLocal(c) } }
        }
        let turn = spec.relay?.client
        if let turn, let relay = turn.relay {
            ice.addLocal(
                ICECandidate(
                    foundation: "relay" + String(relay.port), priority: ICECandidate.priority(kind: .relay), address: relay, kind: .relay,
                    relatedAddress: turn.mapped))
        }
        for r in spec.remoteCandidates where w.reaches(r) { ice.addRemote(r) }
        do {
            let dtls = try DTLSEndpoint(
                role: spec.offerer && spec.dtlsServer ? .server : .client, certificate: w.certificate,
                remoteFingerprint: spec.remoteFingerprint)
            let peer = WebRTCPeer(spec: spec, transport: WebRTCTransport(ice: ice, dtls: dtls, turn: turn), now: now)
            // What the TURN server relays comes from it: the session is known by its address.
            if let turn, let server = SocketAddress(turn.server) {
                for r in ice.remoteCandidates { turn.permit(r.address) }
                rtcByAddress[server] = peer
            }
            rtcPending[spec.localUfrag] = peer
            rtcPeers.append(peer)
            // Answers to our checks carry no USERNAME: known by the candidates' addresses.
            for r in ice.remoteCandidates { if let a = SocketAddress(r.address) { rtcByAddress[a] = peer } }
        } catch {
            snap.lastError = "dtls: \(error)"
        }
    }

    /// The publisher's session ended (WHIP DELETE): close_notify, and its datagrams are no longer
    /// accepted.
    public func removePublisher(resource: String) {
        guard let peer = rtcPeers.first(where: { $0.spec.resource == resource }) else { return }
        peer.transport.close()
        if peer.state.state != .failed { peer.state.state = .closed }
        release(peer)
    }

    /// An ICE restart a WHIP client asked for by PATCH (RFC 9725 §4.3.3), answered by the
    /// endpoint with `local`: the publisher's transport takes the new credentials (an ICE-lite
    /// agent: the client's next USE-CANDIDATE check selects the path again) while its media keeps
    /// arriving on the old path; DTLS and SRTP go on. False when no such session is live.
    @discardableResult
    /// `localCandidates`, when given, replace the agent's own (a WHEP subscriber's interfaces
    /// changed).
    public func restartPublisher(
        resource: String, local: ICEAgent.Credentials, remote: ICEAgent.Credentials, remoteCandidates: [ICECandidate],
        localCandidates: [ICECandidate]? = nil, now: Int64
    ) -> Bool {
        guard let w = webrtc, let peer = rtcPeers.first(where: { $0.spec.resource == resource }) else { return false }
        for (u, r) in rtcRestarted where r.peer === peer { rtcRestarted[u] = nil }
        rtcRestarted[local.ufrag] = (peer, local.password)
        peer.transport.restartICE(
            local: local, remote: remote, remoteCandidates: remoteCandidates.filter(w.reaches), localCandidates: localCandidates, now: now)
        for r in remoteCandidates { if let a = SocketAddress(r.address) { rtcByAddress[a] = peer } }
        peer.transportWake = 0
        after(peer, now: now)
        return true
    }

    /// Candidates a WHIP client trickled by PATCH (RFC 9725 §4.3.2). An ICE-lite agent checks
    /// nothing itself: they are noted, and their addresses find the session. False when no such
    /// session is live.
    @discardableResult
    public func addRemoteCandidates(resource: String, _ candidates: [ICECandidate]) -> Bool {
        guard let w = webrtc, let peer = rtcPeers.first(where: { $0.spec.resource == resource }) else { return false }
        for c in candidates where w.reaches(c) {
            peer.transport.ice.addRemote(c)
            if let a = SocketAddress(c.address) { rtcByAddress[a] = peer }
        }
        return true
    }

    /// Whether the first WebRTC peer's transport is connected now (ICE and DTLS done): a WHEP
    /// subscriber's one server, asked once a second by the fleet without a snapshot.
    public var transportConnected: Bool { rtcPeers.first?.state.state == .connected }

    /// The first publisher's path (a WHEP subscriber's only one): how long since a consent check
    /// was answered at `now` (RFC 7675; nil for an ICE-lite agent), and how long the
    /// last ICE restart took to select a new pair.
    public func transportConsentAge(now: Int64) -> Int64? { rtcPeers.first?.transport.ice.consentAge(at: now) }
    public var transportRestartRecoveryMicros: Int64? { rtcPeers.first?.transport.lastRestartRecoveryMicros }

    /// The transports' timers (DTLS retransmits, a full agent's checks and consent), and the
    /// deadlines that free a slot: ICE not connected `iceTimeoutMicros` after the answer
    /// (abandoned), no consent check from a connected full-ICE peer for `consentTimeoutMicros`.
    func stepTransports(now: Int64) -> Int64? {
        guard let w = webrtc else { return nil }
        var wake: Int64?
        var ended: [WebRTCPeer] = []
        for peer in rtcPeers {
            // A connected transport is stepped when its timer is due or a datagram reached it, not
            // on every step of the session (a subscriber fleet's sessions step 50 times a second:
            // stepping each ICE agent and DTLS endpoint every time was a fifth of their CPU).
            if peer.state.state == .new || (peer.state.state == .connected && (now >= peer.transportWake || !config.deadlineSteps)) {
                let t = peer.transport.step(now: now)
                if let t { wake = min(wake ?? t, t) }
                peer.transportWake = t ?? now + 1_000_000
                after(peer, now: now)
            } else if peer.state.state == .connected {
                wake = min(wake ?? peer.transportWake, peer.transportWake)
            }
            switch peer.state.state {
            case .new where peer.transport.iceConnectedMicros == nil:
                let deadline = peer.addedMicros + w.iceTimeoutMicros
                if now >= deadline {
                    peer.state.state = .abandoned
                    peer.state.failure = TransportFailure(
                        .timeout, "ICE did not connect within \(w.iceTimeoutMicros / 1_000_000) s of the answer")
                } else {
                    wake = min(wake ?? deadline, deadline)
                }
            case .connected where peer.transport.ice.lite:
                let deadline = (peer.transport.ice.lastRequestMicros ?? peer.addedMicros) + w.consentTimeoutMicros
                if now >= deadline {
                    peer.transport.close()
                    peer.state.state = .failed
                    peer.state.failure = TransportFailure(
                        .ice, "consent lost: no ICE consent check for \(w.consentTimeoutMicros / 1_000_000) s (RFC 7675)")
                    peer.consentLost = true
                } else {
                    wake = min(wake ?? deadline, deadline)
                }
            default: break
            }
            if peer.state.state != .new && peer.state.state != .connected { ended.append(peer) }
        }
        for peer in ended { release(peer) }
        return wake
    }

    /// A session that ended: its transport, keys and lookups are dropped (the slot is free);
    /// what became of it stays in the snapshot (the last `endedKept`; abandoned ones are counted).
    func release(_ peer: WebRTCPeer) {
        drain(peer)
        switch peer.state.state {
        case .abandoned: snap.webrtcEndings.abandoned += 1
        case .closed: snap.webrtcEndings.closed += 1
        default: if peer.consentLost { snap.webrtcEndings.consentLost += 1 } else { snap.webrtcEndings.failed += 1 }
        }
        rtcPending[peer.spec.localUfrag] = nil
        for (u, r) in rtcRestarted where r.peer === peer { rtcRestarted[u] = nil }
        for (a, p) in rtcByAddress where p === peer { rtcByAddress[a] = nil }
        rtcPeers.removeAll { $0 === peer }
        // Abandoned sessions (offers that never ran ICE: what a flood leaves) are only counted;
        // keeping their records would keep the flood's memory too.
        if peer.state.state != .abandoned {
            if peer.state.transport != nil { peer.state.transport = peer.transport.stats } // as it ended
            rtcEnded.append(peer.state)
            if rtcEnded.count > Self.endedKept { rtcEnded.removeFirst(rtcEnded.count - Self.endedKept) }
        }
        endedResources.append(peer.spec.resource)
    }

    static let endedKept = 256

    /// The resources of the sessions that ended since the last call (their slots are free).
    public func takeEndedResources() -> [String] {
        defer { endedResources = [] }
        return endedResources
    }

    /// STUN (found by the USERNAME's first half, our ufrag, until its address is known) or DTLS.
    func handleTransportDatagram(_ p: UnsafeMutableRawPointer, length: Int, from: SocketAddress, to: SocketAddress?, now: Int64) {
        guard let w = webrtc, let source = STUNAddress(from) else { snap.rejected.unknownSource += 1; return }
        let bytes = [UInt8](UnsafeRawBufferPointer(start: p, count: length))
        var peer = rtcByAddress[from]
        if peer == nil, let b0 = bytes.first, b0 <= 3 {
            let user = bytes.withUnsafeBufferPointer { try? STUNMessage.parse(Span(_unsafeElements: $0)) }?.username
            let ufrag = user?.split(separator: ":").first.map(String.init) ?? ""
            if let (p, password) = rtcPending[ufrag].map({ ($0, $0.spec.localPassword) }) ?? rtcRestarted[ufrag] {
                peer = p
                // The source is bound to the session only once the request proves it knows the
                // session's password (RFC 8445 §7.3: MESSAGE-INTEGRITY, and FINGERPRINT, verify).
                if STUNMessage.verifyFingerprint(bytes) == true,
                    STUNMessage.verifyIntegrity(bytes, key: Array(password.utf8), hmacSHA1: { Crypto.hmacSHA1(key: $0, data: $1) })
                {
                    rtcByAddress[from] = p
                }
            }
        }
        guard let peer else { snap.rejected.unknownSource += 1; return }
        let media = peer.transport.handle(bytes, from: source, to: to.flatMap { STUNAddress($0) } ?? w.local(toward: source), now: now)
        peer.transportWake = 0
        after(peer, now: now)
        // Media the TURN server relayed (RFC 8656 §11.6, §12.4), unwrapped: SRTP or SRTCP from the
        // selected remote, handled as if it came from there (it fits where it came).
        if let m = media, let first = m.first, (128...191).contains(first), m.count <= length, let session = peer.peer {
            m.withUnsafeBytes { p.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            handle(p, length: m.count, now: now, wall: now + wallOffsetMicros, from: session.address)
        }
    }

    func after(_ peer: WebRTCPeer, now: Int64) {
        drain(peer)
        while let e = peer.transport.pollEvent() {
            switch e {
            case let .connected(_, remote, _, send, receive):
                guard let address = SocketAddress(remote) else {
                    fail(peer, TransportFailure(.ice, "the selected remote \(remote) is not a usable address")); continue
                }
                do throws(SRTPError) {
                    peer.srtpIn = try SRTPSession(key: receive, direction: .inbound)
                    let session = PeerSession(index: peers.count, address: address, ssrc: ssrc)
                    session.srtpOut = try SRTPSession(key: send, direction: .outbound)
                    session.extensionIDs = peer.spec.extensions
                    session.audioPayloadTypes = peer.spec.audioPayloadTypes
                    session.videoPayloadTypes = peer.spec.videoPayloadTypes
                    session.videoCodecs = peer.spec.videoCodecs
                    session.rtxPayloadTypes = peer.spec.rtxPayloadTypes
                    session.rtxToMedia = peer.spec.rtxToMedia
                    session.reducedSizeRTCP = peer.spec.reducedSizeRTCP
                    session.negotiated = peer.spec.feedback
                    session.relay = peer.transport.isRelayed ? peer.transport : nil
                    peers.append(session)
                    peerIndex[address] = session.index
                    peer.peer = session
                    rtcByAddress[address] = peer
                    peer.state.state = .connected
                    peer.state.remote = remote.description
                    peer.state.transport = peer.transport.stats
                } catch {
                    fail(peer, TransportFailure(.srtp, "SRTP could not be set up with the keys DTLS exported: \(error)"))
                }
            case let .failed(reason): fail(peer, reason)
            case .closed: peer.state.state = .closed
            case let .pathChanged(_, remote):
                // After an ICE restart: feedback to the new address; what was in flight on the
                // old one is still taken (RFC 8445 §9).
                guard let address = SocketAddress(remote), let session = peer.peer else { continue }
                peerIndex[address] = session.index
                rtcByAddress[address] = peer
                session.address = address
                session.relay = peer.transport.isRelayed ? peer.transport : nil
                peer.state.remote = remote.description
            }
        }
    }

    func fail(_ peer: WebRTCPeer, _ failure: TransportFailure) {
        peer.state.state = .failed
        peer.state.failure = failure
        snap.lastError = "publisher \(peer.spec.resource): \(failure)"
    }

    /// The transport's datagrams into the outbox, in order with the feedback.
    func drain(_ peer: WebRTCPeer) {
        while let x = peer.transport.pollTransmit() {
            guard let to = SocketAddress(x.to) else { continue }
            outBytes.append(contentsOf: x.bytes)
            outPackets.append((outBytes.count, to, namesSources ? SocketAddress(x.from) : nil))
        }
    }
}
