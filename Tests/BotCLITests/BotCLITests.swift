import Testing
@testable import BotCLI
import MediaCodecs
import PublisherEngine
import Transport
import RTPCore

@Suite struct ValueParserTests {
    @Test func durations() throws {
        #expect(try ValueParsers.duration("500ms", option: "d") == 500_000)
        #expect(try ValueParsers.duration("15s", option: "d") == 15_000_000)
        #expect(try ValueParsers.duration("2m", option: "d") == 120_000_000)
        #expect(try ValueParsers.duration("1.5", option: "d") == 1_500_000)
        for bad in ["", "s", "-1s", "10x", "nan", "1e300s"] {
            #expect(throws: UsageError.self, "\(bad)") { try ValueParsers.duration(bad, option: "d") }
        }
    }

    @Test func rates() throws {
        #expect(try ValueParsers.bitrate("800kbit", option: "r") == 800_000)
        #expect(try ValueParsers.bitrate("2.5mbit", option: "r") == 2_500_000)
        #expect(try ValueParsers.bitrate("4M", option: "r") == 4_000_000)
        #expect(try ValueParsers.bitrate("2500k", option: "r") == 2_500_000)
        for bad in ["", "k", "0", "-5k", "fast"] {
            #expect(throws: UsageError.self, "\(bad)") { try ValueParsers.bitrate(bad, option: "r") }
        }
    }

    @Test func ladders() throws {
        let l = try ValueParsers.ladder("1280x720@30:2500k,640x360@30:700k,320x180@15:150k", temporalLayers: 2, defaultFps: 30)
        #expect(l.map(\.width) == [320, 640, 1280])
        #expect(l.map(\.fps) == [15, 30, 30])
        #expect(l.map(\.targetBitrate) == [150_000, 700_000, 2_500_000])
        #expect(l.map(\.rid) == ["q", "h", "f"])
        #expect(l.allSatisfy { $0.temporalLayers == 2 })
        let one = try ValueParsers.ladder("1920x1080", temporalLayers: 1, defaultFps: 30)
        #expect(one.count == 1 && one[0].targetBitrate == 4_000_000 && one[0].rid == "0")
        for bad in ["", "1280x", "1281x720", "640x360@13", "640x360:abc", "a,b,c,d,e"] {
            #expect(throws: UsageError.self, "\(bad)") { try ValueParsers.ladder(bad, temporalLayers: 1, defaultFps: 30) }
        }
    }

