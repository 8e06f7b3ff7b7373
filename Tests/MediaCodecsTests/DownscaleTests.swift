import Testing
@testable import MediaCodecs

@Suite struct DownscaleTests {
    /// libyuv's box filter: a 2:1 downscale of a known picture is each 2×2 block's rounded mean
    /// (`ScaleRowDown2Box`); at other ratios each sample is its box's sum times a 16-bit
    /// reciprocal, truncated (`ScaleAddCols2_C`), so a flat picture stays within one step.
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
        #expect(rung.data.allSatisfy { $0 == 77 || $0 == 76 })
        #expect(rung.data.contains(77))
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

    /// At the capture size the decoded picture is scaled up (libyuv, as libwebrtc's `I420PSNR`)
    /// and compared with the source drawn there: a lower rung loses detail the sent-size figure
    /// cannot see. Measured on the SSIM sample; a frame at the capture size scores its own PSNR.
    @Test func theCaptureSizeFigureChargesTheLostDetail() throws {
        let source = SyntheticVideoSource(seed: 1, content: .natural)
        var captured = I420Frame(width: 640, height: 360), sent = I420Frame(width: 320, height: 180)
        let q = PictureQuality(seed: 1, content: .natural)
        q.captureSize = (640, 360)
        var got: [PictureQuality.Measurement] = []
        for n in 0..<5 {
            let stamp = FrameStamp(frameNumber: UInt32(n), captureMillis: UInt32(n * 33))
            source.fill(&captured, frameNumber: stamp.frameNumber, captureMillis: stamp.captureMillis)
            sent.downscale(from: captured)
            let m = sent.data.withUnsafeBufferPointer {
                q.measure(luma: $0.baseAddress!, width: 320, height: 180, stride: 320, stamp: stamp)
            }
            got.append(try #require(m))
        }
        #expect(got.allSatisfy { $0.psnrY == PictureQuality.maxPSNR }, "the sent picture is the reference")
        #expect(got.map { $0.psnrYCapture != nil } == [true, false, false, false, true], "on the SSIM sample")
        let atCapture = try #require(got[0].psnrYCapture)
        #expect(atCapture > 20 && atCapture < 40, "half the size loses detail: \(atCapture)")
        // Against a hand computation: libyuv's upscale of the same picture, SSE over the capture.
        var up = I420Frame(width: 640, height: 360)
        sent.data.withUnsafeBufferPointer { I420Frame.scaleLuma($0.baseAddress!, width: 320, height: 180, stride: 320, into: &up) }
        source.fill(&captured, frameNumber: 4, captureMillis: 132)
        var sse: UInt64 = 0
        for i in 0..<(640 * 360) { let d = Int(up.data[i]) - Int(captured.data[i]); sse += UInt64(d * d) }
        #expect(abs(PictureQuality.psnr(sse: sse, samples: 640 * 360) - (got[4].psnrYCapture ?? 0)) < 1e-9)
        // A frame at the capture size: its figure is the sent one.
        let full = q.referencePicture(width: 640, height: 360, stamp: FrameStamp(frameNumber: 9, captureMillis: 1))!
        let m = full.data.withUnsafeBufferPointer {
            q.measure(luma: $0.baseAddress!, width: 640, height: 360, stride: 640, stamp: FrameStamp(frameNumber: 9, captureMillis: 1))
        }
        #expect(m?.psnrYCapture == PictureQuality.maxPSNR)
    }
}

/// The CPU share live quality may take: measured frames cost what the clock handed in says,
/// the bucket refills at the share of the wall time, refused frames are counted.
@Suite struct QualityBudgetTests {
    @Test func aBudgetAdmitsItsShareAndCountsTheRest() {
        // 10 % of a core, frames every 33.3 ms, each measurement 10 ms of CPU: about one frame
        // in three measured once the half second banked is spent (3.3 ms earned a frame).
        let b = QualityBudget(share: 0.10)
        var admitted: [Bool] = []
        for n in 0..<300 {
            let ok = b.admit(now: Int64(n) * 33_333)
            if ok { b.charge(10_000) }
            admitted.append(ok)
        }
        #expect(b.admitted + b.skipped == 300)
        let late = admitted.suffix(240).filter { $0 }.count
        #expect(late >= 75 && late <= 85, "\(late) of the last 240 measured")
        #expect(admitted.prefix(5).allSatisfy { $0 }, "the bank measures the first frames")
        // Cheap measurements are never refused.
        let cheap = QualityBudget(share: 0.10)
        for n in 0..<300 where cheap.admit(now: Int64(n) * 33_333) { cheap.charge(1_000) }
        #expect(cheap.skipped == 0)
    }
}
