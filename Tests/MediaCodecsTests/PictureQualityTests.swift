#if canImport(Glibc)
    import Glibc
#endif
import Testing
@testable import MediaCodecs

/// PSNR-Y and SSIM-Y against the synthetic source: exact on known differences.
@Suite struct PictureQualityUnitTests {
    func picture(_ q: PictureQuality, _ stamp: FrameStamp, width: Int = 320, height: Int = 180) -> [UInt8] {
        Array(q.referencePicture(width: width, height: height, stamp: stamp)!.data.prefix(width * height))
    }

    @Test func theSourcesOwnPictureIsPerfect() {
        let q = PictureQuality()
        let stamp = FrameStamp(frameNumber: 42, captureMillis: 1234)
        let luma = picture(q, stamp)
        let m = luma.withUnsafeBufferPointer { q.measure(luma: $0.baseAddress!, width: 320, height: 180, stride: 320, stamp: stamp) }
        #expect(m == PictureQuality.Measurement(psnrY: PictureQuality.maxPSNR, ssimY: 1))
    }

    @Test func aKnownErrorGivesItsPSNR() {
        let q = PictureQuality()
        let stamp = FrameStamp(frameNumber: 7, captureMillis: 99)
        var luma = picture(q, stamp)
        // Every sample off by 4 (clamped the other way at the top): MSE 16 → 10·log10(65025/16).
        for i in luma.indices { luma[i] = luma[i] <= 251 ? luma[i] + 4 : luma[i] - 4 }
        // With a stride wider than the picture: the padding is not read.
        var padded = [UInt8](repeating: 0xEE, count: 336 * 180)
        for row in 0..<180 { for x in 0..<320 { padded[row * 336 + x] = luma[row * 320 + x] } }
        let psnr = padded.withUnsafeBufferPointer { q.psnrY(luma: $0.baseAddress!, width: 320, height: 180, stride: 336, stamp: stamp) }
        #expect(abs((psnr ?? 0) - 10 * log10(65025.0 / 16)) < 1e-9)
        let ssim = luma.withUnsafeBufferPointer { q.ssimY(luma: $0.baseAddress!, width: 320, height: 180, stride: 320, stamp: stamp) }
        #expect((ssim ?? 0) > 0.9 && (ssim ?? 1) < 1, "a uniform offset keeps the structure: \(ssim ?? -1)")
    }

    @Test func anotherFramesPictureScoresLow() {
        let q = PictureQuality()
        let other = picture(q, FrameStamp(frameNumber: 300, captureMillis: 5))
        let stamp = FrameStamp(frameNumber: 10, captureMillis: 5)
        let m = other.withUnsafeBufferPointer { q.measure(luma: $0.baseAddress!, width: 320, height: 180, stride: 320, stamp: stamp) }
        #expect((m?.psnrY ?? 99) < 25 && (m?.ssimY ?? 1) < 0.8, "\(String(describing: m))")
    }

    @Test func sizesThatCannotBeMeasuredAreRefused() {
        let q = PictureQuality()
        let stamp = FrameStamp(frameNumber: 1, captureMillis: 1)
        let tiny = [UInt8](repeating: 0, count: 64)
        #expect(tiny.withUnsafeBufferPointer { q.psnrY(luma: $0.baseAddress!, width: 0, height: 8, stride: 8, stamp: stamp) } == nil)
        #expect(tiny.withUnsafeBufferPointer { q.psnrY(luma: $0.baseAddress!, width: 8, height: 8, stride: 4, stamp: stamp) } == nil)
        #expect(q.referencePicture(width: 20000, height: 2, stamp: stamp) == nil)
        #expect(q.referencePicture(width: 4096, height: 4096, stamp: stamp) == nil)
    }

    @Test func ssimIsSampledEveryFourthFrameOfASize() {
        let q = PictureQuality()
        var got: [Bool] = []
        for n in 0..<9 {
            let stamp = FrameStamp(frameNumber: UInt32(n), captureMillis: 0)
            let w = n < 6 ? 320 : 160, h = n < 6 ? 180 : 90
            let luma = picture(q, stamp, width: w, height: h)
            let m = luma.withUnsafeBufferPointer { q.measure(luma: $0.baseAddress!, width: w, height: h, stride: w, stamp: stamp) }
            got.append(m?.ssimY != nil)
        }
        #expect(got == [true, false, false, false, true, false, true, false, false])
    }
}
