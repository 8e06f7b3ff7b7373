import RTPCore

/// An ICE agent (RFC 8445), sans-IO: datagrams and the time go in (`handle`, `step`), datagrams,
/// timeouts and events come out (`pollTransmit`, `step`'s return, `pollEvent`). No clock, socket
/// or random source inside: the HMAC-SHA1 and a seed are passed in.
///
/// Full agent in either role (a publisher is controlling) or ICE-lite (answers checks only, the
/// shape of a server). What it does:
/// - pairs every local candidate with every remote one of the same family, ordered by pair
///   priority (§6.1.2.3); one check every Ta = 50 ms (§14.2), highest priority first. The
///   frozen/foundation algorithm is left out: pubbot has a handful of candidates per session.
/// - checks carry USERNAME `remote:local`, PRIORITY, ICE-CONTROLLING/-CONTROLLED, MESSAGE-INTEGRITY
///   under the peer's password and FINGERPRINT (§7.2.2); a check is retransmitted after 250 ms,
///   doubling to 1 s, 8 transmissions in all (~5.75 s), then the pair fails (RFC 8489 §6.2.1's
///   Rc = 7 at a 500 ms RTO would take 39.5 s: too long for a pre-flight; libwebrtc also
///   retries faster).
/// - a success must come from where the check went (§7.2.5.2.1) and pass the integrity check;
///   the controlling agent then nominates the best valid pair with USE-CANDIDATE (regular
///   nomination, §8.1.1); a controlled agent selects the pair a USE-CANDIDATE check succeeded on.
/// - answers the peer's checks (XOR-MAPPED-ADDRESS, integrity under the local password), learns
///   peer-reflexive candidates, sends triggered checks (§7.3.1.4), resolves role conflicts by
///   tie-breaker (§7.3.1.1, error 487 both ways).
/// - consent freshness once connected (RFC 7675): a check on the selected pair every 4–6 s; no
///   answer for 30 s ends the session (`.failed`).
public final class ICEAgent {
    /// RFC 8445 §6.1.1; the raw value is W3C `RTCIceRole`'s.
    public enum Role: String, Sendable, Equatable { case controlling, controlled }

    public struct Credentials: Sendable, Equatable {
        public var ufrag: String
        public var password: String
        public init(ufrag: String, password: String) { self.ufrag = ufrag; self.password = password }

        /// Fresh credentials from 32 random bytes (the caller's: the module reads no OS random):
        /// an 8-character ufrag and a 24-character password of ice-chars (RFC 8839 §5.4: ALPHA /
        /// DIGIT / "+" / "/"; at least 4 and 22 characters).
        public init(random bytes: [UInt8]) {
            precondition(bytes.count >= 32)
            ufrag = Self.iceChars(bytes.prefix(8))
            password = Self.iceChars(bytes.dropFirst(8).prefix(24))
        }

        public static func iceChars(_ bytes: some Collection<UInt8>) -> String {
            let chars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
            return String(bytes.map { chars[Int($0) & 63] })
        }
    }

    public enum Event: Sendable, Equatable {
        case connected(local: ICECandidate, remote: ICECandidate)
        case roleChanged(Role)
        case failed(ICEFailure)
    }

    public enum State: Sendable, Equatable { case checking, connected, failed }

    public struct Counters: Sendable, Equatable {
        public var checksSent = 0
        public var retransmissions = 0
        public var successes = 0
        var errorResponses = 0
        public var requestsAnswered = 0
        /// STUN messages dropped: bad integrity, wrong username, unknown transaction.
        public var rejected = 0
        /// Messages of our own that could not be encoded (never sent; an empty datagram is not
        /// a check): an attribute over STUN's 16-bit length (RFC 8489 §14) — a username or
        /// candidate far out of range.
        public var encodeFailures = 0
    }

    enum PairState { case waiting, inProgress, succeeded, failed }

