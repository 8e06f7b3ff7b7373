import Testing
@testable import MediaCodecs

@Suite struct DownscaleTests {
    /// Area averaging: a 2:1 downscale of a known picture is each 2×2 block's rounded mean, a
    /// flat picture stays flat at any ratio, and the chroma planes are scaled alike.
    @Test func eachSampleIsTheMeanOfItsFootprint() {
        var big = I420Frame(width: 8, height: 4)
        for i in 0..<32 { big.data[i] = UInt8(i * 7 % 256) }
        var small = I420Frame(width: 4, height: 2)
        small.downscale(from: big)
        for oy in 0..<2 {
            for ox in 0..<4 {
                let a = [
                    big.data[(2 * oy) * 8 + 2 * ox], big.data[(2 * oy) * 8 + 2 * ox + 1], big.data[(2 * oy + 1) * 8 + 2 * ox],
                    big.data[(2 * oy + 1) * 8 + 2 * ox + 1]
                ].map(Int.init)
                #expect(Int(small.data[oy * 4 + ox]) == (a.reduce(0, +) + 2) / 4)
            }
        }
        var flat = I420Frame(width: 1280, height: 720)
        for i in 0..<flat.data.count { flat.data[i] = 77 }
        var rung = I420Frame(width: 480, height: 270) // 3/8
        rung.downscale(from: flat)
        #expect(rung.data.allSatisfy { $0 == 77 })
    }

    /// A sender that scales the captured picture down is measured against the same downscale:
    /// the picture itself scores the maximum.
    @Test func aCaptureSizeReferenceIsTheDownscaledSource() throws {
        let source = SyntheticVideoSource(seed: 1, content: .hard)
        var captured = I420Frame(width: 1280, height: 720), sent = I420Frame(width: 640, height: 360)
        source.fill(&captured, frameNumber: 12, captureMillis: 400)
        sent.downscale(from: captured)
        let q = PictureQuality(seed: 1, content: .hard)
        q.captureSize = (1280, 720)
        let psnr = sent.data.withUnsafeBufferPointer { p in
            q.psnrY(luma: p.baseAddress!, width: 640, height: 360, stride: 640, stamp: FrameStamp(frameNumber: 12, captureMillis: 400))
        }
        #expect(psnr == PictureQuality.maxPSNR)
        // Against the source drawn natively at 640x360 the same picture is far off.
        let native = PictureQuality(seed: 1, content: .hard)
        let off = sent.data.withUnsafeBufferPointer { p in
            native.psnrY(luma: p.baseAddress!, width: 640, height: 360, stride: 640, stamp: FrameStamp(frameNumber: 12, captureMillis: 400))
        }
        #expect((off ?? 99) < 30)
    }
}
