internal import CAOM

/// A libaom AV1 encoder for one simulcast layer, configured as libwebrtc configures it
/// (`libaom_av1_encoder.cc`): real-time usage, CBR, no lag, key frames only on request, the
/// real-time tool set (CDEF on; TPL, order hints, OBMC, warped and global motion, reference MVs
/// and palette off), cyclic-refresh AQ, cost updates per superblock row. Temporal layers L1T2/L1T3
/// through libaom's SVC interface (the application sets each frame's layer and references, the
/// same 0-2-1-2 pattern as VP8 and VP9; the OBU extension headers carry the temporal ID); spatial
/// layers in one stream (L2T1_KEY…L3T3_KEY) as libwebrtc encodes them: one `aom_codec_encode` per
/// spatial layer of a picture, the layers above predicted from the one below on key pictures
/// only. Output: one temporal unit per picture (each spatial layer's frame in turn), OBUs with
/// their size fields. Not thread-safe: owned by the media thread.
public final class AV1Encoder: VideoEncoder {
    public let config: VideoLayerConfig
    var ctx = aom_codec_ctx_t()
    var cfg = aom_codec_enc_cfg_t()
    var image = aom_image_t()
    public private(set) var targetBitrate: Int
    public private(set) var encoderBitrate: Int
    let keyFrameInterval: Int
    var framesSinceKey = 0
    /// The presentation time handed to libaom (90 kHz) and the capture time it stands for.
    var pts: Int64 = 0
    var lastCapture: Int64?
    let pattern: TemporalPattern
    /// Spatial layers (1: none).
    let spatialLayers: Int
    var frameIndex = 0
    /// Frames output so far, and the output frame each reference slot (LAST, GOLDEN) holds: a
    /// frame's references as distances, for the Dependency Descriptor's frame diffs.
    var outputIndex = 0
    var lastBuffer = 0, goldenBuffer = 0

