import Foundation
import Testing
import Transport

/// `pubbot load` as a user runs it (the debug binary, so the fleets are small): replay media
/// built by `pubbot media build`, the embedded receiver and a separate `pubbot receive`,
/// requirements and exit codes, shards merged by `pubbot report merge`.
@Suite(.serialized) struct LoadTests {
    let bin = BinaryTests()
    static let media: String = {
        let dir = NSTemporaryDirectory() + "pubbot-load-media-\(getpid())"
        return dir
    }()

    func buildMedia() throws {
        if FileManager.default.fileExists(atPath: Self.media + "/manifest.txt") { return }
        let r = try bin.run(["media", "build", "--out", Self.media, "--seconds", "2"])
        try #require(r.code == 0, "\(r.err)")
        #expect(r.out.contains("key frames"))
    }

    func report(_ path: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
    }

    var schema: SchemaValidator {
        get throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            return try SchemaValidator(path: root.appendingPathComponent("Sources/BotCLI/load-report.schema.json").path)
        }
    }

    @Test func fleetAgainstTheEmbeddedReceiverReachesEveryBot() throws {
        try buildMedia()
        let path = NSTemporaryDirectory() + "load-\(getpid()).json"
        let r = try bin.run([
            "load", "--media", Self.media, "--bots", "24", "--duration", "6s", "--ramp", "1s", "--report", path,
            "--require", "loss<1%,started>=100%,feedback>=100%"
        ])
        #expect(r.code == 0, "\(r.out)\(r.err)")
        #expect(r.out.contains("p95") && r.out.contains("bots per core"))
        let doc = try report(path)
        #expect(try schema.validateDocument(doc) == [])
        let bots = doc["perBot"] as! [[String: Any]]
        #expect(bots.count == 24)
        for b in bots {
            #expect(b["state"] as? String == "done")
            #expect((b["rtcpReceived"] as? Int ?? 0) > 0, "bot \(b["bot"]!) heard nothing")
            // Every bot's media reached the receiver: ~6 s × (3 layers × 30 + 50 audio) frames, minus the ramp.
            #expect((b["framesReceived"] as? Int ?? 0) > 300, "bot \(b["bot"]!): \(b["framesReceived"]!)")
            #expect(b["layersActive"] as? Int == 2) // the default replay ladder: 360p + 180p
        }
        let totals = doc["totals"] as! [String: Int]
        #expect(totals["receiverPacketsReceived"]! >= totals["packetsSent"]! * 99 / 100)
        #expect((doc["requirements"] as! [[String: Any]]).allSatisfy { $0["met"] as? Bool == true })
    }

    @Test func lossAtTheReceiverFailsALossRequirement() throws {
        try buildMedia()
        let r = try bin.run([
            "load", "--media", Self.media, "--bots", "8", "--duration", "5s", "--impair", "loss=3%", "--require", "loss<1%", "--json"
        ])
        #expect(r.code == 1, "\(r.out)\(r.err)")
        let doc = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as! [String: Any]
        let req = (doc["requirements"] as! [[String: Any]])[0]
        #expect(req["met"] as? Bool == false)
        #expect((req["value"] as? Double ?? 0) > 0.01)
        #expect(doc["ok"] as? Bool == false)
    }

    /// Two shards against one `pubbot receive`, merged: the merged totals are the sums of the shards',
    /// bot numbers cover the fleet once, and the receiver saw every bot as its own publisher.
    @Test func shardsAgainstOneReceiverMergeExactly() throws {
        try buildMedia()
        let key = "WbTBosdVUZqEb6Htqhn+m3z7wUh4RelR/rCp7rY2"
        let recvOut = Pipe()
        let (recv, port) = try startReceiver(["--key", key, "--decode-publishers", "1", "--duration", "9s", "--json"], stdout: recvOut)
        var paths: [String] = []
        var shards: [Process] = []
        for i in 0..<2 {
            let path = NSTemporaryDirectory() + "shard-\(i)-\(getpid()).json"
            paths.append(path)
            let p = Process()
            p.executableURL = BinaryTests.binary
            p.arguments = [
                "load", "--to", "127.0.0.1:\(port)", "--key", key, "--media", Self.media, "--bots", "10", "--shard", "\(i)/2",
                "--duration", "4s", "--report", path
            ]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            shards.append(p)
        }
        for p in shards { p.waitUntilExit() }
        #expect(shards.map(\.terminationStatus) == [0, 0])
        let merged = try bin.run(["report", "merge", paths[0], paths[1], "--json"])
        #expect(merged.code == 0, "\(merged.err)")
        let m = try JSONSerialization.jsonObject(with: Data(merged.out.utf8)) as! [String: Any]
        #expect(try schema.validateDocument(m) == [])
        let a = try report(paths[0]), b = try report(paths[1])
        for key in ["packetsSent", "bytesSent", "rtcpReceived", "keyFramesSent"] {
            let sum = (a["totals"] as! [String: Int])[key]! + (b["totals"] as! [String: Int])[key]!
            #expect((m["totals"] as! [String: Int])[key] == sum, "\(key)")
        }
        #expect((m["bots"] as! [String: Int])["requested"] == 10 && (m["bots"] as! [String: Int])["withFeedback"] == 10)
        #expect((m["perBot"] as! [[String: Any]]).map { $0["bot"] as! Int } == Array(0..<10))
        let count = { (d: [String: Any]) in ((d["metrics"] as! [String: Any])["bitrate"] as! [String: Any])["histogram"] as! [String: Any] }
        #expect(count(m)["count"] as? Int == 10)
        recv.waitUntilExit()
        let rx = try JSONSerialization.jsonObject(with: recvOut.fileHandleForReading.readDataToEndOfFile()) as! [String: Any]
        let publishers = rx["publishers"] as! [[String: Any]]
        #expect(publishers.count == 10)
        #expect(publishers.allSatisfy { ($0["framesReceived"] as? Int ?? 0) > 200 })
        // --decode-publishers 1: the first publisher's video is VP8-decoded, the others' reassembled only.
        let videos = (rx["streams"] as! [[String: Any]]).filter { $0["kind"] as? String == "video" }
        #expect(videos.count == 20)
        #expect(videos.filter { ($0["framesDecoded"] as? Int ?? 0) > 0 }.count == 2, "\(videos.map { $0["framesDecoded"] ?? "-" })")
    }

    @Test func roomsHaveTheirOwnReceiversAndKeys() throws {
        try buildMedia()
        let r = try bin.run(["load", "--media", Self.media, "--bots", "9", "--rooms", "3", "--duration", "4s", "--json"])
        #expect(r.code == 0, "\(r.err)")
        let doc = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as! [String: Any]
        #expect(try schema.validateDocument(doc) == [])
        let rooms = doc["rooms"] as! [[String: Any]]
        #expect(rooms.count == 3 && rooms.allSatisfy { $0["bots"] as? Int == 3 && $0["withFeedback"] as? Int == 3 })
        #expect(Set(rooms.map { $0["destination"] as! String }).count == 3)
        for b in doc["perBot"] as! [[String: Any]] {
            #expect(b["room"] as? Int == (b["bot"] as! Int) % 3)
            #expect((b["framesReceived"] as? Int ?? 0) > 100)
        }
        #expect(
            try bin.run(["load", "--to", "127.0.0.1:9", "--key", "WbTBosdVUZqEb6Htqhn+m3z7wUh4RelR/rCp7rY2", "--rooms", "2"]).code == 64)
    }

    /// `--encode`: one live encoder shared by every bot; each bot starts on a key frame.
    @Test func liveSharedEncoderFeedsEveryBot() throws {
        let r = try bin.run(["load", "--encode", "--bots", "6", "--duration", "5s", "--ramp", "0s", "--json"])
        #expect(r.code == 0, "\(r.err)")
        let doc = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as! [String: Any]
        for b in doc["perBot"] as! [[String: Any]] {
            #expect((b["framesReceived"] as? Int ?? 0) > 300, "bot \(b["bot"]!): \(b["framesReceived"]!)")
            #expect((b["keyFramesSent"] as? Int ?? 0) >= 2) // one per layer at least, to start
        }
        #expect(((doc["cost"] as? [String: Any])?["encoderCPUPercent"] as? Double ?? 0) > 0)
        #expect(try bin.run(["load", "--encode", "--media", "x"]).code == 64)
    }

    @Test func usageErrorsAndMissingMedia() throws {
        #expect(try bin.run(["load", "--bots", "0"]).code == 64)
        #expect(try bin.run(["load", "--require", "jitter<1ms"]).code == 64)
        #expect(try bin.run(["report", "merge"]).code == 64)
        let missing = try bin.run(["load", "--media", "/nonexistent", "--bots", "1"])
        #expect(missing.code == 2 && missing.err.contains("pubbot media build"))
    }
}

