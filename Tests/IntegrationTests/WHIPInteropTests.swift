import Foundation
import Testing
import Platform

/// `pubbot publish --whip` against a WebRTC peer pubbot did not write: aiortc (full ICE, DTLS
/// client, no simulcast, no transport-cc — REMB and receiver reports only) behind the WHIP
/// endpoint in Tests/Peers/whip_aiortc.py, which decodes what arrives (libvpx and libopus
/// inside aiortc) and reports the frame counts when pubbot DELETEs the session.
@Suite(.serialized) struct WHIPInteropTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent(".build/peers-venv/bin/python").path
    static let endpoint = root.appendingPathComponent("Tests/Peers/whip_aiortc.py").path
    static var binary: String { URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("pubbot").path }

    /// Starts the aiortc endpoint; returns it and its URL.
    func startEndpoint(_ extra: [String] = []) throws -> (PeerProcess, String) {
        try #require(FileManager.default.isExecutableFile(atPath: Self.python), "no test-peer venv at \(Self.python): run scripts/setup")
        let peer = try PeerProcess(Self.python, [Self.endpoint, "--port", "0", "--limit", "60"] + extra)
        guard peer.wait(for: "LISTENING ", micros: 20_000_000) else {
            peer.stop()
            throw TestFailure("the aiortc endpoint did not start: \(peer.text)")
        }
        let line = peer.text.split(separator: "\n").first { $0.hasPrefix("LISTENING ") }!
        return (peer, "http://127.0.0.1:\(line.dropFirst("LISTENING ".count))/whip")
    }

    struct TestFailure: Error, CustomStringConvertible { var description: String; init(_ d: String) { description = d } }

    /// The peer's stats line (printed when the session is DELETEd).
    func peerStats(_ peer: PeerProcess) throws -> [String: Any] {
        peer.wait(for: "\"event\": \"stats\"", micros: 5_000_000)
        let line = try #require(peer.text.split(separator: "\n").first { $0.contains("\"event\": \"stats\"") }, "no DELETE seen by aiortc: \(peer.text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    func run(_ args: [String], env: [String: String] = [:], interruptAfter: Double? = nil) throws -> (code: Int32, out: String, err: String, seconds: Double) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = args
        p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        let start = Clock.monotonicMicros()
        try p.run()
        if let after = interruptAfter {
            Clock.sleep(micros: Int64(after * 1e6))
            kill(p.processIdentifier, SIGINT)
        }
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self), Double(Clock.monotonicMicros() - start) / 1e6)
    }

    /// 8 s of media: aiortc decodes what pubbot says it sent; the summary says what was negotiated.
    @Test func publishesToAiortc() throws {
        let (peer, url) = try startEndpoint()
        defer { peer.stop() }
        let r = try run(["publish", "--whip", url, "--duration", "8s", "--json"])
        #expect(r.code == 0, "\(r.err)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let whip = try #require(summary["whip"] as? [String: Any])
        let negotiated = try #require(whip["negotiated"] as? [String: String])
        #expect(negotiated["congestionControl"] == "remb" && negotiated["simulcast"]?.hasPrefix("refused") == true, "\(negotiated)")
        #expect(negotiated["dtlsRole"]?.hasPrefix("server") == true)
        #expect(whip["srtpCipher"] as? String == "AEAD_AES_128_GCM" && whip["iceState"] as? String == "connected")
        #expect((whip["iceDurationMs"] as? Int ?? 9999) < 2000 && (whip["dtlsDurationMs"] as? Int ?? 9999) < 2000)
        let streams = try #require(summary["streams"] as? [[String: Any]])
        let videoSent = streams.first { $0["kind"] as? String == "video" }?["framesSent"] as? Int ?? 0
        let audioSent = streams.first { $0["kind"] as? String == "audio" }?["framesSent"] as? Int ?? 0
        let stats = try peerStats(peer)
        let videoDecoded = stats["videoFrames"] as? Int ?? 0, audioDecoded = stats["audioFrames"] as? Int ?? 0
        // What pubbot reports sending is what a third party decodes (the last frames may still be
        // in flight at the DELETE).
        let videoOK = videoSent >= 30 && videoDecoded * 10 >= videoSent * 9 && videoDecoded <= videoSent
        let audioOK = audioSent >= 350 && audioDecoded * 10 >= audioSent * 9 && audioDecoded <= audioSent
        #expect(videoOK, "video sent \(videoSent), decoded \(videoDecoded)")
        #expect(audioOK, "audio sent \(audioSent), decoded \(audioDecoded)")
        // Simulcast refused: one stream, at a size of the ladder the estimate carries.
        let sizes = try #require(stats["sizes"] as? [String: Int])
        #expect(!sizes.isEmpty && Set(sizes.keys).isSubset(of: ["320x180", "640x360", "1280x720"]) && stats["dtlsRole"] as? String == "client", "\(stats)")
    }

    /// Ctrl-C: the session is DELETEd before pubbot leaves (exit 130).
    @Test func interruptDeletesTheSession() throws {
        let (peer, url) = try startEndpoint()
        defer { peer.stop() }
        let r = try run(["publish", "--whip", url, "--duration", "30s"], interruptAfter: 3)
        #expect(r.code == 130 && r.seconds < 10, "\(r.code) after \(r.seconds) s: \(r.err)")
        #expect((try peerStats(peer)["audioFrames"] as? Int ?? 0) > 50)
    }

    /// A refused token: one message, exit 2, and the token itself appears nowhere.
    @Test func refusedTokenIsOneClearError() throws {
        let (peer, url) = try startEndpoint(["--token", "right-token"])
        defer { peer.stop() }
        let r = try run(["publish", "--whip", url, "--duration", "5s"], env: ["PUBBOT_WHIP_TOKEN": "wrong-token-s3cret"])
        #expect(r.code == 2 && r.seconds < 10, "\(r.code): \(r.err)")
        #expect(r.err.contains("Error:") && r.err.contains("token"), "\(r.err)")
        #expect(!(r.out + r.err).contains("wrong-token-s3cret"))
    }
}
