import Foundation
import Testing
import DTLS
import Transport
import Platform

/// pubbot's DTLS-SRTP against a peer it did not write: `openssl s_server` (OpenSSL's own
/// command-line server, DTLS 1.2, use_srtp) over a real UDP socket on 127.0.0.1. The server
/// prints the RFC 5764 keying material it exported; pubbot's keys must be exactly its halves.
@Suite(.serialized) struct DTLSInteropTests {
    func openssl(_ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// A key and certificate made by openssl itself, and its SHA-256 fingerprint.
    func peerCertificate(in dir: URL) throws -> (key: String, cert: String, fingerprint: [UInt8]) {
        let key = dir.appendingPathComponent("k.pem").path, cert = dir.appendingPathComponent("c.pem").path
        _ = try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
            "-subj", "/CN=openssl-peer", "-days", "1"
        ])
        let fpLine = try openssl(["x509", "-noout", "-fingerprint", "-sha256", "-in", cert])
        let fingerprint = try #require(
            DTLSCertificate.parseFingerprint(
                "sha-256 " + (fpLine.split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? "")),
            "\(fpLine)")
        return (key, cert, fingerprint)
    }

    /// The 60 bytes of `Keying material:` an openssl s_server/s_client printed.
    func keyingMaterial(_ text: String) throws -> [UInt8] {
        let line = try #require(text.split(separator: "\n").first { $0.contains("Keying material:") }, "\(text.suffix(400))")
        let hex = Array(line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces))
        return stride(from: 0, to: hex.count - 1, by: 2).compactMap { UInt8(String(hex[$0...$0 + 1]), radix: 16) }
    }

    /// Drives `endpoint` over a real socket until the handshake ends (5 s at most): datagrams
    /// in, datagrams out to `peer` (a server learns it from the first datagram), events read.
    func handshake(_ endpoint: DTLSEndpoint, over socket: UDPSocket, peer: SocketAddress?) throws -> (
        keys: (SRTPSuite, SRTPKey, SRTPKey)?, failure: String?
    ) {
        let batch = PacketBatch(capacity: 8)
        var peer = peer
        var keys: (SRTPSuite, SRTPKey, SRTPKey)?
        var failure: String?
        let deadline = Clock.monotonicMicros() + 5_000_000
        while keys == nil && failure == nil && Clock.monotonicMicros() < deadline {
            if let to = peer { while let d = endpoint.pollTransmit() { try d.withUnsafeBytes { try socket.send($0, to: to) } } }
            var ready = [UInt8](repeating: 0, count: 1)
            let readable = waitReadable([socket.fd], ready: &ready, timeoutMicros: 20_000) > 0 && ready[0] != 0
            let n = readable ? try socket.receive(into: batch) : 0
            for i in 0..<n {
                peer = peer ?? batch.source(i)
                endpoint.handle(Array(UnsafeRawBufferPointer(start: batch.slot(i).baseAddress!, count: Int(batch.lengths[i]))))
            }
            _ = endpoint.step(now: Clock.monotonicMicros())
            if let to = peer { while let d = endpoint.pollTransmit() { try d.withUnsafeBytes { try socket.send($0, to: to) } } }
            while let e = endpoint.pollEvent() {
                switch e {
                case let .connected(suite, send, receive): keys = (suite, send, receive)
                case let .failed(r): failure = r.description
                case .closed: break
                }
            }
        }
        return (keys, failure)
    }

    /// Our endpoint as the DTLS server (Janus and aiortc answer `active`), openssl s_client as
    /// the client: the handshake completes and our keys are the halves of what it exported.
    @Test func keysMatchOpenSSLClient() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-dtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let peer = try peerCertificate(in: dir)
        let socket = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let ours = try DTLSCertificate()
        let server = try DTLSEndpoint(role: .server, certificate: ours, remoteFingerprint: peer.fingerprint)
        let client = try PeerProcess(
            "/usr/bin/openssl",
            [
                "s_client", "-dtls1_2", "-connect", "127.0.0.1:\(socket.localAddress.port)", "-cert", peer.cert,
                "-key", peer.key, "-use_srtp", "SRTP_AEAD_AES_128_GCM", "-keymatexport", "EXTRACTOR-dtls_srtp",
                "-keymatexportlen", "56"
            ])
        defer { client.stop(grace: 2_000_000) } // s_client ends on end of input
        let (keys, failure) = try handshake(server, over: socket, peer: nil)
        #expect(failure == nil, "\(failure ?? "")")
        let (suite, send, receive) = try #require(keys, "no handshake with openssl s_client: \(client.text.suffix(400))")
        #expect(suite == .gcm)
        client.wait(for: "Keying material:", micros: 2_000_000)
        let km = try keyingMaterial(client.text)
        #expect(km.count == 56)
        // client key | server key | client salt (12) | server salt (12); pubbot was the server.
        #expect(Array(Data(base64Encoded: send.revealBase64())!) == Array(km[16..<32] + km[44..<56]))
        #expect(Array(Data(base64Encoded: receive.revealBase64())!) == Array(km[0..<16] + km[32..<44]))
    }

    @Test func keysMatchOpenSSLServer() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else {
            Issue.record("openssl is not installed (Debian package openssl)")
            return
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-dtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let (key, cert, fingerprint) = try peerCertificate(in: dir)
        let port = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0)).localAddress.port // a free port, released
        let server = try PeerProcess(
            "/usr/bin/openssl",
            [
                "s_server", "-dtls1_2", "-accept", "127.0.0.1:\(port)", "-cert", cert, "-key", key,
                "-use_srtp", "SRTP_AES128_CM_SHA1_80", "-keymatexport", "EXTRACTOR-dtls_srtp", "-keymatexportlen", "60",
                "-verify", "1", "-naccept", "1"
            ])
        defer { server.stop() }
        #expect(server.wait(for: "ACCEPT", micros: 5_000_000), "s_server did not start: \(server.text)")

        let ours = try DTLSCertificate()
        let client = try DTLSEndpoint(role: .client, certificate: ours, remoteFingerprint: fingerprint)
        let to = try SocketAddress(host: "127.0.0.1", port: port)
        let socket = try UDPSocket(for: to)
        client.start()
        let (keys, failure) = try handshake(client, over: socket, peer: to)
        #expect(failure == nil, "\(failure ?? "")")
        let (suite, send, receive) = try #require(keys, "no handshake with openssl s_server: \(server.text.suffix(400))")
        #expect(suite == .aesCm) // the only profile the server offered
        server.wait(for: "Keying material:", micros: 2_000_000)
        let km = try keyingMaterial(server.text)
        #expect(km.count == 60)
        // RFC 5764 §4.2: client key | server key | client salt | server salt; pubbot was the client.
        let clientKeySalt = Array(km[0..<16] + km[32..<46]), serverKeySalt = Array(km[16..<32] + km[46..<60])
        #expect(Array(Data(base64Encoded: send.revealBase64())!) == clientKeySalt)
        #expect(Array(Data(base64Encoded: receive.revealBase64())!) == serverKeySalt)
        client.close()
        while let d = client.pollTransmit() { try d.withUnsafeBytes { try socket.send($0, to: to) } }
    }
}