    /// - Parameters:
    ///   - keyFrameInterval: frames between automatic key frames; 0 = only on request.
    ///   - frameDrop: let libaom drop frames to hold its rate (libwebrtc's 30 % buffer level).
    ///   - speed: libaom's cpu-used (real time: 5–10, larger is faster); nil picks by resolution.
    public init(config: VideoLayerConfig, keyFrameInterval: Int = 0, frameDrop: Bool = true, speed: Int? = nil) throws(CodecError) {
        self.config = config
        pattern = TemporalPattern(layers: config.temporalLayers)
        spatialLayers = max(1, min(3, config.spatialLayers))
        // No outer trim: libaom's CBR meets the target (every 5 s window within ±15 %, 180p–720p,
        // 7–30 fps, L1T1 and L1T3) except 720p at 7 fps L1T3, whose per-layer rate control
        // adapts in frames of each layer (T0 at 1.75 fps): it starts at 0.64 × and reaches the
        // target after ~20 s. The trim tuned on VP8 made 720p L1T3 ring 0.73–1.28 × instead.
        self.keyFrameInterval = keyFrameInterval
        targetBitrate = max(Self.minimumBitrate, config.targetBitrate)
        encoderBitrate = targetBitrate
        var rc = caom_enc_config_default(&cfg)
        guard rc == AOM_CODEC_OK else { throw CodecError("aom_codec_enc_config_default", code: Int32(rc.rawValue)) }
        cfg.g_w = UInt32(config.width)
        cfg.g_h = UInt32(config.height)
        cfg.g_timebase = aom_rational(num: 1, den: 90_000)
        cfg.g_threads = 1
        cfg.g_lag_in_frames = 0
        cfg.g_error_resilient = 0
        cfg.g_input_bit_depth = 8
        cfg.rc_end_usage = AOM_CBR
        cfg.rc_target_bitrate = UInt32(max(1, encoderBitrate / 1000))
        // With spatial layers no frame is dropped: a picture then has every layer (libaom's SVC
        // drops layer by layer, which the picture's descriptors would have to follow).
        cfg.rc_dropframe_thresh = frameDrop && spatialLayers == 1 ? 30 : 0
        cfg.rc_resize_mode = 0
        cfg.rc_superres_mode = AOM_SUPERRES_NONE
        // libwebrtc stops at quantizer 10; pubbot goes down to 0, as for libvpx, so that the simple
        // synthetic picture can fill a generous target (at 10, 720p at 30 fps made 0.62 × its
        // 2.5 Mbit/s: `EncoderRateTests`).
        cfg.rc_min_quantizer = 0
        cfg.rc_max_quantizer = 56
        cfg.rc_undershoot_pct = 50
        cfg.rc_overshoot_pct = 50
        cfg.rc_buf_initial_sz = 600
        cfg.rc_buf_optimal_sz = 600
        cfg.rc_buf_sz = 1000
        if keyFrameInterval > 0 {
            cfg.kf_mode = AOM_KF_AUTO
            cfg.kf_min_dist = 0
            cfg.kf_max_dist = UInt32(keyFrameInterval)
        } else {
            cfg.kf_mode = AOM_KF_DISABLED
        }
        rc = caom_enc_init(&ctx, &cfg)
        guard rc == AOM_CODEC_OK else {
            throw CodecError(
                "aom_codec_enc_init \(config.width)x\(config.height)", code: Int32(rc.rawValue), message: Self.errorString(&ctx))
        }
        let pixels = config.width * config.height
        let controls: [(aome_enc_control_id, Int32)] = [
            (AOME_SET_CPUUSED, Int32(speed ?? (pixels >= 1280 * 720 ? 10 : pixels >= 640 * 360 ? 9 : 8))),
            (AV1E_SET_ENABLE_CDEF, 1), (AV1E_SET_ENABLE_TPL_MODEL, 0), (AV1E_SET_DELTAQ_MODE, 0),
            (AV1E_SET_ENABLE_ORDER_HINT, 0), (AV1E_SET_AQ_MODE, 3), (AOME_SET_MAX_INTRA_BITRATE_PCT, 300),
            (AV1E_SET_COEFF_COST_UPD_FREQ, 3), (AV1E_SET_MODE_COST_UPD_FREQ, 3), (AV1E_SET_MV_COST_UPD_FREQ, 3),
            (AV1E_SET_ROW_MT, 1), (AV1E_SET_ENABLE_OBMC, 0), (AV1E_SET_NOISE_SENSITIVITY, 0),
            (AV1E_SET_ENABLE_WARPED_MOTION, 0), (AV1E_SET_ENABLE_GLOBAL_MOTION, 0), (AV1E_SET_ENABLE_REF_FRAME_MVS, 0),
            (AV1E_SET_ENABLE_PALETTE, 0), (AV1E_SET_TILE_COLUMNS, config.width >= 1280 ? 1 : 0)
        ]
        for (id, value) in controls {
            let rc = caom_control(&ctx, Int32(id.rawValue), value)
            guard rc == AOM_CODEC_OK else {
                aom_codec_destroy(&ctx)
                throw CodecError("aom_codec_control \(id.rawValue)", code: Int32(rc.rawValue))
            }
        }
        if pattern.layers > 1 || spatialLayers > 1 { try configureLayers() }
        // Wrap a placeholder buffer once; planes are pointed at the frame on every encode.
        var dummy: UInt8 = 0
        withUnsafeMutablePointer(to: &dummy) { p in
            _ = aom_img_wrap(&image, AOM_IMG_FMT_I420, UInt32(config.width), UInt32(config.height), 1, p)
        }
    }

    deinit { aom_codec_destroy(&ctx) }

    public var lastQP: Int? {
        var q: Int32 = -1
        return caom_get_last_qindex(&ctx, &q) == AOM_CODEC_OK && q >= 0 ? Int(q) : nil
    }

    /// libaom takes the target in kbps.
    static let minimumBitrate = 1_000

    static func errorString(_ ctx: inout aom_codec_ctx_t) -> String {
        guard let detail = aom_codec_error_detail(&ctx) else { return String(cString: aom_codec_error(&ctx)) }
        return String(cString: aom_codec_error(&ctx)) + ": " + String(cString: detail)
    }

    public func setTargetBitrate(_ bps: Int) throws(CodecError) {
        let clamped = max(Self.minimumBitrate, bps)
        guard clamped != targetBitrate else { return }
        targetBitrate = clamped
        try configureRate()
    }

