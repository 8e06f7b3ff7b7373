import CYUV

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
    /// Scales `source` down into this picture as a browser's capture pipeline does: libwebrtc
    /// adapts a camera frame to the size it sends with `I420Buffer::CropAndScaleFrom`, which is
    /// libyuv's `I420Scale` with `kFilterBox` (`api/video/i420_buffer.cc`) — here libyuv itself,
    /// so a reference drawn at the capture size and scaled matches what Chromium encodes.
    /// Not for upscaling (nothing changes).
    public mutating func downscale(from source: I420Frame) {
        guard source.width >= width, source.height >= height else { return }
        Self.scale(from: source, into: &self)
    }

    /// libyuv `I420Scale(kFilterBox)` of every plane of `source` to this frame's size, either way.
    static func scale(from source: I420Frame, into target: inout I420Frame) {
        let sw = Int32(source.width), sh = Int32(source.height), dw = Int32(target.width), dh = Int32(target.height)
        let scw = Int32(source.chromaWidth), dcw = Int32(target.chromaWidth)
        let sl = source.lumaSize, sc = source.chromaSize
        source.data.withUnsafeBufferPointer { src in
            let s = src.baseAddress!
            target.withPlanes { y, u, v in
                _ = I420Scale(
                    s, sw, s + sl, scw, s + sl + sc, scw, sw, sh, y.baseAddress!, dw, u.baseAddress!, dcw, v.baseAddress!, dcw, dw, dh,
                    kFilterBox)
            }
        }
    }

    /// Scales a luma plane (`width` × `height`, `stride` bytes a row) to `target`'s luma plane's
    /// size with libyuv's `ScalePlane(kFilterBox)`: how libwebrtc's `I420PSNR` brings a smaller
    /// decoded frame to the reference's size before comparing (`common_video/libyuv/webrtc_libyuv.cc`
    /// scales the test buffer with `I420Buffer::ScaleFrom`). Only the luma plane is written.
    public static func scaleLuma(
        _ luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, into target: inout I420Frame
    ) {
        let dw = Int32(target.width), dh = Int32(target.height)
        target.data.withUnsafeMutableBufferPointer { d in
            ScalePlane(luma, Int32(stride), Int32(width), Int32(height), d.baseAddress!, dw, dw, dh, kFilterBox)
        }
    }
}
