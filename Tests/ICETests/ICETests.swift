import Testing
import ICE
import RTPCore
import Crypto

func hmac(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] { Crypto.hmacSHA1(key: key, data: data) }

/// Two agents joined by a virtual network: datagrams go to the agent that owns the destination
/// address, after `delay`, unless `drop` says otherwise. No socket, no sleep.
final class VirtualNet {
    var agents: [(ICEAgent, [STUNAddress])] = []
    var inFlight: [(due: Int64, t: Transmit)] = []
    var now: Int64 = 0
    var delay: Int64 = 10_000
    var drop: (Transmit, Int64) -> Bool = { _, _ in false }
    var events: [(Int64, Int, ICEAgent.Event)] = []

    func add(_ a: ICEAgent, _ addresses: [STUNAddress]) { agents.append((a, addresses)) }

    /// Runs until `until` (µs) or `stop` is true.
    func run(until: Int64, stop: () -> Bool = { false }) {
        while now <= until && !stop() {
            var wake = until + 1
            for (k, (a, _)) in agents.enumerated() {
                if let w = a.step(now: now) { wake = min(wake, w) }
                while let t = a.pollTransmit() { if !drop(t, now) { inFlight.append((now + delay, t)) } }
                while let e = a.pollEvent() { events.append((now, k, e)) }
            }
            inFlight.sort { $0.due < $1.due }
            var delivered = false
            while let f = inFlight.first, f.due <= now {
                inFlight.removeFirst()
                delivered = true
                if let (a, _) = agents.first(where: { $0.1.contains(f.t.to) }) { a.handle(f.t.bytes, from: f.t.from, to: f.t.to, now: now) }
            }
            if delivered { continue } // let the receivers answer at the same instant
            if stop() { break }
            if let f = inFlight.first { wake = min(wake, f.due) }
            now = max(now + 1, wake)
        }
        for (k, (a, _)) in agents.enumerated() { while let e = a.pollEvent() { events.append((now, k, e)) } }
    }
}

let publisherAddress = STUNAddress(ip: [10, 0, 0, 2], port: 40_000)
let serverAddress = STUNAddress(ip: [10, 0, 0, 1], port: 8189)
let publisherCredentials = ICEAgent.Credentials(ufrag: "pubr", password: "publisher-password-22chars")
let serverCredentials = ICEAgent.Credentials(ufrag: "srvr", password: "server-password-24-chars")

func publisher(seed: UInt64 = 1, remote: ICEAgent.Credentials = serverCredentials) -> ICEAgent {
    let a = ICEAgent(role: .controlling, local: publisherCredentials, remote: remote, tieBreaker: 0x1234, seed: seed, hmacSHA1: hmac)
    a.addLocal(.host(publisherAddress))
    a.addRemote(.host(serverAddress))
    return a
}

func liteServer() -> ICEAgent {
    let s = ICEAgent(
        role: .controlled, local: serverCredentials, remote: publisherCredentials, tieBreaker: 0x99, lite: true, seed: 2, hmacSHA1: hmac)
    s.addLocal(.host(serverAddress))
    return s
}

