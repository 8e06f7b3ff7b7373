#if canImport(Glibc)
    import Glibc
#endif

/// Full-reference picture quality of decoded frames from pubbot's synthetic source, measured
/// live: the source is deterministic (seed, frame number, size; `SyntheticVideoSource`), so the
/// picture the encoder was given is drawn again from the frame's stamp — nothing is recorded or
/// sent beside the media.
///
/// PSNR of the luma plane (ITU-T J.340's definition, as libwebrtc's `I420PSNR` and ffmpeg's
/// `psnr` filter compute it): 10·log10(255² / MSE) over every luma sample, the stamp's cells
/// included (they are part of the encoder's input, and ffmpeg, checking the figure, compares
/// whole frames). An identical frame has no finite PSNR; it is reported as `PictureQuality.maxPSNR`,
/// libwebrtc's cap (`kPerfectPSNR` in `common_video/libyuv/include/webrtc_libyuv.h`).
public final class PictureQuality {
    /// What an identical frame scores (libwebrtc `kPerfectPSNR`).
    public static let maxPSNR = 48.0
    /// Larger decoded pictures are not measured (a hostile stream's size must not allocate
    /// without bound): 4096 × 2304.
    public static let maxSamples = 4096 * 2304

    let source: SyntheticVideoSource
    var reference: I420Frame?
    var lastStamp: FrameStamp?
    /// Where each measured frame's decoded and reference luma go (`--dump-frames`), if anywhere.
    public var sink: (any DecodedFrameSink)?
    /// The measuring thread's CPU clock (µs), handed in by the driver: each measurement's cost
    /// is kept in `lastCostMicros` for a `QualityBudget` to charge.
    public var cpuClock: (() -> Int64)?
    public private(set) var lastCostMicros: Int64 = 0

    public init(seed: UInt64 = 1, content: SyntheticVideoSource.Content = .natural) {
        source = SyntheticVideoSource(seed: seed, content: content)
    }

    /// A sender that captures at this size and scales down to what it sends (a browser's camera
    /// pipeline): the reference is the source drawn at the capture size and scaled to the
    /// decoded size as libwebrtc scales it (`I420Frame.downscale`), so a lower rung is compared
    /// with the picture its sender had. On the SSIM sample the frame is also measured at the
    /// capture size (`Measurement.psnrYCapture`): the decoded picture scaled up to it, as
    /// libwebrtc's `I420PSNR` compares frames of different sizes, against the source drawn there
    /// — a lower rung charged for the detail it lost. nil: the source drawn natively at the
    /// decoded size (pubbot's own layers, which are not downscales of one picture), no capture figure.
    public var captureSize: (width: Int, height: Int)?
    var capture: I420Frame?
    /// The decoded luma scaled up to the capture size (reused).
    var upscaled: I420Frame?
    /// The stamp `capture` holds the picture of.
    var captureStamp: FrameStamp?

    /// The capture size when it can be used with a `width` × `height` frame.
    func usableCapture(width: Int, height: Int) -> (width: Int, height: Int)? {
        guard let c = captureSize, c.width >= width, c.height >= height, c.width * c.height <= Self.maxSamples else { return nil }
        return c
    }

    /// The source picture `stamp` names at the capture size (cached per stamp).
    func capturePicture(_ c: (width: Int, height: Int), stamp: FrameStamp) -> I420Frame {
        if capture?.width != c.width || capture?.height != c.height {
            capture = I420Frame(width: c.width, height: c.height)
            captureStamp = nil
        }
        if captureStamp != stamp {
            source.fill(&capture!, frameNumber: stamp.frameNumber, captureMillis: stamp.captureMillis)
            captureStamp = stamp
        }
        return capture!
    }

    /// The picture `stamp` names at `width` × `height`, as the publisher drew it (cached: one
    /// buffer reused while the size holds). nil for a size that cannot be drawn or measured.
    public func referencePicture(width: Int, height: Int, stamp: FrameStamp) -> I420Frame? {
        guard width > 0, height > 0, width <= 16384, width * height <= Self.maxSamples else { return nil }
        if reference?.width != width || reference?.height != height {
            reference = I420Frame(width: width, height: height)
            measured = 0 // the SSIM sample restarts with each size (each `--dump-frames` file)
        }
        if let c = usableCapture(width: width, height: height), c.width > width || c.height > height {
            reference!.downscale(from: capturePicture(c, stamp: stamp))
            lastStamp = stamp
            return reference
        }
        source.fill(&reference!, frameNumber: stamp.frameNumber, captureMillis: stamp.captureMillis)
        lastStamp = stamp
        return reference
    }

    /// SSIM is computed on every `ssimEvery`-th frame measured at one size, from its first (a
    /// sample: it costs several times what PSNR does).
    public var ssimEvery = 4
    var measured = 0

