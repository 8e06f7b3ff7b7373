import Foundation
import Testing
import Platform

let pionEndpoint = WHIPInteropTests.root.appendingPathComponent(".build/peers/pion_whip").path

/// pion/webrtc v3 (Debian's 3.1.56) as a WHIP endpoint (Tests/Peers/pion, built by scripts/setup):
/// strict about attribution — a stream it cannot map to a track (no `a=ssrc`, no MID + RID) never
/// fires OnTrack. pion's own OnTrack and packet counts are the judge.
@Suite(.serialized, .enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint at .build/peers/pion_whip (scripts/setup builds it)"))
struct PionInteropTests {
    /// Simulcast publish: OnTrack fires for the audio (announced by `a=ssrc`) and for q, h and f
    /// (by MID + RID), each with packets; pion's SSRCs are pubbot's.
    @Test func pionTakesAudioAndEveryLayer() throws {
        let pion = try PeerProcess(pionEndpoint, ["-limit", "60"])
        defer { pion.stop() }
        try #require(pion.wait(for: "LISTENING ", micros: 10_000_000), "\(pion.text)")
        let port = try #require(pion.text.split(separator: "\n").first { $0.hasPrefix("LISTENING ") }.flatMap { Int($0.dropFirst(10)) })
        let r = try runPubbot(WHIPInteropTests.binary, ["publish", "--whip", "http://127.0.0.1:\(port)/whip", "--duration", "5s", "--json"])
        #expect(r.code == 0, "\(r.err)")
        #expect(pion.wait(for: "\"event\":\"stats\"", micros: 5_000_000), "\(pion.text)")
        let lines = pion.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let tracks = lines.filter { $0["event"] as? String == "track" }
        let fired = Set(tracks.map { "\($0["kind"] as? String ?? "")/\($0["rid"] as? String ?? "")" })
        #expect(fired == ["audio/", "video/q", "video/h", "video/f"], "OnTrack fired for \(fired): \(pion.text)")
        let stats = try #require(lines.first { $0["event"] as? String == "stats" }?["tracks"] as? [[String: Any]])
        let published = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let streams = try #require(published["streams"] as? [[String: Any]])
        for t in stats {
            let ssrc = t["ssrc"] as? Int ?? -1, packets = t["packets"] as? Int ?? 0
            let sent = streams.first { $0["ssrc"] as? Int == ssrc }?["packetsSent"] as? Int ?? 0
            // pion reads a stream's first packet to find its track before OnTrack: one may not be counted.
            #expect(sent > 20 && packets >= sent - 1 && packets <= sent, "\(t["kind"] ?? "") \(t["rid"] ?? ""): pion \(packets), pubbot sent \(sent)")
        }
    }

    /// One encoding, offered as a browser offers it (no RIDs; `a=ssrc` and `a=ssrc-group:FID`):
    /// pion maps the video by its announced SSRC and fires OnTrack for it and the audio, each
    /// with every packet pubbot sent on it.
    @Test func pionTakesOneEncodingByItsAnnouncedSSRC() throws {
        let pion = try PeerProcess(pionEndpoint, ["-limit", "60"])
        defer { pion.stop() }
        try #require(pion.wait(for: "LISTENING ", micros: 10_000_000), "\(pion.text)")
        let port = try #require(pion.text.split(separator: "\n").first { $0.hasPrefix("LISTENING ") }.flatMap { Int($0.dropFirst(10)) })
        let r = try runPubbot(WHIPInteropTests.binary, ["publish", "--whip", "http://127.0.0.1:\(port)/whip", "--layers", "640x360@30:700k",
                                                        "--duration", "5s", "--json"])
        #expect(r.code == 0, "\(r.err)")
        #expect(pion.wait(for: "\"event\":\"stats\"", micros: 5_000_000), "\(pion.text)")
        let lines = pion.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let fired = Set(lines.filter { $0["event"] as? String == "track" }.map { "\($0["kind"] as? String ?? "")/\($0["rid"] as? String ?? "")" })
        #expect(fired == ["audio/", "video/"], "OnTrack fired for \(fired): \(pion.text)")
        let stats = try #require(lines.first { $0["event"] as? String == "stats" }?["tracks"] as? [[String: Any]])
        let published = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let streams = try #require(published["streams"] as? [[String: Any]])
        #expect(stats.count == 2)
        for t in stats {
            let ssrc = t["ssrc"] as? Int ?? -1, packets = t["packets"] as? Int ?? 0
            let sent = streams.first { $0["ssrc"] as? Int == ssrc }?["packetsSent"] as? Int ?? 0
            #expect(sent > 20 && packets >= sent - 1 && packets <= sent, "\(t["kind"] ?? ""): pion \(packets), pubbot sent \(sent)")
        }
    }
}