@Suite struct ICECandidateTests {
    @Test func parsesAndWritesCandidateLines() throws {
        let c = try ICECandidate.parse("a=candidate:1467250027 1 udp 2122260223 192.168.0.196 46243 typ host generation 0")
        #expect(
            c.priority == 2_122_260_223 && c.address.description == "192.168.0.196:46243" && c.kind == .host && c.foundation == "1467250027"
        )
        #expect(try ICECandidate.parse(Substring(c.description)) == c)
        let v6 = try ICECandidate.parse("candidate:2 1 UDP 1694498815 2001:db8::7:1 50000 typ srflx raddr :: rport 0")
        #expect(v6.address.ip == [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 8) + [0, 7, 0, 1] && v6.kind == .srflx)
        #expect(try ICECandidate.parse(Substring(v6.description)) == v6)
        for bad in [
            "candidate:1 1 tcp 1 10.0.0.1 9 typ host tcptype active", "candidate:1 1 udp 1 abcd.local 9 typ host",
            "candidate:1 1 udp 1 10.0.0.1 70000 typ host", "candidate:1 1 udp 1 10.0.0.1 9 typ weird",
            "candidate:1 1 udp 1 1::2::3 9 typ host"
        ] {
            #expect(throws: ICECandidate.ParseError.self) { try ICECandidate.parse(Substring(bad)) }
        }
        // RFC 8839 §5.1: raddr/rport read past other pairs, and written for every type but host
        // (the unspecified address when not known, as libwebrtc writes a hidden one).
        let relay = try ICECandidate.parse("candidate:9 1 udp 16777215 10.0.0.1 5000 typ relay network-id 1 raddr 192.0.2.1 rport 4000")
        #expect(relay.relatedAddress == STUNAddress(ip: [192, 0, 2, 1], port: 4000), "\(relay)")
        #expect(relay.description.hasSuffix("typ relay raddr 192.0.2.1 rport 4000 network-id 1"), "\(relay.description)")
        #expect(try ICECandidate.parse(Substring(relay.description)) == relay)
        var bare = relay
        bare.relatedAddress = nil
        #expect(bare.description.hasSuffix("typ relay raddr 0.0.0.0 rport 0 network-id 1"))
        // …which reads back as no base (the fuzzer's round trip: a relay line without one).
        #expect(try ICECandidate.parse(Substring(bare.description)) == bare)
        #expect(v6.relatedAddress == nil)
        // network-id and network-cost (draft-thatcher-ice-network-cost), as libwebrtc writes them
        // after a candidate: read, and written back after the RFC 8839 fields.
        let host = ICECandidate.host(STUNAddress(ip: [10, 81, 0, 2], port: 5000), localPreference: 64_511, networkID: 2, networkCost: 10)
        #expect(host.description.hasSuffix("typ host network-id 2 network-cost 10"), "\(host.description)")
        #expect(try ICECandidate.parse(Substring(host.description)) == host)
        let chromium = try ICECandidate.parse(
            "candidate:1 1 udp 2122260223 192.168.1.5 54321 typ host generation 0 ufrag ab network-id 3 network-cost 900")
        #expect(chromium.networkID == 3 && chromium.networkCost == 900)
        #expect(try ICECandidate.parse("candidate:1 1 udp 1 10.0.0.1 9 typ host network-cost -5 network-id 99999").networkCost == nil)
        let hostWithBase = try ICECandidate.parse("candidate:1 1 udp 1 fd00::2 9 typ host raddr 203.0.113.9 rport 5")
        let hostAgain = try ICECandidate.parse(Substring(hostWithBase.description))
        #expect(hostWithBase.relatedAddress == nil && hostAgain == hostWithBase)
        #expect(!c.description.contains("raddr"))
        // RFC 8445 §5.1.2.1 with the recommended preferences.
        #expect(ICECandidate.priority(kind: .host) == 2_130_706_431)
        #expect(ICECandidate.priority(kind: .relay, localPreference: 0) == 255)
    }

    /// RFC 5952 §4: the canonical text of an IPv6 address, as Go's `net.IP.String` writes it
    /// (pion compares candidate addresses as text).
    @Test func writesIPv6Canonically() throws {
        func text(_ groups: [UInt16]) -> String {
            STUNAddress(ip: groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }, port: 9).ipText
        }
        #expect(text([0, 0, 0, 0, 0, 0, 0, 1]) == "::1")
        #expect(text([0, 0, 0, 0, 0, 0, 0, 0]) == "::")
        #expect(text([0xfd00, 0, 0, 0, 0, 0, 0, 2]) == "fd00::2")
        #expect(text([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1]) == "2001:db8::1:0:0:1") // the first of equal runs
        #expect(text([0x2001, 0xdb8, 0, 1, 1, 1, 1, 1]) == "2001:db8:0:1:1:1:1:1") // one zero group stays
        #expect(text([0x2001, 0xdb8, 0, 0, 0, 1, 0, 0]) == "2001:db8::1:0:0") // the longest run
        #expect(text([0xfe80, 0, 0, 0, 0xABCD, 0, 0, 0]) == "fe80::abcd:0:0:0")
        #expect(text([1, 0, 0, 0, 0, 0, 0, 0]) == "1::")
        let c = try ICECandidate.parse("candidate:1 1 udp 1 0:0:0:0:0:0:0:1 9 typ host")
        #expect(c.description.contains(" ::1 9 typ host"), "\(c)")
        #expect(try ICECandidate.parse(Substring(c.description)) == c)
    }
}

