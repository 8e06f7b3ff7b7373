import RTPCore

/// Deterministic synthetic video: a moving diagonal gradient, bouncing boxes, a patch of fresh
/// noise every frame (so the encoder always has work at any bitrate) and a `FrameStamp`.
///
/// The picture depends only on (seed, frame number, size), so every simulcast layer shows the
/// same scene drawn at its own resolution, and two runs with one seed produce identical frames.
/// Each size is drawn natively, not scaled from a larger one (the boxes' starting offsets are in
/// pixels, the noise patch is per pixel): a lower layer is not a downscale of a higher one, so a
/// decoded layer is measured only against the source at its own size (`PictureQuality`).
///
/// Three kinds of scene (`Content`) span what a camera sends: the bits a given quantizer costs
/// differ several times between a still desk and a hand-held street, and so does the rung a
/// browser's quality scaler settles on for one link. `natural` is the picture every calibrated
/// figure was measured with.
public struct SyntheticVideoSource: Sendable {
    /// What the camera sees.
    public enum Content: String, Sendable, CaseIterable {
        /// A still desk: a fixed background, one slow box, a little sensor noise.
        case easy
        /// A panning camera over a smooth scene, three boxes and a patch of fresh texture.
        case natural
        /// A hand-held street: a shaking pan over fine texture, six fast boxes, sensor noise over
        /// the whole picture and a larger patch of fresh texture.
        case hard
    }

    public let seed: UInt64
    public let content: Content
    /// `hard`'s background texture: 256 × 256 values that pan with the camera (fixed per seed,
    /// so motion search can follow it, but costly in detail).
    let texture: [UInt8]

    public init(seed: UInt64 = 1, content: Content = .natural) {
        self.seed = seed
        self.content = content
        if content == .hard {
            var rng = SplitMix64(seed: seed ^ 0x7E57_7E57)
            var t = [UInt8](repeating: 0, count: 256 * 256)
            var i = 0
            while i < t.count {
                let r = rng.next()
                for k in 0..<8 { t[i + k] = UInt8(truncatingIfNeeded: (r >> UInt64(k * 8)) & 0x1F) }
                i += 8
            }
            texture = t
        } else {
            texture = []
        }
    }

