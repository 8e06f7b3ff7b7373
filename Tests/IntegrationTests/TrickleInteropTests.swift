import Foundation
import Testing

/// Trickle ICE (RFC 9725 §4.3.2): the offer goes with the host candidate, the relayed one that
/// coturn allocates while the POST is in flight follows in one PATCH with the 201's ETag and
/// end-of-candidates; a server that refuses the PATCH keeps the session on the offer's candidate,
/// said once.
@Suite(.serialized) struct TrickleInteropTests {
    static var turnFlags: (TURNInteropTests.Rig) -> [String] {
        { ["--ice-server", "turn:127.0.0.1:\($0.port)", "--turn-username", "bot", "--turn-credential", "s3cret"] }
    }

    /// Into pion: pion's own `trickle` event names the relay candidate it added (and the end of
    /// candidates); its packet counts equal pubbot's; the time to first media is reported. With
    /// --no-trickle pion hears no PATCH (the relay went in the offer).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func pionTakesTheTrickledRelayCandidate() throws {
        let turn = try TURNInteropTests.Rig()
        defer { turn.server.stop() }
        let (pion, port) = try startPion(["-limit", "60"])
        defer { pion.stop() }
        let r = try runPubbot(
            WHIPInteropTests.binary,
            ["publish", "--whip", "http://127.0.0.1:\(port)/whip", "--duration", "4s", "--layers", "640x360@30:500k", "--json"]
                + Self.turnFlags(turn))
        #expect(r.code == 0, "\(r.err)")
        #expect(pion.wait(for: "\"event\":\"stats\"", micros: 5_000_000), "\(pion.text)")
        let events = pion.text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let trickles = events.filter { $0["event"] as? String == "trickle" }
        #expect(
            trickles.count == 1 && trickles.first?["types"] as? [String] == ["relay"] && trickles.first?["end"] as? Bool == true,
            "pion's trickle events: \(trickles)")
        let published = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let whip = try #require(published["whip"] as? [String: Any])
        let negotiated = whip["negotiated"] as? [String: Any] ?? [:]
        #expect((negotiated["trickle"] as? String ?? "").hasPrefix("relay trickled in one PATCH (HTTP 204)"), "\(negotiated)")
        let first = try #require(whip["timeToFirstMediaMs"] as? Int, "\(whip)")
        #expect(first > 0 && first < 3_000, "\(first) ms")
        let stats = try #require(events.first { $0["event"] as? String == "stats" }?["tracks"] as? [[String: Any]])
        let streams = try #require(published["streams"] as? [[String: Any]])
        for t in stats {
            let sent = streams.first { $0["ssrc"] as? Int == t["ssrc"] as? Int }?["packetsSent"] as? Int ?? 0
            let got = t["packets"] as? Int ?? 0
            #expect(sent > 50 && got >= sent - 8 && got <= sent, "\(t["kind"] ?? ""): pion \(got), pubbot sent \(sent)")
        }

        let (pion2, port2) = try startPion(["-limit", "60"])
        defer { pion2.stop() }
        let whole = try runPubbot(
            WHIPInteropTests.binary,
            ["publish", "--whip", "http://127.0.0.1:\(port2)/whip", "--duration", "2s", "--no-video", "--no-trickle", "--json"]
                + Self.turnFlags(turn))
        #expect(whole.code == 0, "\(whole.err)")
        #expect(pion2.wait(for: "\"event\":\"stats\"", micros: 5_000_000), "\(pion2.text)")
        #expect(!pion2.text.contains("\"event\":\"trickle\""), "\(pion2.text)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(whole.out.utf8)) as? [String: Any], "\(whole.out)")
        #expect(((doc["whip"] as? [String: Any])?["negotiated"] as? [String: Any])?["trickle"] == nil, "\(doc["whip"] ?? "")")
    }

    /// Into a server without PATCH (the aiortc test endpoint: 404): one warning, and the session
    /// runs on the host candidate the offer carried.
    @Test func aRefusedTrickleIsSaidOnceAndTheSessionGoesOn() throws {
        let turn = try TURNInteropTests.Rig()
        defer { turn.server.stop() }
        let (peer, url) = try WHIPInteropTests().startEndpoint()
        defer { peer.stop() }
        let r = try runPubbot(WHIPInteropTests.binary, ["publish", "--whip", url, "--duration", "4s", "--json"] + Self.turnFlags(turn))
        #expect(r.code == 0, "\(r.err)")
        let warnings = r.err.split(separator: "\n").filter { $0.hasPrefix("warning: trickle ICE:") }
        #expect(warnings.count == 1 && warnings[0].contains("HTTP 404") && warnings[0].contains("offer's candidates"), "\(r.err)")
        let published = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let streams = try #require(published["streams"] as? [[String: Any]])
        #expect(streams.allSatisfy { ($0["packetsSent"] as? Int ?? 0) > 50 }, "\(streams)")
        #expect(!r.err.contains("s3cret") && !r.out.contains("s3cret"))
    }
}

