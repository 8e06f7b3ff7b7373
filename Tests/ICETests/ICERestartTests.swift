import Testing
import ICE
import RTPCore

/// ICE restart (RFC 8445 §9; RFC 9725 §4.3.3 by PATCH), in virtual time: both agents take new
/// credentials, the peer's new candidates replace the old, and a new pair is selected while the
/// old one is not lost before it; checks with the old credentials are refused after.
@Suite struct ICERestartTests {
    static let serverMoved = STUNAddress(ip: [10, 0, 0, 1], port: 8190)
    static let newPublisher = ICEAgent.Credentials(ufrag: "pub2", password: "publisher-password-22-v2")
    static let newServer = ICEAgent.Credentials(ufrag: "srv2", password: "server-password-24-chars-v2")

    /// A full (not lite) controlled server, as pion is.
    func fullServer() -> ICEAgent {
        let s = ICEAgent(
            role: .controlled, local: serverCredentials, remote: publisherCredentials, tieBreaker: 0x99, seed: 2, hmacSHA1: hmac)
        s.addLocal(.host(serverAddress))
        s.addLocal(.host(Self.serverMoved))
        s.addRemote(.host(publisherAddress))
        return s
    }

    func connected(_ net: VirtualNet, _ k: Int) -> [(Int64, ICECandidate)] {
        net.events.compactMap { e in
            guard e.1 == k, case let .connected(_, remote) = e.2 else { return nil }
            return (e.0, remote)
        }
    }

    @Test func aRestartSelectsTheNewPairAndKeepsTheOldUntilThen() {
        let p = publisher()
        let s = fullServer()
        let net = VirtualNet()
        net.add(p, [publisherAddress])
        net.add(s, [serverAddress, Self.serverMoved])
        net.run(until: 2_000_000) { p.state == .connected && s.state == .connected }
        #expect(p.state == .connected && p.selectedPair?.remote.address == serverAddress)
        net.run(until: 3_000_000)
        // The server restarts (its PATCH handler) on the new credentials, and answers with its
        // new candidate only; the publisher applies that answer.
        let t0 = net.now
        s.restart(local: Self.newServer, remote: Self.newPublisher, remoteCandidates: [.host(publisherAddress)], now: t0)
        p.restart(local: Self.newPublisher, remote: Self.newServer, remoteCandidates: [.host(Self.serverMoved)], now: t0)
        #expect(p.state == .checking && p.restarts == 1)
        // Until the new pair is chosen nothing is lost: the transport keeps the previous path.
        net.run(until: t0 + 2_000_000) { p.state == .connected && s.state == .connected }
        let after = connected(net, 0).filter { $0.0 >= t0 }
        #expect(after.count == 1 && after.first?.1.address == Self.serverMoved, "\(after)")
        #expect(p.selectedPair?.remote.address == Self.serverMoved && p.selectedPairChanges == 1)
        #expect((after.first?.0 ?? .max) - t0 < 500_000, "the new pair within half a second")
        // Consent goes on over the new pair, under the new credentials: still connected 40 s on
        // (30 s without consent would fail it), and nothing of the old credentials is accepted.
        let rejectedBefore = s.counters.rejected
        net.run(until: t0 + 40_000_000)
        #expect(p.state == .connected && s.state == .connected)
        #expect(s.counters.rejected == rejectedBefore, "checks under the old credentials after the restart")
    }

    @Test func aCheckUnderTheOldCredentialsIsRefusedAfterTheRestart() {
        let s = fullServer()
        s.restart(local: Self.newServer, remote: Self.newPublisher, remoteCandidates: [.host(publisherAddress)], now: 0)
        // A publisher still on the first credentials: its checks fail integrity (401), it never connects.
        let p = publisher()
        let net = VirtualNet()
        net.add(p, [publisherAddress])
        net.add(s, [serverAddress, Self.serverMoved])
        net.run(until: 3_000_000)
        #expect(p.state != .connected && s.counters.rejected > 0)
    }