    struct Pair {
        var local: ICECandidate
        var remote: ICECandidate
        var state = PairState.waiting
        var transaction: [UInt8] = []
        var transmissions = 0
        var nextRetransmit: Int64 = .max
        var useCandidate = false
        var nominated = false
        /// Controlled side: the peer sent USE-CANDIDATE before our own check on the pair succeeded.
        var nominateOnSuccess = false
        /// The role the last check on the pair was sent in.
        var sentRole = Role.controlling
        /// When the check's first transmission left (a round trip is measured only on an answer
        /// to an unrepeated request, as RFC 8489 §6.2.1's RTO estimate does).
        var sentAt: Int64 = 0
    }

    static let ta: Int64 = 50_000
    static let firstRetransmit: Int64 = 250_000
    static let maxRetransmitInterval: Int64 = 1_000_000
    static let maxTransmissions = 8
    static let consentTimeout: Int64 = 30_000_000

    public private(set) var role: Role
    /// The last round trip measured on a check or consent request answered without a
    /// retransmission (µs): W3C `RTCIceCandidatePairStats.currentRoundTripTime`.
    public private(set) var roundTripMicros: Int64?
    var consentSentAt: [[UInt8]: Int64] = [:]
    public let lite: Bool
    public private(set) var local: Credentials
    public private(set) var remote: Credentials?
    /// ICE restarts applied (`restart`), and the selected pair changes they brought.
    public private(set) var restarts = 0
    public private(set) var selectedPairChanges = 0
    let tieBreaker: UInt64
    let hmac: STUNHMAC
    var random: ICERandom
    public private(set) var localCandidates: [ICECandidate] = []
    public private(set) var remoteCandidates: [ICECandidate] = []
    var pairs: [Pair] = []
    var triggered: [Int] = []
    var nextCheck: Int64 = 0
    var outbox: [Transmit] = []
    var events: [Event] = []
    public private(set) var state = State.checking
    public private(set) var counters = Counters()
    var selected: Int?
    var consentTransactions: [[UInt8]] = []
    var nextConsent: Int64 = .max
    var lastConsent: Int64 = 0
    var now: Int64 = 0
    /// When the peer's last check or consent request passed the integrity check: a lite agent
    /// sends no consent requests of its own (RFC 8445 §8.2), so this is how it sees the peer
    /// keeping the session alive (RFC 7675 §5.1: every 4–6 s).
    public private(set) var lastRequestMicros: Int64?
    /// How long since the selected path last proved alive (a consent or check answered, RFC 7675),
    /// as of the last call: a full agent's, once it connected (also while a restart is checking).
    /// Consent is checked every 4–6 s, so a healthy path's age stays under ~6 s plus a round trip.
    public var consentAgeMicros: Int64? { consentAge(at: now) }

    /// The consent age at `time`: the agent's own clock is the last time it was stepped, which on
    /// a silent path (no datagram, no timer due for seconds) lags the caller's — a watch asking
    /// between steps reads the age at its own time.
    public func consentAge(at time: Int64) -> Int64? { lite || lastConsent == 0 ? nil : max(0, max(time, now) - lastConsent) }

    public init(
        role: Role, local: Credentials, remote: Credentials? = nil, tieBreaker: UInt64, lite: Bool = false, seed: UInt64,
        hmacSHA1: @escaping STUNHMAC
    ) {
        self.role = lite ? .controlled : role
        self.lite = lite
        self.local = local
        self.remote = remote
        self.tieBreaker = tieBreaker
        self.hmac = hmacSHA1
        random = ICERandom(seed: seed)
    }

    public var selectedPair: (local: ICECandidate, remote: ICECandidate)? { selected.map { (pairs[$0].local, pairs[$0].remote) } }

    public func addLocal(_ c: ICECandidate) {
        guard !localCandidates.contains(c) else { return }
        localCandidates.append(c)
        for r in remoteCandidates { addPair(c, r) }
    }

    public func addRemote(_ c: ICECandidate) {
        guard !remoteCandidates.contains(where: { $0.address == c.address }) else { return }
        remoteCandidates.append(c)
        for l in localCandidates { addPair(l, c) }
    }

