import Foundation
import Testing
import PublisherEngine
import ReceiverEngine
import Transport
import RTPCore
import MediaCodecs

/// Hostile traffic at the publisher's port while media runs (issue #8): garbage, truncated,
/// oversized, wrongly-keyed and replayed packets, and absurd but properly protected RTCP —
/// NACK storms, length fields past the end, transport-cc claiming 65 535 packets, REMB of 0 and
/// of 2⁶³. Nothing crashes, media keeps flowing, refused packets are counted, RTX stays capped.
@Suite(.serialized) struct PublisherHostileTrafficTests {
    @Test func floodedPublisherKeepsPublishing() throws {
        let key = SRTPKey.random(suite: .aesCm)
        let r = try ReceiverEngine(config: ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0), key: key))
        var c = PublisherConfig(destination: r.localAddress, layers: VideoLayerConfig.ladder(top: 640, 360, layers: 2), key: key)
        c.durationMicros = 6_000_000
        let p = try Publisher(config: c)
        r.start()
        p.start()
        defer { p.stop(); p.wait(); r.stop(); r.wait() }
        var attacker = try HostileSender(to: try SocketAddress(host: "127.0.0.1", port: p.localAddress.port), key: key)
        Thread.sleep(forTimeInterval: 1.0) // media running, feedback flowing
        let videoSSRCs = p.plan.streams.filter { $0.kind == .video }.map(\.ssrc)
        let before = p.snapshot()
        var junk = 0
        for round in 0..<20 {
            junk += attacker.flood(round: round, videoSSRCs: videoSSRCs)
            Thread.sleep(forTimeInterval: 0.1)
        }
        Thread.sleep(forTimeInterval: 1.0)
        let mid = p.snapshot()
        Thread.sleep(forTimeInterval: 1.0)
        let after = p.snapshot()
        // Still publishing: every stream sent packets in the last second, and the receiver decodes.
        for (a, b) in zip(mid.streams, after.streams) { #expect(b.packetsSent > a.packetsSent, "stream \(a.ssrc) stopped") }
        // Every junk datagram was refused and counted (RTCP that authenticates is not junk).
        #expect(after.network.rtcpRejected - before.network.rtcpRejected >= junk - 5)
        // The NACK storm asked for 12 000 retransmissions; the RTX budget (30 % of the estimate)
        // and the once-per-RTT rule keep what was resent small.
        let rtx = after.network.retransmissionsSent - before.network.retransmissionsSent
        let media = after.streams.reduce(0) { $0 + $1.packetsSent } - before.streams.reduce(0) { $0 + $1.packetsSent }
        #expect(rtx < media / 2, "\(rtx) RTX for \(media) media packets")
        let rs = r.snapshot()
        #expect(rs.streams.filter { $0.kind == .video }.allSatisfy { $0.framesDecoded > 60 })
        #expect(
            after.network.estimate.map { $0.bitrate > 100_000 && $0.bitrate < 100_000_000 } ?? false,
            "\(String(describing: after.network.estimate))")
    }
}

/// What `floodedPublisherKeepsPublishing` throws at a publisher's port.
struct HostileSender {
    let tx: UDPSocket
    let target: SocketAddress
    let spoof: SRTPSession
    let wrongKey: SRTPSession
    var rng = SystemRandomNumberGenerator()
    let attacker: UInt32 = 0xDEAD_BEEF

    init(to target: SocketAddress, key: SRTPKey) throws {
        self.target = target
        tx = try UDPSocket(for: target)
        spoof = try SRTPSession(key: key, direction: .outbound)
        wrongKey = try SRTPSession(key: .random(suite: .aesCm), direction: .outbound)
    }

    func send(_ b: [UInt8]) { _ = try? b.withUnsafeBytes { try tx.send($0, to: target) } }

    func protect(_ session: SRTPSession, _ plain: [UInt8]) -> [UInt8] {
        var buf = plain + [UInt8](repeating: 0, count: 64)
        let n = (try? buf.withUnsafeMutableBytes { try session.protectRTCP($0.baseAddress!, length: plain.count, capacity: $0.count) }) ?? 0
        return Array(buf[0..<n])
    }

