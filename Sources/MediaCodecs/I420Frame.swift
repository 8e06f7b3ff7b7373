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
