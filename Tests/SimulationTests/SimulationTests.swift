import Testing
import Simulation
import PublisherEngine
import LoopbackReceiver
import MediaCodecs
import Transport
import Impairment

/// The real publisher and receiver sessions in virtual time, no socket, no sleep.
@Suite(.serialized) struct SimulationTests {
    /// Replay loops of the default ladder, built once for the suite (4 s, a key frame a second).
    static let library: ReplayLibrary = try! ReplayLibrary.build(layers: VideoLayerConfig.ladder(top: 1280, 720), seconds: 4,
                                                                 keyFrameIntervalMicros: 1_000_000)

    static func config(impair: String?, seconds: Int, seed: UInt64 = 7) throws -> SimulationConfig {
        let key = SRTPKey.random(suite: .aesCm)
        var r = ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 5004), key: key)
        if let impair { r.impairment = try ImpairmentSchedule.parse(impair) }
        var p = PublisherConfig(destination: r.listen, layers: VideoLayerConfig.ladder(top: 1280, 720), key: key)
        p.durationMicros = Int64(seconds) * 1_000_000
        var c = SimulationConfig(publisher: p, receiver: r, media: .replay(library))
        c.durationMicros = Int64(seconds) * 1_000_000
        c.seed = seed
        return c
    }

    struct Trace: Equatable {
        var estimates: [Int] = []
        var targets: [[Int]] = []
        var received: [Int] = []
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
}
