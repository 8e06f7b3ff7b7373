internal import CVPX

/// What decoding one VP8 frame produced.
public struct DecodedVideoFrame: Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// The stamp read back from the picture; nil when unreadable.
    public var stamp: FrameStamp?
    /// Against the picture the stamp names (`PictureQuality`), when measured.
    public var quality: PictureQuality.Measurement? = nil
}

/// A libvpx decoder for one received stream, VP8 or VP9. Not thread-safe.
public final class LibvpxDecoder {
    var ctx = vpx_codec_ctx_t()

    public init(vp9: Bool = false) throws(CodecError) {
        let rc = vp9 ? cvpx_vp9_dec_init(&ctx) : cvpx_dec_init(&ctx)
        guard rc == VPX_CODEC_OK else { throw CodecError("vpx_codec_dec_init", code: Int32(rc.rawValue)) }
    }

    deinit { vpx_codec_destroy(&ctx) }

    /// Decodes one frame and reads its stamp. Returns nil when no picture came out.
    public func decode(_ bytes: [UInt8], readStamp: Bool = true, quality: PictureQuality? = nil) throws(CodecError) -> DecodedVideoFrame? {
        let rc = bytes.withUnsafeBufferPointer { vpx_codec_decode(&ctx, $0.baseAddress, UInt32($0.count), nil, 0) }
        guard rc == VPX_CODEC_OK else {
            throw CodecError("vpx_codec_decode", code: Int32(rc.rawValue), message: String(cString: vpx_codec_error(&ctx)))
        }
        var iter: vpx_codec_iter_t?
        var result: DecodedVideoFrame?
        while let img = vpx_codec_get_frame(&ctx, &iter) {
            let w = Int(img.pointee.d_w), h = Int(img.pointee.d_h)
            var stamp: FrameStamp?
            var measured: PictureQuality.Measurement?
            if readStamp, let y = img.pointee.planes.0 {
                let stride = Int(img.pointee.stride.0)
                stamp = FrameStamp.read(luma: UnsafeBufferPointer(start: y, count: stride * h), width: w, height: h, stride: stride)
                if let quality, let stamp { measured = quality.measure(luma: y, width: w, height: h, stride: stride, stamp: stamp) }
            }
            result = DecodedVideoFrame(width: w, height: h, stamp: stamp, quality: measured)
        }
        return result
    }
}