    /// Hands libaom the target.
    func configureRate() throws(CodecError) {
        let rate = targetBitrate
        guard rate / 1000 != encoderBitrate / 1000 else { return }
        encoderBitrate = rate
        cfg.rc_target_bitrate = UInt32(rate / 1000)
        let rc = aom_codec_enc_config_set(&ctx, &cfg)
        guard rc == AOM_CODEC_OK else {
            throw CodecError("aom_codec_enc_config_set", code: Int32(rc.rawValue), message: Self.errorString(&ctx))
        }
        if pattern.layers > 1 || spatialLayers > 1 { try configureLayers() }
    }

    /// The temporal layers' cumulative targets (libwebrtc's shares, as for VP8 and VP9).
    func configureLayers() throws(CodecError) {
        if spatialLayers > 1 {
            // Each spatial layer its share of the target (as a simulcast layer of its size would
            // get), cumulative over its temporal layers.
            var kbps = config.spatialRateShares.flatMap { share in
                pattern.cumulativeRateShare.map { Int32(max(1, Int(Double(encoderBitrate) * share * $0) / 1000)) }
            }
            let rc = caom_set_svc_spatial(
                &ctx, Int32(spatialLayers), Int32(pattern.layers), &kbps, Int32(cfg.rc_max_quantizer), Int32(cfg.rc_min_quantizer))
            guard rc == AOM_CODEC_OK else {
                throw CodecError("AV1E_SET_SVC_PARAMS (spatial)", code: Int32(rc.rawValue), message: Self.errorString(&ctx))
            }
            return
        }
        var kbps = pattern.cumulativeRateShare.map { Int32(max(1, Int(Double(encoderBitrate) * $0) / 1000)) }
        let rc = caom_set_svc_temporal(&ctx, Int32(pattern.layers), &kbps, Int32(cfg.rc_max_quantizer), Int32(cfg.rc_min_quantizer))
        guard rc == AOM_CODEC_OK else { throw CodecError("AV1E_SET_SVC_PARAMS", code: Int32(rc.rawValue), message: Self.errorString(&ctx)) }
    }

    public func encode(
        _ frame: inout I420Frame, layer: Int, frameNumber: UInt32, captureMicros: Int64,
        forceKeyFrame: Bool, clock: () -> Int64
    ) throws(CodecError) -> EncodedVideoFrame? {
        precondition(frame.width == config.width && frame.height == config.height)
        let periodic = keyFrameInterval > 0 && framesSinceKey >= keyFrameInterval
        if spatialLayers > 1 {
            return try encodeSpatial(
                &frame, layer: layer, frameNumber: frameNumber, captureMicros: captureMicros,
                keyPicture: forceKeyFrame || periodic || outputIndex == 0, clock: clock)
        }
        let key = forceKeyFrame || periodic
        let flags: aom_enc_frame_flags_t = key ? aom_enc_frame_flags_t(caom_flag_force_kf()) : 0
        let step = key ? pattern.step(0) : pattern.step(frameIndex)
        if pattern.layers > 1 {
            let rc = caom_set_svc_frame(
                &ctx, Int32(step.temporalID), step.referenceLast ? 1 : 0, step.referenceGolden ? 1 : 0, step.updateLast || key ? 1 : 0,
                step.updateGolden || key ? 1 : 0)
            guard rc == AOM_CODEC_OK else {
                throw CodecError("AV1E_SET_SVC_LAYER_ID", code: Int32(rc.rawValue), message: Self.errorString(&ctx))
            }
        }
        let pts = nextPresentationTime(captureMicros)
        let start = clock()
        try encodeImage(&frame, pts: pts, flags: flags)
        var out: EncodedVideoFrame?
        var iter: aom_codec_iter_t?
        while let pkt = caom_get_cx_data(&ctx, &iter) {
            guard caom_pkt_is_frame(pkt) != 0 else { continue }
            let bytes = [UInt8](UnsafeRawBufferPointer(start: caom_pkt_buf(pkt), count: caom_pkt_size(pkt)))
            let isKey = caom_pkt_is_key(pkt) != 0
            if isKey { framesSinceKey = 0 }
            // With one temporal layer libaom's real-time references are its own; pubbot describes
            // them as the previous frame, as libwebrtc's no-layering structure does (any loss
            // breaks that chain and asks for a key frame, so an older reference never matters).
            var references: [Int] = []
            if !isKey {
                if pattern.layers == 1 {
                    references = [1]
                } else {
                    if step.referenceLast { references.append(outputIndex - lastBuffer) }
                    if step.referenceGolden, goldenBuffer != lastBuffer || !step.referenceLast {
                        references.append(outputIndex - goldenBuffer)
                    }
                }
            }
            out = EncodedVideoFrame(
                layer: layer, bytes: bytes, isKeyFrame: isKey, width: config.width, height: config.height,
                frameNumber: frameNumber, captureMicros: captureMicros, temporalID: pattern.layers > 1 ? step.temporalID : nil,
                layerSync: pattern.layers > 1 && !isKey && step.layerSync, encodeMicros: clock() - start,
                referenceDistances: references.sorted().map { UInt8(clamping: $0) })
            if isKey || step.updateLast || pattern.layers == 1 { lastBuffer = outputIndex }
            if isKey || step.updateGolden || pattern.layers == 1 { goldenBuffer = outputIndex }
            outputIndex += 1
        }
        framesSinceKey += 1
        // The pattern restarts at a key frame (the frame after it is step 1).
        frameIndex = key ? 1 : frameIndex + 1
        return out
    }

