import Testing
import Foundation
import PublisherEngine
import ReceiverEngine
import Transport
import MediaCodecs
import Stats
import Platform

/// The rate asked for is the rate on the wire: publisher → real loopback → receiver at 7, 15 and
/// 30 fps, with and without temporal layers; what the receiver counts per layer (and for the
/// audio) against what the publisher reports as the layer's target. Part of the serialized
/// end-to-end suite, so that no other real-time run competes for the two cores meanwhile.
extension EndToEndTests {
    struct Sample { var micros: Int64; var received: [UInt32: Int]; var targets: [UInt32: Int] }

    struct Outcome {
        /// Per stream: received payload bitrate over the measured window, mean reported target.
        var layers: [(name: String, received: Int, target: Int)]
        var audio: Int?
    }

    /// Runs one publisher against one receiver for `seconds`, sampling both every 250 ms, and
    /// measures from `warmUp` to the end (the estimate starts at 300 kbps and takes a second or
    /// two to reach the ladder).
    static func measure(fps: Int, temporalLayers: Int, relayed: Bool = false, seconds: Double = 10, warmUp: Double = 2) throws -> Outcome {
        let key = SRTPKey.random(suite: .aesCm)
        let r = try ReceiverEngine(config: ReceiverConfig(listen: SocketAddress(host: "127.0.0.1", port: 0), key: key))
        var c = PublisherConfig(
            destination: r.localAddress,
            layers: VideoLayerConfig.ladder(
                top: 1280, 720, fps: fps, temporalLayers: temporalLayers,
                scaledByFrameRate: !relayed), key: key)
        c.durationMicros = Int64(seconds * 1e6)
        let p = try Publisher(config: c)
        r.start()
        p.start()
        let start = Clock.monotonicMicros()
        var samples: [Sample] = []
        while Clock.monotonicMicros() - start < Int64(seconds * 1e6) - 100_000 {
            Clock.sleep(micros: 250_000)
            let ps = p.snapshot(), rs = r.snapshot()
            samples.append(
                Sample(
                    micros: Clock.monotonicMicros() - start,
                    received: Dictionary(rs.streams.map { ($0.ssrc, $0.payloadBytesReceived) }, uniquingKeysWith: max),
                    targets: Dictionary(ps.streams.filter { $0.kind == .video }.map { ($0.ssrc, $0.targetBitrate) }, uniquingKeysWith: max))
            )
        }
        p.wait()
        r.stop()
        r.wait()
        let streams = p.snapshot().streams
        let window = samples.filter { $0.micros >= Int64(warmUp * 1e6) }
        let first = try #require(window.first), last = try #require(window.last)
        let span = Double(last.micros - first.micros) / 1e6
        func rate(_ ssrc: UInt32) -> Int { Int(Double(((last.received[ssrc] ?? 0) - (first.received[ssrc] ?? 0)) * 8) / span) }
        var out = Outcome(layers: [], audio: nil)
        for s in streams {
            if s.kind == .audio { out.audio = rate(s.ssrc); continue }
            let targets = window.compactMap { $0.targets[s.ssrc] }
            out.layers.append(("\(s.height)p@\(fps) L1T\(temporalLayers)", rate(s.ssrc), targets.reduce(0, +) / max(1, targets.count)))
        }
        return out
    }

    /// Before the fix, libvpx was told the frames were 1/30 s apart whatever the frame rate: at
    /// 15 fps every layer carried about twice its target, at 7 fps three to four times.
    @Test(arguments: [7, 15, 30], [1, 3])
    func rateEveryLayerCarriesItsTarget(fps: Int, temporalLayers: Int) throws {
        let o = try Self.measure(fps: fps, temporalLayers: temporalLayers)
        #expect(o.layers.count == 3)
        for l in o.layers {
            let share = Double(l.received) / Double(max(1, l.target))
            #expect((0.85...1.15).contains(share), "\(l.name): received \(l.received) bps against a target of \(l.target) (\(share))")
        }
        // Routed: the targets shrink with the frame rate (180p: 150 kbps at 30 fps).
        #expect(o.layers.first?.target == 150_000 * fps / 30)
        // Opus in 20 ms frames against its 32 kbps request (measured: 32.3 kbps at every frame rate).
        let audio = try #require(o.audio)
        #expect((27_200...36_800).contains(audio), "audio \(audio) bps against 32 kbps")
    }

    /// A relayed publisher (one connection per subscriber, several `--to`) keeps the 30 fps rates
    /// at 7 fps — each frame gets 30/7 × the bits — and the wire still carries them (the 720p
    /// layer needs quantizers below libwebrtc's floor of 2 on the synthetic picture).
    @Test func rateRelayedLayersKeepTheirThirtyFpsRates() throws {
        let o = try Self.measure(fps: 7, temporalLayers: 1, relayed: true)
        #expect(o.layers.map(\.target) == [150_000, 500_000, 2_500_000])
        for l in o.layers {
            let share = Double(l.received) / Double(max(1, l.target))
            #expect((0.85...1.15).contains(share), "relayed \(l.name): received \(l.received) bps against \(l.target) (\(share))")
        }
    }
}