    /// Routed (one --to): a lower frame rate lowers every default rate in proportion; relayed
    /// (several --to): the 30 fps rates stay. Given rates are kept either way.
    @Test func frameRateScalesRoutedLaddersOnly() throws {
        let o = try ParsedOptions.parse(["--fps", "15", "--to", "a:1"], spec: PublishCommand.spec, command: "publish")
        #expect(try CommonOptions.layers(o).map(\.targetBitrate) == [75_000, 250_000, 1_250_000])
        #expect(try CommonOptions.layers(o, relayed: true).map(\.targetBitrate) == [150_000, 500_000, 2_500_000])
        let given = try ParsedOptions.parse(
            ["--fps", "7", "--layers", "640x360:400k,320x180"], spec: PublishCommand.spec, command: "publish")
        #expect(try CommonOptions.layers(given).map(\.targetBitrate) == [35_000, 400_000])
        var c = PublisherConfig(destination: try SocketAddress(host: "127.0.0.1", port: 9), key: .random(suite: .aesCm))
        let kfi = try ParsedOptions.parse(["--keyframe-interval", "2s"], spec: PublishCommand.spec, command: "publish")
        try CommonOptions.apply(kfi, to: &c)
        #expect(c.keyFrameIntervalMicros == 2_000_000)
        #expect(LibvpxEncoder.frames(in: 2_000_000, fps: 7) == 14 && LibvpxEncoder.frames(in: 0, fps: 30) == 0)
        #expect(throws: UsageError.self) {
            try CommonOptions.layers(try ParsedOptions.parse(["--fps", "13"], spec: PublishCommand.spec, command: "publish"))
        }
    }

    @Test func options() throws {
        let spec = OptionSpec(options: ["to": .repeated, "json": .flag, "duration": .value], planned: ["impair": "later"])
        let o = try ParsedOptions.parse(["--to", "a:1", "--to=b:2", "--json", "--duration", "3s"], spec: spec, command: "x")
        #expect(o.all("to") == ["a:1", "b:2"] && o.has("json") && o.value("duration") == "3s")
        #expect(throws: UsageError.self) { try ParsedOptions.parse(["--nope"], spec: spec, command: "x") }
        #expect(throws: UsageError.self) { try ParsedOptions.parse(["--duration"], spec: spec, command: "x") }
        #expect(throws: UsageError.self) { try ParsedOptions.parse(["--duration", "1s", "--duration", "2s"], spec: spec, command: "x") }
        #expect(throws: UsageError.self) { try ParsedOptions.parse(["--json=1"], spec: spec, command: "x") }
        #expect(throws: UsageError.self) { try ParsedOptions.parse(["stray"], spec: spec, command: "x") }
        #expect(throws: UsageError.self) { try ParsedOptions.parse(["--impair", "loss=1%"], spec: spec, command: "x") }
        #expect(try ParsedOptions.parse(["-h"], spec: spec, command: "x").helpRequested)
    }

    @Test func conditionThresholds() throws {
        let t = try CommonOptions.conditionThresholds("loss=1/3/6/12,estimate=80%,window=3s,hold=3")
        #expect(t.excellentLoss == 0.01 && t.goodLoss == 0.03 && t.fairLoss == 0.06 && t.warningLoss == 0.12)
        #expect(t.goodEstimateShare == 0.8 && t.windowMicros == 3_000_000 && t.holdEvaluations == 3)
        for bad in ["loss=5/2/1/10", "loss=1/2/3", "estimate=0", "window=100ms", "hold=0", "speed=1", "loss"] {
            #expect(throws: UsageError.self, "\(bad)") { try CommonOptions.conditionThresholds(bad) }
        }
    }

    @Test func badUsageExits64() {
        #expect(BotCLI.main(["pubbot"]) == 64)
        #expect(BotCLI.main(["pubbot", "frobnicate"]) == 64)
        #expect(BotCLI.main(["pubbot", "publish"]) == 64) // missing --to
        #expect(BotCLI.main(["pubbot", "publish", "--to", "nowhere"]) == 64)
        #expect(BotCLI.main(["pubbot", "publish", "--to", "127.0.0.1:9", "--key", "short"]) == 64)
        #expect(BotCLI.main(["pubbot", "receive", "--listen", "127.0.0.1:0"]) == 64) // no key
        #expect(BotCLI.main(["pubbot", "preflight", "--duration", "1h"]) == 64)
        #expect(BotCLI.main(["pubbot", "help", "nope"]) == 64)
        // WHEP: a subscriber's options alone or with what does not apply.
        #expect(BotCLI.main(["pubbot", "receive", "--whep", "ftp://x/whep"]) == 64)
        #expect(BotCLI.main(["pubbot", "receive", "--whep", "http://127.0.0.1:9/whep", "--key", "AAAA"]) == 64)
        #expect(BotCLI.main(["pubbot", "receive", "--whep", "http://127.0.0.1:9/whep", "--prefer", "360p"]) == 64)
        #expect(BotCLI.main(["pubbot", "receive", "--listen", "127.0.0.1:0", "--key", "AAAA", "--ice-interface", "lo"]) == 64)
        #expect(BotCLI.main(["pubbot", "preflight", "--whep", "http://127.0.0.1:9/whep"]) == 64) // needs --whip
        #expect(BotCLI.main(["pubbot", "preflight", "--whep-token", "t"]) == 64)
        #expect(BotCLI.main(["pubbot", "load", "--subscribers", "3"]) == 64)
        #expect(BotCLI.main(["pubbot", "load", "--whip", "http://127.0.0.1:9/whip", "--rooms", "2"]) == 64) // no {room}
        #expect(
            BotCLI.main(["pubbot", "load", "--whip", "http://127.0.0.1:9/whip", "--whep", "http://127.0.0.1:9/whep", "--subscribers", "0"])
                == 64)
        #expect(BotCLI.main(["pubbot", "load", "--bots", "2", "--publishers", "2"]) == 64)
        // --codec: a known codec or a list without repeats; one codec where every bot sends it.
        #expect(BotCLI.main(["pubbot", "publish", "--to", "127.0.0.1:9", "--codec", "av2"]) == 64)
        #expect(BotCLI.main(["pubbot", "publish", "--to", "127.0.0.1:9", "--codec", "h264,h264"]) == 64)
        #expect(BotCLI.main(["pubbot", "publish", "--to", "127.0.0.1:9", "--codec", "h264,"]) == 64)
        #expect(BotCLI.main(["pubbot", "load", "--codec", "h264,vp8"]) == 64)
        #expect(BotCLI.main(["pubbot", "media", "build", "--codec", "h264,vp8"]) == 64)
        #expect(BotCLI.main(["pubbot", "simulate", "--codec", "h264", "--media", "sized"]) == 64)
        #expect(BotCLI.main(["pubbot", "--version"]) == 0)
        #expect(BotCLI.main(["pubbot", "help", "publish"]) == 0)
    }
}

