import Foundation
import Testing
import Platform

/// A network namespace whose one link (a veth to this one) carries only IPv6: ULA addresses
/// (RFC 4193), no IPv4 but its loopback; removed by `remove()`. Root only.
final class IPv6OnlyNamespace {
    let name: String
    /// The namespace's address and ours on the veth.
    let inside: String, outside: String

    static var usable: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") }

    init() throws {
        let id = String(getpid() % 0xffff, radix: 16)
        name = "pb6-\(id)"
        inside = "fd6b:\(id)::2"
        outside = "fd6b:\(id)::1"
        let host = "pb6h\(id)", peer = "pb6n\(id)"
        Self.ip(["netns", "del", name])
        Self.ip(["link", "del", host])
        // nodad: usable at once (no duplicate-address detection wait, RFC 4862 §5.4).
        for args in [
            ["netns", "add", name], ["link", "add", host, "type", "veth", "peer", "name", peer], ["link", "set", peer, "netns", name],
            ["addr", "add", outside + "/64", "dev", host, "nodad"], ["link", "set", host, "up"],
            ["-n", name, "addr", "add", inside + "/64", "dev", peer, "nodad"], ["-n", name, "link", "set", peer, "up"],
            ["-n", name, "link", "set", "lo", "up"]
        ] {
            guard Self.ip(args) == 0 else {
                remove()
                throw WHIPInteropTests.TestFailure("ip \(args.joined(separator: " ")) failed")
            }
        }
    }

    /// `command` run inside the namespace.
    func process(_ command: String, _ arguments: [String]) throws -> PeerProcess {
        try PeerProcess("/usr/sbin/ip", ["netns", "exec", name, command] + arguments)
    }

    func remove() {
        Self.ip(["netns", "del", name])
        Self.ip(["link", "del", "pb6h" + name.dropFirst(4)])
    }

    @discardableResult
    static func ip(_ args: [String]) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }
}