    /// The presentation time in the 90 kHz timebase follows capture time: libaom's rate control
    /// divides the target by the frame rate it derives from the step between two frames
    /// (`encoder.c` adjust_frame_rate). A pause (a layer the estimate left unsent) is not a frame
    /// rate: after 2 s libaom took 0.5 fps and made the resuming key frame 65 KB, 7 × the 720p
    /// average (Chromium counted the freeze behind it). A step longer than three frame intervals
    /// counts as one.
    func nextPresentationTime(_ captureMicros: Int64) -> aom_codec_pts_t {
        let interval = Int64(1_000_000 / max(1, config.fps))
        var elapsed = lastCapture.map { captureMicros - $0 } ?? 0
        if elapsed > 3 * interval || elapsed < 0 { elapsed = interval }
        pts += elapsed * 9 / 100
        lastCapture = captureMicros
        return aom_codec_pts_t(pts)
    }

    /// Hands libaom the picture (its planes wrapped, not copied).
    func encodeImage(_ frame: inout I420Frame, pts: aom_codec_pts_t, flags: aom_enc_frame_flags_t) throws(CodecError) {
        let duration = UInt(90_000 / max(1, config.fps))
        let ls = frame.lumaSize, cs = frame.chromaSize
        let w = frame.width, cw = frame.chromaWidth
        let rc: aom_codec_err_t = frame.data.withUnsafeMutableBufferPointer { buf in
            let base = buf.baseAddress!
            image.planes.0 = base
            image.planes.1 = base + ls
            image.planes.2 = base + ls + cs
            image.stride.0 = Int32(w)
            image.stride.1 = Int32(cw)
            image.stride.2 = Int32(cw)
            return aom_codec_encode(&ctx, &image, pts, duration, flags)
        }
        guard rc == AOM_CODEC_OK else { throw CodecError("aom_codec_encode", code: Int32(rc.rawValue), message: Self.errorString(&ctx)) }
    }

