import Foundation
import Testing
import ICE
import RTPCore
import Transport
import Platform
import Crypto
import TestSupport

/// pubbot's TURN client against coturn 4.6 (`turnserver`, long-term credentials) on 127.0.0.1
/// over real UDP: an allocation after the 401 realm/nonce exchange, a peer reached through the
/// relay and answering back — first by Send/Data indications, then over a bound channel — and
/// wrong credentials refused with one message.
@Suite(.serialized) struct TURNInteropTests {
    struct Rig {
        let server: PeerProcess
        let port: Int
        /// coturn on `host` (listening and relaying), user bot:s3cret.
        init(extra: [String] = [], tls: Bool = false, host: String = "127.0.0.1") throws {
            port = try UDPSocket(bind: SocketAddress(host: host, port: 0)).localAddress.port // a free port, released
            server = try PeerProcess(
                "/usr/bin/turnserver",
                ["-n", "-L", host, "-E", host, "-p", "\(port)", "--no-dtls"] + (tls ? [] : ["--no-tcp", "--no-tls"]) + [
                    "--no-cli", "--log-file=stdout", "--lt-cred-mech", "--user=bot:s3cret", "--realm=pubbot.test",
                    "--allow-loopback-peers", "--min-port=49152", "--max-port=65535"
                ] + extra)
            #expect(server.wait(for: "IO method", micros: 5_000_000), "turnserver did not start: \(server.text.suffix(400))")
        }
    }

    /// Drives the client on `socket` until `done` or `micros`; peer datagrams through the relay
    /// are handed to `received`.
    func drive(
        _ c: TURNClient, _ socket: UDPSocket, micros: Int64, received: (STUNAddress, [UInt8]) -> Void = { _, _ in }, done: () -> Bool
    ) throws {
        let batch = PacketBatch(capacity: 8)
        let server = try SocketAddress(host: c.server.ipText, port: Int(c.server.port))
        let deadline = Clock.monotonicMicros() + micros
        while !done() && Clock.monotonicMicros() < deadline {
            _ = c.step(now: Clock.monotonicMicros())
            while let b = c.pollTransmit() { try b.bytes.withUnsafeBytes { try socket.send($0, to: server) } }
            var ready = [UInt8](repeating: 0, count: 1)
            if waitReadable([socket.fd], ready: &ready, timeoutMicros: 10_000) > 0 && ready[0] != 0 {
                var n = 0
                do throws(SocketError) { n = try socket.receive(into: batch) } catch { if !error.isConnectionRefused { throw error } }
                for i in 0..<n {
                    let bytes = Array(UnsafeRawBufferPointer(start: batch.slot(i).baseAddress!, count: Int(batch.lengths[i])))
                    if let (peer, data) = c.handle(bytes, now: Clock.monotonicMicros()) { received(peer, data) }
                }
            }
        }
    }

    func client(_ socket: UDPSocket, port: Int, password: String) -> TURNClient {
        TURNClient(
            server: STUNAddress(ip: [127, 0, 0, 1], port: UInt16(port)),
            base: STUNAddress(ip: [127, 0, 0, 1], port: UInt16(socket.localAddress.port)),
            username: "bot", password: password, seed: 9, hmacSHA1: { Crypto.hmacSHA1(key: $0, data: $1) },
            longTermKey: { Crypto.stunLongTermKey(username: $0, realm: $1, password: $2) })
    }

    @Test func relaysBothWaysThroughCoturn() throws {
        let rig = try Rig()
        defer { rig.server.stop(grace: 0) }
        let socket = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let c = client(socket, port: rig.port, password: "s3cret")
        c.start(now: Clock.monotonicMicros())
        try drive(c, socket, micros: 5_000_000) { c.state != .allocating }
        #expect(c.state == .allocated, "\(String(describing: c.pollEvent())) \(rig.server.text.suffix(300))")
        let relay = try #require(c.relay)
        #expect(relay.ip == [127, 0, 0, 1] && relay.port >= 49152 && c.lifetime > 0)
        #expect(c.mapped == c.base)

        let echoed = try exchange(c, socket, port: rig.port, rounds: 2)
        #expect(echoed == ["echo: via a Send indication", "echo: via ChannelData"], "\(echoed)")
    }

