import Foundation
import Testing

/// ICE restarts by PATCH (RFC 9725 §4.3.3) with pubbot on both ends, and with a server that
/// does not restart. (pion's side: `PionInteropTests.anICERestartKeepsTheMediaGoing`.)
@Suite(.serialized) struct ICERestartInteropTests {
    /// `publish --ice-restart-at 2s` into `receive --whip-listen`: the endpoint answers the
    /// restart (200, new credentials, new ETag), its ICE-lite agent selects the path again on the
    /// publisher's next USE-CANDIDATE check, and the receiver decodes ≥ 97 % of every stream's
    /// frames across it, in one DTLS session.
    @Test func aRestartIntoPubbotsOwnEndpointLosesNothing() throws {
        let receiver = try PeerProcess(WHIPInteropTests.binary, ["receive", "--whip-listen", "127.0.0.1:0", "--duration", "30s", "--json"])
        defer { receiver.stop() }
        try #require(receiver.wait(for: "/whip (media", micros: 10_000_000), "\(receiver.text)")
        let url = try #require(receiver.text.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        let r = try runPubbot(
            WHIPInteropTests.binary,
            [
                "publish", "--whip", url, "--duration", "6s", "--ice-restart-at", "2s", "--layers", "640x360@30:500k,320x180@30:150k",
                "--json"
            ])
        #expect(r.code == 0, "\(r.err)")
        kill(receiver.process.processIdentifier, SIGINT)
        receiver.wait(for: "\"byes\"", micros: 5_000_000)
        receiver.process.waitUntilExit()
        let text = receiver.text
        let json = try #require(text.firstIndex(of: "{").map { String(text[$0...]) }, "\(text)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "\(json)")
        let received = try #require(summary["streams"] as? [[String: Any]])
        let published = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let restarts = try #require(published["iceRestarts"] as? [[String: Any]])
        #expect(restarts.count == 1 && restarts.first?["outcome"] as? String == "restarted", "\(restarts)")
        let whip = try #require(published["whip"] as? [String: Any])
        #expect(whip["iceRestarts"] as? Int == 1 && whip["selectedCandidatePairChangesAfterRestart"] as? Int == 1, "\(whip)")
        for s in try #require(published["streams"] as? [[String: Any]]) {
            let sent = s["framesSent"] as? Int ?? 0
            let decoded = received.first { ($0["ssrc"] as? Int) == (s["ssrc"] as? Int) }?["framesDecoded"] as? Int ?? 0
            #expect(
                sent > 50 && decoded * 100 >= sent * 97 && decoded <= sent,
                "\(s["kind"] ?? "") \(s["rid"] ?? ""): sent \(sent), decoded \(decoded)")
        }
    }

    /// A server that does not restart (the aiortc test endpoint has no PATCH: 404): one warning,
    /// the session goes on, the run succeeds with the restart said to have failed.
    @Test func aRefusedRestartIsSaidAndTheSessionGoesOn() throws {
        let (peer, url) = try WHIPInteropTests().startEndpoint()
        defer { peer.stop() }
        let r = try runPubbot(WHIPInteropTests.binary, ["publish", "--whip", url, "--duration", "5s", "--ice-restart-at", "2s", "--json"])
        #expect(r.code == 0, "\(r.err)")
        #expect(r.err.contains("warning: ICE restart at 2.0 s: the server refused the ICE restart (HTTP 404)"), "\(r.err)")
        let published = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let restarts = try #require(published["iceRestarts"] as? [[String: Any]])
        #expect(restarts.first?["outcome"] as? String == "failed", "\(restarts)")
        let streams = try #require(published["streams"] as? [[String: Any]])
        #expect(streams.allSatisfy { ($0["packetsSent"] as? Int ?? 0) > 50 }, "\(streams)")
    }

    /// A fleet's restarts: 5 WHIP bots into pion each ask for a restart 3 s after their start;
    /// pion applies 5 (its own events), the report says 5 asked, 0 refused, 5 on a new pair.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func aFleetsRestartsAreCountedAndPionAppliesEach() throws {
        let (pion, port) = try startPion(["-limit", "60"])
        defer { pion.stop() }
        let r = try runPubbot(
            WHIPInteropTests.binary,
            [
                "load", "--whip", "http://127.0.0.1:\(port)/whip", "--bots", "5", "--ramp", "1s", "--duration", "8s", "--ice-restart-at",
                "3s", "--json"
            ])
        #expect(r.code == 0, "\(r.err)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let restarts = try #require((report["webrtc"] as? [String: Any])?["iceRestarts"] as? [String: Any], "\(report["webrtc"] ?? "")")
        #expect(restarts["asked"] as? Int == 5 && restarts["refused"] as? Int == 0 && restarts["botsRecovered"] as? Int == 5, "\(restarts)")
        let bots = try #require(report["perBot"] as? [[String: Any]])
        #expect(bots.allSatisfy { $0["iceRestarts"] as? Int == 1 }, "\(bots)")
        #expect(pion.text.components(separatedBy: "\"event\":\"restart\"").count - 1 == 5, "\(pion.text)")
    }

    /// A WHEP subscriber's restart: `receive --whep --ice-restart-at 3s` from pion's fan-out of
    /// a live publisher. pion restarts that subscription's ICE (its own event, on the WHEP
    /// session), the subscriber's full agent selects the new pair and keeps decoding through it:
    /// what pion wrote (its 180p layer) ≥ 95 % received, frames decoded across the restart.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func aWHEPSubscribersRestartKeepsItsStream() throws {
        let (pion, port) = try startPion(["-limit", "60", "-forward-rid", "q"])
        defer { pion.stop() }
        let publisher = try PeerProcess(
            WHIPInteropTests.binary, ["publish", "--whip", "http://127.0.0.1:\(port)/whip", "--duration", "14s"])
        defer { publisher.stop(grace: 3_000_000) }
        try #require(pion.wait(for: "\"rid\":\"q\"", micros: 8_000_000), "\(pion.text) \(publisher.text)")
        let r = try runPubbot(
            WHIPInteropTests.binary,
            ["receive", "--whep", "http://127.0.0.1:\(port)/whep", "--duration", "8s", "--ice-restart-at", "3s", "--json"])
        #expect(r.code == 0, "\(r.err)")
        try #require(pion.wait(for: "\"event\":\"whep-stats\"", micros: 5_000_000), "\(pion.text)")
        #expect(pion.text.contains("\"event\":\"restart\""), "pion never restarted the subscription: \(pion.text)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let restarts = try #require(summary["iceRestarts"] as? [[String: Any]])
        #expect(restarts.first?["outcome"] as? String == "restarted", "\(restarts)")
        let w = try #require(summary["whep"] as? [String: Any])
        #expect(w["iceRestarts"] as? Int == 1 && (w["lastIceRestartRecoveryMs"] as? Int ?? 9_999) < 1_000, "\(w)")
        let stats = try #require(
            pionEvents(pion.text)
                .first { $0["event"] as? String == "whep-stats" })
        let streams = try #require(summary["streams"] as? [[String: Any]])
        let video = try #require(streams.first { $0["kind"] as? String == "video" }, "\(r.out)")
        let written = stats["video"] as? Int ?? 0, got = video["packetsReceived"] as? Int ?? 0
        #expect(written > 150 && got <= written && got * 100 >= written * 95, "pion wrote \(written), pubbot received \(got)")
        #expect((video["framesDecoded"] as? Int ?? 0) >= 150, "\(video)")
    }

    /// A WHEP subscriber's consent watch (`receive --whep --ice-recover-after 8s`) through a 12 s
    /// outage on its emulated downlink (3 s to 15 s): it restarts the subscription on its own
    /// until a new pair is selected (pion's own restart events match), and decodes again after
    /// (measured: one restart at 10.0 s, the new pair 5.8 s later, as the path came back).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func aWHEPSubscribersConsentWatchRecoversItsStream() throws {
        let (pion, port) = try startPion(["-limit", "60", "-forward-rid", "0"])
        defer { pion.stop() }
        let publisher = try PeerProcess(
            WHIPInteropTests.binary,
            ["publish", "--whip", "http://127.0.0.1:\(port)/whip", "--duration", "32s", "--layers", "640x360@30:500k,320x180@30:150k"])
        defer { publisher.stop(grace: 3_000_000) }
        // A two-layer ladder's RIDs are 0 and 1: pion forwards the 180p one.
        try #require(pion.wait(for: "\"rid\":\"0\"", micros: 8_000_000), "\(pion.text) \(publisher.text)")
        let r = try runPubbot(
            WHIPInteropTests.binary,
            [
                "receive", "--whep", "http://127.0.0.1:\(port)/whep", "--duration", "25s", "--downlink-impair", "3s:loss=100%;15s:loss=0%",
                "--ice-recover-after", "8s", "--json"
            ])
        #expect(r.code == 0, "\(r.err)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out) \(r.err)")
        let restarts = try #require(summary["iceRestarts"] as? [[String: Any]], "\(summary.keys)")
        // The restart during the outage may connect once the path is back (its checks still
        // retransmitting), or a later one does.
        #expect(
            !restarts.isEmpty && restarts.allSatisfy { ($0["trigger"] as? String ?? "").hasPrefix("no consent answer for") }
                && restarts.last?["outcome"] as? String == "restarted" && restarts.last?["recoveryMs"] is Int, "\(restarts)")
        let w = try #require(summary["whep"] as? [String: Any])
        #expect(w["iceRestarts"] as? Int == restarts.count && w["lastIceRestartRecoveryMs"] is Int, "\(w)")
        let events = pion.text.components(separatedBy: "\"event\":\"restart\"").count - 1
        #expect(events == restarts.count, "pion restarted \(events) times, pubbot asked \(restarts.count)")
        let video = try #require((summary["streams"] as? [[String: Any]])?.first { $0["kind"] as? String == "video" }, "\(r.out)")
        // 3 s before the outage and ~7 s after the recovery at ~17 s, at 30 fps.
        #expect((video["framesDecoded"] as? Int ?? 0) >= 200, "\(video)")
    }

    /// A fleet's consent watch (`load --ice-recover-after 8s`): 3 bots into pion, each bot's
    /// emulated uplink silent from 3 s to 15 s of its run; every bot restarts on its own (the
    /// first during the outage, again once the path is back) and every one ends on a new pair;
    /// pion's own restart events match what the report says was asked.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func aFleetsConsentWatchRecoversEveryBot() throws {
        let (pion, port) = try startPion(["-limit", "60"])
        defer { pion.stop() }
        let r = try runPubbot(
            WHIPInteropTests.binary,
            [
                "load", "--whip", "http://127.0.0.1:\(port)/whip", "--bots", "3", "--ramp", "1s", "--duration", "26s", "--impair",
                "3s:loss=100%;15s:loss=0%", "--ice-recover-after", "8s", "--require", "started>=100%", "--json"
            ])
        #expect(r.code == 0, "\(r.err)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let restarts = try #require((report["webrtc"] as? [String: Any])?["iceRestarts"] as? [String: Any], "\(report["webrtc"] ?? "")")
        let asked = restarts["asked"] as? Int ?? 0
        #expect(
            asked >= 3 && restarts["byConsentWatch"] as? Int == asked && restarts["refused"] as? Int == 0
                && restarts["botsRecovered"] as? Int == 3, "\(restarts)")
        let bots = try #require(report["perBot"] as? [[String: Any]])
        #expect(bots.allSatisfy { $0["state"] as? String == "done" && ($0["iceRecoveries"] as? Int ?? 0) >= 1 }, "\(bots)")
        #expect(((report["totals"] as? [String: Any])?["uplinkDroppedByLoss"] as? Int ?? 0) > 0)
        #expect(pion.wait(for: "\"event\":\"stats\"", micros: 5_000_000))
        #expect(pion.text.components(separatedBy: "\"event\":\"restart\"").count - 1 == asked, "\(pion.text.suffix(600))")
    }

    /// `load`'s WHEP subscribers restart too: 1 publisher bot and 5 subscribers through pion's
    /// fan-out, each asking for a restart 4 s after its own start (the subscribers' PATCHes made
    /// by the fleet's restart threads, the answers applied on their event loops). pion applies
    /// six (its own events); every subscriber ends on a new pair and receives what pion wrote to
    /// it across the restart (pion's own count, ≥ 97 % of it).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func loadsSubscribersRestartThroughPion() throws {
        let (pion, port) = try startPion(["-limit", "60", "-forward-rid", "0"])
        defer { pion.stop() }
        let r = try runPubbot(
            WHIPInteropTests.binary,
            [
                "load", "--whip", "http://127.0.0.1:\(port)/whip", "--whep", "http://127.0.0.1:\(port)/whep", "--publishers", "1",
                "--subscribers", "5", "--duration", "14s", "--ice-restart-at", "4s", "--json"
            ])
        #expect(r.code == 0, "\(r.err)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out.prefix(300))")
        let subs = try #require(report["subscribers"] as? [String: Any], "\(report.keys)")
        let restarts = try #require(subs["iceRestarts"] as? [String: Any], "\(subs["iceRestarts"] ?? "")")
        #expect(
            restarts["asked"] as? Int == 5 && restarts["refused"] as? Int == 0 && restarts["subscribersRecovered"] as? Int == 5,
            "\(restarts)")
        let per = try #require(subs["perSubscriber"] as? [[String: Any]])
        #expect(per.count == 5 && per.allSatisfy { $0["error"] is NSNull && $0["iceRestarts"] as? Int == 1 }, "\(per)")
        #expect(pion.wait(for: "\"event\":\"stats\"", micros: 5_000_000))
        let events = pionEvents(pion.text)
        #expect(events.filter { $0["event"] as? String == "restart" }.count == 6, "\(pion.text.suffix(800))")
        // pion's per-subscription counts against pubbot's, both sorted (which is which is pion's id).
        let written = events.filter { $0["event"] as? String == "whep-stats" }.compactMap { $0["video"] as? Int }.sorted()
        let got = per.compactMap { $0["packetsReceived"] as? Int }.sorted()
        #expect(written.count == 5 && got.count == 5, "pion \(written), pubbot \(got)")
        for (w, g) in zip(written, got) { #expect(w > 150 && g <= w && g * 100 >= w * 97, "pion wrote \(written), pubbot got \(got)") }
    }
}
