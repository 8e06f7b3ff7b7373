internal import COpenH264
import RTPCore

/// An openh264 H.264 encoder for one simulcast layer, configured as libwebrtc configures it
/// (`h264_encoder_impl.cc` CreateEncoderParams): real-time camera usage, bitrate rate control,
/// Constrained Baseline (CAVLC, no B-frames), one slice per picture (RFC 6184 packetization
/// mode 1 fragments it), key frames only on request, constant SPS/PPS IDs, optional temporal
/// layers. Output is an Annex B byte stream (start codes before every NAL unit); a key frame
/// carries SPS and PPS before its IDR slice. Not thread-safe: owned by the media thread.
public final class H264Encoder: VideoEncoder {
    public let config: VideoLayerConfig
    var encoder: UnsafeMutablePointer<ISVCEncoder?>?
    var params = SEncParamExt()
    var info = SFrameBSInfo()
    public private(set) var targetBitrate: Int
    public private(set) var encoderBitrate: Int
    var trim: EncoderRateTrim?
    let keyFrameInterval: Int
    var framesSinceKey = 0
    /// The slices' QP read back from each frame (openh264 reports none; libwebrtc's
    /// `H264EncoderImpl` parses it the same way for its quality scaler).
    var sliceQP = H264SliceQP()
    public private(set) var lastQP: Int?

    /// - Parameters:
    ///   - keyFrameInterval: frames between automatic key frames; 0 = only on request.
    ///   - frameSkip: let openh264 skip frames to hold the rate (libwebrtc's frame dropping).
    ///   - rateTrim: run `EncoderRateTrim` over openh264's rate control so the layer's output meets
    ///     its target at any frame rate.
    public init(config: VideoLayerConfig, keyFrameInterval: Int = 0, frameSkip: Bool = true, rateTrim: Bool = true) throws(CodecError) {
        self.config = config
        self.keyFrameInterval = keyFrameInterval
        targetBitrate = max(Self.minimumBitrate, config.targetBitrate)
        encoderBitrate = targetBitrate
        trim = rateTrim ? EncoderRateTrim(fps: config.fps, patternPeriod: 1 << max(0, config.temporalLayers - 1)) : nil
        var enc: UnsafeMutablePointer<ISVCEncoder?>?
        let rc = coh_enc_create(&enc)
        guard rc == 0, let enc else { throw CodecError("WelsCreateSVCEncoder", code: Int32(rc)) }
        encoder = enc
        var quiet = Int32(WELS_LOG_QUIET)
        _ = coh_enc_set_option(enc, ENCODER_OPTION_TRACE_LEVEL, &quiet)
        _ = coh_enc_default_params(enc, &params)
        params.iUsageType = CAMERA_VIDEO_REAL_TIME
        params.iPicWidth = Int32(config.width)
        params.iPicHeight = Int32(config.height)
        params.iTargetBitrate = Int32(encoderBitrate)
        params.iMaxBitrate = Int32(2 * encoderBitrate)
        params.iRCMode = RC_BITRATE_MODE
        params.fMaxFrameRate = Float(config.fps)
        params.bEnableFrameSkip = frameSkip
        params.uiIntraPeriod = 0
        params.uiMaxNalSize = 0
        params.iMultipleThreadIdc = 1
        params.iTemporalLayerNum = Int32(max(1, min(4, config.temporalLayers)))
        params.iSpatialLayerNum = 1
        params.eSpsPpsIdStrategy = CONSTANT_ID
        params.iEntropyCodingModeFlag = 0
        params.bEnableDenoise = false
        params.bEnableBackgroundDetection = true
        params.bEnableAdaptiveQuant = true
        params.bEnableSceneChangeDetect = false
        params.iMinQp = 1
        params.iMaxQp = 51
        params.sSpatialLayers.0.iVideoWidth = Int32(config.width)
        params.sSpatialLayers.0.iVideoHeight = Int32(config.height)
        params.sSpatialLayers.0.fFrameRate = Float(config.fps)
        params.sSpatialLayers.0.iSpatialBitrate = Int32(encoderBitrate)
        params.sSpatialLayers.0.iMaxSpatialBitrate = Int32(2 * encoderBitrate)
        params.sSpatialLayers.0.uiProfileIdc = PRO_BASELINE
        // One slice: RFC 6184 packetization mode 1 splits it into FU-A fragments
        // (libwebrtc: SM_FIXEDSLCNUM_SLICE with one slice per core; pubbot encodes on one).
        params.sSpatialLayers.0.sSliceArgument.uiSliceMode = SM_SINGLE_SLICE
        params.sSpatialLayers.0.sSliceArgument.uiSliceNum = 1
        let initialized = coh_enc_initialize(enc, &params)
        guard initialized == 0 else {
            coh_enc_destroy(enc)
            encoder = nil
            throw CodecError("openh264 InitializeExt \(config.width)x\(config.height)", code: Int32(initialized))
        }
        var format = Int32(videoFormatI420.rawValue)
        _ = coh_enc_set_option(enc, ENCODER_OPTION_DATAFORMAT, &format)
    }

