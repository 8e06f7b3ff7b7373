import Testing
import Simulation
import PublisherEngine
import ReceiverEngine
import MediaCodecs
import Transport
import Impairment

/// The real publisher and receiver sessions in virtual time, no socket, no sleep.
@Suite(.serialized) struct SimulationTests {
    /// Replay loops of the default ladder, built once for the suite (4 s, a key frame a second).
    static let library: ReplayLibrary = try! ReplayLibrary.build(
        layers: VideoLayerConfig.ladder(top: 1280, 720), seconds: 4,
        keyFrameIntervalMicros: 1_000_000)

    /// `sized`: frames that follow the allocator's targets exactly (replay loops keep their
    /// sizes whatever the target, so a closed loop between a layer's minimum and target
    /// overloads the link — only suspension reaches them); not decodable, so no decoding.
    static func config(
        impair: String?, seconds: Int, seed: UInt64 = 7, sized: Bool = false,
        publisher tweak: (inout PublisherConfig) -> Void = { _ in }
    ) throws -> SimulationConfig {
        let key = SRTPKey.random(suite: .aesCm)
        var r = ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 5004), key: key)
        if let impair { r.impairment = try ImpairmentSchedule.parse(impair) }
        var p = PublisherConfig(destination: r.listen, layers: VideoLayerConfig.ladder(top: 1280, 720), key: key)
        p.durationMicros = Int64(seconds) * 1_000_000
        tweak(&p)
        if sized { r.decodeVideo = false }
        var c = SimulationConfig(publisher: p, receiver: r, media: sized ? .sized : .replay(library))
        c.durationMicros = Int64(seconds) * 1_000_000
        c.seed = seed
        return c
    }

    struct Trace: Equatable {
        var estimates: [Int] = []
        var targets: [[Int]] = []
        var received: [Int] = []
        var sentBytes: [Int] = []

        /// Samples taken after `from` s and up to `to` s (one a second, the first at 1 s).
        func window(_ from: Int, _ to: Int) -> ArraySlice<Int> { estimates[min(from, estimates.count)..<min(to, estimates.count)] }
        func mean(_ from: Int, _ to: Int) -> Double { let w = window(from, to); return Double(w.reduce(0, +)) / Double(max(1, w.count)) }
        var description: String { estimates.enumerated().map { "\($0.offset + 1)s:\($0.element / 1000)k" }.joined(separator: " ") }
    }

    static func run(_ c: SimulationConfig) throws -> (Trace, Simulation) {
        let sim = try Simulation(config: c)
        var t = Trace()
        sim.run(intervalMicros: 1_000_000) { final in
            guard !final else { return }
            let p = sim.publisherSnapshot
            t.estimates.append(p.network.estimate?.bitrate ?? 0)
            t.targets.append(p.streams.filter { $0.kind == .video }.map(\.targetBitrate))
            t.received.append(sim.receiverSnapshot().packetsAccepted)
            t.sentBytes.append(p.streams.reduce(0) { $0 + $1.payloadBytesSent + $1.headerBytesSent })
        }
        return (t, sim)
    }

    /// The closed loop against an emulated 800 kbit/s bottleneck: the estimate settles near it,
    /// the top layer goes off for bandwidth, the rest arrives.
    @Test func closedLoopFindsAn800kbpsBottleneck() throws {
        let (t, sim) = try Self.run(try Self.config(impair: "rate=800kbit", seconds: 40))
        #expect(t.estimates.count == 40)
        let last = t.estimates.suffix(15)
        let mean = Double(last.reduce(0, +)) / Double(last.count)
        #expect(abs(mean / 800_000 - 1) < 0.15, "mean estimate over the last 15 s: \(mean) (\(t.estimates))")
        #expect(t.targets.suffix(15).allSatisfy { $0.count == 3 && $0[2] == 0 && $0[0] > 0 }, "\(t.targets.suffix(15))")
        let r = sim.receiverSnapshot(final: true)
        let video = r.streams.filter { $0.kind == .video && $0.height <= 360 }
        #expect(video.count == 2 && video.allSatisfy { $0.framesDecoded > 900 })
        #expect(r.byes > 0)
        #expect(sim.publisherSnapshot.network.byeSent)
        // Bounded by the emulated queue (200 ms).
        let rtt = try #require(sim.publisherSnapshot.streams.compactMap(\.roundTripTimeMillis).max())
        #expect(rtt < 300)
    }

    /// Unconstrained: every layer at its target, nothing lost, every frame decoded.
    @Test func unconstrainedLinkCarriesTheWholeLadder() throws {
        let (t, sim) = try Self.run(try Self.config(impair: nil, seconds: 10))
        #expect(t.targets.last == [150_000, 500_000, 2_500_000])
        let p = sim.publisherSnapshot
        let r = sim.receiverSnapshot(final: true)
        for out in p.streams {
            let inb = try #require(r.streams.first { $0.ssrc == out.ssrc })
            #expect(inb.packetsReceived == out.packetsSent && inb.packetsLost == 0)
            if out.kind == .video { #expect(inb.framesDecoded == out.framesSent && inb.stampsRead == inb.framesDecoded) }
        }
    }

    /// The wall clock steps 300 ms forward mid-run (an NTP step; a CI machine's clock did, and a
    /// receiver that kept its start's wall offset reported −16 ms through Janus): glass-to-glass
    /// latency is the capture's wall time against the decode's, both read after the step.
    @Test func latencyFollowsAWallClockStep() throws {
        var c = try Self.config(impair: "delay=20ms", seconds: 4)
        c.media = .encode
        let sim = try Simulation(config: c)
        var seen = 0
        sim.run(intervalMicros: 1_000_000) { final in
            seen += 1
            if seen == 2 && !final { sim.stepWallClock(byMicros: 300_000) }
        }
        let r = sim.receiverSnapshot(final: true)
        let video = r.streams.filter { $0.kind == .video }
        #expect(video.count == 3 && video.allSatisfy { $0.stampsRead > 90 }, "\(video.map(\.stampsRead))")
        for s in video {
            let mean = try #require(s.latencyMeanMillis)
            // 20 ms of link delay, the pacer's spreading; a frame caught in the step reads +300.
            #expect(mean >= 20 && mean < 60, "\(s.height)p: \(mean) ms")
        }
    }

    /// Same configuration and seed, same run — to the packet.
    @Test func sameSeedSameRun() throws {
        let c = try Self.config(impair: "loss=2%,rate=1500kbit", seconds: 12)
        let (a, _) = try Self.run(c)
        let (b, _) = try Self.run(c)
        #expect(a == b)
        var other = c
        other.seed = 8
        let (d, _) = try Self.run(other)
        #expect(d != a)
    }

    // The closed-loop scenarios (these ran on a re-implementation of the publisher's loop
    // before; now the real sessions).

    @Test func followsCapacitySteps4M800k4M() throws {
        let (t, _) = try Self.run(
            try Self.config(impair: "0s:rate=4mbit,delay=20ms,queue=500ms;20s:rate=800kbit;40s:rate=4mbit", seconds: 60, sized: true))
        // The ladder sends at most 3.2 Mbps and the estimate may claim 1.25 × that (4.29 Mbps):
        // on the 4 Mbps link the estimate sits between. On the 800 kbit/s link, at least 0.79 of
        // it (it was 0.8 while the receiver's non-decoding streams, which these sized runs use,
        // sent a PLI every 500 ms from their first loss on — a bug; without those key frames the
        // estimate dipped to 637 kbit/s once).
        for (from, to, low, high) in [(5, 20, 3_000_000, 4_300_000), (25, 40, 630_000, 920_000), (45, 60, 3_000_000, 4_300_000)] {
            #expect(t.window(from, to).allSatisfy { (low...high).contains($0) }, "[\(from), \(to)) s: \(t.description)")
        }
        #expect(t.targets[25..<40].allSatisfy { $0[2] == 0 && $0[0] > 0 }, "\(t.targets[25..<40])")
        #expect(t.targets[47..<60].allSatisfy { $0 == [150_000, 500_000, 2_500_000] }, "\(t.targets[45..<60])")
    }

    @Test func twoPercentRandomLossDoesNotCollapseTheRate() throws {
        let (t, sim) = try Self.run(try Self.config(impair: "rate=4mbit,delay=20ms,loss=2%", seconds: 30, sized: true))
        #expect(t.window(5, 30).allSatisfy { $0 >= 3_000_000 }, "\(t.description)")
        #expect(t.targets[5..<30].allSatisfy { $0[2] > 0 })
        // NACK → RTX repairs the video: nearly every frame of every layer is reassembled.
        let p = sim.publisherSnapshot, r = sim.receiverSnapshot(final: true)
        #expect(p.network.retransmissionsSent > 100)
        for out in p.streams where out.kind == .video {
            let inb = try #require(r.streams.first { $0.ssrc == out.ssrc })
            #expect(
                Double(inb.framesAssembled) >= 0.97 * Double(out.framesSent),
                "\(out.rid ?? ""): \(inb.framesAssembled) of \(out.framesSent)")
        }
    }

    /// A 5 s total outage: the estimate backs off during it and comes back after it.
    @Test func recoversAfterATotalOutage() throws {
        let (t, _) = try Self.run(try Self.config(impair: "0s:rate=2mbit,delay=20ms;10s:loss=100%;15s:loss=0%", seconds: 30, sized: true))
        #expect(t.window(13, 15).allSatisfy { $0 < 200_000 }, "\(t.description)")
        #expect(t.window(17, 30).allSatisfy { $0 >= 1_000_000 }, "\(t.description)")
        #expect(abs(t.mean(20, 30) - 2_000_000) / 2_000_000 <= 0.25, "\(t.description)")
    }

    /// Audio fallback (moved here from a 16 s real-time test): 30 % loss makes the link
    /// critical, all video goes off (`videoQualityChanged`, reason `audioFallback`) while the
    /// audio goes on, and video comes back once the loss is gone.
    @Test func audioFallbackDropsVideoOnACriticalLinkAndRecovers() throws {
        let sim = try Simulation(
            config: try Self.config(impair: "0s:loss=0%;2s:loss=30%;6s:loss=0%", seconds: 16) { $0.audioFallback = true })
        var sawFallback = false, conditions: [String] = []
        sim.run(intervalMicros: 250_000) { final in
            let n = sim.publisherSnapshot.network
            if n.audioFallbackActive { sawFallback = true }
            if conditions.last != n.networkCondition.rawValue { conditions.append(n.networkCondition.rawValue) }
        }
        let p = sim.publisherSnapshot
        let events = p.network.events.filter { $0.reason == "audioFallback" }
        #expect(sawFallback)
        #expect(
            events.contains { $0.change == "layerSuspended" } && events.contains { $0.change == "layerResumed" },
            "\(events.map { $0.change ?? "" })")
        #expect(!p.network.audioFallbackActive) // recovered by the end
        #expect(conditions.contains("critical") && conditions.last != "critical", "\(conditions)")
        let audio = try #require(sim.receiverSnapshot(final: true).streams.first { $0.kind == .audio })
        #expect(audio.framesDecoded > 600) // audio never stopped (16 s at 50 frames/s, minus losses)
    }
}