    @Test func aLiteAgentTakesTheNewCredentials() {
        let s = liteServer()
        s.restart(local: Self.newServer, remote: Self.newPublisher, remoteCandidates: [], now: 0)
        let p = ICEAgent(role: .controlling, local: Self.newPublisher, remote: Self.newServer, tieBreaker: 0x1234, seed: 1, hmacSHA1: hmac)
        p.addLocal(.host(publisherAddress))
        p.addRemote(.host(serverAddress))
        let net = VirtualNet()
        net.add(p, [publisherAddress])
        net.add(s, [serverAddress])
        net.run(until: 2_000_000) { p.state == .connected }
        #expect(p.state == .connected && s.state == .connected && s.restarts == 1)
    }
    /// A restart during an outage: its checks all go unanswered, and that does not end the
    /// session — the old pair's consent does, 30 s after its last answer (RFC 7675 §5.1). The
    /// consent age grows through the outage; a second restart once the path is back connects.
    @Test func aFailedRestartWaitsForConsentAndASecondOneRecovers() {
        let p = publisher()
        let s = fullServer()
        let net = VirtualNet()
        net.add(p, [publisherAddress])
        net.add(s, [serverAddress, Self.serverMoved])
        net.run(until: 2_000_000) { p.state == .connected && s.state == .connected }
        #expect(p.state == .connected && (p.consentAgeMicros ?? .max) < 100_000)
        // Everything is lost from 3 s to 25 s.
        net.drop = { _, now in now >= 3_000_000 && now < 25_000_000 }
        net.run(until: 12_000_000)
        let age = p.consentAgeMicros ?? 0
        #expect(age > 6_000_000 && age < 12_000_000, "\(age)")
        // A watch reading between the agent's steps gets the age at its own clock (the agent's
        // is its last step's; on a silent path that lags by seconds), never less than the agent's.
        #expect((p.consentAge(at: net.now + 3_000_000) ?? 0) - age >= 3_000_000)
        #expect(p.consentAge(at: 0) == age)
        // A restart at 12 s: its checks all fail in the outage, the agent waits.
        s.restart(local: Self.newServer, remote: Self.newPublisher, remoteCandidates: [.host(publisherAddress)], now: net.now)
        p.restart(local: Self.newPublisher, remote: Self.newServer, remoteCandidates: [.host(serverAddress)], now: net.now)
        net.run(until: 24_000_000)
        #expect(p.state == .checking, "a failed restart ended the session: \(p.state)")
        #expect(
            !net.events.contains { e in
                if e.1 == 0, case .failed = e.2 { return true }
                return false
            })
        // The path is back at 25 s; a second restart at 26 s connects before the 30 s of consent run out.
        net.run(until: 26_000_000)
        let third = ICEAgent.Credentials(ufrag: "pub3", password: "publisher-password-22-v3")
        let serverThird = ICEAgent.Credentials(ufrag: "srv3", password: "server-password-24-chars-v3")
        s.restart(local: serverThird, remote: third, remoteCandidates: [.host(publisherAddress)], now: net.now)
        p.restart(local: third, remote: serverThird, remoteCandidates: [.host(serverAddress)], now: net.now)
        net.run(until: 28_000_000) { p.state == .connected }
        #expect(p.state == .connected && p.restarts == 2 && (p.consentAgeMicros ?? .max) < 1_000_000)
    }

    /// Without a second restart the old pair's consent runs out 30 s after its last answer.
    @Test func consentEndsASessionWhoseRestartNeverConnected() {
        let p = publisher()
        let s = fullServer()
        let net = VirtualNet()
        net.add(p, [publisherAddress])
        net.add(s, [serverAddress, Self.serverMoved])
        net.run(until: 2_000_000) { p.state == .connected && s.state == .connected }
        net.drop = { _, now in now >= 3_000_000 }
        net.run(until: 10_000_000)
        p.restart(local: Self.newPublisher, remote: Self.newServer, remoteCandidates: [.host(serverAddress)], now: net.now)
        net.run(until: 40_000_000) { p.state == .failed }
        let failedAt = net.events.first { e in
            if e.1 == 0, case let .failed(f) = e.2, case .consentExpired = f { return true }
            return false
        }?.0
        #expect(p.state == .failed && failedAt != nil && (failedAt ?? 0) <= 36_500_000, "\(p.state) at \(failedAt ?? -1)")
    }
}