    func rtcp(_ write: (inout ByteWriter) throws(RTPWriteError) -> Void) -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: 1400)
        let n = buf.withUnsafeMutableBytes { raw -> Int in
            var w = ByteWriter(raw)
            do throws(RTPWriteError) { try write(&w) } catch { return 0 }
            return w.count
        }
        return Array(buf[0..<n])
    }

    /// One round; returns how many of its datagrams are junk (to be refused and counted).
    mutating func flood(round: Int, videoSSRCs: [UInt32]) -> Int {
        var junk = 0
        // Not RTP/RTCP, truncated, oversized, RTCP with garbage tags, and the wrong key.
        for _ in 0..<10 {
            send((0..<Int.random(in: 1...60, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }); junk += 1
        }
        send([0x81]); send([0x80, 0xC9, 0x00]); junk += 2
        send([UInt8](repeating: 0x80, count: 3000)); junk += 1
        for _ in 0..<5 { send([0x81, 0xC9, 0x00, 0x07] + (0..<40).map { _ in UInt8.random(in: 0...255, using: &rng) }); junk += 1 }
        let attacker = attacker
        send(protect(wrongKey, rtcp { w throws(RTPWriteError) in try ReceiverReport(ssrc: attacker, reports: []).write(to: &w) }))
        junk += 1
        // Properly protected but absurd: a NACK storm for every video stream…
        for ssrc in videoSSRCs {
            let lost = (0..<300).map { UInt16(truncatingIfNeeded: round * 300 + $0) }
            send(
                protect(
                    spoof,
                    rtcp { w throws(RTPWriteError) in try GenericNACK(senderSSRC: attacker, mediaSSRC: ssrc, lost: lost).write(to: &w) }))
        }
        // …REMB of 0 and of 2⁶³…
        for bitrate in [UInt64(0), UInt64(1) << 63] {
            send(
                protect(
                    spoof,
                    rtcp { w throws(RTPWriteError) in
                        try ReceiverEstimatedMaxBitrate(senderSSRC: attacker, bitrate: bitrate, ssrcs: videoSSRCs).write(to: &w)
                    }))
        }
        // …transport-cc claiming 65 535 packets with no chunks, and a length field past the end.
        var twcc: [UInt8] = [0x8F, 205, 0x00, 0x04] + [0xDE, 0xAD, 0xBE, 0xEF] + [0, 0, 0, 1] + [0x00, 0x10, 0xFF, 0xFF] + [0, 0, 0, 0]
        send(protect(spoof, twcc))
        twcc[3] = 0x40
        send(protect(spoof, twcc))
        return junk
    }
}

/// Faults, as a user meets them, with the built binary (issue #8).
@Suite(.serialized) struct FaultTests {
    let bin = BinaryTests()
    let key = "WbTBosdVUZqEb6Htqhn+m3z7wUh4RelR/rCp7rY2"

