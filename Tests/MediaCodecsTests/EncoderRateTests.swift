import Testing
import RTPCore
@testable import MediaCodecs

/// The encoder's output against its target at the real frame interval, in virtual time: frames
/// captured every 1/fps s (the stamp's frame number counting at 30 fps, as the media thread
/// does), the bits of each frame summed per second, every 5 s window compared with the target.
@Suite(.serialized) struct EncoderRateTests {
    /// Bits produced in each second of `seconds`.
    static func encode(_ config: VideoLayerConfig, seconds: Int, rateTrim: Bool = true, codec: VideoCodec = .vp8) throws -> (
        perSecond: [Int], frames: Int
    ) {
        let encoder: any VideoEncoder =
            switch codec {
            case .vp8, .vp9: try LibvpxEncoder(config: config, codec: codec, rateTrim: rateTrim)
            case .h264: try H264Encoder(config: config, rateTrim: rateTrim)
            case .av1: try AV1Encoder(config: config)
            }
        var picture = I420Frame(width: config.width, height: config.height)
        let source = SyntheticVideoSource(seed: 1)
        var perSecond = [Int](repeating: 0, count: seconds)
        var frames = 0
        for n in 0..<(seconds * config.fps) {
            let capture = Int64(n) * 1_000_000 / Int64(config.fps)
            let number = UInt32(capture / 33_333)
            source.fill(&picture, frameNumber: number, captureMillis: UInt32(capture / 1000))
            if let f = try encoder.encode(
                &picture, layer: 0, frameNumber: number, captureMicros: capture, forceKeyFrame: false, clock: { 0 })
            {
                perSecond[Int(capture / 1_000_000)] += f.bytes.count * 8
                frames += 1
            }
        }
        return (perSecond, frames)
    }

    /// Each 5 s window's bitrate as a share of the target.
    static func windows(_ perSecond: [Int], target: Int) -> [Double] {
        (0...(perSecond.count - 5)).map { Double(perSecond[$0..<($0 + 5)].reduce(0, +)) / 5 / Double(target) }
    }

    static let sizes = [(320, 180), (640, 360), (1280, 720)]