    /// What one frame measured: PSNR-Y always, SSIM-Y on the sample, and on the sample the
    /// PSNR-Y at the capture size when one is set.
    public struct Measurement: Sendable, Equatable {
        public var psnrY: Double
        public var ssimY: Double?
        public var psnrYCapture: Double?

        public init(psnrY: Double, ssimY: Double? = nil, psnrYCapture: Double? = nil) {
            self.psnrY = psnrY
            self.ssimY = ssimY
            self.psnrYCapture = psnrYCapture
        }
    }

    /// Measures one decoded luma plane against the picture its stamp names; nil when it cannot.
    public func measure(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, stamp: FrameStamp) -> Measurement? {
        let start = cpuClock?() ?? 0
        defer { if let cpuClock { lastCostMicros = cpuClock() - start } }
        guard let psnr = psnrY(luma: luma, width: width, height: height, stride: stride, stamp: stamp) else { return nil }
        defer { measured += 1 }
        guard measured % max(1, ssimEvery) == 0 else { return Measurement(psnrY: psnr) }
        let ssim = ssimY(luma: luma, width: width, height: height, stride: stride, stamp: stamp)
        var atCapture: Double?
        if usableCapture(width: width, height: height) != nil {
            atCapture = psnrYAtCapture(luma: luma, width: width, height: height, stride: stride, stamp: stamp) ?? psnr
        }
        return Measurement(psnrY: psnr, ssimY: ssim, psnrYCapture: atCapture)
    }

    /// PSNR-Y at the capture size: the decoded luma scaled up to it (libyuv `kFilterBox`, as
    /// libwebrtc's `I420PSNR` scales the smaller frame) against the source drawn there. nil when
    /// there is no usable capture size or the frame already has it (its figure is `psnrY`).
    public func psnrYAtCapture(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, stamp: FrameStamp) -> Double? {
        guard stride >= width, width > 0, height > 0, let c = usableCapture(width: width, height: height),
            c.width > width || c.height > height
        else { return nil }
        let ref = capturePicture(c, stamp: stamp)
        if upscaled?.width != c.width || upscaled?.height != c.height { upscaled = I420Frame(width: c.width, height: c.height) }
        I420Frame.scaleLuma(luma, width: width, height: height, stride: stride, into: &upscaled!)
        let n = c.width * c.height
        let sse = ref.data.withUnsafeBufferPointer { r in
            upscaled!.data.withUnsafeBufferPointer { u in
                sink?.writeCapture(
                    decoded: UnsafeBufferPointer(rebasing: u.prefix(n)), reference: UnsafeBufferPointer(rebasing: r.prefix(n)),
                    width: c.width, height: c.height)
                return Self.sumOfSquaredErrors(
                    u.baseAddress!, stride: c.width, r.baseAddress!, stride: c.width, width: c.width, height: c.height)
            }
        }
        return Self.psnr(sse: sse, samples: c.width * c.height)
    }