    func addPair(_ l: ICECandidate, _ r: ICECandidate) {
        guard l.address.ip.count == r.address.ip.count, l.component == r.component, !lite else { return }
        pairs.append(Pair(local: l, remote: r))
        sortPairs()
    }

    /// RFC 8445 §6.1.2.3: 2^32·min(G, D) + 2·max(G, D) + (G > D ? 1 : 0), G the controlling side's.
    func priority(_ p: Pair) -> UInt64 {
        let (g, d) =
            role == .controlling
            ? (UInt64(p.local.priority), UInt64(p.remote.priority)) : (UInt64(p.remote.priority), UInt64(p.local.priority))
        return (min(g, d) << 32) + 2 * max(g, d) + (g > d ? 1 : 0)
    }

    func sortPairs() {
        let selectedAddresses = selected.map { (pairs[$0].local.address, pairs[$0].remote.address) }
        pairs.sort { priority($0) > priority($1) }
        triggered = []
        if let (l, r) = selectedAddresses { selected = pairs.firstIndex { $0.local.address == l && $0.remote.address == r } }
    }

    public func pollTransmit() -> Transmit? { outbox.isEmpty ? nil : outbox.removeFirst() }
    public func pollEvent() -> Event? { events.isEmpty ? nil : events.removeFirst() }

    /// An ICE restart (RFC 8445 §9, RFC 8839 §4.4.1.1.1; RFC 9725 §4.3.3 by PATCH): new
    /// credentials on both sides, the peer's new candidates in place of the old (§4.3.3: the
    /// previous remote candidates are discarded), and every pair checked again. Until a new pair
    /// is selected the previous one keeps carrying media (RFC 8445 §9: "the agent MUST continue
    /// using the previously selected pair"); the new selection is a `.connected` event again.
    /// Consent runs on the new pair from then. A lite agent only takes the new credentials.
    /// `localCandidates`, when given, replace this agent's own (the interfaces changed: RFC 8445
    /// §9 restarts with the candidates gathered anew).
    public func restart(
        local newLocal: Credentials, remote newRemote: Credentials, remoteCandidates candidates: [ICECandidate],
        localCandidates newLocals: [ICECandidate]? = nil, now: Int64
    ) {
        self.now = now
        if let newLocals { localCandidates = newLocals }
        local = newLocal
        remote = newRemote
        restarts += 1
        remoteCandidates = []
        pairs = []
        triggered = []
        selected = nil
        consentTransactions = []
        consentSentAt = [:]
        nextConsent = .max
        state = .checking
        nextCheck = now
        for c in candidates { addRemote(c) }
    }

