import Testing
import ICE
import RTPCore
@testable import Signalling

/// The trickle/restart fragment (RFC 8840 §4.4, RFC 9725 §4.3): what Chromium-style and pion
/// PATCH bodies carry, RFC 8839's credential rules, and totality on mutated input.
@Suite struct SDPFragmentTests {
    static let trickle =
        "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\na=ice-ufrag:EsAw\r\na=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\n"
        + "a=candidate:1387637174 1 udp 2122260223 192.0.2.1 61764 typ host generation 0 ufrag EsAw network-id 1\r\n"
        + "a=candidate:473322822 1 tcp 1518280447 192.0.2.1 9 typ host tcptype active generation 0\r\n"
        + "a=candidate:1387637174 1 udp 2122260223 192.0.2.1 61764 typ host generation 0 ufrag EsAw network-id 1\r\n"
        + "a=end-of-candidates\r\n"

    @Test func readsCredentialsCandidatesAndTheEnd() {
        let f = SDPFragment.parse(Self.trickle)
        #expect(f.ufrag == "EsAw" && f.password == "P2uYro0UCOQ4zxjKXaWCBui1" && f.credentialsValid)
        // The UDP candidate once (a repeat is dropped); the TCP one is not one pubbot can use.
        #expect(f.candidates.count == 1 && f.candidates.first?.address == STUNAddress(ip: [192, 0, 2, 1], port: 61764), "\(f.candidates)")
        #expect(f.endOfCandidates && !f.lite)
        #expect(SDPFragment.parse("a=ice-lite\na=ice-ufrag:abcd\na=ice-pwd:short").lite)
    }

    @Test(arguments: [
        ("abc", "P2uYro0UCOQ4zxjKXaWCBui1", false), ("abcd", "P2uYro0UCOQ4zxjKXaWC", false), ("ab-d", "P2uYro0UCOQ4zxjKXaWCBui1", false),
        ("ab+/", "P2uYro0UCOQ4zxjKXaWCBui1", true), (String(repeating: "a", count: 257), "P2uYro0UCOQ4zxjKXaWCBui1", false)
    ])
    func credentialsFollowRFC8839(_ ufrag: String, _ pwd: String, _ valid: Bool) {
        #expect(SDPFragment.parse("a=ice-ufrag:\(ufrag)\r\na=ice-pwd:\(pwd)\r\n").credentialsValid == valid)
    }

    /// 20 000 mutations of real fragments: every one parses (no trap), and what it keeps of a
    /// candidate renders to a line that parses back to the same candidate.
    @Test func totalOnMutatedInput() {
        var rng = SplitMix64(seed: 42)
        let seed = Array(Self.trickle.utf8)
        for _ in 0..<20_000 {
            var b = seed
            for _ in 0..<(1 + Int(rng.next() % 8)) {
                let i = Int(rng.next() % UInt64(b.count))
                switch rng.next() % 4 {
                case 0: b[i] = UInt8(truncatingIfNeeded: rng.next())
                case 1: b.remove(at: i)
                case 2: b.insert(UInt8(truncatingIfNeeded: rng.next()), at: i)
                default: b = Array(b.prefix(i))
                }
                if b.isEmpty { b = [0x61] }
            }
            let f = SDPFragment.parse(String(decoding: b, as: UTF8.self))
            _ = f.credentialsValid
            for c in f.candidates where (try? ICECandidate.parse(Substring(c.description))) != c {
                Issue.record("round trip: \(c.description)")
            }
        }
    }
}