@Suite struct LoadOptionTests {
    @Test func requirements() throws {
        let r = try LoadRequirement.parseList("loss<1%,rtt<=200ms,bitrate>300kbit,estimate>=2mbit,started>=100%")
        #expect(r.map(\.metric) == [.loss, .rtt, .bitrate, .estimate, .started])
        #expect(r[0].upper && !r[0].inclusive && r[0].limit == 0.01)
        #expect(r[1].upper && r[1].inclusive && r[1].limit == 200)
        #expect(!r[2].upper && r[2].limit == 300_000)
        #expect(r[0].met(by: 0.005) && !r[0].met(by: 0.01) && r[1].met(by: 200) && !r[2].met(by: 300_000))
        for bad in ["", "loss", "loss<1", "jitter<1ms", "rtt<fast", "bitrate>x", "loss<200%"] {
            #expect(throws: UsageError.self, "\(bad)") { try LoadRequirement.parseList(bad) }
        }
    }

    @Test func shardsSplitTheBotsEvenlyAndCoverThemOnce() throws {
        var covered: [Int] = []
        for i in 0..<3 { covered += Array(try LoadCommand.shardOption("\(i)/3", environment: nil, total: nil).range(of: 200)) }
        #expect(covered == Array(0..<200))
        #expect(try LoadCommand.shardOption(nil, environment: "2", total: "4") == LoadCommand.Shard(index: 2, count: 4))
        #expect(try LoadCommand.shardOption(nil, environment: nil, total: nil) == LoadCommand.Shard(index: 0, count: 1))
        for bad in ["3/3", "-1/2", "1", "a/b", "0/0"] {
            #expect(throws: UsageError.self, "\(bad)") { try LoadCommand.shardOption(bad, environment: nil, total: nil) }
        }
        #expect(throws: UsageError.self) { try LoadCommand.shardOption(nil, environment: "5", total: "4") }
        // No index: the pod's ordinal from its host name (podman kube play's Deployment replicas).
        #expect(
            try LoadCommand.shardOption(nil, environment: nil, total: "4", hostname: "pubbot-fleet-pod-3")
                == LoadCommand.Shard(index: 3, count: 4))
        #expect(try LoadCommand.shardOption(nil, environment: "1", total: "4", hostname: "x-3") == LoadCommand.Shard(index: 1, count: 4))
        for name in ["pubbot-fleet-pod-4", "pubbot", "", "pod-99999999"] {
            #expect(throws: UsageError.self, "\(name)") { try LoadCommand.shardOption(nil, environment: nil, total: "4", hostname: name) }
        }
    }
}

@Suite struct CLIParserFuzzTests {
    /// 10⁵ mutated values through the CLI's value parsers (durations, bit rates, ladders,
    /// --require lists, --shard): each parses or is a UsageError, never a crash.
    @Test func seededMutationsNeverCrash() {
        var rng = SplitMix64(seed: 0xC11)
        func next() -> UInt64 { rng.next() }
        let seeds = [
            "15s", "2.5mbit", "1280x720@30:2500k,640x360@30:700k,320x180@15:150k", "loss<1%,rtt<200ms,bitrate>300kbit", "3/8", "500ms"
        ].map { Array($0.utf8) }
        let alphabet = Array("0123456789.%<>=,:@x/kmsbitKM -".utf8)
        var ok = 0, failed = 0
        for i in 0..<100_000 {
            var input = seeds[i % seeds.count]
            for _ in 0..<Int(1 + next() % 3) {
                let at = Int(next() % UInt64(input.count))
                if next() % 2 == 0 {
                    input[at] = alphabet[Int(next() % UInt64(alphabet.count))]
                } else if input.count > 1 {
                    input.remove(at: at)
                }
            }
            let text = String(decoding: input, as: UTF8.self)
            do {
                switch i % seeds.count {
                case 0, 5: _ = try ValueParsers.duration(text, option: "d")
                case 1: _ = try ValueParsers.bitrate(text, option: "r")
                case 2: _ = try ValueParsers.ladder(text, temporalLayers: 1, defaultFps: 30)
                case 3: _ = try LoadRequirement.parseList(text)
                default: _ = try LoadCommand.shardOption(text, environment: nil, total: nil)
                }
                ok += 1
            } catch { failed += 1 }
        }
        #expect(ok > 1_000 && failed > 1_000)
    }
}