    /// Sends what is due at `now`; returns when to be called next (nil: nothing scheduled).
    public func step(now: Int64) -> Int64? {
        self.now = now
        guard state != .failed else { return nil }
        // Retransmissions, and pairs whose checks ran out.
        for i in pairs.indices where pairs[i].state == .inProgress && now >= pairs[i].nextRetransmit {
            if pairs[i].transmissions >= Self.maxTransmissions {
                pairs[i].state = .failed
                pairs[i].nextRetransmit = .max
                if selected == i { fail(.selectedPairLost); return nil }
            } else {
                send(check: i, retransmission: true)
            }
        }
        // One new check per Ta: triggered checks first, then the best waiting pair.
        if state == .checking && !lite && remote != nil && now >= nextCheck {
            var next: Int?
            while let t = triggered.first {
                triggered.removeFirst()
                if pairs[t].state == .waiting || pairs[t].state == .failed { next = t; break }
            }
            if next == nil { next = pairs.indices.first { pairs[$0].state == .waiting } }
            if let i = next {
                pairs[i].state = .inProgress
                pairs[i].transmissions = 0
                pairs[i].transaction = random.transactionID()
                send(check: i, retransmission: false)
                nextCheck = now + Self.ta
            }
        }
        // After a restart the path that worked stays in use until a new pair is selected (RFC
        // 8445 §9): a restart whose checks all fail does not end the session — consent freshness
        // does (RFC 7675 §5.1), 30 s after the old pair's last answer; another restart may come first.
        let afterRestart = restarts > 0 && lastConsent > 0
        if state == .checking && !lite && afterRestart && now - lastConsent >= Self.consentTimeout {
            fail(.consentExpired(seconds: Int(Self.consentTimeout / 1_000_000)))
            return nil
        }
        // Every pair failed: nothing will connect.
        if state == .checking && !lite && !afterRestart && !pairs.isEmpty && pairs.allSatisfy({ $0.state == .failed }) {
            fail(
                .noPairAnswered(
                    pairs: pairs.count, checksEach: Self.maxTransmissions, peerChecksAnswered: counters.requestsAnswered,
                    answersRefused: counters.rejected))
            return nil
        }
        // Consent freshness (RFC 7675 §5.1).
        if state == .connected && !lite, let s = selected {
            if now - lastConsent >= Self.consentTimeout {
                fail(.consentExpired(seconds: Int(Self.consentTimeout / 1_000_000)))
                return nil
            }
            if now >= nextConsent {
                let txid = random.transactionID()
                consentTransactions.append(txid)
                consentSentAt[txid] = now
                if consentTransactions.count > 8 { consentSentAt[consentTransactions.removeFirst()] = nil }
                if let bytes = request(pair: s, transaction: txid, useCandidate: false) {
                    outbox.append(Transmit(bytes: bytes, from: pairs[s].local.address, to: pairs[s].remote.address))
                    counters.checksSent += 1
                }
                nextConsent = now + 4_000_000 + Int64(random.next() % 2_000_001) // 4–6 s, uniformly random
            }
        }
        var wake: Int64 = .max
        for p in pairs where p.state == .inProgress { wake = min(wake, p.nextRetransmit) }
        if state == .checking && !lite && pairs.contains(where: { $0.state == .waiting }) { wake = min(wake, max(nextCheck, now)) }
        if state == .connected && !lite { wake = min(wake, nextConsent, lastConsent + Self.consentTimeout) }
        if state == .checking && !lite && afterRestart { wake = min(wake, lastConsent + Self.consentTimeout) }
        return wake == .max ? nil : wake
    }

    func fail(_ reason: ICEFailure) {
        state = .failed
        events.append(.failed(reason))
    }

    func send(check i: Int, retransmission: Bool) {
        pairs[i].transmissions += 1
        if pairs[i].transmissions == 1 { pairs[i].sentAt = now }
        pairs[i].sentRole = role
        let interval = min(Self.firstRetransmit << Int64(max(0, pairs[i].transmissions - 1)), Self.maxRetransmitInterval)
        pairs[i].nextRetransmit = now + interval
        // Unencodable: nothing goes out, but the pair's clock runs, so it fails in time.
        guard let bytes = request(pair: i, transaction: pairs[i].transaction, useCandidate: pairs[i].useCandidate) else { return }
        if retransmission { counters.retransmissions += 1 } else { counters.checksSent += 1 }
        outbox.append(Transmit(bytes: bytes, from: pairs[i].local.address, to: pairs[i].remote.address))
    }

    func request(pair i: Int, transaction: [UInt8], useCandidate: Bool) -> [UInt8]? {
        let r = remote ?? Credentials(ufrag: "", password: "")
        var attributes: [STUNAttribute] = [
            .username("\(r.ufrag):\(local.ufrag)"),
            .priority(ICECandidate.priority(kind: .prflx, localPreference: pairs[i].local.priority >> 8 & 0xFFFF)),
            role == .controlling ? .iceControlling(tieBreaker) : .iceControlled(tieBreaker)
        ]
        if useCandidate && role == .controlling { attributes.append(.useCandidate) }
        let m = STUNMessage(class: .request, transactionID: transaction, attributes: attributes)
        guard let bytes = try? m.encode(integrityKey: Array(r.password.utf8), hmacSHA1: hmac, fingerprint: true) else {
            counters.encodeFailures += 1
            return nil
        }
        return bytes
    }

    // MARK: datagrams