@Suite struct ICEAgentTests {
    /// Controlling full agent against an ICE-lite server (most SFUs): one check, one
    /// nomination, connected in two round trips; consent keeps it alive for a minute.
    @Test func connectsToALiteServerAndKeepsConsent() {
        let net = VirtualNet()
        let p = publisher(), s = liteServer()
        net.add(p, [publisherAddress])
        net.add(s, [serverAddress])
        net.run(until: 1_000_000) { p.state == .connected && s.state == .connected }
        #expect(p.state == .connected && s.state == .connected)
        #expect(net.now <= 60_000, "connected after \(net.now) µs") // check + nomination: 2 round trips of 20 ms
        #expect(p.selectedPair?.remote.address == serverAddress && s.selectedPair?.remote.address == publisherAddress)
        #expect(net.events.contains { $0.1 == 0 && $0.2 == .connected(local: .host(publisherAddress), remote: .host(serverAddress)) })
        net.run(until: 60_000_000)
        #expect(p.state == .connected)
        #expect((10...15).contains(p.counters.checksSent - 2), "consent checks in 60 s: \(p.counters.checksSent - 2)") // every 4–6 s
    }

    /// The first checks are lost: retransmissions (250 ms, 500 ms, 1 s …) get through.
    @Test func retransmitsLostChecks() {
        let net = VirtualNet()
        let p = publisher(), s = liteServer()
        net.add(p, [publisherAddress])
        net.add(s, [serverAddress])
        var dropped = 0
        net.drop = { t, _ in
            guard t.to == serverAddress, dropped < 3 else { return false }
            dropped += 1
            return true
        }
        net.run(until: 5_000_000) { p.state == .connected }
        #expect(p.state == .connected && p.counters.retransmissions == 3)
        #expect((1_750_000...1_900_000).contains(net.now), "connected after \(net.now) µs") // 0.25 + 0.5 + 1.0 s, then two round trips
    }

    /// Wrong credentials: the server refuses every check (401), nothing connects, the agent says
    /// so after its checks ran out — in bounded time.
    @Test func wrongPasswordFailsInBoundedTime() {
        let net = VirtualNet()
        let p = publisher(remote: ICEAgent.Credentials(ufrag: "srvr", password: "not-the-server-password"))
        let s = liteServer()
        net.add(p, [publisherAddress])
        net.add(s, [serverAddress])
        net.run(until: 20_000_000) { p.state == .failed }
        #expect(p.state == .failed && s.state == .checking)
        #expect(s.counters.rejected > 0 && p.counters.successes == 0)
        #expect(net.now < 7_000_000, "failed after \(net.now) µs")
        let reason = net.events.compactMap { if case let .failed(r) = $0.2 { r } else { nil } }.first
        // Every check drew a 401 without integrity: eight answers refused, said in the message.
        #expect(reason == .noPairAnswered(pairs: 1, checksEach: 8, answersRefused: 8), "\(String(describing: reason))")
        #expect(reason?.description.contains("8 STUN messages refused") == true)
        #expect(reason?.description.contains("no candidate pair answered") == true)
    }

