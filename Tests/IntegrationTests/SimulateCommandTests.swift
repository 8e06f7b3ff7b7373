import Testing
import Foundation

/// `pubbot simulate` as a user runs it.
extension BinaryTests {
    /// Both sides' stats on standard output, byte-identical for the same arguments and seed,
    /// valid against the stats schema; the 800 kbit/s link takes the top layer off.
    @Test func simulateIsDeterministicAndFollowsTheSchema() throws {
        let args = [
            "simulate", "--impair", "rate=800kbit", "--duration", "20s", "--seed", "3", "--stats", "-", "--no-decode", "--media", "replay"
        ]
        let a = try run(args), b = try run(args)
        #expect(a.code == 0, "\(a.err)")
        #expect(a.out == b.out)
        #expect(a.err.contains("simulated 20.0 s in"))
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let schema = try SchemaValidator(path: root.appendingPathComponent("Sources/BotCLI/stats.schema.json").path)
        var types: [String: Int] = [:]
        var topTargets: [Int] = []
        for line in a.out.split(separator: "\n") {
            let obj = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            #expect(schema.validateLine(obj) == [], "\(line.prefix(200))")
            let type = obj["type"] as? String ?? "?"
            types[type, default: 0] += 1
            if type == "publisherVideoStats", let layers = (obj["stats"] as? [[String: Any]])?.first?["videoLayers"] as? [[String: Any]] {
                topTargets.append(layers.last?["targetBitrate"] as? Int ?? -1)
            }
        }
        for t in [
            "publisherVideoStats", "publisherAudioStats", "publisherMediaLinkStats", "subscriberVideoStats", "subscriberMediaLinkStats"
        ] {
            #expect(types[t] == 21, "\(t): \(types[t] ?? 0) lines (20 intervals + the final one)")
        }
        #expect(topTargets.suffix(10).allSatisfy { $0 == 0 })
        let other = try run([
            "simulate", "--impair", "rate=800kbit", "--duration", "20s", "--seed", "4", "--stats", "-", "--no-decode", "--media", "replay"
        ])
        #expect(other.out != a.out)
        // The default media (live encoders) is deterministic too, summary included.
        let live = ["simulate", "--impair", "rate=1mbit,loss=1%", "--duration", "4s", "--seed", "5", "--json"]
        let c = try run(live), d = try run(live)
        #expect(c.code == 0 && c.out == d.out && c.out.contains("\"command\": \"simulate\""), "\(c.out.prefix(300))")
    }

    /// `simulate --preflight`: the verdict as `preflight` gives it (same schema), in virtual
    /// time, deterministic, with --require and its exit code.
    @Test func simulatedPreflightGivesTheVerdict() throws {
        let args = ["simulate", "--preflight", "--impair", "rate=800kbit", "--seed", "2", "--json"]
        let a = try run(args), b = try run(args)
        #expect(a.code == 0 && a.out == b.out, "\(a.err)")
        let v = try #require(try JSONSerialization.jsonObject(with: Data(a.out.utf8)) as? [String: Any], "\(a.out)")
        #expect((v["recommended"] as? [String: Any])?["name"] as? String == "360p", "\(a.out.prefix(600))")
        #expect(v["steady"] as? Bool == true)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let schema = try SchemaValidator(path: root.appendingPathComponent("Sources/BotCLI/preflight.schema.json").path)
        #expect(schema.validateDocument(v) == [], "\(schema.validateDocument(v))")
        let strict = try run(["simulate", "--preflight", "--impair", "rate=800kbit", "--require", "720p"])
        #expect(strict.code == 1 && strict.out.contains("require 720p: NOT met"), "\(strict.out)")
        let dead = try run(["simulate", "--preflight", "--impair", "loss=100%", "--json"])
        #expect(dead.code == 2 && dead.err.contains("no answer"), "\(dead.err)")
    }

    @Test func simulateRefusesBadArguments() throws {
        for bad in [
            ["--duration", "0s"], ["--media", "tape"], ["--seed", "-1"], ["--impair", "rate=fast"],
            ["--media", "replay", "--temporal-layers", "L1T3"],
            ["--require", "720p"], ["--preflight", "--require", "4k"], ["--preflight", "--duration", "1s"]
        ] {
            let r = try run(["simulate"] + bad)
            #expect(r.code == 64, "\(bad): \(r.err)")
            #expect(r.err.hasPrefix("Error: ") && r.err.contains("Usage: pubbot simulate"), "\(bad): \(r.err)")
        }
    }
}
