import RTPCore

/// A TURN client (RFC 8656) over UDP, sans-IO: one allocation on one server from one local base.
/// Allocate with long-term credentials (the 401 realm/nonce exchange, 438 stale nonce),
/// Refresh before the lifetime ends, CreatePermission for each peer (refreshed every 4 min of
/// their 5), ChannelBind + ChannelData once bound (Send/Data indications until then). The
/// caller sends `pollTransmit()` from the base to the server and hands back what the server
/// sends; peers' datagrams come out of `handle` with the peer's address.
public final class TURNClient {
    public enum Event: Sendable, Equatable {
        case allocated(relay: STUNAddress, mapped: STUNAddress?, lifetime: UInt32)
        case failed(TURNFailure)
    }

    public enum State: Sendable, Equatable { case idle, allocating, allocated, failed, closed }

    public let server: STUNAddress
    public let base: STUNAddress
    let username: String
    let password: String
    let hmac: STUNHMAC
    let longTermKey: (String, String, String) -> [UInt8]
    var random: ICERandom
    public private(set) var state = State.idle
    public private(set) var relay: STUNAddress?
    public private(set) var mapped: STUNAddress?
    public private(set) var lifetime: UInt32 = 0
    /// Refreshes the server accepted.
    public private(set) var refreshes = 0
    /// When the allocation request first left and when it succeeded (µs, the caller's clock).
    public private(set) var startedMicros: Int64?
    public private(set) var allocatedMicros: Int64?
    var realm: String?
    var nonce: String?
    var key: [UInt8]?
    var authenticated = false
    var staleNonceRetries = 0
    var unauthorizedRetries = 0

    enum Kind: Equatable { case allocate, refresh, permission([UInt8]), channelBind(UInt16, STUNAddress) }
    struct Pending {
        var kind: Kind
        var message: STUNMessage
        var sends = 0
        var next: Int64 = 0
    }
    var pending: [[UInt8]: Pending] = [:]
    var outbox: [Transmit] = []
    var events: [Event] = []
    /// Peer IP → when its permission must be refreshed (nil until installed).
    var permissions: [[UInt8]: Int64] = [:]
    var channels: [STUNAddress: (number: UInt16, bound: Bool, refresh: Int64)] = [:]
    var channelPeers: [UInt16: STUNAddress] = [:]
    var nextChannel: UInt16 = 0x4000
    var refreshAt: Int64 = .max
    var now: Int64 = 0

    /// Sends: at 0, 250, 750, 1750, 3750 ms; a request still unanswered at 5.75 s has failed
    /// (RFC 8489 §6.2.1's 500 ms × 7 would wait 39.5 s: too long for a pre-flight).
    static let firstRetransmit: Int64 = 250_000
    static let maxSends = 5
    static let permissionLifetime: Int64 = 300_000_000
    static let channelLifetime: Int64 = 600_000_000

    /// Over TCP (RFC 8656 §3.1): ChannelData is padded to 4 bytes; the caller frames the stream.
    public let overTCP: Bool

    public init(
        server: STUNAddress, base: STUNAddress, username: String, password: String, seed: UInt64,
        hmacSHA1: @escaping STUNHMAC, longTermKey: @escaping (String, String, String) -> [UInt8], overTCP: Bool = false
    ) {
        self.overTCP = overTCP
        self.server = server
        self.base = base
        self.username = username
        self.password = password
        hmac = hmacSHA1
        self.longTermKey = longTermKey
        random = ICERandom(seed: seed)
    }

    public func pollTransmit() -> Transmit? { outbox.isEmpty ? nil : outbox.removeFirst() }
    public func pollEvent() -> Event? { events.isEmpty ? nil : events.removeFirst() }

    /// Asks for an allocation (first without credentials: the server's 401 names the realm and nonce).
    public func start(now: Int64) {
        guard state == .idle else { return }
        self.now = now
        state = .allocating
        startedMicros = now
        request(.allocate, method: STUNMessage.allocateMethod, attributes: [.requestedTransport(17)])
    }

    /// Releases the allocation (a Refresh with lifetime 0, RFC 8656 §7.2); no answer awaited.
    public func close() {
        guard state == .allocated else { state = .closed; return }
        request(.refresh, method: STUNMessage.refreshMethod, attributes: [.lifetime(0)])
        pending = [:]
        state = .closed
    }