    /// A peer on loopback: it sees the relay's address, and its answer comes back out of
    /// handle(). The first datagram goes before the channel is bound (a Send indication), the
    /// next once it is (ChannelData).
    func exchange(_ c: TURNClient, _ socket: UDPSocket, port: Int, rounds: Int) throws -> [String] {
        let relay = try #require(c.relay)
        let peer = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let peerAddress = STUNAddress(ip: [127, 0, 0, 1], port: UInt16(peer.localAddress.port))
        let server = try SocketAddress(host: "127.0.0.1", port: port)
        let pb = PacketBatch(capacity: 4)
        var echoed: [String] = []
        for round in 0..<rounds {
            let text = round == 0 ? "via a Send indication" : "via ChannelData"
            if round == 1 {
                try drive(c, socket, micros: 2_000_000) { c.channel(for: peerAddress) != nil }
                #expect(c.channel(for: peerAddress) != nil, "the channel was never bound")
            }
            let wrapped = try #require(c.send(Array(text.utf8), to: peerAddress))
            // send() asked for the permission first: it leaves before the data.
            while let b = c.pollTransmit() { try b.bytes.withUnsafeBytes { try socket.send($0, to: server) } }
            #expect(round == 0 ? wrapped[0] < 4 : (wrapped[0] & 0xC0) == 0x40, "round \(round): first byte \(wrapped[0])")
            try wrapped.withUnsafeBytes { try socket.send($0, to: server) }
            var got: (String, SocketAddress?)?
            let end = Clock.monotonicMicros() + 2_000_000
            while got == nil && Clock.monotonicMicros() < end {
                var ready = [UInt8](repeating: 0, count: 1)
                if waitReadable([peer.fd], ready: &ready, timeoutMicros: 10_000) > 0, try peer.receive(into: pb) > 0 {
                    got = (
                        String(decoding: UnsafeRawBufferPointer(start: pb.slot(0).baseAddress!, count: Int(pb.lengths[0])), as: UTF8.self),
                        pb.source(0)
                    )
                }
                _ = c.step(now: Clock.monotonicMicros())
                while let b = c.pollTransmit() { try b.bytes.withUnsafeBytes { try socket.send($0, to: server) } }
            }
            let (arrived, from) = try #require(got, "the peer got nothing (\(text))")
            #expect(arrived == text && from?.port == Int(relay.port), "\(arrived) from \(String(describing: from))")
            try Array("echo: \(text)".utf8).withUnsafeBytes {
                try peer.send($0, to: SocketAddress(host: relay.ipText, port: Int(relay.port)))
            }
            try drive(
                c, socket, micros: 2_000_000,
                received: { p, d in if p == peerAddress { echoed.append(String(decoding: d, as: UTF8.self)) } }
            ) {
                echoed.count > round
            }
        }
        return echoed
    }

