import Testing
import ICE
import RTPCore

/// The publisher's first check to the live candidate is lost; the peer (a full agent, as
/// Chromium) checks first, before or after the answer's candidates are known; an unreachable
/// loopback candidate is paired too. The check is retransmitted and the session connects.
@Suite struct LostFirstCheckTests {
    @Test(arguments: [0, 15_000, 5_000, 10_000])
    func aLostFirstCheckIsRetransmitted(_ first: Int64) {
        let net = VirtualNet()
        let unreachable = STUNAddress(ip: [127, 0, 0, 1], port: 34_421)
        let p = ICEAgent(
            role: .controlling, local: publisherCredentials, remote: serverCredentials, tieBreaker: 0x1234, seed: 1, hmacSHA1: hmac)
        p.addLocal(.host(publisherAddress))
        let s = ICEAgent(
            role: .controlled, local: serverCredentials, remote: publisherCredentials, tieBreaker: 0x99, seed: 2, hmacSHA1: hmac)
        s.addLocal(.host(serverAddress))
        s.addRemote(.host(publisherAddress))
        var dropped = 0
        net.drop = { t, _ in
            if t.from == publisherAddress && t.to == serverAddress && dropped == 0 { dropped += 1; return true }
            return false
        }
        net.add(p, [publisherAddress])
        net.add(s, [serverAddress])
        // The peer's check arrives first (it knew our candidates from the offer).
        if first > 0 { net.run(until: first) { false } }
        p.addRemote(.host(serverAddress))
        p.addRemote(.host(unreachable))
        net.run(until: 10_000_000) { p.state != .checking }
        #expect(dropped == 1)
        #expect(p.state == .connected, "\(net.events) \(p.counters)")
    }
}