extension LoadTests {
    /// On a terminal (a pty from util-linux `script`) the live line shows and is rewritten in
    /// place each second with the fleet's figures; off a terminal nothing extra is printed
    /// unless `--progress`, which logs the same line once a second.
    @Test func liveLineOnATerminalOrWithProgress() throws {
        try buildMedia()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            print("skipped: no /usr/bin/script (util-linux) to give load a terminal")
            return
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        let command = "'\(BinaryTests.binary.path)' load --media '\(Self.media)' --bots 4 --duration 4s"
        p.arguments = ["-qec", command, "/dev/null"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let tty = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(tty)")
        let lines = tty.split(separator: "\r").filter { $0.hasPrefix("\u{1B}[2Kload ") }
        #expect(lines.contains { $0.contains("connected 4") && $0.contains("fleet ") && $0.contains("loss p95") }, "\(tty)")
        let quiet = try bin.run(["load", "--media", Self.media, "--bots", "2", "--duration", "3s"])
        #expect(quiet.code == 0 && !quiet.err.contains("connected"), "\(quiet.err)")
        let logged = try bin.run(["load", "--media", Self.media, "--bots", "2", "--duration", "3s", "--progress"])
        let logLines = logged.err.split(separator: "\n").filter { $0.hasPrefix("load ") && $0.contains("connected 2") }
        #expect(!logLines.isEmpty, "\(logged.err)")
    }

    /// Run outside the checkout with no loops anywhere, `load` builds them once into the user's
    /// cache (saying so) and finds them there the next time.
    @Test func loadFindsOrBuildsItsMediaWhereverItRuns() throws {
        let dir = NSTemporaryDirectory() + "pubbot-anywhere-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: BinaryTests.binary.path, toPath: dir + "/bin/pubbot")
        func load() throws -> (Int32, String) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: dir + "/bin/pubbot")
            p.arguments = ["load", "--bots", "1", "--duration", "2s", "--json"]
            p.currentDirectoryURL = URL(fileURLWithPath: dir)
            p.environment = ["XDG_CACHE_HOME": dir + "/cache", "PATH": "/usr/bin:/bin"]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = Pipe()
            try p.run()
            let e = err.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: e, as: UTF8.self))
        }
        let (first, err1) = try load()
        #expect(first == 0, "\(err1)")
        #expect(err1.contains("building them once into \(dir)/cache/pubbot/replay"), "\(err1)")
        #expect(FileManager.default.fileExists(atPath: dir + "/cache/pubbot/replay/manifest.txt"))
        let (second, err2) = try load()
        #expect(second == 0)
        #expect(err2.contains("media: replay loops from \(dir)/cache/pubbot/replay") && !err2.contains("building"), "\(err2)")
    }
}
