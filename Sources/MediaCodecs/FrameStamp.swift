/// A machine-readable stamp drawn into each synthetic picture: frame number and capture time,
/// as a grid of large black/white cells that survives VP8 compression at 320x180, read back from
/// the decoded luma plane.
///
/// Layout: 18 × 4 cells of `cell = max(4, width / 40)` pixels (8 px at 320 wide), starting one
/// cell from the top-left corner. 72 bits: frame number (32), capture time in ms modulo 2³² (32),
/// check byte (8). Cells are aligned to the 4×4 transform grid so the encoder keeps them flat.
public struct FrameStamp: Equatable, Sendable {
    public static let columns = 18
    public static let rows = 4

    public var frameNumber: UInt32
    /// Capture time in milliseconds since the Unix epoch, modulo 2³².
    public var captureMillis: UInt32

    public init(frameNumber: UInt32, captureMillis: UInt32) {
        self.frameNumber = frameNumber
        self.captureMillis = captureMillis
    }

    public static func cellSize(width: Int) -> Int { max(4, (width / 40) & ~3) }

    var check: UInt8 {
        var c: UInt32 = 0x5A
        for v in [frameNumber, captureMillis] {
            for s in stride(from: 0, to: 32, by: 8) { c = (c &* 31) &+ ((v >> UInt32(s)) & 0xFF) }
        }
        return UInt8(truncatingIfNeeded: c)
    }

    func bit(_ i: Int) -> Bool {
        switch i {
        case 0..<32: return (frameNumber >> UInt32(31 - i)) & 1 == 1
        case 32..<64: return (captureMillis >> UInt32(63 - i)) & 1 == 1
        default: return (check >> UInt8(71 - i)) & 1 == 1
        }
    }

    /// Draws the stamp into the picture (neutral chroma under it).
    public func draw(into frame: inout I420Frame) {
        let c = Self.cellSize(width: frame.width)
        let w = frame.width, cw = frame.chromaWidth
        guard c * (Self.columns + 2) <= w, c * (Self.rows + 2) <= frame.height else { return }
        frame.withPlanes { y, u, v in
            for i in 0..<(Self.columns * Self.rows) {
                let value: UInt8 = bit(i) ? 235 : 16
                let x0 = c * (1 + i % Self.columns), y0 = c * (1 + i / Self.columns)
                for row in y0..<(y0 + c) {
                    let base = row * w + x0
                    for x in 0..<c { y[base + x] = value }
                }
            }
            let half = c / 2
            for row in half..<(half * (Self.rows + 1)) {
                let base = row * cw
                for x in half..<(half * (Self.columns + 1)) { u[base + x] = 128; v[base + x] = 128 }
            }
        }
    }

    /// Reads a stamp back from a decoded luma plane; nil when the check byte does not match.
    public static func read(luma: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int) -> FrameStamp? {
        let c = cellSize(width: width)
        guard c * (columns + 2) <= width, c * (rows + 2) <= height, luma.count >= stride * height else { return nil }
        var bits = [Bool](repeating: false, count: columns * rows)
        let q = max(1, c / 4)
        for i in 0..<(columns * rows) {
            let x0 = c * (1 + i % columns) + c / 2 - q, y0 = c * (1 + i / columns) + c / 2 - q
            var sum = 0
            for row in y0..<(y0 + 2 * q) {
                for x in x0..<(x0 + 2 * q) { sum += Int(luma[row * stride + x]) }
            }
            bits[i] = sum / (4 * q * q) >= 126
        }
        var n: UInt32 = 0, t: UInt32 = 0, k: UInt8 = 0
        for i in 0..<32 { n = n << 1 | (bits[i] ? 1 : 0) }
        for i in 32..<64 { t = t << 1 | (bits[i] ? 1 : 0) }
        for i in 64..<72 { k = k << 1 | (bits[i] ? 1 : 0) }
        let stamp = FrameStamp(frameNumber: n, captureMillis: t)
        return stamp.check == k ? stamp : nil
    }
}
