import Foundation
import Testing
import Platform
import TestSupport

/// `receive --whip-listen` over HTTPS (`--tls-cert`/`--tls-key`, OpenSSL, TLS 1.2+) with a
/// throwaway test CA (Tests/Peers/tls/make_ca.sh), and the clients' `--ca-file`: pubbot publishes
/// and `pubbot check` judges through it; without the CA, or with another CA, one clear line and
/// exit 2; a plain-HTTP client and one that starts a handshake and stalls delay nobody; the token
/// nowhere in the output.
@Suite(.serialized) struct TLSEndpointTests {
    static func makeCA(_ dir: String) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "Peers/tls/make_ca.sh"
        ).path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [script, dir]
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        try #require(p.terminationStatus == 0, "make_ca.sh failed")
    }

    @Test func publishAndCheckOverHTTPSWithATestCA() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-tls-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.makeCA(dir)
        let receiver = try PeerProcess(
            WHIPInteropTests.binary,
            [
                "receive", "--whip-listen", "127.0.0.1:0", "--tls-cert", dir + "/server.pem", "--tls-key", dir + "/server.key", "--token",
                "t0ken-secret", "--duration", "60s", "--json"
            ])
        defer { receiver.stop() }
        try #require(receiver.wait(for: "/whip (media", micros: 10_000_000), "\(receiver.text)")
        let url = try #require(receiver.text.split(separator: " ").first { $0.hasPrefix("https://") }.map(String.init), "\(receiver.text)")
        let port = try #require(url.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) })

        // A client that opens a handshake and stalls, and one that speaks plain HTTP to the TLS port.
        let stalled = try #require(RawClient(port: port))
        defer { stalled.close() }
        stalled.send("\u{16}\u{03}\u{01}")
        let plain = try #require(RawClient(port: port))
        defer { plain.close() }
        plain.send("GET /whip HTTP/1.1\r\nHost: x\r\n\r\n")
        let refused = plain.read(micros: 3_000_000)
        #expect(!refused.hasPrefix("HTTP/1.1 2"), "plain HTTP was answered: \(refused.prefix(80))")

        // Without the CA, and with a CA that did not sign the endpoint's certificate: one line, exit 2.
        for extra in [[], ["--ca-file", dir + "/other-ca.pem"]] {
            let t0 = Clock.monotonicMicros()
            let r = try runPubbot(
                WHIPInteropTests.binary, ["publish", "--whip", url, "--token", "t0ken-secret", "--duration", "3s"] + extra)
            let lines = r.err.split(separator: "\n").filter { $0.hasPrefix("Error:") }
            #expect(r.code == 2 && lines.count == 1 && lines[0].contains("TLS with the WHIP endpoint"), "\(extra): \(r.err)")
            #expect(extra.isEmpty ? lines.first?.contains("--ca-file") == true : true, "\(r.err)")
            #expect(Clock.monotonicMicros() - t0 < 5_000_000)
            #expect(!r.err.contains("t0ken-secret"))
        }

        // With it: the publisher's media decoded by the endpoint's receiver.
        let r = try runPubbot(
            WHIPInteropTests.binary,
            [
                "publish", "--whip", url, "--token", "t0ken-secret", "--ca-file", dir + "/ca.pem", "--duration", "4s", "--layers",
                "640x360@30:500k", "--json"
            ])
        #expect(r.code == 0, "\(r.err)")
        #expect(!(r.out + r.err).contains("t0ken-secret"))
        let published = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let resource = ((published["whip"] as? [String: Any])?["resource"] as? String) ?? ""
        #expect(resource.hasPrefix("https://"), "\(resource)")

        // `pubbot check` through the same TLS: every MUST met.
        let check = try runPubbot(
            WHIPInteropTests.binary, ["check", "--whip", url, "--token", "t0ken-secret", "--ca-file", dir + "/ca.pem", "--json"])
        #expect(check.code == 0, "\(check.out.suffix(600)) \(check.err)")

        kill(receiver.process.processIdentifier, SIGINT)
        receiver.wait(for: "\"whipEndpoint\"", micros: 5_000_000)
        let text = receiver.text
        let summary = try #require(
            text.firstIndex(of: "{").flatMap { try? JSONSerialization.jsonObject(with: Data(text[$0...].utf8)) as? [String: Any] },
            "\(text.suffix(400))")
        let decoded = (summary["streams"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "video" }
            .reduce(0) { $0 + ($1["framesDecoded"] as? Int ?? 0) }
        #expect(decoded >= 100, "the endpoint decoded \(decoded) frames")
        // The plain-HTTP client's failed handshake counted (the stalled one is still open).
        let http = (summary["whipEndpoint"] as? [String: Any])?["http"] as? [String: Any] ?? [:]
        #expect((http["tlsFailed"] as? Int ?? 0) >= 1, "\(http)")
    }

    /// Bad TLS flags are usage errors (exit 64), a token over plain HTTP on an address other hosts
    /// reach is a warning.
    @Test func tlsFlagsAreChecked() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-tls-flags-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.makeCA(dir)
        for args in [
            ["receive", "--whip-listen", "127.0.0.1:0", "--tls-cert", dir + "/server.pem"],
            ["receive", "--whip-listen", "127.0.0.1:0", "--tls-cert", dir + "/nope.pem", "--tls-key", dir + "/server.key"],
            ["receive", "--whip-listen", "127.0.0.1:0", "--tls-cert", dir + "/ca.pem", "--tls-key", dir + "/server.key"],
            ["receive", "--listen", "127.0.0.1:0", "--key", "WbTBosdVUZqEb6Htqhn+m3z7wUh4RelR/rCp7rY2", "--tls-cert", dir + "/server.pem"],
            ["publish", "--whip", "https://127.0.0.1:1/whip", "--ca-file", dir + "/nope.pem"]
        ] {
            let r = try runPubbot(WHIPInteropTests.binary, args)
            #expect(r.code == 64 && r.err.hasPrefix("Error: "), "\(args): \(r.code) \(r.err)")
        }
        let warned = try runPubbot(
            WHIPInteropTests.binary, ["receive", "--whip-listen", "0.0.0.0:0", "--token", "t0ken-secret", "--duration", "1s"])
        #expect(warned.err.contains("warning: --token over plain HTTP on 0.0.0.0"), "\(warned.err)")
        #expect(!warned.err.contains("t0ken-secret"))
    }
}