    /// A datagram arrived at local address `to` from `from`. Returns false when it is not a
    /// STUN message (RTP, DTLS … for the rest of the session, RFC 7983).
    @discardableResult
    public func handle(_ bytes: [UInt8], from: STUNAddress, to: STUNAddress, now: Int64) -> Bool {
        self.now = now
        guard STUNMessage.looksLikeSTUN(bytes.span) else { return false }
        guard let m = try? STUNMessage.parse(bytes.span), m.method == STUNMessage.bindingMethod else { counters.rejected += 1; return true }
        // RFC 8445 §7.2.2 / §7.3: both sides send FINGERPRINT; without a matching one it is not ICE.
        guard STUNMessage.verifyFingerprint(bytes) == true else { counters.rejected += 1; return true }
        switch m.messageClass {
        case .request: answer(m, bytes: bytes, from: from, to: to)
        case .success, .error: response(m, bytes: bytes, from: from, to: to)
        case .indication: break // keepalives (RFC 8445 §11): nothing to do
        }
        return true
    }

    func answer(_ m: STUNMessage, bytes: [UInt8], from: STUNAddress, to: STUNAddress) {
        // RFC 8445 §7.3: USERNAME is "our ufrag:their ufrag", integrity under our password.
        guard let user = m.username, user.hasPrefix(local.ufrag + ":"),
            STUNMessage.verifyIntegrity(bytes, key: Array(local.password.utf8), hmacSHA1: hmac)
        else {
            counters.rejected += 1
            reply(m, error: (401, "Unauthorized"), to: from, from: to, integrity: false)
            return
        }
        // Role conflict (§7.3.1.1).
        var theirsControlling: UInt64?, theirsControlled: UInt64?
        var useCandidate = false, theirPriority: UInt32?
        for a in m.attributes {
            switch a {
            case let .iceControlling(t): theirsControlling = t
            case let .iceControlled(t): theirsControlled = t
            case .useCandidate: useCandidate = true
            case let .priority(p): theirPriority = p
            default: break
            }
        }
        if role == .controlling, let t = theirsControlling {
            if tieBreaker >= t { reply(m, error: (487, "Role Conflict"), to: from, from: to, integrity: true); return }
            switchRole(.controlled)
        } else if role == .controlled, let t = theirsControlled, !lite {
            if tieBreaker >= t {
                switchRole(.controlling)
            } else {
                reply(m, error: (487, "Role Conflict"), to: from, from: to, integrity: true); return
            }
        }
        counters.requestsAnswered += 1
        lastRequestMicros = now
        let ok = STUNMessage(class: .success, transactionID: m.transactionID, attributes: [.xorMappedAddress(from)])
        if let bytes = try? ok.encode(integrityKey: Array(local.password.utf8), hmacSHA1: hmac, fingerprint: true) {
            outbox.append(Transmit(bytes: bytes, from: to, to: from))
        } else {
            counters.encodeFailures += 1
        }
        guard let localCandidate = localCandidates.first(where: { $0.address == to }) ?? (lite ? ICECandidate.host(to) : nil) else {
            return
        }
        // A source we did not know: a peer-reflexive candidate (§7.3.1.3).
        if !remoteCandidates.contains(where: { $0.address == from }) {
            let prflx = ICECandidate(
                foundation: "prflx\(remoteCandidates.count)", priority: theirPriority ?? ICECandidate.priority(kind: .prflx),
                address: from, kind: .prflx)
            remoteCandidates.append(prflx)
            if !lite { for l in localCandidates { addPair(l, prflx) } }
        }
        if lite {
            // ICE-lite (§8.2): the pair a USE-CANDIDATE check arrived on is selected.
            if useCandidate && state != .connected {
                guard let remoteCandidate = remoteCandidates.first(where: { $0.address == from }) else { return }
                pairs = [Pair(local: localCandidate, remote: remoteCandidate, state: .succeeded, nominated: true)]
                selected = 0
                connect()
            }
            return
        }
        guard let i = pairs.firstIndex(where: { $0.local.address == to && $0.remote.address == from }) else { return }
        if useCandidate && role == .controlled {
            if pairs[i].state == .succeeded { nominate(i) } else { pairs[i].nominateOnSuccess = true }
        }
        // Triggered check (§7.3.1.4).
        if pairs[i].state == .waiting || pairs[i].state == .failed {
            triggered.append(i)
            nextCheck = min(nextCheck, now)
        }
    }

