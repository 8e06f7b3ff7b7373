import Testing
import DTLS
import Transport

/// Two DTLS endpoints joined in memory: datagrams are handed over until both sides are quiet.
func exchange(_ a: DTLSEndpoint, _ b: DTLSEndpoint, drop: (Int, [UInt8]) -> Bool = { _, _ in false }) -> (
    a: [DTLSEndpoint.Event], b: [DTLSEndpoint.Event], datagrams: [[UInt8]]
) {
    var ea: [DTLSEndpoint.Event] = [], eb: [DTLSEndpoint.Event] = [], all: [[UInt8]] = []
    var n = 0
    for _ in 0..<50 {
        var moved = false
        while let d = a.pollTransmit() { moved = true; all.append(d); n += 1; if !drop(n, d) { b.handle(d) } }
        while let d = b.pollTransmit() { moved = true; all.append(d); n += 1; if !drop(n, d) { a.handle(d) } }
        while let e = a.pollEvent() { ea.append(e) }
        while let e = b.pollEvent() { eb.append(e) }
        if !moved { break }
    }
    return (ea, eb, all)
}

func keys(_ events: [DTLSEndpoint.Event]) -> (SRTPSuite, SRTPKey, SRTPKey)? {
    for e in events { if case let .connected(suite, send, receive) = e { return (suite, send, receive) } }
    return nil
}

func failure(_ events: [DTLSEndpoint.Event]) -> DTLSFailure? {
    for e in events { if case let .failed(r) = e { return r } }
    return nil
}

@Suite(.serialized) struct DTLSTests {
    /// The handshake over memory: GCM is negotiated (offered first), each side's send key is the
    /// other's receive key — checked by protecting an RTP packet on one side and unprotecting it
    /// on the other, both ways.
    @Test func handshakeExportsMatchingSRTPKeys() throws {
        let ca = try DTLSCertificate(commonName: "client"), cb = try DTLSCertificate(commonName: "server")
        let client = try DTLSEndpoint(role: .client, certificate: ca, remoteFingerprint: cb.fingerprint)
        let server = try DTLSEndpoint(role: .server, certificate: cb, remoteFingerprint: ca.fingerprint)
        client.start()
        server.start()
        let (ec, es, datagrams) = exchange(client, server)
        let (suite, cSend, cReceive) = try #require(keys(ec), "client: \(ec)")
        let (suite2, sSend, sReceive) = try #require(keys(es), "server: \(es)")
        #expect(suite == .gcm && suite2 == .gcm)
        #expect(client.state == .connected && server.state == .connected)
        #expect(datagrams.allSatisfy { $0.count <= 1200 && DTLSEndpoint.looksLikeDTLS($0[0]) })
        for (send, receive) in [(cSend, sReceive), (sSend, cReceive)] {
            let tx = try SRTPSession(key: send, direction: .outbound), rx = try SRTPSession(key: receive, direction: .inbound)
            var packet: [UInt8] =
                [0x80, 0x60, 0x00, 0x01, 0, 0, 0, 1, 0xDE, 0xAD, 0xBE, 0xEF] + Array(repeating: 7, count: 100)
                + Array(repeating: 0, count: 160)
            let protected = try packet.withUnsafeMutableBytes { try tx.protectRTP($0.baseAddress!, length: 112, capacity: $0.count) }
            let plain = try packet.withUnsafeMutableBytes { try rx.unprotectRTP($0.baseAddress!, length: protected) }
            #expect(plain == 112 && packet[12..<112].allSatisfy { $0 == 7 })
        }
        // close_notify reaches the peer.
        client.close()
        let (_, afterClose, _) = exchange(client, server)
        #expect(afterClose.contains { if case .closed = $0 { true } else { false } } && server.state == .closed)
    }

    /// A certificate that is not the one the signalling named: refused, with a message naming
    /// both fingerprints (RFC 8842 §5).
    @Test func wrongFingerprintIsRefused() throws {
        let ca = try DTLSCertificate(), cb = try DTLSCertificate(), other = try DTLSCertificate()
        let client = try DTLSEndpoint(role: .client, certificate: ca, remoteFingerprint: other.fingerprint)
        let server = try DTLSEndpoint(role: .server, certificate: cb, remoteFingerprint: ca.fingerprint)
        client.start()
        let (ec, _, _) = exchange(client, server)
        #expect(client.state == .failed && keys(ec) == nil)
        let reason = try #require(failure(ec))
        #expect(
            reason == .fingerprintMismatch(peer: DTLSCertificate.hex(cb.fingerprint), expected: DTLSCertificate.hex(other.fingerprint)),
            "\(reason)")
        #expect(reason.description.contains("is not the one the answer's a=fingerprint names"))
    }

    /// Fingerprints in their SDP form, and what is refused.
    @Test func fingerprintsInSDP() throws {
        let c = try DTLSCertificate()
        #expect(c.sdpFingerprint.hasPrefix("sha-256 ") && c.sdpFingerprint.count == 8 + 32 * 3 - 1)
        #expect(DTLSCertificate.parseFingerprint(c.sdpFingerprint) == c.fingerprint)
        #expect(DTLSCertificate.parseFingerprint("sha-1 AB:CD") == nil)
        #expect(DTLSCertificate.parseFingerprint("sha-256 AB:CD") == nil)
    }

    /// Garbage in the handshake fails it (or is ignored), never crashes.
    @Test func garbageDoesNotCrash() throws {
        let ca = try DTLSCertificate(), cb = try DTLSCertificate()
        let server = try DTLSEndpoint(role: .server, certificate: cb, remoteFingerprint: ca.fingerprint)
        server.handle([22, 0xFE, 0xFD] + Array(repeating: 0xFF, count: 60))
        server.handle([])
        server.handle(Array(repeating: 0x16, count: 13))
        #expect(server.state == .handshaking || server.state == .failed)
    }
}