    /// PSNR-Y in dB of a decoded luma plane (`stride` bytes a row) against the picture its stamp
    /// names; nil when it cannot be measured.
    public func psnrY(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, stamp: FrameStamp) -> Double? {
        guard stride >= width, let ref = referencePicture(width: width, height: height, stamp: stamp) else { return nil }
        let sse = ref.data.withUnsafeBufferPointer { r in
            if let sink {
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: width * height) { d in
                    for row in 0..<height { (d.baseAddress! + row * width).update(from: luma + row * stride, count: width) }
                    sink.write(
                        decoded: UnsafeBufferPointer(d), reference: UnsafeBufferPointer(rebasing: r.prefix(width * height)), width: width,
                        height: height)
                }
            }
            return Self.sumOfSquaredErrors(luma, stride: stride, r.baseAddress!, stride: width, width: width, height: height)
        }
        return Self.psnr(sse: sse, samples: width * height)
    }

    /// SSIM of a decoded luma plane against the picture its stamp names (call after `psnrY` for
    /// the same frame: it reuses the picture drawn there); nil when it cannot be measured.
    public func ssimY(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, stamp: FrameStamp) -> Double? {
        guard stride >= width, width >= 8, height >= 8 else { return nil }
        if reference?.width != width || reference?.height != height || lastStamp != stamp {
            guard referencePicture(width: width, height: height, stamp: stamp) != nil else { return nil }
        }
        return reference!.data.withUnsafeBufferPointer { r in
            Self.ssim(luma, stride: stride, r.baseAddress!, stride: width, width: width, height: height)
        }
    }

    /// SSIM (Wang et al., IEEE TIP 2004) as x264 and ffmpeg's `ssim` filter compute it
    /// (`libavfilter/vf_ssim.c`): sums over 4×4 blocks, each 8×8 window (2×2 blocks) stepping 4
    /// pixels, C1 = (0.01·255)², C2 = (0.03·255)² scaled to the window's 64 samples, the mean
    /// over all windows — so the figure can be checked against ffmpeg's.
    static func ssim(_ a: UnsafePointer<UInt8>, stride sa: Int, _ b: UnsafePointer<UInt8>, stride sb: Int, width: Int, height: Int)
        -> Double
    {
        let bw = width / 4, bh = height / 4
        guard bw >= 2, bh >= 2 else { return 1 }
        // Two rows of block sums (s1, s2, ss, s12 per 4×4 block), the previous and the current.
        var previous = [Int64](repeating: 0, count: bw * 4), current = [Int64](repeating: 0, count: bw * 4)
        func blockRow(_ by: Int, into sums: inout [Int64]) {
            for bx in 0..<bw {
                var s1: Int64 = 0, s2: Int64 = 0, ss: Int64 = 0, s12: Int64 = 0
                for y in 0..<4 {
                    let p = a + (by * 4 + y) * sa + bx * 4, q = b + (by * 4 + y) * sb + bx * 4
                    for x in 0..<4 {
                        let u = Int64(p[x]), v = Int64(q[x])
                        s1 += u; s2 += v; ss += u * u + v * v; s12 += u * v
                    }
                }
                sums[bx * 4] = s1; sums[bx * 4 + 1] = s2; sums[bx * 4 + 2] = ss; sums[bx * 4 + 3] = s12
            }
        }
        let c1 = Double(Int64(0.01 * 0.01 * 255 * 255 * 64 + 0.5))
        let c2 = Double(Int64(0.03 * 0.03 * 255 * 255 * 64 * 63 + 0.5))
        var total = 0.0
        blockRow(0, into: &previous)
        for by in 1..<bh {
            blockRow(by, into: &current)
            for bx in 0..<(bw - 1) {
                var s1: Int64 = 0, s2: Int64 = 0, ss: Int64 = 0, s12: Int64 = 0
                for k in [bx * 4, bx * 4 + 4] {
                    s1 += previous[k] + current[k]; s2 += previous[k + 1] + current[k + 1]
                    ss += previous[k + 2] + current[k + 2]; s12 += previous[k + 3] + current[k + 3]
                }
                let vars = Double(ss * 64 - s1 * s1 - s2 * s2), covar = Double(s12 * 64 - s1 * s2)
                let f1 = Double(s1), f2 = Double(s2)
                total += (2 * f1 * f2 + c1) * (2 * covar + c2) / ((f1 * f1 + f2 * f2 + c1) * (vars + c2))
            }
            swap(&previous, &current)
        }
        return total / Double((bw - 1) * (bh - 1))
    }

    /// 10·log10(255² · samples / SSE), capped at `maxPSNR`.
    public static func psnr(sse: UInt64, samples: Int) -> Double {
        guard sse > 0 else { return maxPSNR }
        let mse = Double(sse) / Double(samples)
        return min(maxPSNR, 10 * log10(255 * 255 / mse))
    }

    /// Σ (a − b)² over a `width` × `height` block of two planes.
    static func sumOfSquaredErrors(
        _ a: UnsafePointer<UInt8>, stride sa: Int, _ b: UnsafePointer<UInt8>, stride sb: Int, width: Int, height: Int
    ) -> UInt64 {
        var total: UInt64 = 0
        for row in 0..<height {
            let p = a + row * sa, q = b + row * sb
            // A row's sum fits 32 bits (≤ 4096 × 255²); in 32-bit lanes it vectorizes.
            var s: UInt32 = 0
            for x in 0..<width {
                let d = Int32(p[x]) &- Int32(q[x])
                s &+= UInt32(bitPattern: d &* d)
            }
            total &+= UInt64(s)
        }
        return total
    }
}

/// Takes each measured frame's luma, decoded and reference (tightly packed, `width` × `height`):
/// the driver's file writer for `--dump-frames`, so an outside tool can check the figures.
public protocol DecodedFrameSink: AnyObject {
    func write(decoded: UnsafeBufferPointer<UInt8>, reference: UnsafeBufferPointer<UInt8>, width: Int, height: Int)
    /// The capture-size measurement's pair: the decoded luma scaled up, and the source there.
    func writeCapture(decoded: UnsafeBufferPointer<UInt8>, reference: UnsafeBufferPointer<UInt8>, width: Int, height: Int)
}

extension DecodedFrameSink {
    public func writeCapture(decoded: UnsafeBufferPointer<UInt8>, reference: UnsafeBufferPointer<UInt8>, width: Int, height: Int) {}
}