/// IPv6: pubbot's endpoint on `[::1]` and on `[::]` (dual-stack), its publisher and its WHEP
/// subscriber over IPv6 — on loopback, and to peers in a namespace that has no IPv4 at all
/// (pion, judged by its own counts; pubbot's own endpoint listening on `[::]` there).
@Suite(.serialized) struct IPv6InteropTests {
    /// The endpoint on `[::1]`: a publisher over `http://[::1]`, every packet it sent received.
    @Test func publishesOverIPv6Loopback() throws {
        let receiver = try PeerProcess(WHIPInteropTests.binary, ["receive", "--whip-listen", "[::1]:0", "--duration", "30s", "--json"])
        defer { receiver.stop() }
        try #require(receiver.wait(for: "/whip (media", micros: 10_000_000), "\(receiver.text)")
        let url = try #require(
            receiver.text.split(separator: " ").first { $0.hasPrefix("http://[::1]:") }.map(String.init), "\(receiver.text)")
        let r = try runPubbot(
            WHIPInteropTests.binary,
            ["publish", "--whip", url, "--duration", "4s", "--layers", "640x360@30:500k", "--no-congestion-control", "--json"])
        #expect(r.code == 0, "\(r.err)")
        let published = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        kill(receiver.process.processIdentifier, SIGINT)
        receiver.wait(for: "\"whipEndpoint\"", micros: 5_000_000)
        let text = receiver.text
        let summary = try #require(
            text.firstIndex(of: "{").flatMap { try? JSONSerialization.jsonObject(with: Data(text[$0...].utf8)) as? [String: Any] },
            "\(text.suffix(400))")
        let received = summary["streams"] as? [[String: Any]] ?? []
        for s in published["streams"] as? [[String: Any]] ?? [] {
            let ssrc = s["ssrc"] as? Int ?? -1, sent = s["packetsSent"] as? Int ?? 0
            let got = received.first { $0["ssrc"] as? Int == ssrc }?["packetsReceived"] as? Int ?? 0
            #expect(sent > 100 && got == sent, "\(s["kind"] ?? "") \(ssrc): sent \(sent), the endpoint received \(got)")
        }
        #expect(!received.isEmpty)
    }

    /// The endpoint on the wildcards: `[::]` (one dual-stack socket) is published to over IPv4
    /// and IPv6 from this same host (127.0.0.1 and ::1: its loopback candidates, offered last,
    /// are the pairs that answer — a socket bound to 127.0.0.1 cannot reach the interface's
    /// address), and so is `0.0.0.0` over 127.0.0.1.
    @Test func theWildcardEndpointServesThisHostsPublishers() throws {
        for (listen, hosts) in [("[::]:0", ["127.0.0.1", "[::1]"]), ("0.0.0.0:0", ["127.0.0.1"])] {
            let receiver = try PeerProcess(WHIPInteropTests.binary, ["receive", "--whip-listen", listen, "--duration", "30s"])
            defer { receiver.stop() }
            try #require(receiver.wait(for: "/whip (media", micros: 10_000_000), "\(receiver.text)")
            let url = try #require(receiver.text.split(separator: " ").first { $0.hasPrefix("http://") }, "\(receiver.text)")
            let port = try #require(url.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) })
            for host in hosts {
                let r = try runPubbot(
                    WHIPInteropTests.binary,
                    ["publish", "--whip", "http://\(host):\(port)/whip", "--duration", "2s", "--layers", "320x180@30:200k"])
                #expect(r.code == 0 && r.err.contains("connected: ICE"), "\(listen) from \(host): \(r.err)")
            }
        }
    }

    /// `receive --whep http://[::1]…` from pion (its loopback candidates offered): what pion
    /// forwards over IPv6 is decoded, nothing lost, and pion's count of what it wrote is met.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: pionEndpoint), "needs pion"))
    func subscribesOverIPv6Loopback() throws {
        let (pion, port) = try startPion(["-limit", "40", "-forward-rid", "q", "-loopback", "-listen", "[::1]:0"])
        defer { pion.stop() }
        let publisher = try PeerProcess(WHIPInteropTests.binary, ["publish", "--whip", "http://[::1]:\(port)/whip", "--duration", "10s"])
        defer { publisher.stop(grace: 3_000_000) }
        try #require(pion.wait(for: "\"rid\":\"q\"", micros: 8_000_000), "\(pion.text) \(publisher.text)")
        let r = try runPubbot(WHIPInteropTests.binary, ["receive", "--whep", "http://[::1]:\(port)/whep", "--duration", "4s", "--json"])
        #expect(r.code == 0, "\(r.err)")
        try #require(pion.wait(for: "\"event\":\"whep-stats\"", micros: 5_000_000), "no DELETE reached pion: \(pion.text)")
        let written =
            pion.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["event"] as? String == "whep-stats" }?["video"] as? Int ?? 0
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        let video = try #require((summary["streams"] as? [[String: Any]] ?? []).first { $0["kind"] as? String == "video" }, "\(r.out)")
        let got = video["packetsReceived"] as? Int ?? 0
        #expect(written > 50 && got <= written && got * 100 >= written * 97, "pion wrote \(written), pubbot received \(got)")
        #expect(video["packetsLost"] as? Int == 0 && (video["framesDecoded"] as? Int ?? 0) >= 60, "\(video)")
        #expect(r.err.contains("WHEP session http://[::1]:"), "\(r.err)")
    }

    /// A namespace with only IPv6: pion there takes pubbot's simulcast over IPv6 (its counts
    /// equal pubbot's) and `receive --whep` from it decodes what pion forwards; then pubbot's own
    /// endpoint there on `[::]` offers only the namespace's IPv6 address and a publisher
    /// connects to it.
    @Test(
        .enabled(if: IPv6OnlyNamespace.usable && FileManager.default.isExecutableFile(atPath: pionEndpoint), "needs root, ip and pion"))
    func anIPv6OnlyNetwork() throws {
        let ns = try IPv6OnlyNamespace()
        defer { ns.remove() }
        let pion = try ns.process(pionEndpoint, ["-limit", "60", "-forward-rid", "q", "-listen", "[\(ns.inside)]:0"])
        defer { pion.stop() }
        try #require(pion.wait(for: "LISTENING ", micros: 10_000_000), "\(pion.text)")
        let port = try #require(pion.text.split(separator: "\n").first { $0.hasPrefix("LISTENING ") }.flatMap { Int($0.dropFirst(10)) })
        let base = "http://[\(ns.inside)]:\(port)"
        // The publisher runs beside the subscription, its report kept whole (stdout apart).
        let published = Locked<(code: Int32, out: String, err: String, seconds: Double)?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            published.value = try? runPubbot(WHIPInteropTests.binary, ["publish", "--whip", base + "/whip", "--duration", "9s", "--json"])
            done.signal()
        }
        try #require(pion.wait(for: "\"rid\":\"q\"", micros: 8_000_000), "\(pion.text)")
        let sub = try runPubbot(WHIPInteropTests.binary, ["receive", "--whep", base + "/whep", "--duration", "4s", "--json"])
        #expect(sub.code == 0, "\(sub.err)")
        let subscribed = try #require(try JSONSerialization.jsonObject(with: Data(sub.out.utf8)) as? [String: Any], "\(sub.out)")
        let video = (subscribed["streams"] as? [[String: Any]] ?? []).first { $0["kind"] as? String == "video" }
        #expect((video?["framesDecoded"] as? Int ?? 0) >= 60 && video?["packetsLost"] as? Int == 0, "\(video ?? [:])")
        #expect(sub.err.contains("server [fd6b:"), "the subscription's path: \(sub.err)")
        #expect(done.wait(timeout: .now() + 15) == .success)
        let p = try #require(published.value, "the publisher did not run")
        #expect(p.code == 0, "\(p.err)")
        #expect(pion.wait(for: "\"event\":\"stats\"", micros: 5_000_000), "\(pion.text)")
        let lines = pion.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let tracks = try #require(lines.first { $0["event"] as? String == "stats" }?["tracks"] as? [[String: Any]], "\(pion.text)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(p.out.utf8)) as? [String: Any], "\(p.out)")
        let streams = report["streams"] as? [[String: Any]] ?? []
        #expect(tracks.count == 4, "\(tracks)")
        for t in tracks {
            let ssrc = t["ssrc"] as? Int ?? -1, packets = t["packets"] as? Int ?? 0
            let sent = streams.first { $0["ssrc"] as? Int == ssrc }?["packetsSent"] as? Int ?? 0
            // pion reads a stream's first packet to find its track before OnTrack: one may not be counted.
            #expect(
                sent > 100 && packets >= sent - 1 && packets <= sent, "\(t["kind"] ?? "") \(t["rid"] ?? ""): pion \(packets), sent \(sent)")
        }

        // pubbot's endpoint on [::] in the namespace: its answer offers the namespace's address.
        let endpoint = try ns.process(WHIPInteropTests.binary, ["receive", "--whip-listen", "[::]:0", "--duration", "20s"])
        defer { endpoint.stop() }
        try #require(endpoint.wait(for: "/whip (media", micros: 10_000_000), "\(endpoint.text)")
        let listened = try #require(endpoint.text.split(separator: " ").first { $0.hasPrefix("http://[::]:") }, "\(endpoint.text)")
        let endpointPort = try #require(listened.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) })
        let r = try runPubbot(
            WHIPInteropTests.binary,
            ["publish", "--whip", "http://[\(ns.inside)]:\(endpointPort)/whip", "--duration", "3s", "--layers", "320x180@30:200k", "--json"]
        )
        #expect(r.code == 0, "\(r.err)")
        let pair = r.err.split(separator: "\n").first { $0.hasPrefix("connected:") } ?? ""
        #expect(pair.contains("→ host [fd6b:"), "\(pair)")
    }

    /// `--no-ipv6`: a name with both an AAAA and an A record (the namespace's own hosts file,
    /// which `ip netns exec` mounts over /etc/hosts) is reached over IPv6 by default (RFC 6724
    /// ranks ::1 first) and over IPv4 with it — the media's host candidate and libcurl's
    /// connection both: an endpoint listening on ::1 alone is not reached at all. An IPv6 literal
    /// with `--no-ipv6` is a usage error, and so is `--no-ipv6` where nothing connects out.
    @Test(.enabled(if: IPv6OnlyNamespace.usable, "needs root and ip"))
    func noIPv6KeepsSignallingAndMediaOnIPv4() throws {
        let ns = try IPv6OnlyNamespace()
        let etc = "/etc/netns/\(ns.name)"
        defer {
            ns.remove()
            try? FileManager.default.removeItem(atPath: etc)
        }
        try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
        try "::1 dual.test\n127.0.0.1 dual.test\n".write(toFile: etc + "/hosts", atomically: true, encoding: .utf8)
        func inside(_ args: [String]) throws -> (code: Int32, out: String, err: String, seconds: Double) {
            try runPubbot("/usr/sbin/ip", ["netns", "exec", ns.name, WHIPInteropTests.binary] + args)
        }
        for (listen, flags, expected) in [
            ("[::]:0", [String](), "host [::1]:"), ("[::]:0", ["--no-ipv6"], "host 127.0.0.1:"), ("[::1]:0", ["--no-ipv6"], "")
        ] {
            let endpoint = try ns.process(WHIPInteropTests.binary, ["receive", "--whip-listen", listen, "--duration", "20s"])
            defer { endpoint.stop() }
            try #require(endpoint.wait(for: "/whip (media", micros: 10_000_000), "\(endpoint.text)")
            let url = try #require(endpoint.text.split(separator: " ").first { $0.hasPrefix("http://") }, "\(endpoint.text)")
            let port = try #require(url.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) })
            let r = try inside(
                ["publish", "--whip", "http://dual.test:\(port)/whip", "--duration", "2s", "--layers", "320x180@30:200k"] + flags)
            let connected = r.err.split(separator: "\n").first { $0.hasPrefix("connected:") } ?? ""
            if expected.isEmpty {
                // libcurl tried IPv4 only: the endpoint on ::1 alone is refused, one clear line.
                let errors = r.err.split(separator: "\n").filter { $0.hasPrefix("Error:") }
                #expect(
                    r.code == 2 && errors.count == 1 && errors[0].contains("over IPv4 (--no-ipv6)") && connected.isEmpty,
                    "\(listen) \(flags): \(r.err)")
                #expect(!endpoint.text.contains("publisher"), "\(endpoint.text)")
            } else {
                #expect(r.code == 0 && connected.contains("(\(expected)"), "\(listen) \(flags): \(r.err)")
            }
        }
        let literal = try runPubbot(WHIPInteropTests.binary, ["publish", "--whip", "http://[::1]:9/whip", "--no-ipv6"])
        #expect(literal.code == 64 && literal.err.contains("--no-ipv6 with an IPv6 endpoint"), "\(literal.err)")
        let listening = try runPubbot(WHIPInteropTests.binary, ["receive", "--whip-listen", "0.0.0.0:0", "--no-ipv6"])
        #expect(listening.code == 64 && listening.err.contains("--no-ipv6 needs --whep URL"), "\(listening.err)")
    }
}