    /// Retransmissions and refreshes; returns when to call again.
    public func step(now: Int64) -> Int64? {
        self.now = now
        guard state == .allocating || state == .allocated else { return nil }
        for (txid, p) in pending where now >= p.next {
            if p.sends >= Self.maxSends {
                pending[txid] = nil
                switch p.kind {
                case .allocate, .refresh: fail(.noAnswer(server: server, requests: Self.maxSends))
                case .permission, .channelBind: break // retried at the next refresh or send
                }
                continue
            }
            transmit(txid)
        }
        if state == .allocated {
            if now >= refreshAt {
                refreshAt = .max
                request(.refresh, method: STUNMessage.refreshMethod, attributes: [.lifetime(lifetime)])
            }
            for (ip, at) in permissions where now >= at { permissions[ip] = now + Self.permissionLifetime; createPermission(ip) }
            for (peer, c) in channels where c.bound && now >= c.refresh {
                channels[peer]?.refresh = now + Self.channelLifetime
                request(
                    .channelBind(c.number, peer), method: STUNMessage.channelBindMethod,
                    attributes: [.channelNumber(c.number), .xorPeerAddress(peer)])
            }
        }
        guard state == .allocating || state == .allocated else { return nil }
        var wake = refreshAt
        for p in pending.values { wake = min(wake, p.next) }
        for at in permissions.values { wake = min(wake, at) }
        for c in channels.values where c.bound { wake = min(wake, c.refresh) }
        return wake
    }

