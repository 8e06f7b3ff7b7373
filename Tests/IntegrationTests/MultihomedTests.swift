import Foundation
import Testing
import Platform

/// A publisher with two networks (RFC 8445 §5.1.1.1: a host candidate per interface): in a
/// namespace with two veths, each its own subnet, into `receive --whip-listen` (`Tests/Peers/
/// multihomed.sh`). The endpoint's own counts are the check.
@Suite(.serialized) struct MultihomedTests {
    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "Peers/multihomed.sh"
        ).path
    }

    /// Runs the script; the publisher's (with MODE=whep the subscriber's) and the endpoint's
    /// JSON, the publisher's (subscriber's) stderr, pion's log.
    func run(mode: String, n: Int, publisherArgs: String = "", environment: [String: String] = [:]) throws -> (
        code: Int32, pub: [String: Any], recv: [String: Any], err: String, pion: String
    ) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-mh-\(getpid())-\(mode)-\(n)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [Self.script, TURNInteropTests.binary, dir.path, String(n)]
        p.environment = ProcessInfo.processInfo.environment.merging(
            ["MODE": mode, "PUB_ARGS": publisherArgs, "PION": pionEndpoint].merging(environment) { $1 }
        ) { $1 }
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        let deadline = Clock.monotonicMicros() + 90_000_000
        while p.isRunning && Clock.monotonicMicros() < deadline { Clock.sleep(micros: 50_000) }
        if p.isRunning { p.terminate() }
        func json(_ name: String) -> [String: Any] {
            (try? Data(contentsOf: dir.appendingPathComponent(name))).flatMap {
                try? JSONSerialization.jsonObject(with: $0) as? [String: Any]
            }
                ?? [:]
        }
        func text(_ name: String) -> String { (try? String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)) ?? "" }
        let whep = mode.hasPrefix("whep")
        return (
            p.isRunning ? -1 : p.terminationStatus, json(whep ? "sub.json" : "pub.json"), json("recv.json"),
            text(whep ? "sub.err" : "pub.err"), text(environment["PION_BOTS"] != nil ? "pion_bots.out" : "pion.out")
        )
    }

    /// Packets sent per stream (the publisher's) against received (the endpoint's), by SSRC.
    func counts(_ pub: [String: Any], _ recv: [String: Any]) -> [(sent: Int, received: Int, lost: Int)] {
        let sent = (pub["streams"] as? [[String: Any]] ?? []).map { ($0["ssrc"] as? Int ?? 0, $0["packetsSent"] as? Int ?? 0) }
        let got = Dictionary(
            (recv["streams"] as? [[String: Any]] ?? []).map {
                ($0["ssrc"] as? Int ?? 0, ($0["packetsReceived"] as? Int ?? 0, $0["packetsLost"] as? Int ?? 0))
            }
        ) { a, _ in a }
        return sent.map { (ssrc, n) in (n, got[ssrc]?.0 ?? 0, got[ssrc]?.1 ?? 0) }
    }

    /// UDP from the first network's address is dropped: only the second network's host
    /// candidate gets through. With a host candidate per interface pubbot finds it (the selected
    /// pair's local side is the second address) and the endpoint receives every packet sent;
    /// with one candidate (the routed address only, as before) this publish never connects.
    @Test(.enabled(if: getuid() == 0, "network namespaces need root"))
    func theSecondNetworkCarriesTheSessionWhenTheFirstDropsUDP() throws {
        let n = 20 + Int(getpid()) % 100
        let r = try run(mode: "block", n: n)
        #expect(r.code == 0, "\(r.err)")
        let whip = try #require(r.pub["whip"] as? [String: Any], "\(r.err)")
        let negotiated = whip["negotiated"] as? [String: String] ?? [:]
        #expect(negotiated["hostCandidates"]?.contains("10.81.\(n).2") == true, "\(negotiated)")
        #expect(negotiated["hostCandidates"]?.contains("10.82.\(n).2") == true, "\(negotiated)")
        let pair = try #require(whip["selectedCandidatePair"] as? [String: Any])
        #expect((pair["localAddress"] as? String)?.hasPrefix("10.82.\(n).2:") == true, "\(pair)")
        let c = counts(r.pub, r.recv)
        #expect(c.count == 4 && c.allSatisfy { $0.sent > 100 && $0.received == $0.sent && $0.lost == 0 }, "\(c)")
        // Offering the first network's address alone (`--ice-interface`): nothing connects, exit 2.
        let one = try run(mode: "block", n: n + 1, publisherArgs: "--ice-interface {A}")
        #expect(one.code == 2, "\(one.err)")
        #expect(one.err.contains("Error:") || one.err.contains("error"), "\(one.err)")
    }

    /// The network the session runs on goes away at 4 s (its address removed): pubbot notices
    /// within a second, restarts ICE by PATCH with the host candidates it has now (RFC 8445 §9),
    /// and the session goes on over the second network — one session, DTLS and SRTP unchanged —
    /// the endpoint receiving all but what was sent into the vanished network before the restart.
    @Test(.enabled(if: getuid() == 0, "network namespaces need root"))
    func losingTheNetworkInUseRestartsICEOnTheOther() throws {
        let n = 120 + Int(getpid()) % 100
        let r = try run(mode: "change", n: n)
        #expect(r.code == 0, "\(r.err)")
        let whip = try #require(r.pub["whip"] as? [String: Any], "\(r.err)")
        #expect(whip["iceRestarts"] as? Int == 1, "\(whip)")
        let pair = try #require(whip["selectedCandidatePair"] as? [String: Any])
        #expect((pair["localAddress"] as? String)?.hasPrefix("10.82.\(n).2:") == true, "\(pair)")
        let restarts = try #require(r.pub["iceRestarts"] as? [[String: Any]], "\(r.pub.keys)")
        #expect(restarts.count == 1 && restarts[0]["outcome"] as? String == "restarted", "\(restarts)")
        #expect((restarts[0]["trigger"] as? String)?.hasPrefix("interface change: 10.81.\(n).2 gone") == true, "\(restarts)")
        #expect(r.err.contains("the local interfaces changed"))
        // 10 s of media: what went into the vanished network before the restart (≤ ~1 s of it)
        // is lost, the rest arrives — on the second network, after the restart.
        let c = counts(r.pub, r.recv)
        let sent = c.reduce(0) { $0 + $1.sent }, received = c.reduce(0) { $0 + $1.received }
        #expect(c.count == 4 && sent > 3_000 && Double(received) >= 0.85 * Double(sent), "\(c)")
        #expect(c.allSatisfy { $0.received > $0.sent / 2 }, "\(c)")
    }

    /// The WHEP subscriber has a host candidate per interface too: `receive --whep` in the
    /// namespace, UDP from the first network's address dropped, from pion's fan-out on this side
    /// (a publisher feeding it): the subscription runs on the second network's address and
    /// receives every packet pion wrote (pion's own count); offering the first alone
    /// (`--ice-interface`) receives nothing, exit 2.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: pionEndpoint), "needs root and pion"))
    func aWHEPSubscriberOnTheSecondNetwork() throws {
        let n = 60 + Int(getpid()) % 100
        let r = try run(mode: "whep", n: n)
        #expect(r.code == 0, "\(r.err)")
        let whep = try #require(r.pub["whep"] as? [String: Any], "\(r.err)")
        let pair = try #require(whep["selectedCandidatePair"] as? [String: Any], "\(whep)")
        #expect((pair["localAddress"] as? String)?.hasPrefix("10.82.\(n).2:") == true, "\(pair)")
        let stats = try #require(
            pionEvents(r.pion)
                .first { $0["event"] as? String == "whep-stats" }, "\(r.pion)")
        let streams = r.pub["streams"] as? [[String: Any]] ?? []
        for kind in ["audio", "video"] {
            let s = streams.first { $0["kind"] as? String == kind } ?? [:]
            let written = stats[kind] as? Int ?? 0, got = s["packetsReceived"] as? Int ?? 0
            // What pion wrote between pubbot's last read and its DELETE may be missing (≥ 97 %).
            #expect(written > 50 && got <= written && got * 100 >= written * 97, "\(kind): pion wrote \(written), pubbot got \(got)")
            #expect(s["packetsLost"] as? Int == 0, "\(s)")
        }
        let one = try run(mode: "whep", n: n + 1, publisherArgs: "--ice-interface {A}")
        #expect(one.code == 2, "\(one.err)")
    }

    /// The endpoint is the multi-homed one: `receive --whip-listen 0.0.0.0:PORT` in the
    /// namespace offers each of its addresses, and UDP reaches only the second address of its
    /// first interface — whose replies the kernel would send from the first. The endpoint answers
    /// every check from the address it reached (IP_PKTINFO; RFC 8445 §7.2.5.2.1: a response from
    /// elsewhere fails the check), so pubbot's publisher and pion's (the strict judge, its own
    /// count) connect to that candidate and everything they send arrives. Before, both never
    /// connected (pubbot exit 2, pion "ICE did not connect in 10 s").
    @Test(.enabled(if: getuid() == 0, "network namespaces need root"))
    func aMultihomedEndpointAnswersFromTheAddressEachCheckReached() throws {
        let n = 10 + Int(getpid()) % 10
        let r = try run(mode: "endpoint", n: n)
        #expect(r.code == 0, "\(r.err)")
        let whip = try #require(r.pub["whip"] as? [String: Any], "\(r.err)")
        let pair = try #require(whip["selectedCandidatePair"] as? [String: Any], "\(whip)")
        #expect((pair["remoteAddress"] as? String)?.hasPrefix("10.81.\(n).3:") == true, "\(pair)")
        let c = counts(r.pub, r.recv)
        #expect(c.count == 4 && c.allSatisfy { $0.sent > 100 && $0.received == $0.sent && $0.lost == 0 }, "\(c)")

        let bots = WHIPInteropTests.root.appendingPathComponent(".build/peers/pion_bots").path
        guard FileManager.default.isExecutableFile(atPath: bots) else { return } // scripts/setup builds it
        let media = WHIPInteropTests.root.appendingPathComponent("Media/replay")
        let p = try run(
            mode: "endpoint", n: n + 1,
            environment: [
                "PION_BOTS": bots, "PION_IVF": media.appendingPathComponent("1-640x360.ivf").path,
                "PION_OPUS": media.appendingPathComponent("audio.opusframes").path
            ])
        let line = try #require(
            pionEvents(p.pion)
                .first { $0["event"] as? String == "bots" }, "\(p.pion)")
        #expect(line["connected"] as? Int == 1 && line["failed"] as? Int == 0, "\(p.pion)")
        // pion writes one packet per 20 ms Opus frame: the endpoint's audio count against it.
        let frames = line["audioFrames"] as? Int ?? 0
        let audio = (p.recv["streams"] as? [[String: Any]] ?? []).first { $0["kind"] as? String == "audio" } ?? [:]
        let got = audio["packetsReceived"] as? Int ?? 0
        #expect(frames > 100 && got <= frames && got * 100 >= frames * 97, "pion wrote \(frames) Opus frames, the endpoint got \(got)")
        #expect(audio["packetsLost"] as? Int == 0, "\(audio)")
    }

    /// `load --whip` bots restart too: 3 bots in the namespace, the first network's address gone
    /// at 4 s — each bot restarts ICE on the second network (the report's `byInterfaceChange`,
    /// each bot's `interfaceRestarts`), and every bot ends its run with media flowing.
    @Test(.enabled(if: getuid() == 0, "network namespaces need root"))
    func aLoadFleetRestartsOnAnInterfaceChange() throws {
        let n = 160 + Int(getpid()) % 60
        let r = try run(mode: "load-change", n: n)
        #expect(r.code == 0, "\(r.err)")
        let restarts = (r.pub["webrtc"] as? [String: Any])?["iceRestarts"] as? [String: Any] ?? [:]
        #expect(restarts["byInterfaceChange"] as? Int == 3 && restarts["refused"] as? Int == 0, "\(restarts)")
        let bots = r.pub["perBot"] as? [[String: Any]] ?? []
        #expect(bots.count == 3, "\(r.pub.keys)")
        for b in bots {
            #expect(b["state"] as? String == "done" && b["interfaceRestarts"] as? Int == 1, "\(b)")
            #expect((b["packetLoss"] as? Double ?? 1) < 0.05, "\(b)")
        }
    }

    /// A `load` fleet's subscribers restart too: 1 publisher bot and 3 WHEP subscribers in the
    /// namespace, through pion's fan-out behind the first network, whose address goes 5 s in —
    /// the bot and every subscriber restart ICE on the second (the report's `byInterfaceChange`,
    /// pion's own restart events), and each subscriber receives what pion wrote to it (pion's
    /// counts, ≥ 97 %).
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: pionEndpoint), "needs root and pion"))
    func aLoadFleetsSubscribersRestartOnAnInterfaceChange() throws {
        let n = 100 + Int(getpid()) % 20
        let r = try run(mode: "load-whep-change", n: n)
        #expect(r.code == 0, "\(r.err)")
        let bots = (r.pub["webrtc"] as? [String: Any])?["iceRestarts"] as? [String: Any] ?? [:]
        #expect(bots["byInterfaceChange"] as? Int == 1 && bots["refused"] as? Int == 0, "\(bots)")
        let subs = r.pub["subscribers"] as? [String: Any] ?? [:]
        let restarts = subs["iceRestarts"] as? [String: Any] ?? [:]
        #expect(
            restarts["byInterfaceChange"] as? Int == 3 && restarts["refused"] as? Int == 0
                && restarts["subscribersRecovered"] as? Int == 3, "\(restarts)")
        let events = pionEvents(r.pion)
        #expect(events.filter { $0["event"] as? String == "restart" }.count == 4, "\(r.pion.suffix(600))")
        let written = events.filter { $0["event"] as? String == "whep-stats" }.compactMap { $0["video"] as? Int }.sorted()
        let got = (subs["perSubscriber"] as? [[String: Any]] ?? []).compactMap { $0["packetsReceived"] as? Int }.sorted()
        #expect(written.count == 3 && got.count == 3, "pion \(written), pubbot \(got)")
        for (w, g) in zip(written, got) { #expect(w > 100 && g <= w && g * 100 >= w * 97, "pion wrote \(written), pubbot got \(got)") }
    }

    /// The subscribers' consent watch (`load --ice-recover-after 7s`): the same fleet, every UDP
    /// datagram into its namespace dropped from 3 s to 12 s — each subscriber restarts on its own
    /// once its path has been silent 7 s, ends on a new pair once the path is back, and receives
    /// what pion wrote to it (pion's counts) but for what pion wrote into the dropped path before
    /// the publisher behind it stalled (0–21 packets in nine runs, up to 9 %): at most an eighth,
    /// and every one of those is in the subscriber's own `packetsLost`.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: pionEndpoint), "needs root and pion"))
    func aLoadFleetsSubscribersRecoverFromASilentPath() throws {
        let n = 230 + Int(getpid()) % 20
        let r = try run(mode: "load-whep-outage", n: n, publisherArgs: "--ice-recover-after 7s --require started>=100%")
        #expect(r.code == 0, "\(r.err)")
        let subs = r.pub["subscribers"] as? [String: Any] ?? [:]
        let restarts = subs["iceRestarts"] as? [String: Any] ?? [:]
        let asked = restarts["asked"] as? Int ?? 0
        #expect(
            asked >= 3 && restarts["byConsentWatch"] as? Int == asked && restarts["refused"] as? Int == 0
                && restarts["subscribersRecovered"] as? Int == 3, "\(restarts)")
        let per = subs["perSubscriber"] as? [[String: Any]] ?? []
        #expect(per.count == 3 && per.allSatisfy { $0["error"] is NSNull && ($0["iceRecoveries"] as? Int ?? 0) >= 1 }, "\(per)")
        let events = pionEvents(r.pion)
        let botRestarts = (r.pub["webrtc"] as? [String: Any])?["iceRestarts"] as? [String: Any] ?? [:]
        #expect(
            events.filter { $0["event"] as? String == "restart" }.count == asked + (botRestarts["asked"] as? Int ?? 0),
            "\(r.pion.suffix(600))")
        let written = events.filter { $0["event"] as? String == "whep-stats" }.compactMap { $0["video"] as? Int }.sorted()
        let got = per.compactMap { $0["packetsReceived"] as? Int }.sorted()
        let lost = per.compactMap { $0["packetsLost"] as? Int }
        #expect(written.count == 3 && got.count == 3 && lost.count == 3, "pion \(written), pubbot \(got)")
        for (w, g) in zip(written, got) {
            #expect(w > 100 && g <= w && (w - g) * 8 <= w && lost.min()! >= w - g, "pion wrote \(written), pubbot got \(got), lost \(lost)")
        }
    }

    /// A WHEP subscriber whose first network goes away 3 s in: it restarts ICE by PATCH on the
    /// candidates it has now (pion restarts the subscription), its pair on the second network,
    /// and receives what pion wrote (pion's own count).
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: pionEndpoint), "needs root and pion"))
    func aWHEPSubscriberRestartsOnAnInterfaceChange() throws {
        let n = 220 + Int(getpid()) % 30
        let r = try run(mode: "whep-change", n: n)
        #expect(r.code == 0, "\(r.err)")
        let restarts = try #require(r.pub["iceRestarts"] as? [[String: Any]], "\(r.pub.keys)")
        #expect(restarts.count == 1 && restarts[0]["outcome"] as? String == "restarted", "\(restarts)")
        #expect((restarts[0]["trigger"] as? String)?.hasPrefix("interface change: 10.81.\(n).2 gone") == true, "\(restarts)")
        let pair = (r.pub["whep"] as? [String: Any])?["selectedCandidatePair"] as? [String: Any] ?? [:]
        #expect((pair["localAddress"] as? String)?.hasPrefix("10.82.\(n).2:") == true, "\(pair)")
        let stats = try #require(
            pionEvents(r.pion)
                .first { $0["event"] as? String == "whep-stats" }, "\(r.pion)")
        let streams = r.pub["streams"] as? [[String: Any]] ?? []
        for kind in ["audio", "video"] {
            let s = streams.first { $0["kind"] as? String == kind } ?? [:]
            let written = stats[kind] as? Int ?? 0, got = s["packetsReceived"] as? Int ?? 0
            #expect(written > 50 && got <= written && got * 100 >= written * 95, "\(kind): pion wrote \(written), pubbot got \(got)")
        }
    }
}
