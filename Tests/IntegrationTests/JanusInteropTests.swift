import Foundation
import Testing
import Platform

/// `pubbot publish --whip` into Janus 1.1.2's VideoRoom — a real SFU pubbot did not write — in a
/// network namespace of its own (Tests/Peers/janus/janus_netns.sh) behind the test tree's WHIP
/// shim, with 2 % random loss on what reaches Janus. Janus's own counters (admin API
/// `handle_info`) must show the three simulcast substreams and the audio at the packet counts
/// pubbot reports, and the retransmissions its NACKs asked for; pubbot's estimate must come from
/// Janus's transport-cc feedback.
@Suite(.serialized, .enabled(if: getuid() == 0, "network namespaces need root")) struct JanusInteropTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let script = root.appendingPathComponent("Tests/Peers/janus/janus_netns.sh").path
    static var binary: String { URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("pubbot").path }

    /// Runs the script with its output in a file: Janus and the shim it leaves running inherit
    /// the descriptors Foundation opened for the child, so a pipe would never reach its end.
    func sh(_ args: [String], env: [String: String] = [:]) throws -> (Int32, String) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-janus-sh-\(getpid()).log").path
        FileManager.default.createFile(atPath: log, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: log) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = args
        p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        let out = try #require(FileHandle(forWritingAtPath: log))
        p.standardOutput = out
        p.standardError = out
        p.standardInput = FileHandle.nullDevice
        try p.run()
        // Polled, not waitUntilExit(): that can hang here when the child leaves processes behind.
        let deadline = Clock.monotonicMicros() + 60_000_000
        while p.isRunning && Clock.monotonicMicros() < deadline { Clock.sleep(micros: 20_000) }
        try? out.close()
        return (p.terminationStatus, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    @Test func publishesSimulcastIntoJanus() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-janus-\(getpid())").path
        let n = String(20 + Int(getpid()) % 200)
        let (code, started) = try sh([Self.script, "start", dir, n], env: ["LOSS": "2", "LIMIT": "120"])
        defer { _ = try? sh([Self.script, "stop", dir, n]); try? FileManager.default.removeItem(atPath: dir) }
        try #require(code == 0, "Janus did not start: \(started)")
        let url = try #require(started.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })

        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = ["publish", "--whip", url, "--duration", "10s", "--json"]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(String(decoding: e, as: UTF8.self))")
        let summary = try #require(try JSONSerialization.jsonObject(with: o) as? [String: Any])
        let whip = try #require(summary["whip"] as? [String: Any])
        let negotiated = try #require(whip["negotiated"] as? [String: String])
        #expect(negotiated["simulcast"] == "q;h;f" && negotiated["congestionControl"] == "transportCC" && negotiated["dtlsRole"]?.hasPrefix("server") == true,
                "\(negotiated)")
        let feedback = try #require(summary["feedback"] as? [String: Int])
        #expect((feedback["transportFeedbackReceived"] ?? 0) > 10 && (summary["estimate"] as? Int ?? 0) > 1_000_000, "\(feedback) \(summary["estimate"] ?? "")")
        #expect((feedback["nackReceived"] ?? 0) > 0 && (feedback["retransmissionsSent"] ?? 0) > 0, "2 % loss: Janus NACKs, pubbot retransmits: \(feedback)")

        // Janus's side: the shim printed handle_info at DELETE.
        let log = try String(contentsOfFile: dir + "/shim.log", encoding: .utf8)
        let line = try #require(log.split(separator: "\n").first { $0.contains("\"event\": \"stats\"") }, "no DELETE reached the shim: \(log)")
        let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let media = try #require(((event["handle_info"] as? [String: Any])?["info"] as? [String: Any]).flatMap { ($0["webrtc"] as? [String: Any])?["media"] as? [String: Any] },
                                 "\(line.prefix(500))")
        func inbound(_ type: String) -> [String: Any] {
            let m = media.values.compactMap { $0 as? [String: Any] }.first { $0["type"] as? String == type }
            return (m?["stats"] as? [String: Any])?["in"] as? [String: Any] ?? [:]
        }
        let audioIn = inbound("audio"), videoIn = inbound("video")
        let janus: [String: Int] = [
            "audio": audioIn["packets"] as? Int ?? 0, "q": videoIn["packets"] as? Int ?? 0,
            "h": (videoIn["video-simulcast-1"] as? [String: Any])?["packets"] as? Int ?? 0,
            "f": (videoIn["video-simulcast-2"] as? [String: Any])?["packets"] as? Int ?? 0,
        ]
        for s in try #require(summary["streams"] as? [[String: Any]]) {
            let name = s["rid"] as? String ?? "audio"
            let sent = s["packetsSent"] as? Int ?? 0, seen = janus[name] ?? 0
            // 2 % dropped on the way, Janus's last reading up to a second before the end.
            let close = sent > 100 && seen * 100 >= sent * 80 && seen * 100 <= sent * 105
            #expect(close, "\(name): pubbot sent \(sent) packets, Janus received \(seen)")
        }
        #expect((videoIn["retransmissions"] as? Int ?? 0) > 0, "Janus saw no retransmission: \(videoIn)")

        // The pre-flight over the same server: a verdict from Janus's feedback, with the transport.
        let pre = Process()
        pre.executableURL = URL(fileURLWithPath: Self.binary)
        pre.arguments = ["preflight", "--whip", url, "--duration", "8s", "--json"]
        let pout = Pipe()
        pre.standardOutput = pout
        pre.standardError = FileHandle.nullDevice
        try pre.run()
        let pdata = pout.fileHandleForReading.readDataToEndOfFile()
        pre.waitUntilExit()
        #expect(pre.terminationStatus == 0)
        let verdict = try #require(try JSONSerialization.jsonObject(with: pdata) as? [String: Any], "\(String(decoding: pdata, as: UTF8.self))")
        #expect(verdict["type"] as? String == "verdict" && (verdict["recommended"] as? [String: Any])?["name"] != nil, "\(verdict)")
        let pw = try #require(verdict["whip"] as? [String: Any])
        #expect(pw["srtpCipher"] as? String == "AEAD_AES_128_GCM" && (pw["selectedCandidatePair"] as? [String: Any])?["remoteAddress"] != nil, "\(pw)")
    }
}
