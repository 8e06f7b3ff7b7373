public import ICE
public import DTLS
import RTPCore
public import Net
public import SRTP

/// One WebRTC transport, sans-IO: the ICE agent and the DTLS endpoint behind one local socket,
/// told apart by the first byte of each datagram (RFC 7983: 0–3 STUN, 20–63 DTLS, 128–191
/// RTP/RTCP). ICE finds the path; DTLS then runs over it (the client starts once a pair is
/// selected; what DTLS sends before that waits); when DTLS is done the session gets the SRTP
/// keys and the peer's address. Media datagrams are handed back to the caller untouched.
public final class WebRTCTransport {
    public enum Event: Sendable {
        /// ICE and DTLS are done: send SRTP to `remote` from `local` with `send`, unprotect what
        /// arrives with `receive`.
        case connected(local: STUNAddress, remote: STUNAddress, suite: SRTPSuite, send: SRTPKey, receive: SRTPKey)
        case failed(TransportFailure)
        /// The peer closed DTLS (close_notify).
        case closed
        /// After an ICE restart, ICE selected a new pair: media goes to `remote` from `local`
        /// now (DTLS and SRTP go on unchanged over it, RFC 8445 §9).
        case pathChanged(local: STUNAddress, remote: STUNAddress)
    }

    public let ice: ICEAgent
    public let dtls: DTLSEndpoint
    /// A TURN allocation whose relayed address is one of ICE's local candidates: what ICE or
    /// DTLS sends from that address goes to the TURN server wrapped (ChannelData or a Send
    /// indication); what the server relays comes back out as from the peer to the relay address.
    public let turn: TURNClient?
    var path: (local: STUNAddress, remote: STUNAddress)?
    var pendingDTLS: [[UInt8]] = []
    var outbox: [Transmit] = []
    var events: [Event] = []
    var dtlsStarted = false
    public private(set) var failed = false
    /// ICE and DTLS are done (the `.connected` event was given).
    public private(set) var isConnected = false
    /// The SRTP protection profile DTLS negotiated, the failure it ended with, and whether the
    /// peer closed it (for `stats`).
    public private(set) var srtpSuite: SRTPSuite?
    public private(set) var failure: TransportFailure?
    public private(set) var closedByPeer = false
    /// Datagrams that were none of STUN, DTLS or RTP/RTCP (dropped, counted).
    public private(set) var unknownDatagrams = 0
    /// ICE restarts applied and when the last one began and recovered (a new pair selected).
    public private(set) var iceRestarts = 0
    public private(set) var lastRestartMicros: Int64?
    public private(set) var lastRestartRecoveryMicros: Int64?

    /// When the first call came in, ICE selected a pair and DTLS finished (µs, the caller's clock).
    public private(set) var startedMicros: Int64?
    public private(set) var iceConnectedMicros: Int64?
    public private(set) var dtlsConnectedMicros: Int64?
    var nowMicros: Int64 = 0
    /// How long DTLS may take once ICE has a path: OpenSSL's own retransmission timer backs off to
    /// 60 s and would wait minutes for a peer that never answers.
    public var dtlsTimeoutMicros: Int64 = 10_000_000

    public init(ice: ICEAgent, dtls: DTLSEndpoint, turn: TURNClient? = nil) {
        self.ice = ice
        self.dtls = dtls
        self.turn = turn
    }

    /// The selected pair goes through the TURN relay (its local candidate is the relayed address).
    public var isRelayed: Bool {
        guard let turn, let relay = turn.relay, let path else { return false }
        return path.local == relay
    }

    /// ICE's state in W3C terms (`RTCIceTransportState`).
    public var iceState: ICETransportState {
        if failed && iceConnectedMicros == nil { return .failed }
        switch ice.state {
        case .checking: return startedMicros == nil ? .new : .checking
        case .connected: return .connected
        case .failed: return .failed
        }
    }

    /// DTLS's state in W3C terms (`RTCDtlsTransportState`).
    public var dtlsState: DTLSTransportState {
        switch dtls.state {
        case .handshaking: return failed ? .failed : (dtlsStarted ? .connecting : .new)
        case .connected: return .connected
        case .closed: return .closed
        case .failed: return .failed
        }
    }

    /// The selected path, once ICE has one.
    public var selectedPath: (local: STUNAddress, remote: STUNAddress)? { path }

    public func pollTransmit() -> Transmit? { outbox.isEmpty ? nil : outbox.removeFirst() }
    public func pollEvent() -> Event? { events.isEmpty ? nil : events.removeFirst() }

