import Foundation
import Testing

/// `pubbot check` against servers it did not write the judging for: pion 3.1.56 behind the
/// test endpoint (trickle by `AddICECandidate`, a restart by the offer applied again with new
/// credentials — pion's own events say it did each), pubbot's own `receive --whip-listen`, and
/// the scripted lenient server. Exit codes, the JSON, and no secret in any output.
@Suite(.serialized) struct CheckCommandTests {
    static func findings(_ out: String) throws -> [String: [String: Any]] {
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        let reports = try #require(doc["reports"] as? [[String: Any]])
        let list = try #require(reports.first?["findings"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: list.map { ($0["id"] as? String ?? "", $0) })
    }

    static func outcome(_ f: [String: [String: Any]], _ id: String) -> String? { f[id]?["outcome"] as? String }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func pionMeetsEveryMustAndSaysItTrickledAndRestarted() throws {
        let (pion, port) = try startPion(["-limit", "60"])
        defer { pion.stop() }
        let r = try runPubbot(WHIPInteropTests.binary, ["check", "--whip", "http://127.0.0.1:\(port)/whip", "--json"])
        #expect(r.code == 0, "\(r.out)\n\(r.err)")
        let f = try Self.findings(r.out)
        for id in [
            "post-201", "answer-valid", "trickle", "trickle-204", "restart", "restart-200", "etag", "patch-428", "patch-412", "delete"
        ] {
            #expect(Self.outcome(f, id) == "met", "\(id): \(f[id] ?? [:])")
        }
        // pion's own word: it added the trickled candidate and restarted its ICE.
        #expect(pion.wait(for: "\"event\":\"restart\"", micros: 2_000_000), "\(pion.text)")
        #expect(pion.text.contains("\"candidates\":1,\"end\":true,\"event\":\"trickle\""), "\(pion.text)")
        // The same as a table for a person.
        let text = try runPubbot(WHIPInteropTests.binary, ["check", "--whip", "http://127.0.0.1:\(port)/whip"])
        #expect(text.code == 0 && text.out.contains("result: every MUST tried was met"), "\(text.out)")
    }

    @Test func pubbotsOwnEndpointMeetsEveryMustWithTrickleAndRestart() throws {
        let receiver = try PeerProcess(
            WHIPInteropTests.binary, ["receive", "--whip-listen", "127.0.0.1:0", "--duration", "30s", "--no-decode"])
        defer { receiver.stop() }
        try #require(receiver.wait(for: "/whip (media", micros: 10_000_000), "\(receiver.text)")
        let url = try #require(receiver.text.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        let r = try runPubbot(WHIPInteropTests.binary, ["check", "--whip", url, "--json"])
        #expect(r.code == 0, "\(r.out)\n\(r.err)")
        let f = try Self.findings(r.out)
        for id in [
            "options-cors", "get-endpoint", "post-not-sdp", "post-malformed-sdp", "post-201", "answer-direction", "delete", "delete-gone"
        ] {
            #expect(Self.outcome(f, id) == "met", "\(id): \(f[id] ?? [:])")
        }
        for id in ["trickle", "trickle-204", "restart", "restart-200", "etag", "patch-not-sdpfrag", "patch-428", "patch-412"] {
            #expect(Self.outcome(f, id) == "met", "\(id): \(f[id] ?? [:])")
        }
    }

    @Test func aLenientServerBreaksItsMustsAndExitsOne() throws {
        let (mock, base) = try WHIPInteropTests().startMock()
        defer { mock.stop() }
        let r = try runPubbot(WHIPInteropTests.binary, ["check", "--whip", base + "/silent200", "--json", "--timeout", "3s"])
        #expect(r.code == 1, "\(r.out)\n\(r.err)")
        let f = try Self.findings(r.out)
        for id in ["post-201", "options-cors", "get-endpoint", "post-malformed-sdp"] {
            #expect(Self.outcome(f, id) == "broken", "\(id): \(f[id] ?? [:])")
        }
        #expect((f["post-201"]?["level"] as? String) == "MUST" && (f["post-201"]?["section"] as? String) == "RFC 9725 §4.2")
        // PATCH is not a method it knows (501): not supported, not a failure.
        #expect(Self.outcome(f, "trickle") == "not supported")
        // Its TURN server's credential is never printed.
        #expect(!r.out.contains("c1\"") && !r.out.contains("credential=") && !r.err.contains("c1\""), "\(r.out)")
        // Unreachable: exit 2, one line.
        let gone = try runPubbot(WHIPInteropTests.binary, ["check", "--whip", "http://127.0.0.1:9/whip", "--timeout", "2s"])
        #expect(gone.code == 2 && gone.err.hasPrefix("Error: WHIP http://127.0.0.1:9/whip: "), "\(gone.err)")
        #expect(gone.err.split(separator: "\n").count == 1)
        // Usage.
        let usage = try runPubbot(WHIPInteropTests.binary, ["check", "--token", "x"])
        #expect(usage.code == 64 && usage.err.hasPrefix("Error: "))
    }
}