    public func fill(_ frame: inout I420Frame, frameNumber: UInt32, captureMillis: UInt32) {
        let w = frame.width, h = frame.height
        let cw = frame.chromaWidth, ch = frame.chromaHeight
        let n = Int(frameNumber)
        var rng = SplitMix64(seed: seed &+ UInt64(frameNumber) &* 0x9E37_79B9_7F4A_7C15)
        // The background pans (a pure translation, as a camera would), so motion search can
        // predict it and the encoder can meet low targets; luma and chroma move together. A still
        // desk does not pan; a hand-held camera pans faster and shakes (a few pixels either way).
        var dx = (n * 4 * w / 1280) & ~1, dy = (n * 2 * h / 720) & ~1
        switch content {
        case .easy: (dx, dy) = (0, 0)
        case .natural: break
        case .hard:
            var shaker = SplitMix64(seed: seed ^ UInt64(n / 3) &* 0xBF58_476D_1CE4_E5B9)
            let shake = shaker.next()
            dx = (n * 7 * w / 1280 + Int(shake & 0x7) * w / 640) & ~1
            dy = (n * 3 * h / 720 + Int((shake >> 8) & 0x7) * h / 360) & ~1
        }
        frame.withPlanes { y, u, v in
            // Per-pixel divisions hoisted into one row of column terms (same values as
            // `(x + dx) * 256 / w` per pixel), then each row is a vectorizable add-and-mask;
            // the chroma rows are all the same (U) or constant (V).
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: max(w, 1)) { cols in
                for x in 0..<w { cols[x] = Int32((x + dx) * 256 / w) }
                var previous: Int32 = -1
                for row in 0..<h {
                    let base = row * w
                    let k = Int32((row + dy) * 256 / h / 2)
                    if k == previous { // the same as the row above (k changes every ~h/128 rows)
                        UnsafeMutableRawPointer(y.baseAddress! + base).copyMemory(from: y.baseAddress! + base - w, byteCount: w)
                        continue
                    }
                    previous = k
                    for x in 0..<w { y[base + x] = UInt8(truncatingIfNeeded: 40 + ((cols[x] &+ k) & 0x7F)) }
                }
            }
            if content == .hard { // fine texture over the background, panning with it
                texture.withUnsafeBufferPointer { t in
                    for row in 0..<h {
                        let base = row * w, trow = ((row + dy) & 0xFF) << 8
                        for x in 0..<w { y[base + x] &+= t[trow | ((x + dx) & 0xFF)] }
                    }
                }
            }
            if ch > 0 && cw > 0 {
                for x in 0..<cw { u[x] = UInt8(truncatingIfNeeded: 96 + (((2 * x + dx) * 256 / w / 4) & 0x3F)) }
                for row in 1..<max(1, ch) {
                    UnsafeMutableRawPointer(u.baseAddress! + row * cw).copyMemory(from: u.baseAddress!, byteCount: cw)
                }
                for row in 0..<ch {
                    let vv = UInt8(truncatingIfNeeded: 96 + (((2 * row + dy) * 256 / h / 4) & 0x3F))
                    (v.baseAddress! + row * cw).update(repeating: vv, count: cw)
                }
            }
            // Bouncing boxes.
            let (boxes, pace) = content == .easy ? (1, 3) : content == .natural ? (3, 5) : (6, 9)
            for b in 0..<boxes {
                let size = max(8, w / (6 + 2 * (b % 3))) & ~1
                let speed = pace + 4 * b
                let bx = bounce(n * speed * w / 640 + b * 97, range: w - size) & ~1
                let by = bounce(n * (speed - 2) * h / 360 + b * 53, range: h - size) & ~1
                for row in by..<min(h, by + size) {
                    let base = row * w
                    for col in bx..<min(w, bx + size) { y[base + col] = UInt8(truncatingIfNeeded: 60 + 70 * b) }
                }
                for row in (by / 2)..<min(ch, (by + size) / 2) {
                    let base = row * cw
                    for col in (bx / 2)..<min(cw, (bx + size) / 2) {
                        u[base + col] = UInt8(truncatingIfNeeded: 60 + 50 * b)
                        v[base + col] = UInt8(truncatingIfNeeded: 200 - 50 * b)
                    }
                }
            }
            // Low-amplitude texture patch in the lower-right area, new every frame: keeps the encoder
            // busy at any rate without being so incompressible that low targets cannot be met. The
            // still desk has a smaller, fainter one; the street a larger, stronger one.
            let (pdiv, pmask): (Int, UInt64) = content == .easy ? (10, 0x03) : content == .natural ? (5, 0x07) : (3, 0x0F)
            let px = (w * 5 / 8) & ~1, py = (h * 5 / 8) & ~1, pw = (w / pdiv) & ~1, ph = (h / pdiv) & ~1
            for row in py..<min(h, py + ph) {
                let base = row * w
                var x = px
                while x < min(w, px + pw) {
                    let r = rng.next()
                    var k = 0
                    while k < 8 && x < px + pw {
                        y[base + x] = UInt8(truncatingIfNeeded: 100 &+ ((r >> UInt64(k * 8)) & pmask))
                        x += 1; k += 1
                    }
                }
            }
            // The street's sensor noise: ±1 on every luma sample, new every frame.
            if content == .hard {
                var i = 0
                let count = w * h
                while i < count {
                    let r = rng.next()
                    var k = 0
                    while k < 32 && i < count {
                        let bits = (r >> UInt64(2 * k)) & 0x3
                        // 0 → −1, 1/2 → 0, 3 → +1
                        y[i] = y[i] &+ UInt8(truncatingIfNeeded: Int(bits == 3 ? 1 : bits == 0 ? 255 : 0))
                        i += 1; k += 1
                    }
                }
            }
        }
        FrameStamp(frameNumber: frameNumber, captureMillis: captureMillis).draw(into: &frame)
    }

    func bounce(_ p: Int, range: Int) -> Int {
        guard range > 0 else { return 0 }
        let m = ((p % (2 * range)) + 2 * range) % (2 * range)
        return m < range ? m : 2 * range - m
    }
}
