import MediaCodecs
import RTPCore
import Stats

extension Benchmarks {
    /// The cost of live picture quality (`PictureQuality`: the source picture drawn again from
    /// each frame's stamp, PSNR-Y of every frame, SSIM-Y of every fourth): 2 s of VP8 decoded
    /// with the measurement and without it, alternating; the CPU difference per frame × 30 frames
    /// a second, as a percentage of one core (the decoding alone is in the note, in the same
    /// unit: no ratio, the two are not the same work). Two cases: one 720p30 stream, and the
    /// pre-flight's three simulcast layers (180p, 360p, 720p) side by side.
    public func quality() throws -> [BenchResult] {
        let sizes = [(1280, 720), (640, 360), (320, 180)]
        var frames: [[[UInt8]]] = []
        for (w, h) in sizes { frames.append(try Self.frames(codec: .vp8, width: w, height: h)) }
        return [
            try qualityCost(name: "quality-720p30", layers: [frames[0]]),
            try qualityCost(name: "quality-simulcast", layers: frames),
            // A sender that scales (`receive --capture-size 720p`): a 360p stream measured against
            // the 720p source scaled down (libyuv), every fourth frame again at 720p.
            try qualityCost(name: "quality-360p-of-720p-capture", layers: [frames[1]], capture: (1280, 720))
        ]
    }

    func qualityCost(name: String, layers: [[[UInt8]]], capture: (width: Int, height: Int)? = nil) throws -> BenchResult {
        var result = BenchResult(name: name, unit: "% of a core", runs: [], baseline: nil)
        let repeats = max(1, Int(5 * scale))
        var measured = 0, total = 0
        var decoding: [Double] = []
        for _ in 0..<runs {
            var plain = 0.0, with = 0.0
            for _ in 0..<repeats {
                for frames in layers {
                    let q = PictureQuality()
                    q.captureSize = capture
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
                    total += frames.count
                    if let failure { throw failure }
                }
            }
            // Seconds of video decoded per run: each layer's frames at 30 fps, the layers side by side.
            let seconds = Double(layers[0].count * repeats) / 30
            result.runs.append(max(0, with - plain) / seconds * 100)
            decoding.append(plain / seconds * 100)
        }
        let atCapture = capture.map { ", and at \($0.width)x\($0.height) every fourth" } ?? ""
        result.note =
            "\(measured) of \(total) decoded frames measured (PSNR-Y each, SSIM-Y every fourth\(atCapture)); VP8 decoding alone "
            + "\(Units.fixed(BenchResult.median(decoding), 2)) % of a core"
        return result
    }
}
