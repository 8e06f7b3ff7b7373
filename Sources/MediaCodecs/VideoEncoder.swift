public import RTPCore

/// One layer's video encoder, whatever the codec: the media thread, the shared encoder, the
/// simulation and the replay library drive every codec through this.
public protocol VideoEncoder: AnyObject {
    var config: VideoLayerConfig { get }
    /// The rate asked for, and the rate the codec's own rate control is handed (after the trim).
    var targetBitrate: Int { get }
    var encoderBitrate: Int { get }
    /// Changes the target bitrate while running (takes effect on the next frame).
    func setTargetBitrate(_ bps: Int) throws(CodecError)
    /// Encodes one picture. Returns nil when the encoder dropped the frame.
    func encode(
        _ frame: inout I420Frame, layer: Int, frameNumber: UInt32, captureMicros: Int64,
        forceKeyFrame: Bool, clock: () -> Int64
    ) throws(CodecError) -> EncodedVideoFrame?
    /// The last encoded frame's quantizer on the scale libwebrtc's quality scaler reads (VP8
    /// 0–127, VP9 and AV1 0–255, H.264 0–51 read from the slice headers as libwebrtc's
    /// `h264_bitstream_parser.cc` reads it); nil when the codec cannot say.
    var lastQP: Int? { get }
}

extension VideoEncoder {
    public var lastQP: Int? { nil }
}

extension LibvpxEncoder: VideoEncoder {}

/// One received stream's video decoder, whatever the codec.
public protocol VideoDecoder: AnyObject {
    /// Decodes one frame and reads its stamp; with `quality`, measures the picture against the
    /// one its stamp names. Returns nil when no picture came out.
    func decode(_ bytes: [UInt8], readStamp: Bool, quality: PictureQuality?) throws(CodecError) -> DecodedVideoFrame?
}

extension VideoDecoder {
    public func decode(_ bytes: [UInt8], readStamp: Bool) throws(CodecError) -> DecodedVideoFrame? {
        try decode(bytes, readStamp: readStamp, quality: nil)
    }
}

extension LibvpxDecoder: VideoDecoder {}

extension VideoCodec {
    /// An encoder of this codec for one layer.
    /// - Parameters:
    ///   - keyFrameInterval: frames between automatic key frames; 0 = only on request.
    ///   - frameDrop: let the encoder drop frames to hold its rate (off for replay loops, whose
    ///     every frame is kept).
    public func makeEncoder(config: VideoLayerConfig, keyFrameInterval: Int, frameDrop: Bool = true) throws(CodecError) -> any VideoEncoder
    {
        switch self {
        case .vp8, .vp9:
            try LibvpxEncoder(config: config, codec: self, keyFrameInterval: keyFrameInterval, frameDropThreshold: frameDrop ? 30 : 0)
        case .h264: try H264Encoder(config: config, keyFrameInterval: keyFrameInterval, frameSkip: frameDrop)
        case .av1: try AV1Encoder(config: config, keyFrameInterval: keyFrameInterval, frameDrop: frameDrop)
        }
    }

    public func makeDecoder() throws(CodecError) -> any VideoDecoder {
        switch self {
        case .vp8, .vp9: try LibvpxDecoder(vp9: self == .vp9)
        case .h264: try H264Decoder()
        case .av1: try AV1Decoder()
        }
    }
}
