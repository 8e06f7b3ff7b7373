import Testing
@testable import Transport
import Platform
import RTPCore

@Suite struct Base64Tests {
    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")]) // RFC 4648 §10
    func rfc4648Vectors(_ plain: String, _ encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func rejectsInvalid() {
        for bad in ["Zg=", "Z===", "Zm9v!", "Zg==Zg==", "=Zg="] { #expect(Base64.decode(bad) == nil, "\(bad)") }
    }
}

@Suite struct SRTPTests {
    func packet(seq: UInt16, payload: Int = 100) -> [UInt8] {
        [0x80, 0x60, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0, 1, 0xCA, 0xFE, 0xBA, 0xBE]
            + (0..<payload).map { UInt8(truncatingIfNeeded: $0) }
            + [UInt8](repeating: 0, count: 160)
    }

    @Test(arguments: SRTPSuite.allCases)
    func protectsAndUnprotects(_ suite: SRTPSuite) throws {
        let key = SRTPKey.random(suite: suite)
        let tx = try SRTPSession(key: key, direction: .outbound)
        let rx = try SRTPSession(key: key, direction: .inbound)
        var buf = packet(seq: 1)
        let plain = Array(buf[0..<112])
        let n = try buf.withUnsafeMutableBytes { try tx.protectRTP($0.baseAddress!, length: 112, capacity: $0.count) }
        #expect(n == 112 + (suite == .gcm ? 16 : 10))
        #expect(Array(buf[12..<112]) != Array(plain[12..<112])) // payload encrypted
        let m = try buf.withUnsafeMutableBytes { try rx.unprotectRTP($0.baseAddress!, length: n) }
        #expect(m == 112 && Array(buf[0..<112]) == plain)
        // Replaying the same packet is refused.
        var again = packet(seq: 1)
        let n2 = try again.withUnsafeMutableBytes { try tx.protectRTP($0.baseAddress!, length: 112, capacity: $0.count) }
        #expect(throws: SRTPError.replayed) { try again.withUnsafeMutableBytes { try rx.unprotectRTP($0.baseAddress!, length: n2) } }
    }

    @Test func wrongKeyFailsAuthentication() throws {
        let tx = try SRTPSession(key: .random(suite: .aesCm), direction: .outbound)
        let rx = try SRTPSession(key: .random(suite: .aesCm), direction: .inbound)
        var buf = packet(seq: 7)
        let n = try buf.withUnsafeMutableBytes { try tx.protectRTP($0.baseAddress!, length: 112, capacity: $0.count) }
        #expect(throws: SRTPError.authenticationFailed) {
            try buf.withUnsafeMutableBytes { try rx.unprotectRTP($0.baseAddress!, length: n) }
        }
    }

    @Test func protectsRTCP() throws {
        let key = SRTPKey.random(suite: .gcm)
        let tx = try SRTPSession(key: key, direction: .outbound)
        let rx = try SRTPSession(key: key, direction: .inbound)
        var buf: [UInt8] = [0x80, 0xC8, 0x00, 0x06] + [0, 0, 0, 1] + [UInt8](repeating: 5, count: 20) + [UInt8](repeating: 0, count: 200)
        let n = try buf.withUnsafeMutableBytes { try tx.protectRTCP($0.baseAddress!, length: 28, capacity: $0.count) }
        let m = try buf.withUnsafeMutableBytes { try rx.unprotectRTCP($0.baseAddress!, length: n) }
        #expect(m == 28 && buf[8] == 5)
    }

    @Test func garbageIsRejectedNotFatal() throws {
        let rx = try SRTPSession(key: .random(suite: .aesCm), direction: .inbound)
        var rng = SystemRandomNumberGenerator()
        var rejected = 0
        for len in [0, 1, 11, 12, 13, 30, 200, 1400] {
            var buf = (0..<max(len, 1)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if len >= 1 { buf[0] = 0x80 }
            do { _ = try buf.withUnsafeMutableBytes { try rx.unprotectRTP($0.baseAddress!, length: len) } } catch { rejected += 1 }
        }
        #expect(rejected == 8)
    }

    @Test func keyParsingAndRedaction() throws {
        let k = SRTPKey.random(suite: .aesCm)
        let b64 = k.revealBase64()
        #expect(b64.count == 40)
        #expect(try SRTPKey(base64: b64, suite: .aesCm).revealBase64() == b64)
        #expect(!"\(k)".contains(b64) && !String(reflecting: k).contains(b64))
        #expect(throws: SRTPKey.ParseError.wrongLength(got: 30, expected: 28, suite: .gcm)) { try SRTPKey(base64: b64, suite: .gcm) }
        #expect(throws: SRTPKey.ParseError.notBase64) { try SRTPKey(base64: "not base64!", suite: .aesCm) }
        #expect(SRTPSuite(sdesName: "AEAD_AES_128_GCM") == .gcm)
    }
}

@Suite struct UDPTests {
    @Test func parsesAddresses() throws {
        #expect(try SocketAddress(parsing: "127.0.0.1:5004").port == 5004)
        #expect(try SocketAddress(parsing: "[::1]:9").isIPv6)
        #expect(try SocketAddress(parsing: "127.0.0.1:5004").withPort(6000).description == "127.0.0.1:6000")
        for bad in ["127.0.0.1", "127.0.0.1:", ":80", "127.0.0.1:70000", "[::1]9"] {
            #expect(throws: SocketError.self, "\(bad)") { try SocketAddress(parsing: bad) }
        }
    }

    @Test func batchSendAndReceiveOverLoopback() throws {
        let rx = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let tx = try UDPSocket(for: rx.localAddress)
        let batch = PacketBatch(capacity: 64)
        for i in 0..<50 {
            let s = batch.slot(i)
            for k in 0..<100 { s[k] = UInt8(truncatingIfNeeded: i + k) }
            batch.lengths[i] = 100
        }
        #expect(try tx.send(batch, 0..<50, to: rx.localAddress) == 50)
        let inbox = PacketBatch(capacity: 16)
        var got = 0
        let deadline = Clock.monotonicMicros() + 2_000_000
        while got < 50 && Clock.monotonicMicros() < deadline {
            _ = rx.wait(timeoutMicros: 100_000)
            let n = try rx.receive(into: inbox)
            for i in 0..<n {
                #expect(inbox.lengths[i] == 100)
                #expect(inbox.slot(i)[0] == UInt8(truncatingIfNeeded: got + i))
            }
            got += n
        }
        #expect(got == 50)
    }

    @Test func oversizedDatagramIsFlagged() throws {
        let rx = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let tx = try UDPSocket(for: rx.localAddress)
        let big = [UInt8](repeating: 1, count: 3000)
        try big.withUnsafeBytes { try tx.send($0, to: rx.localAddress) }
        _ = rx.wait(timeoutMicros: 1_000_000)
        let inbox = PacketBatch(capacity: 4)
        #expect(try rx.receive(into: inbox) == 1)
        #expect(Int(inbox.lengths[0]) > PacketBatch.maxPacketSize)
    }

    /// A datagram read 50 ms after it arrived carries its arrival time, not the read's: the
    /// kernel's stamp, on the monotonic clock the drivers use. Without timestamps on, none. (The
    /// kernel turns arrival stamping on asynchronously — until then it stamps at the read — so
    /// the first few datagrams may carry the read's time; within a second they must not.)
    @Test func arrivalTimestampIsTheKernelsNotTheReads() throws {
        let rx = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let tx = try UDPSocket(for: rx.localAddress)
        let inbox = PacketBatch(capacity: 4)
        let one: [UInt8] = [1, 2, 3]
        try one.withUnsafeBytes { try tx.send($0, to: rx.localAddress) }
        _ = rx.wait(timeoutMicros: 1_000_000)
        #expect(try rx.receive(into: inbox) == 1 && inbox.arrival(0) == nil)
        try rx.enableArrivalTimestamps()
        var seen: [(sent: Int64, arrival: Int64, read: Int64)] = []
        for _ in 0..<20 {
            let sent = Clock.monotonicMicros()
            try one.withUnsafeBytes { try tx.send($0, to: rx.localAddress) }
            Clock.sleep(micros: 50_000) // the late reader this is about
            let read = Clock.monotonicMicros()
            #expect(try rx.receive(into: inbox) == 1)
            let arrival = try #require(inbox.arrival(0))
            #expect(arrival >= sent - 2_000 && arrival <= Clock.monotonicMicros(), "sent \(sent), arrived \(arrival), read \(read)")
            seen.append((sent, arrival, read))
            if arrival < read - 40_000 { break }
        }
        #expect(seen.contains { $0.arrival < $0.read - 40_000 }, "\(seen)")
    }

    @Test func eventSignalWakesTheWait() throws {
        let s = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let e = try EventSignal()
        #expect(s.wait(timeoutMicros: 1000, wake: e) == 0)
        e.signal()
        #expect(s.wait(timeoutMicros: 1_000_000, wake: e) == 2)
        e.drain()
    }
}

@Suite struct EphemeralPortTests {
    /// Regression: SO_REUSEADDR on ephemeral binds let Linux hand two bots the same source port,
    /// so a receiver saw two publishers as one (found by a 200-bot load run).
    @Test func everyEphemeralSocketGetsItsOwnPort() throws {
        let peer = try SocketAddress(host: "127.0.0.1", port: 9)
        var sockets: [UDPSocket] = []
        for _ in 0..<400 { sockets.append(try UDPSocket(for: peer)) }
        let ports = Set(sockets.map(\.localAddress.port))
        #expect(ports.count == sockets.count)
    }
}

@Suite struct LocalInterfaceTests {
    /// The loopback interface is listed (every Linux has it); host-candidate selection leaves it
    /// out unless asked, never offers IPv6 link-local, and honours an interface name.
    @Test func listsAndSelectsHostAddresses() {
        let all = LocalInterfaces.list()
        #expect(all.contains { $0.name == "lo" && $0.ip == [127, 0, 0, 1] && $0.isLoopback && $0.isUp }, "\(all)")
        let hosts = LocalInterfaces.hostAddresses()
        #expect(hosts.allSatisfy { !$0.isLoopback && !$0.isLinkLocal && $0.isUp })
        #expect(all.filter { !$0.isLoopback && $0.isUp && !$0.isLinkLocal }.count == hosts.count)
        #expect(LocalInterfaces.hostAddresses(interface: "lo", includeLoopback: true, ipv6: false).map(\.ip) == [[127, 0, 0, 1]])
        #expect(LocalInterfaces.hostAddresses(interface: "no-such-interface0").isEmpty)
    }
}

/// Addresses built from their bytes — what the sessions convert every transport datagram's
/// address with — agree with the resolver's, with no text and no `getaddrinfo` between.
@Suite struct SocketAddressBytesTests {
    @Test(arguments: [
        ("192.0.2.7", 5004, [UInt8]([192, 0, 2, 7])),
        ("2001:db8::1", 443, [UInt8]([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]))
    ])
    func bytesRoundTripAndMatchTheResolver(_ host: String, _ port: Int, _ ip: [UInt8]) throws {
        let resolved = try SocketAddress(host: host, port: port)
        let built = try #require(SocketAddress(ip: ip, port: port))
        #expect(built == resolved && built.ipBytes == ip && built.port == port)
        #expect(built.withPort(9) == (try SocketAddress(host: host, port: 9)))
        #expect(built.withPort(9).ipBytes == ip)
    }

    @Test func refusesWhatIsNotAnAddress() {
        #expect(SocketAddress(ip: [1, 2, 3], port: 1) == nil)
        #expect(SocketAddress(ip: [127, 0, 0, 1], port: 70_000) == nil)
    }
}