    /// A datagram to `peer` through the relay: ChannelData once the channel is bound, a Send
    /// indication until then. Installs the permission (and binds a channel) on first use.
    public func send(_ payload: [UInt8], to peer: STUNAddress) -> [UInt8]? {
        guard state == .allocated else { return nil }
        permit(peer)
        if let c = channels[peer], c.bound {
            var out: [UInt8] = [UInt8(c.number >> 8), UInt8(c.number & 0xFF), UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
            out += payload
            if overTCP { while out.count % 4 != 0 { out.append(0) } } // RFC 8656 §12.5
            return out
        }
        let m = STUNMessage(
            method: STUNMessage.sendMethod, class: .indication, transactionID: random.transactionID(),
            attributes: [.xorPeerAddress(peer), .data(payload)])
        return try? m.encode(fingerprint: true)
    }

    /// The channel bound to `peer`, if any (a session may frame ChannelData itself).
    public func channel(for peer: STUNAddress) -> UInt16? {
        guard let c = channels[peer], c.bound else { return nil }
        return c.number
    }

    /// Permission and channel for `peer` (RFC 8656 §9, §12), if not asked for yet.
    public func permit(_ peer: STUNAddress) {
        guard state == .allocated else { return }
        if permissions[peer.ip] == nil {
            permissions[peer.ip] = now + Self.permissionLifetime - 60_000_000
            createPermission(peer.ip)
        }
        if channels[peer] == nil && nextChannel <= 0x4FFF {
            let n = nextChannel
            nextChannel += 1
            channels[peer] = (n, false, .max)
            channelPeers[n] = peer
            request(.channelBind(n, peer), method: STUNMessage.channelBindMethod, attributes: [.channelNumber(n), .xorPeerAddress(peer)])
        }
    }

    func createPermission(_ ip: [UInt8]) {
        request(.permission(ip), method: STUNMessage.createPermissionMethod, attributes: [.xorPeerAddress(STUNAddress(ip: ip, port: 0))])
    }

    /// A datagram from the server: a response to one of ours (nil), or a peer's datagram through
    /// the relay (ChannelData or a Data indication) with the peer's address.
    public func handle(_ bytes: [UInt8], now: Int64) -> (peer: STUNAddress, payload: [UInt8])? {
        self.now = now
        guard let first = bytes.first else { return nil }
        if first & 0xC0 == 0x40 {
            // ChannelData (RFC 8656 §12.4): channel, length, data (padding only over TCP).
            guard bytes.count >= 4 else { return nil }
            let n = UInt16(bytes[0]) << 8 | UInt16(bytes[1]), length = Int(bytes[2]) << 8 | Int(bytes[3])
            guard let peer = channelPeers[n], bytes.count >= 4 + length else { return nil }
            return (peer, Array(bytes[4..<(4 + length)]))
        }
        guard let m = try? STUNMessage.parse(bytes.span) else { return nil }
        if m.messageClass == .indication {
            guard m.method == STUNMessage.dataMethod, let peer = m.xorPeerAddress, let data = m.data else { return nil }
            return (peer, data)
        }
        guard let p = pending[m.transactionID] else { return nil }
        // Responses to authenticated requests carry MESSAGE-INTEGRITY under the same key.
        if let key, authenticated, m.messageClass == .success, !STUNMessage.verifyIntegrity(bytes, key: key, hmacSHA1: hmac) { return nil }
        pending[m.transactionID] = nil
        if m.messageClass == .success { success(p.kind, m) } else { error(p, m) }
        return nil
    }

    func success(_ kind: Kind, _ m: STUNMessage) {
        switch kind {
        case .allocate:
            guard let r = m.xorRelayedAddress else { fail(.noRelayedAddress); return }
            relay = r
            mapped = m.xorMappedAddress
            lifetime = m.lifetime ?? 600
            state = .allocated
            allocatedMicros = now
            scheduleRefresh()
            events.append(.allocated(relay: r, mapped: mapped, lifetime: lifetime))
        case .refresh:
            refreshes += 1
            if let t = m.lifetime { lifetime = t }
            scheduleRefresh()
        case .permission: break
        case let .channelBind(n, peer):
            channels[peer] = (n, true, now + Self.channelLifetime - 60_000_000)
        }
    }

    func error(_ p: Pending, _ m: STUNMessage) {
        let (code, reason) = m.errorCode ?? (0, "")
        switch code {
        case 401 where (!authenticated || m.nonce != nonce) && unauthorizedRetries < 2:
            unauthorizedRetries += 1
            // The first 401 names the realm and nonce (RFC 8656 §7.1, RFC 8489 §9.2.4).
            guard let r = m.realm, let n = m.nonce else { fail(.challengeWithoutRealm); return }
            realm = r
            nonce = n
            key = longTermKey(username, r, password)
            authenticated = true
            retry(p)
        case 438 where staleNonceRetries < 3:
            staleNonceRetries += 1
            if let n = m.nonce { nonce = n }
            if let r = m.realm, r != realm { realm = r; key = longTermKey(username, r, password) }
            retry(p)
        default:
            guard p.kind == .allocate || p.kind == .refresh else { return } // a permission or channel refused: ICE's checks will tell
            fail(.refused(server: server, code: code, reason: reason))
        }
    }

    /// The same request again with the current realm/nonce (a new transaction).
    func retry(_ p: Pending) {
        let attrs = p.message.attributes.filter {
            switch $0 {
            case .username, .realm, .nonce, .messageIntegrity, .fingerprint: false;
            default: true
            }
        }
        request(p.kind, method: p.message.method, attributes: attrs)
    }

    func scheduleRefresh() {
        // Well before expiry: a minute ahead, or at half the lifetime when it is short.
        let l = Int64(lifetime) * 1_000_000
        refreshAt = lifetime == 0 ? .max : now + max(l / 2, l - 60_000_000)
    }

    func request(_ kind: Kind, method: UInt16, attributes: [STUNAttribute]) {
        var attrs = attributes
        if authenticated, let realm, let nonce { attrs += [.username(username), .realm(realm), .nonce(nonce)] }
        let m = STUNMessage(method: method, class: .request, transactionID: random.transactionID(), attributes: attrs)
        pending[m.transactionID] = Pending(kind: kind, message: m)
        transmit(m.transactionID)
    }

    func transmit(_ txid: [UInt8]) {
        guard var p = pending[txid] else { return }
        let bytes: [UInt8]?
        if authenticated, let key {
            bytes = try? p.message.encode(integrityKey: key, hmacSHA1: hmac, fingerprint: true)
        } else {
            bytes = try? p.message.encode(fingerprint: true)
        }
        guard let bytes else { pending[txid] = nil; return }
        outbox.append(Transmit(bytes: bytes, from: base, to: server))
        p.sends += 1
        p.next = now + min(Self.firstRetransmit << Int64(p.sends - 1), 2_000_000) // 250, 500, 1000, 2000, 2000 ms
        pending[txid] = p
    }

    func fail(_ reason: TURNFailure) {
        guard state != .failed else { return }
        state = .failed
        pending = [:]
        events.append(.failed(reason))
    }
}
