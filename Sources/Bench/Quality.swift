import MediaCodecs
import RTPCore
import Stats

extension Benchmarks {
    /// The cost of live picture quality at 720p30 (`PictureQuality`: the source picture drawn
    /// again from each frame's stamp, PSNR-Y of every frame, SSIM-Y of every fourth): 2 s of
    /// 720p VP8 decoded with the measurement and without it, alternating, the CPU difference per
    /// frame × 30 frames a second, as a percentage of one core (the decoding alone is in the
    /// note, in the same unit: no ratio, the two are not the same work).
    public func quality() throws -> BenchResult {
        let frames = try Self.frames(codec: .vp8)
        var result = BenchResult(
            name: "quality-720p30", unit: "% of a core", runs: [], baseline: nil)
        let repeats = max(1, Int(5 * scale))
        var measured = 0
        var decoding: [Double] = []
        for _ in 0..<runs {
            var plain = 0.0, with = 0.0
            for _ in 0..<repeats {
                let q = PictureQuality()
                let d1 = try LibvpxDecoder(), d2 = try LibvpxDecoder()
                var failure: CodecError?
                plain += cpuSeconds {
                    do throws(CodecError) { for f in frames { _ = try d1.decode(f, readStamp: true) } } catch { failure = error }
                }
                with += cpuSeconds {
                    do throws(CodecError) {
                        for f in frames { if try d2.decode(f, readStamp: true, quality: q)?.quality != nil { measured += 1 } }
                    } catch { failure = error }
                }
                if let failure { throw failure }
            }
            let n = Double(frames.count * repeats)
            result.runs.append(max(0, with - plain) / n * 30 * 100)
            decoding.append(plain / n * 30 * 100)
        }
        result.note =
            "\(measured) of \(frames.count * repeats * runs) decoded frames measured (PSNR-Y each, SSIM-Y every fourth); "
            + "VP8 decoding alone \(Units.fixed(BenchResult.median(decoding), 2)) % of a core"
        return result
    }
}