    /// The path dies after connecting: consent is lost 30 s after the last answer (RFC 7675).
    @Test func consentLossEndsTheSession() {
        let net = VirtualNet()
        let p = publisher(), s = liteServer()
        net.add(p, [publisherAddress])
        net.add(s, [serverAddress])
        net.run(until: 1_000_000) { p.state == .connected }
        let cut = net.now
        net.drop = { _, _ in true }
        net.run(until: 60_000_000) { p.state == .failed }
        #expect(p.state == .failed)
        #expect((cut + 29_000_000...cut + 31_000_000).contains(net.now), "failed \(net.now - cut) µs after the cut")
        let reason = net.events.compactMap { if case let .failed(r) = $0.2 { r } else { nil } }.first
        #expect(reason == .consentExpired(seconds: 30), "\(String(describing: reason))")
        #expect(reason?.description.contains("consent lost") == true)
    }

    /// Two full agents that both think they control (as when both sides offer): the tie-breaker
    /// decides (RFC 8445 §7.3.1.1), one switches to controlled, they connect on one pair.
    @Test func roleConflictIsResolvedByTieBreaker() {
        let net = VirtualNet()
        let a = publisher()
        let b = ICEAgent(
            role: .controlling, local: serverCredentials, remote: publisherCredentials, tieBreaker: 0xFFFF_0000, seed: 3, hmacSHA1: hmac)
        b.addLocal(.host(serverAddress))
        b.addRemote(.host(publisherAddress))
        net.add(a, [publisherAddress])
        net.add(b, [serverAddress])
        net.run(until: 3_000_000) { a.state == .connected && b.state == .connected }
        #expect(a.state == .connected && b.state == .connected)
        #expect(a.role == .controlled && b.role == .controlling) // b's tie-breaker is larger
        // Exactly one switch, by the agent with the smaller tie-breaker.
        #expect(net.events.filter { $0.1 == 0 && $0.2 == .roleChanged(.controlled) }.count == 1)
        #expect(!net.events.contains { $0.1 == 1 && $0.2 == .roleChanged(.controlled) })
        #expect(a.selectedPair?.remote.address == serverAddress && b.selectedPair?.remote.address == publisherAddress)
    }

    /// A controlled full agent that was given no remote candidate learns the peer's address
    /// from its check (peer-reflexive) and answers with a triggered check.
    @Test func learnsPeerReflexiveCandidates() {
        let net = VirtualNet()
        let p = publisher()
        let c = ICEAgent(role: .controlled, local: serverCredentials, remote: publisherCredentials, tieBreaker: 7, seed: 4, hmacSHA1: hmac)
        c.addLocal(.host(serverAddress))
        net.add(p, [publisherAddress])
        net.add(c, [serverAddress])
        net.run(until: 3_000_000) { p.state == .connected && c.state == .connected }
        #expect(p.state == .connected && c.state == .connected)
        #expect(c.remoteCandidates.first?.kind == .prflx && c.remoteCandidates.first?.address == publisherAddress)
        #expect(c.counters.checksSent >= 1) // its triggered check
    }

    /// Not STUN is not ICE's (RTP, DTLS pass through); damaged STUN is counted and dropped.
    @Test func otherTrafficIsLeftAlone() {
        let s = liteServer()
        let rtp: [UInt8] = [0x80, 0x60] + [UInt8](repeating: 0, count: 30)
        #expect(!s.handle(rtp, from: publisherAddress, to: serverAddress, now: 0))
        let m = STUNMessage(class: .request, transactionID: Array(repeating: 1, count: 12), attributes: [.username("srvr:pubr")])
        var bytes = try! m.encode(integrityKey: Array(serverCredentials.password.utf8), hmacSHA1: hmac, fingerprint: true)
        bytes[25] ^= 0xFF // inside USERNAME: the fingerprint no longer matches
        #expect(s.handle(bytes, from: publisherAddress, to: serverAddress, now: 0))
        #expect(s.counters.rejected == 1 && s.pollTransmit() == nil)
    }
}