    /// A datagram arrived on `to` from `from`. Returns it when it is media (RTP/RTCP) for the
    /// session to unprotect; STUN and DTLS are consumed here.
    public func handle(_ bytes: [UInt8], from: STUNAddress, to: STUNAddress, now: Int64) -> [UInt8]? {
        guard let first = bytes.first else { return nil }
        nowMicros = now
        if startedMicros == nil { startedMicros = now }
        if let turn, from == turn.server, first <= 3 || (64...79).contains(first) {
            // From the TURN server: its answers, or a peer's datagram relayed (RFC 7983: 64–79
            // is ChannelData), which is handled as arriving at the relayed address.
            defer { pump() }
            guard let (peer, payload) = turn.handle(bytes, now: now), let relay = turn.relay else { return nil }
            return handle(payload, from: peer, to: relay, now: now)
        }
        switch first {
        case 0...3: if !ice.handle(bytes, from: from, to: to, now: now) { unknownDatagrams += 1 } // not even STUN-shaped
        case 20...63: dtls.handle(bytes)
        case 128...191: return bytes
        default: unknownDatagrams += 1
        }
        pump()
        return nil
    }

    /// Timers of ICE (checks, consent) and DTLS (retransmission); returns when to call again.
    public func step(now: Int64) -> Int64? {
        nowMicros = now
        if startedMicros == nil { startedMicros = now }
        var iceWake = ice.step(now: now)
        if let t = turn?.step(now: now) { iceWake = min(iceWake ?? t, t) }
        var dtlsWake = dtls.step(now: now)
        pump()
        if !failed && !isConnected, let ice = iceConnectedMicros {
            let deadline = ice + dtlsTimeoutMicros
            if now >= deadline {
                fail(
                    .dtls,
                    "the DTLS handshake did not finish within \(dtlsTimeoutMicros / 1_000_000) s of ICE connecting: the peer "
                        + (dtls.role == .server ? "never sent a ClientHello" : "does not answer DTLS"))
            } else {
                dtlsWake = min(dtlsWake ?? deadline, deadline)
            }
        }
        if failed { return nil }
        switch (iceWake, dtlsWake) {
        case let (a?, b?): return min(a, b)
        case let (a?, nil): return a
        case let (nil, b?): return b
        default: return nil
        }
    }

    /// An ICE restart with the credentials and candidates the server's answer gave (RFC 9725
    /// §4.3.3): ICE checks again while media stays on the current path; the new pair, once
    /// selected, is a `.pathChanged` event. DTLS is not touched.
    public func restartICE(
        local: ICEAgent.Credentials, remote: ICEAgent.Credentials, remoteCandidates: [ICECandidate],
        localCandidates: [ICECandidate]? = nil, now: Int64
    ) {
        nowMicros = now
        iceRestarts += 1
        lastRestartMicros = now
        lastRestartRecoveryMicros = nil
        ice.restart(local: local, remote: remote, remoteCandidates: remoteCandidates, localCandidates: localCandidates, now: now)
        if let turn, let relay = turn.relay {
            for c in remoteCandidates where c.address.ip.count == relay.ip.count { turn.permit(c.address) }
        }
        pump()
    }

    /// Ends the session: close_notify to the peer.
    public func close() {
        dtls.close()
        pump()
        turn?.close() // release the allocation
        pump()
    }

    /// Sends `bytes` from `local`: through the TURN server when `local` is the relayed address,
    /// else from the candidate's base.
    func emit(_ bytes: [UInt8], from local: STUNAddress, to remote: STUNAddress) {
        if let turn, let relay = turn.relay, local == relay {
            guard let wrapped = turn.send(bytes, to: remote) else { return }
            // The permission first.
            while let t = turn.pollTransmit() { outbox.append(t) }
            outbox.append(Transmit(bytes: wrapped, from: turn.base, to: turn.server))
        } else {
            outbox.append(Transmit(bytes: bytes, from: base(of: local), to: remote))
        }
    }

    /// The address a datagram from local candidate `local` really leaves from — its base (RFC
    /// 8445 §5.1.1): a host candidate itself, the host address under a server- or peer-reflexive
    /// one (the address a NAT mapped is not the machine's), the TURN allocation's base under the
    /// relayed one. A driver on a wildcard socket sends from it.
    public func base(of local: STUNAddress) -> STUNAddress {
        if let turn, local == turn.relay { return turn.base }
        guard let c = ice.localCandidates.first(where: { $0.address == local }) else { return local }
        switch c.kind {
        case .host, .relay: return c.address
        case .srflx, .prflx: return c.relatedAddress ?? c.address
        }
    }