    func reply(_ m: STUNMessage, error: (Int, String), to: STUNAddress, from: STUNAddress, integrity: Bool) {
        counters.errorResponses += 1
        let e = STUNMessage(class: .error, transactionID: m.transactionID, attributes: [.errorCode(error.0, error.1)])
        if let bytes = try? e.encode(integrityKey: integrity ? Array(local.password.utf8) : nil, hmacSHA1: hmac, fingerprint: true) {
            outbox.append(Transmit(bytes: bytes, from: from, to: to))
        } else {
            counters.encodeFailures += 1
        }
    }

    func switchRole(_ r: Role) {
        role = r
        events.append(.roleChanged(r))
        sortPairs()
    }

    func response(_ m: STUNMessage, bytes: [UInt8], from: STUNAddress, to: STUNAddress) {
        guard let r = remote, STUNMessage.verifyIntegrity(bytes, key: Array(r.password.utf8), hmacSHA1: hmac) else {
            counters.rejected += 1
            return
        }
        if consentTransactions.contains(m.transactionID) {
            if m.messageClass == .success {
                lastConsent = now
                if let sent = consentSentAt[m.transactionID] { roundTripMicros = now - sent }
            }
            consentSentAt[m.transactionID] = nil
            consentTransactions.removeAll { $0 == m.transactionID }
            return
        }
        guard let i = pairs.firstIndex(where: { $0.state == .inProgress && $0.transaction == m.transactionID }) else {
            counters.rejected += 1 // late, duplicate or unknown
            return
        }
        if m.messageClass == .error {
            if m.errorCode?.code == 487 {
                // §7.2.5.1: switch roles (unless a request from the peer already made us switch
                // since the check went out) and check the pair again.
                if pairs[i].sentRole == role { switchRole(role == .controlling ? .controlled : .controlling) }
                if let j = pairs.firstIndex(where: { $0.transaction == m.transactionID }) {
                    pairs[j].state = .waiting
                    pairs[j].nextRetransmit = .max
                    triggered.append(j)
                }
            } else {
                pairs[i].state = .failed
                pairs[i].nextRetransmit = .max
            }
            return
        }
        // §7.2.5.2.1: the response must come back the way the check went.
        guard from == pairs[i].remote.address && to == pairs[i].local.address else {
            pairs[i].state = .failed
            pairs[i].nextRetransmit = .max
            return
        }
        counters.successes += 1
        if pairs[i].transmissions == 1 { roundTripMicros = now - pairs[i].sentAt }
        pairs[i].state = .succeeded
        pairs[i].nextRetransmit = .max
        if pairs[i].useCandidate || pairs[i].nominateOnSuccess {
            nominate(i)
        } else if role == .controlling && selected == nil && !pairs.contains(where: { $0.useCandidate && $0.state == .inProgress }) {
            // Regular nomination (§8.1.1): check the best valid pair again, with USE-CANDIDATE.
            pairs[i].useCandidate = true
            pairs[i].state = .inProgress
            pairs[i].transmissions = 0
            pairs[i].transaction = random.transactionID()
            send(check: i, retransmission: false)
        }
    }

    func nominate(_ i: Int) {
        pairs[i].nominated = true
        guard state != .connected else { return }
        selected = i
        connect()
    }

    func connect() {
        guard let s = selected else { return }
        if restarts > 0 { selectedPairChanges += 1 }
        state = .connected
        lastConsent = now
        nextConsent = now + 4_000_000 + Int64(random.next() % 2_000_001)
        // The other pairs stop (§8.3).
        for i in pairs.indices where i != s && pairs[i].state == .inProgress { pairs[i].state = .failed; pairs[i].nextRetransmit = .max }
        events.append(.connected(local: pairs[s].local, remote: pairs[s].remote))
    }
}