    func spawn(_ args: [String], stdout: URL? = nil) throws -> Process {
        let p = Process()
        p.executableURL = BinaryTests.binary
        p.arguments = args
        if let stdout {
            _ = FileManager.default.createFile(atPath: stdout.path, contents: nil); p.standardOutput = try FileHandle(forWritingTo: stdout)
        } else {
            p.standardOutput = FileHandle.nullDevice
        }
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    /// The receiver killed mid-run and restarted: the publisher keeps going, counts the ICMP
    /// port-unreachable answers, reports `critical` while nothing comes back, and is out of
    /// `critical` within 5 s of the receiver's return.
    @Test func receiverKilledAndRestarted() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-fault-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let stats = dir.appendingPathComponent("pub.jsonl"), summary = dir.appendingPathComponent("pub.json")
        // The kernel's port, read back from the receiver; the restarted one takes the same port.
        let (a, port) = try startReceiver(["--key", key, "--duration", "30s"])
        let pub = try spawn(
            [
                "publish", "--to", "127.0.0.1:\(port)", "--key", key, "--duration", "15s", "--layers", "640x360@30:500k,320x180@30:150k",
                "--stats", stats.path, "--stats-interval", "500ms", "--json"
            ], stdout: summary)
        let t0 = Date()
        Thread.sleep(forTimeInterval: 4)
        kill(a.processIdentifier, SIGKILL)
        a.waitUntilExit()
        let killedAt = Date().timeIntervalSince(t0)
        Thread.sleep(forTimeInterval: 4)
        let b = try spawn(["receive", "--listen", "127.0.0.1:\(port)", "--key", key, "--duration", "9s"])
        let backAt = Date().timeIntervalSince(t0)
        pub.waitUntilExit()
        b.waitUntilExit()
        #expect(pub.terminationStatus == 0)
        let lines = try String(contentsOf: stats, encoding: .utf8).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["type"] as? String == "publisherMediaLinkStats" }
        let start = (lines.first?["timestamp"] as? Int64).map(Double.init) ?? 0
        let conditions: [(Double, String)] = lines.compactMap { l in
            guard let ts = l["timestamp"] as? Double ?? (l["timestamp"] as? Int64).map(Double.init),
                let s = (l["stats"] as? [[String: Any]])?.first ?? l["stats"] as? [String: Any],
                let c = (s["transport"] as? [String: Any])?["networkCondition"] as? String
            else { return nil }
            return ((ts - start) / 1000, c)
        }
        #expect(conditions.contains { $0.0 > killedAt + 0.5 && $0.0 < backAt && $0.1 == "critical" }, "\(conditions)")
        let late = conditions.filter { $0.0 > backAt + 5 && $0.0 < 14.5 }
        #expect(!late.isEmpty && late.allSatisfy { $0.1 != "critical" }, "\(conditions)")
        let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: summary)) as? [String: Any]
        let unreachable =
            (doc?["connections"] as? [[String: Any]])?.compactMap { $0["portUnreachable"] as? Int }.reduce(0, +)
            ?? (doc?["portUnreachable"] as? Int) ?? 0
        #expect(unreachable > 0, "\(String(describing: doc))")
    }

    /// SIGTERM / SIGINT: BYE sent, the final summary and stats written, exit 130.
    @Test func signalsEndRunsCleanly() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-sig-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let recvOut = dir.appendingPathComponent("recv.json"), pubOut = dir.appendingPathComponent("pub.json"),
            stats = dir.appendingPathComponent("pub.jsonl")
        _ = FileManager.default.createFile(atPath: recvOut.path, contents: nil)
        let (recv, port) = try startReceiver(["--key", key, "--json"], stdout: try FileHandle(forWritingTo: recvOut))
        let pub = try spawn(
            ["publish", "--to", "127.0.0.1:\(port)", "--key", key, "--layers", "320x180@30:150k", "--stats", stats.path, "--json"],
            stdout: pubOut)
        Thread.sleep(forTimeInterval: 3)
        kill(pub.processIdentifier, SIGTERM)
        pub.waitUntilExit()
        #expect(pub.terminationStatus == 130)
        Thread.sleep(forTimeInterval: 0.5)
        kill(recv.processIdentifier, SIGINT)
        recv.waitUntilExit()
        #expect(recv.terminationStatus == 130)
        let p = try JSONSerialization.jsonObject(with: Data(contentsOf: pubOut)) as? [String: Any]
        #expect(p != nil, "no final publish summary")
        let r = try JSONSerialization.jsonObject(with: Data(contentsOf: recvOut)) as? [String: Any]
        #expect((r?["byes"] as? Int ?? 0) >= 1, "the receiver saw no BYE")
        let statsLines = try String(contentsOf: stats, encoding: .utf8).split(separator: "\n")
        #expect(statsLines.count >= 3)
        // Secrets: the key appears in no output.
        for f in [pubOut, recvOut, stats] { #expect(try !String(contentsOf: f, encoding: .utf8).contains(key), "\(f.lastPathComponent)") }
    }
}