    /// Every codec (libvpx VP8 and VP9 — VP9's temporal layers through libvpx's SVC interface —
    /// and openh264, each under the same outer trim) at every frame rate and temporal layering,
    /// 180p–720p. 720p at 30 fps is left to the end-to-end rate tests (`RateTests.swift`) for
    /// VP8 (it is most of this test's CPU time, and libvpx alone is on target there) and to the
    /// test below for H.264; VP9 runs it here.
    @Test(arguments: [VideoCodec.vp8, .h264, .vp9], [1, 3])
    func everyFiveSecondWindowWithinFifteenPercent(codec: VideoCodec, temporalLayers: Int) throws {
        for fps in [7, 15, 30] {
            for (w, h) in Self.sizes where fps < 30 || h < 720 || codec == .vp9 {
                let config = VideoLayerConfig.defaults(width: w, height: h, fps: fps, temporalLayers: temporalLayers, rid: "x")
                let (perSecond, frames) = try Self.encode(config, seconds: 10, codec: codec)
                let shares = Self.windows(perSecond, target: config.targetBitrate)
                #expect(
                    shares.allSatisfy { (0.85...1.15).contains($0) },
                    "\(codec.sdpName) \(h)p@\(fps) L1T\(temporalLayers) target \(config.targetBitrate): 5 s windows \(shares.map { ($0 * 100).rounded() / 100 }), \(frames) frames"
                )
            }
        }
    }

    /// VP9 spatial layers (L3T3_KEY and L3T1_KEY topped by 720p, L2T3_KEY by 360p) on libvpx's
    /// SVC rate control: each spatial layer's bits, every 5 s window, within ±15 % of its part of
    /// the stream's target (`VideoLayerConfig.spatialRateShares`), at 7, 15 and 30 fps — but the
    /// top layer's first window at 7 fps with three temporal layers, held above 0.75.
    @Test(arguments: [7, 15, 30], [(3, 3, 720), (3, 1, 720), (2, 3, 360)] as [(Int, Int, Int)])
    func vp9SpatialLayersEachWithinFifteenPercent(fps: Int, mode: (spatial: Int, temporal: Int, height: Int)) throws {
        let top = VideoLayerConfig.defaults(
            width: mode.height * 16 / 9, height: mode.height, fps: fps, temporalLayers: mode.temporal, rid: "f")
        let config = VideoLayerConfig.spatial(top: top, spatialLayers: mode.spatial)
        let encoder = try LibvpxEncoder(config: config, codec: .vp9)
        var picture = I420Frame(width: config.width, height: config.height)
        let source = SyntheticVideoSource(seed: 1)
        let seconds = 10
        var perSecond = [[Int]](repeating: [Int](repeating: 0, count: seconds), count: mode.spatial)
        for n in 0..<(seconds * fps) {
            let capture = Int64(n) * 1_000_000 / Int64(fps)
            let number = UInt32(capture / 33_333)
            source.fill(&picture, frameNumber: number, captureMillis: UInt32(capture / 1000))
            guard
                let f = try encoder.encode(
                    &picture, layer: 0, frameNumber: number, captureMicros: capture, forceKeyFrame: false, clock: { 0 })
            else { continue }
            #expect(f.spatialLayers.count == mode.spatial)
            for (s, l) in f.spatialLayers.enumerated() { perSecond[s][Int(capture / 1_000_000)] += l.size * 8 }
        }
        for (s, share) in config.spatialRateShares.enumerated() {
            let target = Int(Double(config.targetBitrate) * share)
            var windows = Self.windows(perSecond[s], target: target)
            print("VP9 \(config.scalabilityMode) \(mode.height)p@\(fps) S\(s): \(windows.map { ($0 * 100).rounded() / 100 })")
            if fps == 7 && mode.temporal == 3 && s == mode.spatial - 1 {
                // As AV1's 720p@7 L1T3: the top layer's T0 runs at 1.75 fps and its rate control
                // settles in those frames (measured 0.82, 0.94, 0.97, 0.98, 1.01, 1.04).
                #expect(windows[0] > 0.75, "VP9 \(config.scalabilityMode) \(mode.height)p@7 S\(s) starts at \(windows[0])")
                windows.removeFirst()
            }
            #expect(
                windows.allSatisfy { (0.85...1.15).contains($0) },
                "VP9 \(config.scalabilityMode) \(mode.height)p@\(fps) S\(s) target \(target): 5 s windows \(windows.map { ($0 * 100).rounded() / 100 })"
            )
        }
    }

    /// libaom's AV1 (L1T1, and L1T3 through its SVC interface) on its own CBR rate control, no
    /// outer trim, at every frame rate and size. One known exception, held to what it does:
    /// 720p at 7 fps L1T3 starts low (libaom adapts each layer's rate control in that layer's
    /// frames, T0 at 1.75 fps: windows measured 0.64, 0.77, 0.87, 0.94, 1.02, 1.07) — its first
    /// window must be above half the target, its last two within ±15 %.
    @Test(arguments: [7, 15, 30], [1, 3])
    func av1EveryFiveSecondWindowWithinFifteenPercent(fps: Int, temporalLayers: Int) throws {
        for (w, h) in Self.sizes {
            let config = VideoLayerConfig.defaults(width: w, height: h, fps: fps, temporalLayers: temporalLayers, rid: "x")
            let (perSecond, frames) = try Self.encode(config, seconds: 10, codec: .av1)
            var shares = Self.windows(perSecond, target: config.targetBitrate)
            if h == 720 && fps == 7 && temporalLayers == 3 {
                #expect(shares[0] > 0.5, "AV1 720p@7 L1T3 starts at \(shares[0])")
                shares = Array(shares.suffix(2))
            }
            #expect(
                shares.allSatisfy { (0.85...1.15).contains($0) },
                "AV1 \(h)p@\(fps) L1T\(temporalLayers) target \(config.targetBitrate): 5 s windows \(shares.map { ($0 * 100).rounded() / 100 }), \(frames) frames"
            )
        }
    }

    /// openh264 never quantizes finer than QP 12 (`ratectl.cpp` clips every picture's QP to
    /// GOM_MIN_QP_MODE), and at QP 12 the synthetic 720p picture at 30 fps is about 2 Mbit/s:
    /// the 2.5 Mbit/s default target is out of its reach (libvpx, which goes down to quantizer
    /// 0, meets it). The trim asks for its most (2×) and the output stays at that ceiling —
    /// what `publish` reports as sent is this, never the target.
    @Test func h264At720pThirtyIsCappedByItsFinestQuantizer() throws {
        let config = VideoLayerConfig.defaults(width: 1280, height: 720, fps: 30, rid: "x")
        let (perSecond, frames) = try Self.encode(config, seconds: 10, codec: .h264)
        let shares = Self.windows(perSecond, target: config.targetBitrate)
        #expect(frames == 300)
        #expect(shares.allSatisfy { (0.65...0.9).contains($0) }, "H.264 720p@30: 5 s windows \(shares)")
    }

    /// The defect this guards against: libvpx sized frames from timestamps that counted at 30 fps
    /// whatever the frame rate, so a 15 fps layer carried 2× its target and a 7 fps one ~4×.
    @Test func withoutTheTrimLibvpxAloneIsNearTargetAtFifteenFps() throws {
        let config = VideoLayerConfig.defaults(width: 320, height: 180, fps: 15, rid: "q")
        let (perSecond, frames) = try Self.encode(config, seconds: 10, rateTrim: false)
        let share = Double(perSecond.reduce(0, +)) / 10 / Double(config.targetBitrate)
        #expect((0.85...1.15).contains(share), "180p@15 without trim: \(share) × target")
        #expect(frames >= 140)
    }

    /// Routed rates shrink with the frame rate; relayed ones keep the 30 fps rates.
    @Test func defaultsScaleWithFrameRateWhenRouted() {
        let routed = VideoLayerConfig.defaults(width: 1280, height: 720, fps: 15, rid: "f")
        let relayed = VideoLayerConfig.defaults(width: 1280, height: 720, fps: 15, rid: "f", scaledByFrameRate: false)
        let full = VideoLayerConfig.defaults(width: 1280, height: 720, fps: 30, rid: "f")
        #expect(
            routed.targetBitrate == full.targetBitrate / 2 && routed.maxBitrate == full.maxBitrate / 2
                && routed.minBitrate == full.minBitrate / 2)
        #expect(relayed.targetBitrate == full.targetBitrate && relayed.maxBitrate == full.maxBitrate)
        #expect(VideoLayerConfig.defaults(width: 320, height: 180, fps: 7, rid: "q").targetBitrate == 35_000)
        #expect(VideoLayerConfig.defaults(width: 320, height: 180, fps: 60, rid: "q").targetBitrate == 150_000)
    }

    /// At 1 fps libvpx adapts too slowly for 5 s windows (a 720p layer swings ±50 % with the
    /// picture's complexity); the mean over 30 s still meets the target.
    @Test func oneFrameASecondMeetsTheTargetOnAverage() throws {
        for (w, h) in Self.sizes {
            let config = VideoLayerConfig.defaults(width: w, height: h, fps: 1, rid: "x")
            let (perSecond, _) = try Self.encode(config, seconds: 30)
            let share = Double(perSecond.reduce(0, +)) / 30 / Double(config.targetBitrate)
            #expect((0.85...1.15).contains(share), "\(h)p@1 target \(config.targetBitrate): \(share) × over 30 s")
        }
    }

    @Test func trimMeasuresWholeWindowsAndStaysInRange() {
        var trim = EncoderRateTrim(fps: 30)
        var changes = 0
        // An encoder producing half its target: the factor climbs, never past 2.
        for n in 0..<600 {
            if trim.add(captureMicros: Int64(n) * 33_333, bits: 2_500, target: 150_000) != nil { changes += 1 }
        }
        #expect(trim.factor == EncoderRateTrim.factorRange.upperBound)
        #expect(changes >= 3 && changes <= 20)
        // Then one producing twice its target: down again, to the floor at most.
        for n in 600..<1200 { _ = trim.add(captureMicros: Int64(n) * 33_333, bits: 20_000, target: 150_000) }
        #expect(trim.factor == EncoderRateTrim.factorRange.lowerBound)
        // On target: left alone.
        var steady = EncoderRateTrim(fps: 15)
        for n in 0..<300 { #expect(steady.add(captureMicros: Int64(n) * 66_666, bits: 5_000, target: 75_000) == nil) }
    }
}
