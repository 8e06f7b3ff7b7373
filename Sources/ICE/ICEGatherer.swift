import RTPCore

/// Server-reflexive candidates (RFC 8445 §5.1.1.2), sans-IO: a STUN Binding request (RFC 8489
/// §6, no credentials) from each host candidate's address to each STUN server; the answer's
/// XOR-MAPPED-ADDRESS is what the server saw — behind a NAT, the public address. Requests are
/// retransmitted after 250 ms doubling to 1 s, 6 sends in all (~3.75 s), then that server counts
/// as unreachable from that base.
public final class ICEGatherer {
    public enum Result: Sendable, Equatable {
        /// `redundant`: the server saw the host address itself (no NAT between): RFC 8445
        /// §5.1.3 drops such a candidate, but the path to the server works.
        case reflexive(ICECandidate, base: STUNAddress, server: STUNAddress, redundant: Bool, roundTripMicros: Int64)
        case failed(base: STUNAddress, server: STUNAddress, reason: String)
    }

    struct Query {
        var base: STUNAddress
        var server: STUNAddress
        var transaction: [UInt8]
        var sends = 0
        var firstSent: Int64 = 0
        var next: Int64 = 0
        var done = false
    }

    static let maxSends = 6
    var queries: [Query] = []
    var outbox: [Transmit] = []
    var results: [Result] = []
    var random: ICERandom

    public init(hosts: [ICECandidate], servers: [STUNAddress], seed: UInt64) {
        random = ICERandom(seed: seed)
        for h in hosts {
            for s in servers where s.ip.count == h.address.ip.count { queries.append(Query(base: h.address, server: s, transaction: [])) }
        }
        for i in queries.indices { queries[i].transaction = random.transactionID() }
    }

    /// All queries answered or given up.
    public var isDone: Bool { queries.allSatisfy(\.done) }

    public func pollTransmit() -> Transmit? { outbox.isEmpty ? nil : outbox.removeFirst() }
    public func pollResult() -> Result? { results.isEmpty ? nil : results.removeFirst() }

    public func step(now: Int64) -> Int64? {
        var wake: Int64 = .max
        for i in queries.indices where !queries[i].done {
            if now >= queries[i].next {
                if queries[i].sends >= Self.maxSends {
                    queries[i].done = true
                    results.append(
                        .failed(
                            base: queries[i].base, server: queries[i].server,
                            reason: "no answer from the STUN server \(queries[i].server) in \(Self.maxSends) tries"))
                    continue
                }
                if queries[i].sends == 0 { queries[i].firstSent = now }
                let request = STUNMessage(class: .request, transactionID: queries[i].transaction, attributes: [.software("pubbot")])
                if let bytes = try? request.encode(fingerprint: true) {
                    outbox.append(Transmit(bytes: bytes, from: queries[i].base, to: queries[i].server))
                }
                queries[i].sends += 1
                queries[i].next = now + min(250_000 << Int64(queries[i].sends - 1), 1_000_000)
            }
            wake = min(wake, queries[i].next)
        }
        return wake == .max ? nil : wake
    }

    /// A datagram arrived at `to` from `from`: true when it answered one of the queries.
    @discardableResult
    public func handle(_ bytes: [UInt8], from: STUNAddress, to: STUNAddress, now: Int64) -> Bool {
        guard STUNMessage.looksLikeSTUN(bytes.span), let m = try? STUNMessage.parse(bytes.span),
            let i = queries.firstIndex(where: { !$0.done && $0.transaction == m.transactionID && $0.server == from })
        else { return false }
        queries[i].done = true
        let q = queries[i]
        if m.messageClass == .error {
            results.append(
                .failed(
                    base: q.base, server: q.server,
                    reason: "the STUN server refused the request (\(m.errorCode.map { "\($0.code) \($0.reason)" } ?? "error"))"))
        } else if let mapped = m.xorMappedAddress {
            let c = ICECandidate(
                foundation: String(CRC32.checksum(q.base.ip + q.server.ip), radix: 16), priority: ICECandidate.priority(kind: .srflx),
                address: mapped, kind: .srflx, relatedAddress: q.base)
            results.append(.reflexive(c, base: q.base, server: q.server, redundant: mapped == q.base, roundTripMicros: now - q.firstSent))
        } else {
            results.append(.failed(base: q.base, server: q.server, reason: "the STUN server's answer has no XOR-MAPPED-ADDRESS"))
        }
        return true
    }
}
