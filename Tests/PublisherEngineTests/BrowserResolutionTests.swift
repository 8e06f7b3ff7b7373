import MediaCodecs
import PublisherCore
import RTPCore
import Testing

@Suite struct BrowserResolutionTests {
    typealias Size = BrowserResolution.Size
    let camera720 = Size(width: 1280, height: 720)

    @Test func theLadderIsVideoAdaptersScalesDownTo320x180() {
        #expect(BrowserResolution.ladder(camera: camera720).map(\.description) == ["1280x720", "960x540", "640x360", "480x270", "320x180"])
        #expect(
            BrowserResolution.ladder(camera: Size(width: 1920, height: 1080)).map(\.description) == [
                "1920x1080", "1440x810", "960x540", "720x405", "480x270", "360x202"
            ])
    }

    @Test func theStartRateDropsTheFirstFramesDownToQVGAAtMostFourTimes() {
        let ladder = BrowserResolution.ladder(camera: camera720)
        #expect(BrowserResolution.startSize(ladder: ladder, startBitrate: 300_000) == 2) // < 500k: not above 640x480
        #expect(BrowserResolution.startSize(ladder: ladder, startBitrate: 250_000) == 4) // < 300k: not above 320x240
        #expect(BrowserResolution.startSize(ladder: ladder, startBitrate: 600_000) == 0)
    }

    @Test func theMaximumRateFollowsTheSize() {
        #expect(BrowserResolution.maxBitrate(Size(width: 320, height: 180)) == 600_000)
        #expect(BrowserResolution.maxBitrate(Size(width: 640, height: 360)) == 1_700_000)
        #expect(BrowserResolution.maxBitrate(Size(width: 960, height: 540)) == 2_000_000)
        #expect(BrowserResolution.maxBitrate(camera720) == 2_500_000)
    }

    /// A made-up codec model: QP grows with bits needed per pixel against bits given.
    func model(cost: Double) -> (Size, Int) -> BrowserResolution.Probe {
        { size, rate in
            let bpp = Double(rate) / Double(size.pixels * 30)
            return .init(qp: min(127, cost / bpp), dropRatio: 0)
        }
    }

    @Test func theScalerWalksUpWhileTheQPIsLowAndDownWhileHigh() {
        // Cheap content, plenty of rate: up from the start size to the camera's.
        let easy = BrowserResolution.oneEncoding(videoBitrate: 3_000_000, camera: camera720, codec: .vp8, probe: model(cost: 0.5))
        #expect(easy.start == Size(width: 320, height: 180)) // the start rate's video share is below 300k
        #expect(easy.size == camera720)
        #expect(easy.steps.map(\.move) == [.up, .up, .up, .up, .stay])
        #expect(easy.bitrate == 2_500_000) // capped at 720p's maximum
        // Costly content from a full-size start: down until the QP is under the high threshold.
        let hard = BrowserResolution.oneEncoding(
            videoBitrate: 800_000, camera: camera720, codec: .vp8, startBitrate: 600_000, probe: model(cost: 16))
        #expect(hard.steps.first?.move == .down)
        #expect(hard.size.pixels < 640 * 360)
        #expect(hard.steps.allSatisfy { $0.probe.qp <= 95 || $0.move == .down })
        #expect(!hard.oscillates)
    }

    @Test func aSizeLeftDownwardsIsNotClimbedBackTo() {
        // QP above 95 at 640x360, below 29 at 480x270: the scaler would alternate.
        let probe: (Size, Int) -> BrowserResolution.Probe = { size, _ in .init(qp: size.pixels > 200_000 ? 100 : 20, dropRatio: 0) }
        let r = BrowserResolution.oneEncoding(videoBitrate: 1_000_000, camera: camera720, codec: .vp8, probe: probe)
        #expect(r.size == Size(width: 480, height: 270))
        #expect(r.oscillates)
    }

    @Test func theVideoIsGivenTheEstimateLessTheAudioAndTheOverhead() {
        // 1.5 Mbit/s: audio 32k + 50 × 64 B overhead = 57.6k; 5.3 % of the rest is packet overhead.
        #expect(BrowserResolution.videoBitrate(estimate: 1_500_000, audioBitrate: 32_000) == 1_365_472)
        #expect(BrowserResolution.videoBitrate(estimate: 1_500_000, audioBitrate: 0) == 1_420_000)
        #expect(BrowserResolution.videoBitrate(estimate: 10_000, audioBitrate: 32_000) == 0)
    }

    @Test func simulcastTurnsLayersOnAsTheRateCoversThem() {
        func top(_ bps: Int) -> String { BrowserResolution.simulcast(videoBitrate: bps, camera: camera720).top.description }
        #expect(top(250_000) == "320x180")
        #expect(top(300_000) == "640x360") // 150k (180p target) + 150k (360p minimum)
        #expect(top(1_249_000) == "640x360")
        #expect(top(1_250_000) == "1280x720") // 150k + 500k + 600k
        #expect(BrowserResolution.simulcast(videoBitrate: 5_000_000, camera: camera720).topBitrate == 2_500_000)
    }

    /// The content spans a camera's range: at one size and rate the encoder's QP orders easy <
    /// natural < hard, by a wide margin.
    @Test func theContentsCostDifferentlyAtOneRate() throws {
        let size = Size(width: 640, height: 360)
        var qp: [SyntheticVideoSource.Content: Double] = [:]
        for c in SyntheticVideoSource.Content.allCases {
            let p = try BrowserResolution.measure(size: size, bitrate: 500_000, codec: .vp8, content: c, seconds: 2)
            qp[c] = p.qp
            #expect(p.psnrY != nil)
        }
        #expect(qp[.easy]! + 10 < qp[.natural]!, "\(qp)")
        #expect(qp[.natural]! + 10 < qp[.hard]!, "\(qp)")
    }
}

extension BrowserResolutionTests {
    /// Every codec's encoder says its QP on the scale libwebrtc's scaler reads (H.264's read from
    /// its slice headers: openh264 reports none); a starved rate lands above the high threshold's
    /// half and a rich one below the low threshold.
    @Test(arguments: [VideoCodec.vp8, .vp9, .av1, .h264]) func everyEncoderSaysItsQP(codec: VideoCodec) throws {
        let size = Size(width: 320, height: 180)
        let (low, high) = BrowserResolution.qpThresholds(codec)
        let starved = try BrowserResolution.measure(size: size, bitrate: 40_000, codec: codec, content: .hard, seconds: 2)
        let rich = try BrowserResolution.measure(size: size, bitrate: 2_000_000, codec: codec, content: .easy, seconds: 2)
        #expect(starved.qp > Double(high) / 2, "\(codec): \(starved)")
        #expect(rich.qp < Double(low), "\(codec): \(rich)")
        #expect(rich.qp < starved.qp)
    }
}