    /// One picture of spatial layers: each layer's frame encoded in turn from the same picture
    /// (libaom scales it), with its layer IDs and references (`caom_set_svc_layer_frame`).
    func encodeSpatial(
        _ frame: inout I420Frame, layer: Int, frameNumber: UInt32, captureMicros: Int64, keyPicture: Bool, clock: () -> Int64
    ) throws(CodecError) -> EncodedVideoFrame? {
        let step = keyPicture ? pattern.step(0) : pattern.step(frameIndex)
        let pts = nextPresentationTime(captureMicros)
        let start = clock()
        var bytes: [UInt8] = []
        var layers: [EncodedVideoFrame.SpatialLayerFrame] = []
        var key = false
        for s in 0..<spatialLayers {
            let rc = caom_set_svc_layer_frame(
                &ctx, Int32(s), Int32(step.temporalID), keyPicture ? 1 : 0, step.referenceLast ? 1 : 0, step.referenceGolden ? 1 : 0,
                step.updateLast ? 1 : 0, step.updateGolden ? 1 : 0)
            guard rc == AOM_CODEC_OK else {
                throw CodecError("AV1E_SET_SVC_LAYER_ID", code: Int32(rc.rawValue), message: Self.errorString(&ctx))
            }
            try encodeImage(&frame, pts: pts, flags: keyPicture && s == 0 ? aom_enc_frame_flags_t(caom_flag_force_kf()) : 0)
            var size = 0
            var iter: aom_codec_iter_t?
            while let pkt = caom_get_cx_data(&ctx, &iter) {
                guard caom_pkt_is_frame(pkt) != 0 else { continue }
                bytes += UnsafeRawBufferPointer(start: caom_pkt_buf(pkt), count: caom_pkt_size(pkt))
                size += caom_pkt_size(pkt)
                if s == 0 { key = key || caom_pkt_is_key(pkt) != 0 }
            }
            guard size > 0 else { break } // a layer libaom did not code: the picture ends below it
            let (w, h) = config.spatialSize(s)
            layers.append(.init(size: size, width: w, height: h))
        }
        framesSinceKey = keyPicture ? 1 : framesSinceKey + 1
        frameIndex = keyPicture ? 1 : frameIndex + 1
        guard !layers.isEmpty else { return nil }
        var references: [Int] = []
        if !key {
            if step.referenceLast { references.append(outputIndex - lastBuffer) }
            if step.referenceGolden, goldenBuffer != lastBuffer || !step.referenceLast { references.append(outputIndex - goldenBuffer) }
        }
        if key || step.updateLast { lastBuffer = outputIndex }
        if key || step.updateGolden { goldenBuffer = outputIndex }
        outputIndex += 1
        var out = EncodedVideoFrame(
            layer: layer, bytes: bytes, isKeyFrame: key, width: config.width, height: config.height, frameNumber: frameNumber,
            captureMicros: captureMicros, temporalID: pattern.layers > 1 ? step.temporalID : nil,
            layerSync: pattern.layers > 1 && !key && step.layerSync, encodeMicros: clock() - start,
            referenceDistances: references.sorted().map { UInt8(clamping: $0) })
        out.spatialLayers = layers
        return out
    }
}

/// A libaom AV1 decoder for one received stream: takes one temporal unit (what `AV1Depacketizer`
/// reassembles) and reads the stamp from the picture. Not thread-safe.
public final class AV1Decoder: VideoDecoder {
    var ctx = aom_codec_ctx_t()

    public init() throws(CodecError) {
        let rc = caom_dec_init(&ctx)
        guard rc == AOM_CODEC_OK else { throw CodecError("aom_codec_dec_init", code: Int32(rc.rawValue)) }
    }

    deinit { aom_codec_destroy(&ctx) }

    public func decode(_ bytes: [UInt8], readStamp: Bool = true, quality: PictureQuality? = nil) throws(CodecError) -> DecodedVideoFrame? {
        let rc = bytes.withUnsafeBufferPointer { aom_codec_decode(&ctx, $0.baseAddress, $0.count, nil) }
        guard rc == AOM_CODEC_OK else {
            throw CodecError("aom_codec_decode", code: Int32(rc.rawValue), message: AV1Encoder.errorString(&ctx))
        }
        var iter: aom_codec_iter_t?
        var result: DecodedVideoFrame?
        while let img = aom_codec_get_frame(&ctx, &iter) {
            let w = Int(img.pointee.d_w), h = Int(img.pointee.d_h)
            var stamp: FrameStamp?
            var measured: PictureQuality.Measurement?
            if readStamp, let y = img.pointee.planes.0, img.pointee.fmt == AOM_IMG_FMT_I420 {
                let stride = Int(img.pointee.stride.0)
                stamp = FrameStamp.read(luma: UnsafeBufferPointer(start: y, count: stride * h), width: w, height: h, stride: stride)
                if let quality, let stamp { measured = quality.measure(luma: y, width: w, height: h, stride: stride, stamp: stamp) }
            }
            result = DecodedVideoFrame(width: w, height: h, stamp: stamp, quality: measured)
        }
        return result
    }
}