    /// The selected path's base (`base(of:)`): where media leaves from.
    public var selectedBase: STUNAddress? { path.map { base(of: $0.local) } }

    func pump() {
        while let e = ice.pollEvent() {
            switch e {
            case let .connected(local, remote):
                let before = path
                path = (local.address, remote.address)
                if iceConnectedMicros == nil { iceConnectedMicros = nowMicros }
                if let started = lastRestartMicros, lastRestartRecoveryMicros == nil { lastRestartRecoveryMicros = nowMicros - started }
                if isConnected, let b = before, b.local != local.address || b.remote != remote.address || iceRestarts > 0 {
                    events.append(.pathChanged(local: local.address, remote: remote.address))
                }
                if !dtlsStarted {
                    dtlsStarted = true
                    dtls.start() // the client's ClientHello; a server waits
                }
            case .roleChanged: break
            case let .failed(reason): fail(.ice, reason.description)
            }
        }
        while let t = ice.pollTransmit() { emit(t.bytes, from: t.from, to: t.to) }
        while let d = dtls.pollTransmit() { pendingDTLS.append(d) }
        if let (local, remote) = path {
            for d in pendingDTLS { emit(d, from: local, to: remote) }
            pendingDTLS = []
        }
        if let turn {
            while let t = turn.pollTransmit() { outbox.append(t) }
            while let e = turn.pollEvent() {
                // A failed refresh matters only when the selected path runs through the relay.
                if case let .failed(reason) = e, isRelayed { fail(.turn, "TURN: \(reason)") }
            }
        }
        while let e = dtls.pollEvent() {
            switch e {
            case let .connected(suite, send, receive):
                guard let (local, remote) = path else { fail(.dtls, "DTLS finished before ICE selected a path"); return }
                isConnected = true
                dtlsConnectedMicros = nowMicros
                srtpSuite = suite
                events.append(.connected(local: local, remote: remote, suite: suite, send: send, receive: receive))
            case let .failed(reason): fail(.dtls, reason.description)
            case .closed:
                closedByPeer = true
                events.append(.closed)
            }
        }
    }

    func fail(_ layer: TransportFailure.Layer, _ reason: String) {
        guard !failed else { return }
        failed = true
        failure = TransportFailure(layer, reason)
        events.append(.failed(TransportFailure(layer, reason)))
    }
}

/// Why a WebRTC transport failed: the layer that gave up, typed (for scripts and tests), and the
/// reason in words a person can act on (what the CLI prints; never a secret).
public struct TransportFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Layer: String, Sendable, Equatable {
        /// No candidate pair answered, or consent was lost (RFC 8445, RFC 7675).
        case ice
        /// The handshake failed, did not finish, or gave no usable keys (RFC 5764).
        case dtls
        /// The relay the selected path runs through failed (RFC 8656).
        case turn
        /// SRTP could not be set up with the keys DTLS exported.
        case srtp
        /// The peer ended it: DTLS close_notify.
        case peer
        /// A deadline of the session's own passed (ICE never connected after the answer).
        case timeout
    }

    public var layer: Layer
    public var reason: String
    public var description: String { reason }

    public init(_ layer: Layer, _ reason: String) {
        self.layer = layer
        self.reason = reason
    }
}

extension STUNAddress {
    /// The same address as a socket names it (its bytes: no text, no resolver).
    public init?(_ address: SocketAddress) {
        let ip = address.ipBytes
        guard ip.count == 4 || ip.count == 16 else { return nil }
        self.init(ip: ip, port: UInt16(address.port))
    }
}

extension SocketAddress {
    /// The same address as ICE names it (its bytes: no text, no resolver — the sessions convert
    /// every transport datagram's address).
    public init?(_ address: STUNAddress) {
        self.init(ip: address.ip, port: Int(address.port))
    }
}

/// W3C webrtc-pc `RTCIceTransportState`, the states pubbot's agent reaches.
public enum ICETransportState: String, Sendable, Equatable { case new, checking, connected, failed }

/// W3C webrtc-pc `RTCDtlsTransportState`.
public enum DTLSTransportState: String, Sendable, Equatable { case new, connecting, connected, closed, failed }
