/// A planar YUV 4:2:0 picture in one contiguous buffer (Y, then U, then V, tightly packed),
/// allocated once and reused for every frame; libvpx wraps it without copying.
public struct I420Frame: Sendable {
    public let width: Int
    public let height: Int
    public var data: [UInt8]

    var chromaWidth: Int { (width + 1) / 2 }
    var chromaHeight: Int { (height + 1) / 2 }
    var lumaSize: Int { width * height }
    var chromaSize: Int { chromaWidth * chromaHeight }

    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "frame size must be positive")
        self.width = width
        self.height = height
        let cs = ((width + 1) / 2) * ((height + 1) / 2)
        data = [UInt8](repeating: 128, count: width * height + 2 * cs)
    }

    /// Runs `body` with mutable views of the three planes.
    mutating func withPlanes<R>(
        _ body: (UnsafeMutableBufferPointer<UInt8>, UnsafeMutableBufferPointer<UInt8>, UnsafeMutableBufferPointer<UInt8>) throws -> R
    ) rethrows -> R {
        let ls = lumaSize, cs = chromaSize
        return try data.withUnsafeMutableBufferPointer { all in
            let base = all.baseAddress!
            return try body(
                UnsafeMutableBufferPointer(start: base, count: ls),
                UnsafeMutableBufferPointer(start: base + ls, count: cs),
                UnsafeMutableBufferPointer(start: base + ls + cs, count: cs))
        }
    }
}

extension I420Frame {
    /// Scales `source` down into this picture by area averaging: each output sample is the mean
    /// of the input samples its footprint covers (whole samples, the footprint's edges rounded
    /// outwards), per plane — what a camera pipeline's box filter does (libyuv `kFilterBox`,
    /// used by a browser to send a smaller size than it captures). Not for upscaling.
    public mutating func downscale(from source: I420Frame) {
        let sw = source.width, sh = source.height, dw = width, dh = height
        guard sw >= dw, sh >= dh else { return }
        source.data.withUnsafeBufferPointer { src in
            let s = src.baseAddress!
            let scw = source.chromaWidth, sch = source.chromaHeight, sl = source.lumaSize, sc = source.chromaSize
            let dcw = chromaWidth, dch = chromaHeight
            withPlanes { y, u, v in
                Self.box(s, sw, sh, into: y.baseAddress!, dw, dh)
                Self.box(s + sl, scw, sch, into: u.baseAddress!, dcw, dch)
                Self.box(s + sl + sc, scw, sch, into: v.baseAddress!, dcw, dch)
            }
        }
    }

    static func box(_ s: UnsafePointer<UInt8>, _ sw: Int, _ sh: Int, into d: UnsafeMutablePointer<UInt8>, _ dw: Int, _ dh: Int) {
        guard dw > 0, dh > 0, sw >= dw, sh >= dh else { return }
        for oy in 0..<dh {
            let y0 = oy * sh / dh, y1 = max(y0 + 1, ((oy + 1) * sh + dh - 1) / dh)
            for ox in 0..<dw {
                let x0 = ox * sw / dw, x1 = max(x0 + 1, ((ox + 1) * sw + dw - 1) / dw)
                var sum = 0
                for yy in y0..<min(y1, sh) {
                    let row = s + yy * sw
                    for xx in x0..<min(x1, sw) { sum += Int(row[xx]) }
                }
                let n = (min(y1, sh) - y0) * (min(x1, sw) - x0)
                d[oy * dw + ox] = UInt8(truncatingIfNeeded: (sum + n / 2) / max(1, n))
            }
        }
    }
}