@Suite struct ICEGathererTests {
    /// A STUN server behind a NAT in virtual time: it sees the host's traffic from a public
    /// address; the first request is lost and retransmitted.
    @Test func findsTheServerReflexiveAddress() throws {
        let host = STUNAddress(ip: [192, 168, 1, 5], port: 5000), publicAddress = STUNAddress(ip: [203, 0, 113, 9], port: 61_000)
        let server = STUNAddress(ip: [198, 51, 100, 1], port: 3478), silent = STUNAddress(ip: [198, 51, 100, 2], port: 3478)
        let g = ICEGatherer(hosts: [.host(host)], servers: [server, silent], seed: 9)
        var now: Int64 = 0, sent = 0
        var results: [ICEGatherer.Result] = []
        while !g.isDone && now < 10_000_000 {
            let wake = g.step(now: now)
            while let t = g.pollTransmit() {
                guard t.to == server else { continue } // the second server never answers
                sent += 1
                if sent == 1 { continue } // the first request is lost
                let request = try STUNMessage.parse(t.bytes.span)
                let answer = STUNMessage(
                    class: .success, transactionID: request.transactionID, attributes: [.xorMappedAddress(publicAddress)])
                g.handle(try answer.encode(fingerprint: true), from: server, to: t.from, now: now + 30_000)
            }
            while let r = g.pollResult() { results.append(r) }
            now = wake ?? now + 1
        }
        #expect(
            results.contains(
                .reflexive(
                    ICECandidate(
                        foundation: String(CRC32.checksum(host.ip + server.ip), radix: 16), priority: ICECandidate.priority(kind: .srflx),
                        address: publicAddress, kind: .srflx, relatedAddress: host), base: host, server: server, redundant: false,
                    roundTripMicros: 280_000)),
            "\(results)")
        #expect(
            results.contains { if case let .failed(_, s, reason) = $0 { s == silent && reason.contains("no answer") } else { false } },
            "\(results)")
        #expect(now < 5_000_000) // the silent server is given up after ~3.75 s
    }
}

@Suite struct ICEEncodeFailureTests {
    /// A remote ufrag too long for STUN's 16-bit attribute length (a hostile answer's): the
    /// check cannot be encoded, so none is sent — never an empty datagram — and it is counted.
    @Test func aCheckThatCannotBeEncodedIsCountedNotSentEmpty() {
        let a = publisher(remote: ICEAgent.Credentials(ufrag: String(repeating: "u", count: 70_000), password: "server-password-24-chars"))
        var now: Int64 = 0
        for _ in 0..<20 { _ = a.step(now: now); now += 50_000 }
        var sent = 0
        while let t = a.pollTransmit() { sent += 1; #expect(!t.bytes.isEmpty) }
        #expect(sent == 0 && a.counters.encodeFailures > 0 && a.counters.checksSent == 0, "\(a.counters)")
    }
}

@Suite struct ICEServerURLTests {
    @Test func parsesWhatRFC7064And7065Allow() throws {
        let s = try ICEServerURL.parse("stun:stun.example.org")
        #expect(s.scheme == .stun && s.host == "stun.example.org" && s.port == 3478 && s.transport == .udp && !s.isTURN)
        let t = try ICEServerURL.parse("TURN:192.0.2.1:3479?Transport=TCP")
        #expect(t.scheme == .turn && t.host == "192.0.2.1" && t.port == 3479 && t.transport == .tcp && t.isTURN)
        #expect(t.description == "turn:192.0.2.1:3479?transport=tcp")
        let v6 = try ICEServerURL.parse("turns:[2001:db8::1]")
        #expect(v6.host == "2001:db8::1" && v6.port == 5349 && v6.transport == .tls && v6.description == "turns:[2001:db8::1]:5349")
        #expect(try ICEServerURL.parse("turn:h:1?transport=udp").transport == .udp)
        #expect(try ICEServerURL.parse(t.description) == t)
    }

    @Test func refusesWithOneClearReason() {
        for bad in [
            "http://x", "stun:", "stun:host:0", "stun:host:70000", "stun:host?transport=udp", "turns:h?transport=udp",
            "turn:h?transport=sctp", "turn:[::1", "turn:[::1]x", "turn:user@host", "stun", "stun:2001:db8::1"
        ] {
            #expect(throws: ICEServerURL.ParseError.self, "\(bad)") { try ICEServerURL.parse(bad) }
        }
    }
}