/// The WHEP subscriber's own networks (`receive --whep --ice-server … [--ice-policy relay]`):
/// STUN and TURN asked from the receive socket before the offer, the relayed candidate offered
/// and checked from, media and feedback through coturn.
@Suite(.serialized) struct WHEPNetworksTests {
    /// From pion's fan-out through coturn only: the selected pair's local side is the relay,
    /// every packet pion wrote arrives, none lost, the video decodes; the TURN credential is
    /// printed nowhere. A wrong credential: one error, exit 2.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func aWHEPSubscriberThroughItsRelay() throws {
        let turn = try TURNInteropTests.Rig()
        defer { turn.server.stop() }
        let (pion, port) = try startPion(["-limit", "60", "-forward-rid", "q"])
        defer { pion.stop() }
        let publisher = try PeerProcess(
            WHIPInteropTests.binary, ["publish", "--whip", "http://127.0.0.1:\(port)/whip", "--duration", "14s", "--no-congestion-control"])
        defer { publisher.stop(grace: 3_000_000) }
        try #require(pion.wait(for: "\"rid\":\"q\"", micros: 8_000_000), "\(pion.text) \(publisher.text)")
        let r = try runPubbot(
            WHIPInteropTests.binary,
            ["receive", "--whep", "http://127.0.0.1:\(port)/whep", "--duration", "5s", "--ice-policy", "relay", "--json"]
                + TrickleInteropTests.turnFlags(turn))
        #expect(r.code == 0, "\(r.err)")
        #expect(!(r.out + r.err).contains("s3cret"))
        try #require(pion.wait(for: "\"event\":\"whep-stats\"", micros: 5_000_000), "no DELETE reached pion: \(pion.text)")
        let written = pion.text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        .first { $0["event"] as? String == "whep-stats" }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let whep = summary["whep"] as? [String: Any] ?? [:]
        let pair = whep["selectedCandidatePair"] as? [String: Any] ?? [:]
        #expect(pair["localCandidateType"] as? String == "relay", "\(whep)")
        #expect((whep["relay"] as? String ?? "").contains("via TURN 127.0.0.1:\(turn.port)"), "\(whep)")
        for kind in ["audio", "video"] {
            let s = try #require((summary["streams"] as? [[String: Any]] ?? []).first { $0["kind"] as? String == kind }, "\(r.out)")
            let sent = written?[kind] as? Int ?? 0, got = s["packetsReceived"] as? Int ?? 0
            #expect(
                sent > 100 && got <= sent && got * 100 >= sent * 97, "\(kind): pion wrote \(sent), pubbot received \(got) through the relay"
            )
            #expect(s["packetsLost"] as? Int == 0, "\(kind): \(s)")
        }
        let video = (summary["streams"] as? [[String: Any]] ?? []).first { $0["kind"] as? String == "video" }
        #expect((video?["framesDecoded"] as? Int ?? 0) >= 100, "\(video ?? [:])")

        let wrong = try runPubbot(
            WHIPInteropTests.binary,
            [
                "receive", "--whep", "http://127.0.0.1:\(port)/whep", "--duration", "3s", "--ice-policy", "relay", "--ice-server",
                "turn:127.0.0.1:\(turn.port)", "--turn-username", "bot", "--turn-credential", "wrong-one"
            ])
        let errors = wrong.err.split(separator: "\n").filter { $0.hasPrefix("Error:") }
        #expect(wrong.code == 2 && errors.count == 1 && !wrong.err.contains("wrong-one"), "\(wrong.code) \(wrong.err)")
    }

    /// A WHEP server that announces its TURN (pion's `-link`, a `Link` header in the 201, RFC
    /// 9725 §4.6) and a subscriber given none: it allocates on the announced server after the
    /// answer, trickles the relayed candidate (pion's own `trickle` event for that session), says
    /// so, and never prints the credential.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func aWHEPSubscriberUsesTheTURNTheServerAnnounces() throws {
        let turn = try TURNInteropTests.Rig()
        defer { turn.server.stop() }
        let (pion, port) = try startPion([
            "-limit", "60", "-forward-rid", "q", "-link", "turn:127.0.0.1:\(turn.port)", "-link-username", "bot", "-link-credential",
            "s3cret"
        ])
        defer { pion.stop() }
        let publisher = try PeerProcess(
            WHIPInteropTests.binary, ["publish", "--whip", "http://127.0.0.1:\(port)/whip", "--duration", "12s", "--no-congestion-control"])
        defer { publisher.stop(grace: 3_000_000) }
        try #require(pion.wait(for: "\"rid\":\"q\"", micros: 8_000_000), "\(pion.text) \(publisher.text)")
        let r = try runPubbot(WHIPInteropTests.binary, ["receive", "--whep", "http://127.0.0.1:\(port)/whep", "--duration", "4s", "--json"])
        #expect(r.code == 0, "\(r.err)")
        #expect(!(r.out + r.err).contains("s3cret"))
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let whep = summary["whep"] as? [String: Any] ?? [:]
        #expect((whep["serverICEServers"] as? String ?? "").contains("relay gathered"), "\(whep)")
        #expect((whep["relay"] as? String ?? "").contains("announced by the server"), "\(whep)")
        #expect((whep["trickle"] as? String ?? "").hasPrefix("relay trickled in one PATCH (HTTP 204)"), "\(whep)")
        let resource = (whep["resource"] as? String ?? "").split(separator: "/").last.map(String.init) ?? "?"
        let events = pion.text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let trickled = events.first { $0["event"] as? String == "trickle" && $0["id"] as? String == resource }
        #expect(trickled?["types"] as? [String] == ["relay"] && trickled?["end"] as? Bool == true, "pion's events: \(events)")
        let video = (summary["streams"] as? [[String: Any]] ?? []).first { $0["kind"] as? String == "video" }
        #expect((video?["framesDecoded"] as? Int ?? 0) >= 60 && video?["packetsLost"] as? Int == 0, "\(video ?? [:])")
    }

    /// Trickle from the subscriber (RFC 9725 §4.3.2, WHEP keeping WHIP's PATCH): with its own
    /// TURN server and no policy, the offer goes with the host candidate and the relay coturn
    /// allocates meanwhile follows in one PATCH — pion's own `trickle` event for that
    /// subscription; with `--no-trickle` it went in the offer and pion hears no PATCH from it.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func aWHEPSubscriberTricklesItsRelay() throws {
        let turn = try TURNInteropTests.Rig()
        defer { turn.server.stop() }
        let (pion, port) = try startPion(["-limit", "60", "-forward-rid", "q"])
        defer { pion.stop() }
        let publisher = try PeerProcess(
            WHIPInteropTests.binary, ["publish", "--whip", "http://127.0.0.1:\(port)/whip", "--duration", "14s", "--no-congestion-control"])
        defer { publisher.stop(grace: 3_000_000) }
        try #require(pion.wait(for: "\"rid\":\"q\"", micros: 8_000_000), "\(pion.text) \(publisher.text)")
        for trickle in [true, false] {
            let r = try runPubbot(
                WHIPInteropTests.binary,
                ["receive", "--whep", "http://127.0.0.1:\(port)/whep", "--duration", "3s", "--json"] + TrickleInteropTests.turnFlags(turn)
                    + (trickle ? [] : ["--no-trickle"]))
            #expect(r.code == 0, "\(r.err)")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
            let whep = summary["whep"] as? [String: Any] ?? [:]
            let resource = (whep["resource"] as? String ?? "").split(separator: "/").last.map(String.init) ?? "?"
            let events = pion.text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let trickled = events.filter { $0["event"] as? String == "trickle" && $0["id"] as? String == resource }
            if trickle {
                #expect((whep["trickle"] as? String ?? "").hasPrefix("relay trickled in one PATCH (HTTP 204)"), "\(whep)")
                #expect(trickled.count == 1 && trickled.first?["types"] as? [String] == ["relay"], "pion's events: \(events)")
            } else {
                #expect(whep["trickle"] == nil && trickled.isEmpty, "\(whep) \(trickled)")
            }
            let video = (summary["streams"] as? [[String: Any]] ?? []).first { $0["kind"] as? String == "video" }
            #expect((video?["framesDecoded"] as? Int ?? 0) >= 45 && video?["packetsLost"] as? Int == 0, "\(video ?? [:])")
        }
    }

    /// The subscribing leg's connectivity report (`preflight --whip … --whep …`), as the
    /// publisher's: a WHEP server that announces its TURN (pion's `-link`) gets a subscription
    /// per path — host UDP, then UDP relay through the announced coturn — each connected and
    /// ended; pion's own `whep-stats` events (one per WHEP session DELETEd) count them beside the
    /// real subscriber, and the credential is never printed.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "no pion endpoint (scripts/setup builds it)"))
    func aPreflightReportsEachPathOfTheSubscribingLeg() throws {
        let turn = try TURNInteropTests.Rig()
        defer { turn.server.stop() }
        let (pion, port) = try startPion([
            "-limit", "60", "-forward-rid", "q", "-link", "turn:127.0.0.1:\(turn.port)", "-link-username", "bot", "-link-credential",
            "s3cret"
        ])
        defer { pion.stop() }
        let base = "http://127.0.0.1:\(port)"
        let r = try runPubbot(
            WHIPInteropTests.binary,
            ["preflight", "--whip", base + "/whip", "--whep", base + "/whep", "--duration", "10s", "--json"])
        #expect(r.code == 0, "\(r.err)")
        #expect(!(r.out + r.err).contains("s3cret"))
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let schema = try SchemaValidator(path: root.appendingPathComponent("Sources/BotCLI/preflight.schema.json").path)
        #expect(schema.validateDocument(doc) == [])
        let subscriber = try #require(doc["subscriber"] as? [String: Any], "\(doc.keys)")
        let paths = subscriber["connectivity"] as? [[String: Any]] ?? []
        let host = paths.first { $0["path"] as? String == "host-udp" }
        #expect(host?["reachable"] as? Bool == true && (host?["connectMs"] as? Double ?? 0) > 0, "\(paths)")
        #expect((host?["detail"] as? String ?? "").hasPrefix("host 127.0.0.1:"), "\(paths)")
        let relay = paths.first { $0["path"] as? String == "relay-udp" }
        #expect(
            relay?["reachable"] as? Bool == true && relay?["announcedByServer"] as? Bool == true
                && (relay?["detail"] as? String ?? "").hasPrefix("relay ")
                && (relay?["detail"] as? String ?? "").contains("announced by the server"), "\(paths)")
        #expect((subscriber["framesDecoded"] as? Int ?? 0) > 0, "\(subscriber)")
        pion.stop()
        let sessions = pion.text.split(separator: "\n").filter { $0.contains("\"event\":\"whep-stats\"") }
        #expect(sessions.count >= 3, "pion's WHEP sessions ended: \(sessions)")
    }
}
