internal import COpenH264

/// An openh264 H.264 decoder for one received stream: takes one access unit as an Annex B byte
/// stream (what `H264Depacketizer` reassembles) and reads the stamp from the picture. Error
/// concealment is off, so a broken reference chain is an error the receiver answers with a PLI
/// rather than a concealed picture counted as decoded. Not thread-safe.
public final class H264Decoder {
    var decoder: UnsafeMutablePointer<ISVCDecoder?>?

    public init() throws(CodecError) {
        var dec: UnsafeMutablePointer<ISVCDecoder?>?
        let rc = coh_dec_create(&dec)
        guard rc == 0, let dec else { throw CodecError("WelsCreateDecoder", code: Int32(rc)) }
        decoder = dec
        _ = coh_dec_set_trace_level(dec, Int32(WELS_LOG_QUIET))
        var param = SDecodingParam()
        param.sVideoProperty.eVideoBsType = VIDEO_BITSTREAM_AVC
        param.eEcActiveIdc = ERROR_CON_DISABLE
        let initialized = coh_dec_initialize(dec, &param)
        guard initialized == 0 else {
            coh_dec_destroy(dec)
            decoder = nil
            throw CodecError("openh264 decoder Initialize", code: Int32(initialized))
        }
    }

    deinit { if let decoder { coh_dec_destroy(decoder) } }

    public func decode(_ bytes: [UInt8], readStamp: Bool = true, quality: PictureQuality? = nil) throws(CodecError) -> DecodedVideoFrame? {
        guard let decoder, !bytes.isEmpty else { return nil }
        var planes: (UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?) = (nil, nil, nil)
        var info = SBufferInfo()
        let state = bytes.withUnsafeBufferPointer { b in
            withUnsafeMutablePointer(to: &planes) { p in
                p.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 3) { dst in
                    coh_dec_decode(decoder, b.baseAddress, Int32(b.count), dst, &info)
                }
            }
        }
        guard state.rawValue == 0 else { throw CodecError("openh264 DecodeFrameNoDelay", code: Int32(bitPattern: state.rawValue)) }
        guard coh_buf_ready(&info) != 0, let y = planes.0 else { return nil }
        let w = Int(coh_buf_width(&info)), h = Int(coh_buf_height(&info)), stride = Int(coh_buf_luma_stride(&info))
        var stamp: FrameStamp?
        var measured: PictureQuality.Measurement?
        if readStamp {
            stamp = FrameStamp.read(luma: UnsafeBufferPointer(start: y, count: stride * h), width: w, height: h, stride: stride)
            if let quality, let stamp { measured = quality.measure(luma: y, width: w, height: h, stride: stride, stamp: stamp) }
        }
        return DecodedVideoFrame(width: w, height: h, stamp: stamp, quality: measured)
    }
}

extension H264Decoder: VideoDecoder {}