    deinit { if let encoder { coh_enc_destroy(encoder) } }

    /// openh264 refuses targets below its floor; 10 kbps is far below any layer pubbot asks for.
    static let minimumBitrate = 10_000

    public func setTargetBitrate(_ bps: Int) throws(CodecError) {
        let clamped = max(Self.minimumBitrate, bps)
        guard clamped != targetBitrate else { return }
        targetBitrate = clamped
        try configureRate()
    }

    func configureRate() throws(CodecError) {
        let rate = max(Self.minimumBitrate, Int(Double(targetBitrate) * (trim?.factor ?? 1)))
        guard rate != encoderBitrate, let encoder else { return }
        // openh264 refuses a target above the layer's maximum (`welsEncoderExt.cpp`
        // ENCODER_OPTION_BITRATE, WelsEncoderApplyBitRate): raise the ceiling with it.
        _ = coh_enc_set_max_bitrate(encoder, Int32(min(Int(Int32.max), 2 * rate)))
        guard coh_enc_set_bitrate(encoder, Int32(rate)) == 0 else {
            // Refused (beyond what the level allows): the encoder keeps its last rate; the
            // figures show the rate sent, and a later, lower target is tried afresh.
            refusedRateChanges += 1
            return
        }
        encoderBitrate = rate
    }

    /// Rate changes openh264 refused (the encoder kept its previous rate).
    public private(set) var refusedRateChanges = 0

    public func encode(
        _ frame: inout I420Frame, layer: Int, frameNumber: UInt32, captureMicros: Int64,
        forceKeyFrame: Bool, clock: () -> Int64
    ) throws(CodecError) -> EncodedVideoFrame? {
        precondition(frame.width == config.width && frame.height == config.height)
        guard let encoder else { return nil }
        let periodic = keyFrameInterval > 0 && framesSinceKey >= keyFrameInterval
        if forceKeyFrame || periodic { _ = coh_enc_force_idr(encoder) }
        let start = clock()
        let ls = frame.lumaSize, cs = frame.chromaSize
        let w = frame.width, cw = frame.chromaWidth
        var picture = SSourcePicture()
        picture.iColorFormat = Int32(videoFormatI420.rawValue)
        picture.iPicWidth = Int32(config.width)
        picture.iPicHeight = Int32(config.height)
        picture.uiTimeStamp = captureMicros / 1000
        let rc: Int32 = frame.data.withUnsafeMutableBufferPointer { buf in
            let base = buf.baseAddress!
            picture.pData.0 = base
            picture.pData.1 = base + ls
            picture.pData.2 = base + ls + cs
            picture.iStride.0 = Int32(w)
            picture.iStride.1 = Int32(cw)
            picture.iStride.2 = Int32(cw)
            return coh_enc_encode(encoder, &picture, &info)
        }
        guard rc == 0 else { throw CodecError("openh264 EncodeFrame", code: rc) }
        var out: EncodedVideoFrame?
        if coh_info_is_skip(&info) == 0 {
            var bytes: [UInt8] = []
            var temporalID: UInt8 = 0
            for i in 0..<coh_info_layer_count(&info) {
                let size = Int(coh_layer_size(&info, i))
                guard size > 0, let p = coh_layer_bytes(&info, i) else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(start: p, count: size))
                if coh_layer_is_video(&info, i) != 0 { temporalID = UInt8(coh_layer_temporal_id(&info, i)) }
            }
            let key = coh_info_is_idr(&info) != 0
            if key { framesSinceKey = 0 }
            if !bytes.isEmpty { lastQP = sliceQP.parse(bytes.span) ?? lastQP }
            if !bytes.isEmpty {
                out = EncodedVideoFrame(
                    layer: layer, bytes: bytes, isKeyFrame: key, width: config.width, height: config.height,
                    frameNumber: frameNumber, captureMicros: captureMicros,
                    temporalID: config.temporalLayers > 1 ? temporalID : nil,
                    layerSync: false, encodeMicros: clock() - start)
            }
        }
        framesSinceKey += 1
        if trim != nil, trim!.add(captureMicros: captureMicros, bits: out.map { $0.bytes.count * 8 }, target: targetBitrate) != nil {
            try configureRate()
        }
        return out
    }
}