    @Test func wrongCredentialsAreRefused() throws {
        let rig = try Rig()
        defer { rig.server.stop(grace: 0) }
        let socket = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let c = client(socket, port: rig.port, password: "wrong")
        let start = Clock.monotonicMicros()
        c.start(now: start)
        try drive(c, socket, micros: 8_000_000) { c.state != .allocating }
        #expect(c.state == .failed && Clock.monotonicMicros() - start < 3_000_000)
        var reason: TURNFailure?
        while let e = c.pollEvent() { if case let .failed(r) = e { reason = r } }
        #expect(
            reason.map { if case let .refused(_, code, _) = $0 { [401, 441].contains(code) } else { false } } == true,
            "\(String(describing: reason))")
        #expect(reason?.description.contains("credentials") == true)
    }

    /// coturn limits a user to one allocation (`--user-quota=1`): the second is refused with the
    /// quota named (486), the first still holds.
    @Test func quotaIsSaidByName() throws {
        let rig = try Rig(extra: ["--user-quota=1"])
        defer { rig.server.stop(grace: 0) }
        let s1 = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0)),
            s2 = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let first = client(s1, port: rig.port, password: "s3cret"), second = client(s2, port: rig.port, password: "s3cret")
        first.start(now: Clock.monotonicMicros())
        try drive(first, s1, micros: 5_000_000) { first.state != .allocating }
        #expect(first.state == .allocated)
        second.start(now: Clock.monotonicMicros())
        try drive(second, s2, micros: 7_000_000) { second.state != .allocating }
        var reason: TURNFailure?
        while let e = second.pollEvent() { if case let .failed(r) = e { reason = r } }
        #expect(
            second.state == .failed && reason?.description.contains("quota") == true,
            "\(second.state): \(String(describing: reason))")
        #expect(first.state == .allocated)
    }

    /// An allocation outlives its lifetime: refreshed before it ends (coturn set to 20 s here).
    @Test func refreshesBeforeTheLifetimeEnds() throws {
        let rig = try Rig(extra: ["--max-allocate-lifetime=20"])
        defer { rig.server.stop(grace: 0) }
        let socket = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let c = client(socket, port: rig.port, password: "s3cret")
        c.start(now: Clock.monotonicMicros())
        try drive(c, socket, micros: 5_000_000) { c.state != .allocating }
        #expect(c.state == .allocated && c.lifetime == 20, "lifetime \(c.lifetime)")
        try drive(c, socket, micros: 24_000_000) { c.state != .allocated }
        #expect(
            c.state == .allocated && c.refreshes >= 1,
            "lost the allocation (\(c.refreshes) refreshes): \(String(describing: c.pollEvent()))")
        // Past its first lifetime, the relay still carries traffic.
        #expect(try exchange(c, socket, port: rig.port, rounds: 1) == ["echo: via a Send indication"])
    }

    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("pubbot").path
    }

    func pubbot(_ args: [String], env: [String: String] = [:]) throws -> (code: Int32, out: String, err: String, seconds: Double) {
        try runPubbot(Self.binary, args, env: env)
    }

    /// `publish --whip --ice-policy relay` through coturn into `receive --whip-listen`: the only
    /// path is the relay, the receiver sees the publisher at coturn's relayed address, and every
    /// layer is decoded.
    @Test func relayOnlyPublishThroughCoturn() throws {
        let rig = try Rig()
        defer { rig.server.stop(grace: 0) }
        let receiver = try PeerProcess(Self.binary, ["receive", "--whip-listen", "127.0.0.1:0", "--duration", "30s", "--json"])
        defer { receiver.stop() }
        try #require(receiver.wait(for: "/whip (media", micros: 10_000_000), "\(receiver.text)")
        let url = try #require(receiver.text.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        let r = try pubbot(
            [
                "publish", "--whip", url, "--ice-server", "turn:127.0.0.1:\(rig.port)?transport=udp", "--turn-username", "bot",
                "--ice-policy", "relay", "--duration", "5s", "--json"
            ], env: ["PUBBOT_TURN_CREDENTIAL": "s3cret"])
        #expect(r.code == 0, "\(r.err)")
        #expect(!(r.out + r.err).contains("s3cret"))
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let pair = try #require((summary["whip"] as? [String: Any])?["selectedCandidatePair"] as? [String: Any])
        #expect(pair["localCandidateType"] as? String == "relay", "\(pair)")
        kill(receiver.process.processIdentifier, SIGINT)
        receiver.wait(for: "\"byes\"", micros: 5_000_000)
        let text = receiver.text
        let recv = try #require(
            text.firstIndex(of: "{").flatMap { try? JSONSerialization.jsonObject(with: Data(text[$0...].utf8)) as? [String: Any] },
            "\(text)")
        let publishers = try #require(recv["publishers"] as? [[String: Any]])
        #expect(
            publishers.count == 1 && (publishers.first?["address"] as? String) == (pair["localAddress"] as? String),
            "\(publishers) vs \(pair)")
        let received = try #require(recv["streams"] as? [[String: Any]])
        for s in try #require(summary["streams"] as? [[String: Any]]) {
            let sent = s["framesSent"] as? Int ?? 0
            let ssrc = s["ssrc"] as? Int ?? -1
            let decoded = received.first { ($0["ssrc"] as? Int) == ssrc }?["framesDecoded"] as? Int ?? 0
            let ok = sent > 50 && decoded * 100 >= sent * 95
            #expect(ok, "\(s["rid"] as? String ?? "audio"): sent \(sent), decoded \(decoded)")
        }
    }

    /// Wrong TURN credentials and an unreachable TURN server: one message each, exit 2, in
    /// bounded time, the credential nowhere in the output.
    @Test func turnFailuresAreOneClearError() throws {
        let rig = try Rig()
        defer { rig.server.stop(grace: 0) }
        let receiver = try PeerProcess(Self.binary, ["receive", "--whip-listen", "127.0.0.1:0", "--duration", "30s"])
        defer { receiver.stop() }
        try #require(receiver.wait(for: "/whip (media", micros: 10_000_000), "\(receiver.text)")
        let url = try #require(receiver.text.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        let wrong = try pubbot([
            "publish", "--whip", url, "--ice-server", "turn:127.0.0.1:\(rig.port)", "--turn-username", "bot",
            "--turn-credential", "not-the-secret", "--ice-policy", "relay", "--duration", "5s"
        ])
        #expect(wrong.code == 2 && wrong.seconds < 5 && wrong.err.contains("credentials"), "\(wrong.code) \(wrong.seconds) s: \(wrong.err)")
        #expect(!(wrong.out + wrong.err).contains("not-the-secret"))
        let dead = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0)).localAddress.port // nothing listens there
        let silent = try pubbot([
            "publish", "--whip", url, "--ice-server", "turn:127.0.0.1:\(dead)", "--turn-username", "bot",
            "--turn-credential", "x", "--ice-policy", "relay", "--duration", "5s"
        ])
        #expect(
            silent.code == 2 && silent.seconds < 10 && silent.err.contains("does not answer"),
            "\(silent.code) \(silent.seconds) s: \(silent.err)")
    }

    /// The connectivity pre-flight where only the relay gets through (Tests/Peers/turn_required.sh:
    /// the publisher in its own namespace, nftables dropping its UDP to the server's media port —
    /// or all its UDP, leaving TURN over TCP): host UDP unreachable with ICE's reason, the relay
    /// reachable with its time and RTT, `turnRequired`, and the verdict measured over the relay.
    @Test(.enabled(if: getuid() == 0, "network namespaces need root"), arguments: ["media", "udp"])
    func onlyTheRelayGetsThrough(block: String) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "Peers/turn_required.sh"
        ).path
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-turn-required-\(getpid()).json").path
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: log) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [script, Self.binary, String(20 + (Int(getpid()) + (block == "udp" ? 100 : 0)) % 200)]
        p.environment = ProcessInfo.processInfo.environment.merging(["PUBBOT_TURN_CREDENTIAL": "s3cret", "BLOCK": block]) { $1 }
        let out = try #require(FileHandle(forWritingAtPath: log))
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let deadline = Clock.monotonicMicros() + 90_000_000
        while p.isRunning && Clock.monotonicMicros() < deadline { Clock.sleep(micros: 50_000) }
        try? out.close()
        #expect(!p.isRunning && p.terminationStatus == 0)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        let d = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
        let paths = try #require(d["connectivity"] as? [[String: Any]])
        let host = paths.first { $0["path"] as? String == "host-udp" }
        #expect(host?["reachable"] as? Bool == false && (host?["detail"] as? String ?? "").contains("ICE"), "\(String(describing: host))")
        // All UDP dropped: the relay over UDP cannot be reached either; over TCP it can.
        let relayUDP = paths.first { $0["path"] as? String == "relay-udp" }
        if block == "udp" {
            #expect(
                relayUDP?["reachable"] as? Bool == false && (relayUDP?["detail"] as? String ?? "").contains("does not answer"),
                "\(String(describing: relayUDP))")
        }
        let relay = paths.first { $0["path"] as? String == (block == "udp" ? "relay-tcp" : "relay-udp") }
        #expect(
            relay?["reachable"] as? Bool == true && relay?["connectMs"] is Double && relay?["roundTripTimeMs"] is Double,
            "\(String(describing: relay))")
        #expect(d["turnRequired"] as? Bool == true && (d["path"] as? String)?.hasPrefix("relay") == true, "\(d["path"] ?? "")")
        #expect(d["type"] as? String == "verdict" && (d["estimate"] as? Int ?? 0) > 1_000_000)
    }

    /// A server reachable only through the TURN server it announces (RFC 9725 §4.6): the
    /// publisher in its own namespace, its UDP to the endpoint's media port dropped, given no
    /// TURN server; `receive --whip-listen` names coturn in its 201's `Link` header. pubbot
    /// allocates there after the answer, trickles the relayed candidate (204) and publishes over
    /// the relay, and its summary says the relay came from the server. Without the announcement
    /// the same publish never connects (exit 2): the Link is what got it through.
    @Test(.enabled(if: getuid() == 0, "network namespaces need root"))
    func aServerReachableOnlyThroughTheTURNItAnnounces() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "Peers/turn_required.sh"
        ).path
        func run(link: Bool, publish: Bool = true) throws -> (Int32, String, String) {
            let dir = FileManager.default.temporaryDirectory
            let log = dir.appendingPathComponent("pubbot-turn-link-\(getpid())-\(link).json").path
            let err = dir.appendingPathComponent("pubbot-turn-link-\(getpid())-\(link).err").path
            for f in [log, err] { _ = FileManager.default.createFile(atPath: f, contents: nil) }
            defer { for f in [log, err] { try? FileManager.default.removeItem(atPath: f) } }
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/bash")
            p.arguments = [script, Self.binary, String(20 + (Int(getpid()) + (link ? 40 : 60) + (publish ? 0 : 80)) % 200)]
            p.environment = ProcessInfo.processInfo.environment.merging(["PUBLISH": publish ? "1" : "0", "LINK": link ? "1" : "0"]) {
                $1
            }
            let out = try #require(FileHandle(forWritingAtPath: log)), e = try #require(FileHandle(forWritingAtPath: err))
            p.standardOutput = out
            p.standardError = e
            p.standardInput = FileHandle.nullDevice
            try p.run()
            let deadline = Clock.monotonicMicros() + 90_000_000
            while p.isRunning && Clock.monotonicMicros() < deadline { Clock.sleep(micros: 50_000) }
            try? out.close()
            try? e.close()
            return (
                p.isRunning ? -1 : p.terminationStatus, try String(contentsOfFile: log, encoding: .utf8),
                try String(contentsOfFile: err, encoding: .utf8)
            )
        }
        let (code, text, err) = try run(link: true)
        #expect(code == 0, "\(err)")
        let d = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)\n\(err)")
        let whip = try #require(d["whip"] as? [String: Any])
        let negotiated = try #require(whip["negotiated"] as? [String: String])
        #expect(negotiated["relay"]?.contains("announced by the server") == true, "\(negotiated)")
        #expect(negotiated["serverICEServers"]?.contains("relay gathered") == true, "\(negotiated)")
        #expect(negotiated["trickle"]?.hasPrefix("relay trickled in one PATCH (HTTP 204)") == true, "\(negotiated)")
        let pair = try #require(whip["selectedCandidatePair"] as? [String: Any])
        #expect(pair["localCandidateType"] as? String == "relay", "\(pair)")
        let streams = try #require(d["streams"] as? [[String: Any]])
        #expect(streams.allSatisfy { ($0["packetsSent"] as? Int ?? 0) > 50 }, "\(streams)")
        // pubbot's own output (bash's job messages about the script's own processes aside).
        let own = err.split(separator: "\n").filter { !$0.contains("turn_required.sh: line") }.joined(separator: "\n")
        #expect(!text.contains("s3cret") && !own.contains("s3cret"), "the announced credential was printed")
        // The control: no announcement, the same firewall — nothing connects.
        let (control, _, controlErr) = try run(link: false)
        #expect(control == 2 && controlErr.contains("never connected"), "\(control): \(controlErr)")
        // The connectivity pre-flight tries the announced relay as a path of its own and says so;
        // the verdict is measured over it.
        let (pre, preText, preErr) = try run(link: true, publish: false)
        #expect(pre == 0, "\(preErr)")
        let v = try #require(try JSONSerialization.jsonObject(with: Data(preText.utf8)) as? [String: Any], "\(preText)")
        let paths = try #require(v["connectivity"] as? [[String: Any]])
        let relay = paths.first { $0["path"] as? String == "relay-udp" }
        #expect(relay?["reachable"] as? Bool == true && relay?["announcedByServer"] as? Bool == true, "\(paths)")
        #expect(v["turnRequired"] as? Bool == true && (v["path"] as? String)?.hasPrefix("relay") == true, "\(v["path"] ?? "")")
    }

    /// TURN over TLS (`turns:`): coturn with a certificate made here (openssl, P-256, IP SAN
    /// 127.0.0.1). With it as `--turn-ca` the relay works and the summary says TLS; without it
    /// the system store refuses the self-signed certificate: one error with OpenSSL's reason.
    @Test func relayOverTLS() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-turns-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let make = try PeerProcess(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1"
            ])
        let end = Clock.monotonicMicros() + 10_000_000
        while make.process.isRunning && Clock.monotonicMicros() < end { Clock.sleep(micros: 20_000) }
        make.stop()
        try #require(FileManager.default.fileExists(atPath: dir + "/cert.pem"), "openssl made no certificate: \(make.text)")
        let tlsPort = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0)).localAddress.port
        let rig = try Rig(extra: ["--tls-listening-port=\(tlsPort)", "--cert=\(dir)/cert.pem", "--pkey=\(dir)/key.pem"], tls: true)
        defer { rig.server.stop(grace: 0) }
        // coturn logs "IO method" before its server threads open their TCP/TLS listeners (one CI
        // run connected first and was refused): wait until the TLS port takes a connection.
        let listening = Clock.monotonicMicros() + 10_000_000
        var probe = RawClient(port: tlsPort)
        while probe == nil && Clock.monotonicMicros() < listening {
            Clock.sleep(micros: 50_000)
            probe = RawClient(port: tlsPort)
        }
        probe?.close()
        try #require(probe != nil, "coturn's TLS listener did not open: \(rig.server.text.suffix(400))")
        let receiver = try PeerProcess(Self.binary, ["receive", "--whip-listen", "127.0.0.1:0", "--duration", "30s"])
        defer { receiver.stop() }
        try #require(receiver.wait(for: "/whip (media", micros: 10_000_000), "\(receiver.text)")
        let url = try #require(receiver.text.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        let args = [
            "publish", "--whip", url, "--ice-server", "turns:127.0.0.1:\(tlsPort)", "--turn-username", "bot", "--turn-credential", "s3cret",
            "--ice-policy", "relay", "--duration", "3s", "--json"
        ]
        let ok = try pubbot(args + ["--turn-ca", dir + "/cert.pem"])
        #expect(ok.code == 0, "\(ok.err)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(ok.out.utf8)) as? [String: Any], "\(ok.out)")
        let whip = try #require(summary["whip"] as? [String: Any])
        #expect((whip["negotiated"] as? [String: String] ?? [:])["relay", default: ""].contains("over TLS"), "\(whip)")
        #expect((whip["selectedCandidatePair"] as? [String: Any])?["localCandidateType"] as? String == "relay")
        let sent = (summary["streams"] as? [[String: Any]] ?? []).reduce(0) { $0 + ($1["packetsSent"] as? Int ?? 0) }
        #expect(sent > 500, "\(sent) packets")
        let refused = try pubbot(args)
        #expect(refused.code == 2 && refused.err.contains("certificate was refused"), "\(refused.code): \(refused.err)")
    }
}
