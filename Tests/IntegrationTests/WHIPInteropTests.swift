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
    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("pubbot").path
    }

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
        let line = try #require(
            peer.text.split(separator: "\n").first { $0.contains("\"event\": \"stats\"") }, "no DELETE seen by aiortc: \(peer.text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    func run(_ args: [String], env: [String: String] = [:], interruptAfter: Double? = nil) throws -> (
        code: Int32, out: String, err: String, seconds: Double
    ) {
        try runPubbot(Self.binary, args, env: env, interruptAfter: interruptAfter)
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
        #expect(
            !sizes.isEmpty && Set(sizes.keys).isSubset(of: ["320x180", "640x360", "1280x720"]) && stats["dtlsRole"] as? String == "client",
            "\(stats)")
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

    /// The answer names another certificate: DTLS refuses the server, one message, exit 2, and
    /// the session is still DELETEd.
    @Test func wrongFingerprintIsRefused() throws {
        let (peer, url) = try startEndpoint(["--mangle", "fingerprint"])
        defer { peer.stop() }
        let r = try run(["publish", "--whip", url, "--duration", "10s"])
        #expect(r.code == 2 && r.seconds < 8, "\(r.code) after \(r.seconds) s: \(r.err)")
        #expect(r.err.contains("Error:") && r.err.contains("a=fingerprint"), "\(r.err)")
        _ = try peerStats(peer) // DELETE arrived
    }

    /// A scripted endpoint (whip_mock.py) whose answers are complete but hostile.
    func startMock() throws -> (PeerProcess, String) {
        let script = Self.root.appendingPathComponent("Tests/Peers/whip_mock.py").path
        let mock = try PeerProcess("/usr/bin/python3", [script])
        guard mock.wait(for: "\n", micros: 10_000_000), let port = Int(mock.text.split(separator: "\n").first ?? "") else {
            mock.stop()
            throw TestFailure("whip_mock.py did not start: \(mock.text)")
        }
        return (mock, "http://127.0.0.1:\(port)")
    }

    /// The answer's only candidate never answers (a silent server): ICE fails in bounded time
    /// with one message, and the session is DELETEd.
    @Test func silentServerFailsICE() throws {
        let (mock, base) = try startMock()
        defer { mock.stop() }
        let r = try run(["publish", "--whip", base + "/silent", "--duration", "20s"])
        #expect(r.code == 2 && r.seconds < 12, "\(r.code) after \(r.seconds) s: \(r.err)")
        #expect(r.err.contains("Error:") && r.err.contains("ICE"), "\(r.err)")
        #expect(mock.wait(for: "DELETE /session/", micros: 2_000_000), "\(mock.text)")
    }

    /// A run too short for ICE to give up on a silent server is still a failure: a publish of 5 s
    /// and of 3 s, a WHEP subscription of 3 s and a load of 2 bots for 3 s that never connected
    /// exit 2 with one line naming the transport's states (the publish exited 0 with 0 packets
    /// sent, the others said nothing), and each session is DELETEd.
    @Test func neverConnectedIsAFailureWhateverTheDuration() throws {
        let (mock, base) = try startMock()
        defer { mock.stop() }
        for d in ["5s", "3s"] {
            let r = try run(["publish", "--whip", base + "/silent", "--duration", d])
            let errors = r.err.split(separator: "\n").filter { $0.hasPrefix("Error:") }
            #expect(r.code == 2 && r.seconds < 8, "\(d): \(r.code) after \(r.seconds) s: \(r.err)")
            #expect(errors.count == 1 && errors[0].contains("never connected") && errors[0].contains("ICE"), "\(d): \(r.err)")
        }
        let w = try run(["receive", "--whep", base + "/whep-silent", "--duration", "3s"])
        #expect(w.code == 2 && w.err.contains("Error: WHEP: the WebRTC transport never connected"), "\(w.code): \(w.err)")
        let l = try run(["load", "--whip", base + "/silent", "--bots", "2", "--duration", "3s"])
        #expect(l.code == 2 && l.err.contains("Error: no bot heard back: 2 of 2 bots' WebRTC transports never connected"), "\(l.err)")
        #expect(mock.text.components(separatedBy: "DELETE /session/").count - 1 == 5, "\(mock.text)")
    }

    /// A server that answers 200 for 201 is taken, with one warning naming RFC 9725 §4.2 (in the
    /// JSON too); `--strict` makes it exit 2 before any media, the session DELETEd.
    @Test func aTwoHundredIsTakenAndSaidOrRefusedWithStrict() throws {
        let (mock, base) = try startMock()
        defer { mock.stop() }
        let lenient = try run(["publish", "--whip", base + "/silent200", "--duration", "2s", "--json"])
        #expect(lenient.err.contains("warning: the WHIP endpoint answered HTTP 200, not 201 Created (RFC 9725 §4.2)"), "\(lenient.err)")
        #expect(lenient.code == 2 && lenient.err.contains("never connected"), "the silent answer's ICE: \(lenient.err)")
        #expect(lenient.out.contains("answered HTTP 200, not 201 Created"), "the JSON's whip.deviations: \(lenient.out.prefix(400))")
        let strict = try run(["publish", "--whip", base + "/silent200", "--duration", "2s", "--strict"])
        #expect(strict.code == 2 && strict.seconds < 2, "\(strict.code) after \(strict.seconds) s")
        let refused = "Error: the WHIP endpoint answered HTTP 200, not 201 Created (RFC 9725 §4.2) (--strict)"
        #expect(strict.err.contains(refused), "\(strict.err)")
        #expect(mock.text.components(separatedBy: "DELETE /session/").count - 1 == 2, "\(mock.text)")
        let usage = try run(["receive", "--listen", "127.0.0.1:0", "--key", String(repeating: "A", count: 40), "--strict"])
        #expect(usage.code == 64 && usage.err.contains("--strict needs --whep URL"), "\(usage.err)")
    }

    /// A WHEP server's 406 counter-offer (draft-ietf-wish-whep-04): `receive --whep` answers it
    /// by PATCH — application/sdp, If-Match the 406's ETag, a full ICE agent's answer (no
    /// ice-lite) taking the DTLS client role (`setup:active`), recvonly, its candidate — and then
    /// fails as any subscription whose server never answers ICE (the mock's candidate is silent),
    /// the session DELETEd. An answer the server refuses is one clear error, also DELETEd.
    @Test func aWHEPCounterOfferIsAnsweredByPatch() throws {
        let (mock, base) = try startMock()
        defer { mock.stop() }
        let r = try run(["receive", "--whep", base + "/counter", "--duration", "3s"])
        #expect(r.code == 2 && r.err.contains("Error: WHEP: the WebRTC transport never connected"), "\(r.code): \(r.err)")
        let patch = try #require(mock.text.split(separator: "\n").first { $0.hasPrefix("PATCH /session/") }, "\(mock.text)")
        let fields = patch.split(separator: " ", maxSplits: 3)
        let lines = fields.count == 4 ? fields[3].split(separator: "|").map(String.init) : []
        #expect(fields.count == 4 && fields[2].hasPrefix("\"e"), "If-Match: \(patch)")
        #expect(!lines.contains("a=ice-lite") && lines.filter { $0 == "a=setup:active" }.count == 2, "\(patch)")
        #expect(lines.filter { $0 == "a=recvonly" }.count == 2 && lines.contains { $0.hasPrefix("a=candidate:") }, "\(patch)")
        #expect(lines.contains("a=rtpmap:111 opus/48000/2") && lines.contains("a=rtpmap:96 VP8/90000"), "\(patch)")
        #expect(mock.wait(for: "DELETE /session/", micros: 2_000_000), "\(mock.text)")
        let refused = try run(["receive", "--whep", base + "/counter-refused", "--duration", "3s"])
        let errors = refused.err.split(separator: "\n").filter { $0.hasPrefix("Error:") }
        #expect(refused.code == 2 && refused.seconds < 3, "\(refused.code) after \(refused.seconds) s: \(refused.err)")
        #expect(errors.count == 1 && errors[0].contains("the answer to the WHEP counter-offer was refused"), "\(refused.err)")
        #expect(mock.text.components(separatedBy: "DELETE /session/").count - 1 == 2, "\(mock.text)")
        #expect(r.err.contains("warning: the WHEP endpoint answered 406 Not Acceptable with its own offer"), "\(r.err)")
        // --strict takes only RFC 9725's exchange: the counter-offer is exit 2 before any PATCH.
        let patches = mock.text.components(separatedBy: "PATCH /session/").count
        let strict = try run(["receive", "--whep", base + "/counter", "--duration", "3s", "--strict"])
        #expect(strict.code == 2 && strict.seconds < 3, "\(strict.code) after \(strict.seconds) s: \(strict.err)")
        #expect(strict.err.contains("Error: ") && strict.err.contains("(draft-ietf-wish-whep-04) (--strict)"), "\(strict.err)")
        let deletes = { mock.text.components(separatedBy: "DELETE /session/").count - 1 }
        let end = Clock.monotonicMicros() + 2_000_000
        while deletes() < 3 && Clock.monotonicMicros() < end { Clock.sleep(micros: 10_000) }
        #expect(deletes() == 3, "\(mock.text)")
        #expect(mock.text.components(separatedBy: "PATCH /session/").count == patches, "\(mock.text)")
    }

    /// An answer with no codec in common: refused before any media, DELETEd, exit 2.
    @Test func noCommonCodecIsRefused() throws {
        let (mock, base) = try startMock()
        defer { mock.stop() }
        let r = try run(["publish", "--whip", base + "/nocodec", "--duration", "5s"])
        #expect(r.code == 2 && r.seconds < 5, "\(r.code) after \(r.seconds) s: \(r.err)")
        #expect(r.err.contains("Error:") && r.err.contains("opus"), "\(r.err)")
        #expect(mock.wait(for: "DELETE /session/", micros: 2_000_000), "\(mock.text)")
    }

    /// `receive --whep` from aiortc as the WHEP server: it negotiates goog-remb and no
    /// transport-cc, so pubbot's receive-side estimate, sent as REMB, is what steers aiortc's
    /// encoder (a sender pubbot did not write). Behind an 800 kbit/s emulated downlink aiortc's
    /// target bitrate must settle near the bottleneck, and the video arrive without loss.
    @Test func whepRembSteersAiortc() throws {
        let (peer, url) = try startEndpoint()
        defer { peer.stop() }
        let whep = String(url.dropLast("/whip".count)) + "/whep"
        let r = try run(["receive", "--whep", whep, "--duration", "15s", "--downlink-impair", "rate=800kbit", "--json"])
        #expect(r.code == 0, "\(r.err)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out) \(r.err)")
        let w = try #require(summary["whep"] as? [String: Any])
        #expect((w["feedback"] as? String)?.contains("goog-remb") == true && (w["rembSent"] as? Int ?? 0) > 20, "\(w)")
        let v = try #require((summary["streams"] as? [[String: Any]])?.first { $0["kind"] as? String == "video" })
        let got = v["packetsReceived"] as? Int ?? 0, lost = v["packetsLost"] as? Int ?? 0
        #expect((v["framesDecoded"] as? Int ?? 0) >= 350 && lost * 50 <= got, "\(v)")
        // aiortc's own record of its encoder's target (set from each REMB).
        peer.wait(for: "whep-stats", micros: 5_000_000)
        let line = try #require(peer.text.split(separator: "\n").first { $0.contains("whep-stats") }, "\(peer.text)")
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let targets = (stats["targetBitrates"] as? [[Double]] ?? []).filter { $0[0] >= 8 }.map { $0[1] }.sorted()
        try #require(!targets.isEmpty, "\(stats)")
        let median = targets[targets.count / 2]
        #expect(median >= 550_000 && median <= 950_000 && targets.last! <= 1_100_000, "aiortc's target after 8 s: \(targets)")
    }

    /// A subscriber that does not get the CPU — stopped for 250 ms of every 750 ms, as a loaded
    /// machine or a fleet can do to it — still measures the path and not itself: each datagram
    /// carries the kernel's arrival time, so the emulated 800 kbit/s downlink spaces aiortc's
    /// packets as a real one would and the receiver reports no freeze (reading the time at the
    /// late read instead, it reported 16–21 alone and REMB fell to ~400 kbit/s at the first stop;
    /// now 0 alone, up to 3 beside the other interop tests, whose load also starves aiortc).
    @Test func aStarvedSubscriberMeasuresThePathNotItself() throws {
        let (peer, url) = try startEndpoint()
        defer { peer.stop() }
        let whep = String(url.dropLast("/whip".count)) + "/whep"
        let receiver = try PeerProcess(
            Self.binary, ["receive", "--whep", whep, "--duration", "12s", "--downlink-impair", "rate=800kbit", "--json"])
        defer { receiver.stop() }
        try #require(receiver.wait(for: "connected:", micros: 10_000_000), "\(receiver.text)")
        let pid = receiver.process.processIdentifier
        var stops = 0
        let end = Clock.monotonicMicros() + 30_000_000
        while receiver.process.isRunning && Clock.monotonicMicros() < end {
            Clock.sleep(micros: 500_000)
            guard receiver.process.isRunning else { break }
            kill(pid, SIGSTOP)
            Clock.sleep(micros: 250_000)
            kill(pid, SIGCONT)
            stops += 1
        }
        receiver.process.waitUntilExit()
        #expect(stops >= 8 && receiver.process.terminationStatus == 0, "\(stops) stops; \(receiver.text)")
        let text = receiver.text
        let json = try #require(text.range(of: "\n{\n").map { String(text[$0.lowerBound...]) }, "\(text)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "\(json)")
        let v = try #require((summary["streams"] as? [[String: Any]])?.first { $0["kind"] as? String == "video" })
        let got = v["packetsReceived"] as? Int ?? 0, lost = v["packetsLost"] as? Int ?? 0
        #expect((v["framesDecoded"] as? Int ?? 0) >= 250 && lost * 50 <= got, "\(v)")
        #expect((v["freezeCount"] as? Int ?? 99) <= 6, "\(v)")
    }

    /// `receive --whep` against hostile WHEP servers: a silent one (ICE fails in bounded time),
    /// one that answers recvonly (sends nothing), a refused token — each one message, exit 2, the
    /// session DELETEd when one was created, the token never printed.
    @Test func whepSubscriberAgainstHostileServers() throws {
        let (mock, base) = try startMock()
        defer { mock.stop() }
        let silent = try run(["receive", "--whep", base + "/whep-silent", "--duration", "20s"])
        #expect(silent.code == 2 && silent.seconds < 12, "\(silent.code) after \(silent.seconds) s: \(silent.err)")
        #expect(silent.err.contains("Error: WHEP:") && silent.err.contains("ICE"), "\(silent.err)")
        #expect(mock.wait(for: "DELETE /session/1", micros: 2_000_000), "\(mock.text)")
        let recvonly = try run(["receive", "--whep", base + "/silent", "--duration", "5s"])
        #expect(recvonly.code == 2 && recvonly.err.contains("Error:") && recvonly.err.contains("sends neither"), "\(recvonly.err)")
        #expect(mock.wait(for: "DELETE /session/2", micros: 2_000_000), "\(mock.text)")
        let token = try run(["receive", "--whep", base + "/auth", "--duration", "5s"], env: ["PUBBOT_WHEP_TOKEN": "wrong-token-s3cret"])
        #expect(
            token.code == 2 && token.err.contains("Error:") && token.err.contains("token") && token.err.contains("WHEP"), "\(token.err)")
        #expect(!(token.out + token.err).contains("wrong-token-s3cret"))
        let usage = try run(["receive", "--whep", base + "/whep-silent", "--key", "AAAA"])
        #expect(usage.code == 64 && usage.err.contains("--key"), "\(usage.err)")
    }

    /// pubbot to pubbot over the production stack: `receive --whip-listen` (ICE-lite, DTLS
    /// client, transport-cc) decodes every simulcast layer `publish --whip` sends, VP8 and
    /// H.264 (VP9 and AV1 with two layers); the session ends with a DELETE the endpoint answers
    /// 200, though the publisher's BYE ended it first.
    @Test(arguments: ["vp8", "h264", "vp9", "av1"])
    func publishesToPubbotsOwnEndpoint(_ codec: String) throws {
        let receiver = try PeerProcess(Self.binary, ["receive", "--whip-listen", "127.0.0.1:0", "--duration", "30s", "--json"])
        defer { receiver.stop() }
        try #require(receiver.wait(for: "/whip (media", micros: 10_000_000), "\(receiver.text)")
        let url = try #require(receiver.text.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init), "\(receiver.text)")
        // VP9 and AV1 are the heaviest encoders (libvpx VP9 and libaom at 720p beside the other
        // suites' real-time peers): their cases run the two lower layers.
        let twoLayers = codec == "vp9" || codec == "av1"
        let ladder = twoLayers ? ["--layers", "640x360@30:500k,320x180@30:150k"] : []
        let r = try run(["publish", "--whip", url, "--duration", "6s", "--codec", codec, "--json"] + ladder)
        #expect(r.code == 0, "\(r.err)")
        #expect(!r.err.contains("could not end"), "\(r.err)")
        kill(receiver.process.processIdentifier, SIGINT)
        receiver.wait(for: "\"byes\"", micros: 5_000_000)
        receiver.process.waitUntilExit()
        let text = receiver.text
        let json = try #require(text.firstIndex(of: "{").map { String(text[$0...]) }, "\(text)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "\(json)")
        let received = try #require(summary["streams"] as? [[String: Any]])
        let published = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let negotiated = (published["whip"] as? [String: Any])?["negotiated"] as? [String: String]
        #expect(
            negotiated?["simulcast"] == (twoLayers ? "0;1" : "q;h;f") && negotiated?["congestionControl"] == "transportCC"
                && negotiated?["iceLite"] == "yes"
                && negotiated?["video"]?.hasPrefix(["vp8": "VP8/96", "h264": "H264/102", "vp9": "VP9/98", "av1": "AV1/45"][codec]!) == true,
            "\(String(describing: negotiated))")
        let streams = try #require(published["streams"] as? [[String: Any]])
        #expect(streams.count == (twoLayers ? 3 : 4))
        for s in streams {
            let sent = s["framesSent"] as? Int ?? 0
            let ssrc = s["ssrc"] as? Int ?? -1
            let got = received.first { ($0["ssrc"] as? Int) == ssrc }
            let decoded = got?["framesDecoded"] as? Int ?? 0
            let name = "\(s["kind"] as? String ?? "") \(s["rid"] as? String ?? "")"
            let ok = sent > 50 && decoded * 100 >= sent * 95 && decoded <= sent
            #expect(ok, "\(name): sent \(sent), decoded \(decoded)")
            // AV1 carries the Dependency Descriptor (two-byte headers, the endpoint allows them):
            // the receiver read one from every video packet, the structure from each key frame.
            if codec == "av1" && s["kind"] as? String == "video" {
                #expect(negotiated?["video"]?.contains("dependency descriptor") == true, "\(String(describing: negotiated))")
                #expect(
                    got?["dependencyDescriptors"] as? Int == got?["packetsReceived"] as? Int
                        && got?["dependencyDescriptorErrors"] as? Int == 0,
                    "\(name): \(String(describing: got))")
            }
        }
    }
}
