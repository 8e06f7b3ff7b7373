internal import CVPX
public import RTPCore

/// A libvpx encoder for one simulcast layer, VP8 or VP9: realtime, CBR, no lag, optional temporal
/// layers (VP8 by layer IDs and reference flags; VP9 the same through libvpx's SVC interface with
/// one spatial layer, L1T2/L1T3), and VP9 spatial layers in one stream (L2T1_KEY…L3T3_KEY: each
/// spatial layer's frame of a picture in turn, the layers above predicted from the one below on
/// key pictures only). Not thread-safe: owned by the media thread.
public final class LibvpxEncoder {
    public let config: VideoLayerConfig
    public let codec: VideoCodec
    let pattern: TemporalPattern
    /// VP9 spatial layers (1: none).
    let spatialLayers: Int
    var ctx = vpx_codec_ctx_t()
    var cfg = vpx_codec_enc_cfg_t()
    var image = vpx_image_t()
    var frameIndex = 0
    /// Frames output so far, and the output frame each reference buffer (last, golden) holds:
    /// a VP9 frame's P_DIFFs (RFC 9628 §4.2) are the distances to the frames it references.
    var outputIndex = 0
    var lastBuffer = 0, goldenBuffer = 0
    public private(set) var targetBitrate: Int
    /// The outer rate loop (nil: libvpx alone), and the rate libvpx is asked for.
    var trim: EncoderRateTrim?
    public private(set) var encoderBitrate: Int

    /// - Parameters:
    ///   - keyFrameInterval: frames between automatic key frames; 0 = only on request (as in WebRTC).
    ///   - cpuUsed: libvpx speed (-16…16); larger is faster. nil picks by resolution.
    ///   - frameDropThreshold: libvpx rc_dropframe_thresh (buffer % below which frames are dropped to
    ///     hold the rate; libwebrtc uses 30). 0 never drops.
    ///   - rateTrim: run `EncoderRateTrim` over libvpx's rate control so the layer's output meets
    ///     its target at any frame rate.
    public init(
        config: VideoLayerConfig, codec: VideoCodec = .vp8, keyFrameInterval: Int = 0, cpuUsed: Int? = nil, threads: Int = 1,
        frameDropThreshold: Int = 30, rateTrim: Bool = true
    ) throws(CodecError) {
        precondition(codec == .vp8 || codec == .vp9, "libvpx encodes VP8 and VP9")
        precondition(config.spatialLayers == 1 || codec == .vp9, "spatial layers are VP9's")
        self.config = config
        self.codec = codec
        pattern = TemporalPattern(layers: config.temporalLayers)
        spatialLayers = codec == .vp9 ? max(1, min(3, config.spatialLayers)) : 1
        targetBitrate = max(Self.minimumBitrate, config.targetBitrate)
        encoderBitrate = targetBitrate
        // VP9's own rate control meets the target (every 5 s window 0.87–1.07 × target, 180p to
        // 720p, 7–30 fps, L1T1 and L1T3: `EncoderRateTests`); the trim, tuned on VP8's, only
        // rang around it (720p at 15 fps L1T3 swung 0.72–1.42 × target in its first 9 s).
        trim = rateTrim && codec == .vp8 ? EncoderRateTrim(fps: config.fps, patternPeriod: pattern.steps.count) : nil
        var rc = codec == .vp9 ? cvpx_vp9_enc_config_default(&cfg) : cvpx_enc_config_default(&cfg)
        guard rc == VPX_CODEC_OK else { throw CodecError("vpx_codec_enc_config_default", code: Int32(rc.rawValue)) }
        cfg.g_w = UInt32(config.width)
        cfg.g_h = UInt32(config.height)
        cfg.g_timebase = vpx_rational(num: 1, den: 90_000)
        cfg.g_threads = UInt32(max(1, threads))
        cfg.g_lag_in_frames = 0
        cfg.g_pass = VPX_RC_ONE_PASS
        cfg.rc_end_usage = VPX_CBR
        cfg.rc_target_bitrate = UInt32(max(1, encoderBitrate / 1000))
        cfg.rc_dropframe_thresh = UInt32(frameDropThreshold)
        cfg.rc_resize_allowed = 0
        // libwebrtc stops at quantizer 2; pubbot goes down to 0 so that a simple picture can still
        // fill a generous target (a relayed 720p layer at 7 fps keeps its 2.5 Mbps: at 2 the
        // synthetic picture tops out at ~1.7 Mbps). At ordinary rates the quantizer is far above.
        cfg.rc_min_quantizer = 0
        cfg.rc_max_quantizer = 56
        // libwebrtc's: VP8 100/15 (`libvpx_vp8_encoder.cc`), VP9 50/50 (`libvpx_vp9_encoder.cc`).
        cfg.rc_undershoot_pct = codec == .vp9 ? 50 : 100
        cfg.rc_overshoot_pct = codec == .vp9 ? 50 : 15
        let buffer = Self.bufferMillis(fps: config.fps)
        cfg.rc_buf_initial_sz = UInt32(buffer.initial)
        cfg.rc_buf_optimal_sz = UInt32(buffer.optimal)
        cfg.rc_buf_sz = UInt32(buffer.size)
        cfg.g_error_resilient = pattern.layers > 1 || spatialLayers > 1 ? vpx_codec_er_flags_t(VPX_ERROR_RESILIENT_DEFAULT) : 0
        if keyFrameInterval > 0 {
            cfg.kf_mode = VPX_KF_AUTO
            cfg.kf_min_dist = 0
            cfg.kf_max_dist = UInt32(keyFrameInterval)
        } else {
            cfg.kf_mode = VPX_KF_DISABLED
        }
        if spatialLayers > 1 {
            cvpx_cfg_set_spatial(&cfg, Int32(spatialLayers))
        } else if codec == .vp9 && pattern.layers > 1 {
            cvpx_cfg_set_layering(&cfg, 1)
        }
        Self.applyTemporal(&cfg, pattern: pattern, spatialShares: config.spatialRateShares, bitrate: encoderBitrate)
        rc = codec == .vp9 ? cvpx_vp9_enc_init(&ctx, &cfg) : cvpx_enc_init(&ctx, &cfg)
        guard rc == VPX_CODEC_OK else {
            throw CodecError(
                "vpx_codec_enc_init \(config.width)x\(config.height)", code: Int32(rc.rawValue), message: Self.errorString(&ctx))
        }
        if codec == .vp9 {
            // libwebrtc's real-time VP9 (`libvpx_vp9_encoder.cc`): speed 7–8, cyclic-refresh AQ,
            // no denoiser, frame-parallel decoding off, tiles by width.
            _ = cvpx_set_cpuused(&ctx, Int32(cpuUsed ?? (config.width * config.height >= 1280 * 720 ? 8 : 7)))
            _ = cvpx_vp9_set_aq_mode(&ctx, 3)
            _ = cvpx_vp9_set_noise_sensitivity(&ctx, 0)
            _ = cvpx_vp9_set_frame_parallel(&ctx, 0)
            _ = cvpx_vp9_set_tile_columns(&ctx, config.width >= 1280 ? 1 : 0)
            if spatialLayers > 1 {
                let rc = cvpx_vp9_set_svc_spatial(
                    &ctx, Int32(spatialLayers), Int32(cfg.rc_max_quantizer), Int32(cfg.rc_min_quantizer), Int32(frameDropThreshold))
                guard rc == VPX_CODEC_OK else {
                    throw CodecError("VP9E_SET_SVC (spatial)", code: Int32(rc.rawValue), message: Self.errorString(&ctx))
                }
            } else if pattern.layers > 1 {
                let rc = cvpx_vp9_set_svc_temporal(&ctx, Int32(cfg.rc_max_quantizer), Int32(cfg.rc_min_quantizer))
                guard rc == VPX_CODEC_OK else {
                    throw CodecError("VP9E_SET_SVC", code: Int32(rc.rawValue), message: Self.errorString(&ctx))
                }
            }
        } else {
            let speed = cpuUsed ?? (config.width * config.height >= 1280 * 720 ? -8 : -6)
            _ = cvpx_set_cpuused(&ctx, Int32(speed))
            _ = cvpx_set_noise_sensitivity(&ctx, 0)
            _ = cvpx_set_token_partitions(&ctx, 0)
        }
        _ = cvpx_set_static_threshold(&ctx, 1)
        _ = cvpx_set_max_intra_bitrate_pct(&ctx, UInt32(Self.maxIntraBitratePercent(fps: config.fps)))
        // Wrap a placeholder buffer once; planes are pointed at the frame on every encode.
        var dummy: UInt8 = 0
        withUnsafeMutablePointer(to: &dummy) { p in
            _ = vpx_img_wrap(&image, VPX_IMG_FMT_I420, UInt32(config.width), UInt32(config.height), 1, p)
        }
    }

    deinit { vpx_codec_destroy(&ctx) }

    /// The largest key frame as a percentage of the average frame at the target rate: half the
    /// optimal buffer (600 ms) at the frame rate, at least 300 % (libwebrtc
    /// `libvpx_vp8_encoder.cc` MaxIntraTarget) — 900 % at 30 fps, 450 % at 15, 300 % below 10.
    /// The rate-control buffer (ms): libwebrtc's 500/600/1000 ms, stretched at low frame rates so
    /// that it still spans several frames — at 1 fps a 1 s buffer holds one frame and libvpx's
    /// CBR model then starves every frame.
    static func bufferMillis(fps: Int) -> (initial: Int, optimal: Int, size: Int) {
        let frame = 1000 / max(1, fps)
        return (max(500, 3 * frame), max(600, 4 * frame), max(1000, 6 * frame))
    }

    /// A key-frame interval in frames of a layer (0 stays 0: on request only).
    public static func frames(in micros: Int64, fps: Int) -> Int {
        micros <= 0 ? 0 : max(1, Int((micros * Int64(max(1, fps)) + 500_000) / 1_000_000))
    }

    static func maxIntraBitratePercent(fps: Int) -> Int { max(300, 600 / 2 * max(1, fps) / 10) }

    /// The presentation time of a frame in the encoder's 90 kHz timebase. libvpx derives the frame
    /// rate its rate control divides the target by from the distance between consecutive
    /// timestamps (`onyx_if.c` vp8_get_compressed_data), so they must follow real capture time —
    /// a counter at any other rate makes every frame the wrong size (libwebrtc passes the RTP
    /// timestamp, `libvpx_vp8_encoder.cc` Encode).
    static func presentationTime(captureMicros: Int64) -> Int64 { captureMicros * 9 / 100 }

    static func applyTemporal(_ cfg: inout vpx_codec_enc_cfg_t, pattern: TemporalPattern, spatialShares: [Double], bitrate: Int) {
        cfg.ts_number_layers = UInt32(pattern.layers)
        cfg.ts_periodicity = UInt32(pattern.steps.count)
        withUnsafeMutableBytes(of: &cfg.ts_target_bitrate) { raw in
            let p = raw.bindMemory(to: UInt32.self)
            for i in 0..<pattern.layers { p[i] = UInt32(max(1, Int(Double(bitrate) * pattern.cumulativeRateShare[i]) / 1000)) }
        }
        // VP9's SVC rate control reads the per-layer targets: spatial layer s, temporal layer t
        // at s × temporal layers + t, cumulative over the temporal layers of one spatial layer
        // (vpx_encoder.h layer_target_bitrate), and each spatial layer's total.
        withUnsafeMutableBytes(of: &cfg.layer_target_bitrate) { raw in
            let p = raw.bindMemory(to: UInt32.self)
            for (s, share) in spatialShares.enumerated() {
                for i in 0..<pattern.layers {
                    p[s * pattern.layers + i] = UInt32(max(1, Int(Double(bitrate) * share * pattern.cumulativeRateShare[i]) / 1000))
                }
            }
        }
        if spatialShares.count > 1 {
            withUnsafeMutableBytes(of: &cfg.ss_target_bitrate) { raw in
                let p = raw.bindMemory(to: UInt32.self)
                for (s, share) in spatialShares.enumerated() { p[s] = UInt32(max(1, Int(Double(bitrate) * share) / 1000)) }
            }
        }
        withUnsafeMutableBytes(of: &cfg.ts_rate_decimator) { raw in
            let p = raw.bindMemory(to: UInt32.self)
            for i in 0..<pattern.layers { p[i] = UInt32(pattern.decimators[i]) }
        }
        withUnsafeMutableBytes(of: &cfg.ts_layer_id) { raw in
            let p = raw.bindMemory(to: UInt32.self)
            for (i, s) in pattern.steps.enumerated() { p[i] = UInt32(s.temporalID) }
        }
    }

    static func errorString(_ ctx: inout vpx_codec_ctx_t) -> String {
        guard let detail = vpx_codec_error_detail(&ctx) else { return String(cString: vpx_codec_error(&ctx)) }
        return String(cString: vpx_codec_error(&ctx)) + ": " + String(cString: detail)
    }

    /// libvpx takes the target in kbps; 1 kbps is its smallest (a 180p layer at 1 fps routed
    /// asks for 5 kbps).
    static let minimumBitrate = 1_000

    func setLayerID(_ temporalID: UInt8) {
        _ = codec == .vp9 ? cvpx_vp9_set_layer_id(&ctx, Int32(temporalID)) : cvpx_set_temporal_layer_id(&ctx, Int32(temporalID))
    }

    /// How many frames back each buffer a step references was written (VP9's P_DIFFs, nearest
    /// first, at most 3): with one temporal layer, the previous frame (libvpx may also read an
    /// older golden frame; a receiver that has every frame decodes either way).
    func references(_ step: TemporalPattern.Step) -> [UInt8] {
        guard codec == .vp9 else { return [] }
        guard pattern.layers > 1 else { return [1] }
        var d: [UInt8] = []
        if step.referenceLast { d.append(UInt8(clamping: outputIndex - lastBuffer)) }
        if step.referenceGolden, goldenBuffer != lastBuffer || !step.referenceLast { d.append(UInt8(clamping: outputIndex - goldenBuffer)) }
        return d.sorted()
    }

    /// The frames of a VP9 superframe: the index at its end (VP9 bitstream specification,
    /// Annex B: a marker byte 110 mm fff, frame sizes of mm + 1 bytes little-endian, the marker
    /// again first) gives each frame's size; without a valid index the data is one frame.
    public var lastQP: Int? {
        var q: Int32 = -1
        return cvpx_get_last_qindex(&ctx, &q) == VPX_CODEC_OK && q >= 0 ? Int(q) : nil
    }

    static func superframeFrames(_ data: [UInt8]) -> [Range<Int>] {
        guard let marker = data.last, marker & 0xE0 == 0xC0 else { return data.isEmpty ? [] : [0..<data.count] }
        let frames = Int(marker & 0x07) + 1, mag = Int((marker >> 3) & 0x03) + 1
        let indexSize = 2 + mag * frames
        guard data.count >= indexSize, data[data.count - indexSize] == marker else { return [0..<data.count] }
        var ranges: [Range<Int>] = []
        var offset = 0
        var i = data.count - indexSize + 1
        let end = data.count - indexSize
        for _ in 0..<frames {
            var size = 0
            for b in 0..<mag { size |= Int(data[i + b]) << (8 * b) }
            i += mag
            guard size <= end - offset else { return [0..<end] }
            if size > 0 { ranges.append(offset..<(offset + size)) }
            offset += size
        }
        return ranges
    }

    /// Changes the target bitrate while running (takes effect on the next frame).
    public func setTargetBitrate(_ bps: Int) throws(CodecError) {
        let clamped = max(Self.minimumBitrate, bps)
        guard clamped != targetBitrate else { return }
        targetBitrate = clamped
        try configureRate()
    }

    /// Hands libvpx the target × the trim factor.
    func configureRate() throws(CodecError) {
        let rate = max(Self.minimumBitrate, Int(Double(targetBitrate) * (trim?.factor ?? 1)))
        guard rate != encoderBitrate else { return }
        encoderBitrate = rate
        cfg.rc_target_bitrate = UInt32(rate / 1000)
        Self.applyTemporal(&cfg, pattern: pattern, spatialShares: config.spatialRateShares, bitrate: rate)
        let rc = vpx_codec_enc_config_set(&ctx, &cfg)
        guard rc == VPX_CODEC_OK else {
            throw CodecError("vpx_codec_enc_config_set", code: Int32(rc.rawValue), message: Self.errorString(&ctx))
        }
    }

    /// Encodes one picture. Returns nil when the encoder dropped the frame.
    public func encode(
        _ frame: inout I420Frame, layer: Int, frameNumber: UInt32, captureMicros: Int64,
        forceKeyFrame: Bool, clock: () -> Int64
    ) throws(CodecError) -> EncodedVideoFrame? {
        precondition(frame.width == config.width && frame.height == config.height)
        // A stream's first picture is a key picture whether asked or not.
        let keyPicture = forceKeyFrame || outputIndex == 0
        if spatialLayers > 1 && keyPicture { frameIndex = 0 }
        let step = pattern.step(frameIndex)
        var flags: Int = forceKeyFrame ? cvpx_flag_force_kf() : 0
        if spatialLayers > 1 {
            let rc = cvpx_vp9_set_spatial_references(
                &ctx, Int32(spatialLayers), keyPicture ? 1 : 0, Int32(keyPicture ? 0 : step.temporalID), step.referenceLast ? 1 : 0,
                step.referenceGolden ? 1 : 0, step.updateLast ? 1 : 0, step.updateGolden ? 1 : 0)
            guard rc == VPX_CODEC_OK else {
                throw CodecError("VP9E_SET_SVC_REF_FRAME_CONFIG", code: Int32(rc.rawValue), message: Self.errorString(&ctx))
            }
        } else if pattern.layers > 1 && !forceKeyFrame {
            if !step.referenceLast { flags |= cvpx_flag_no_ref_last() }
            if !step.referenceGolden { flags |= cvpx_flag_no_ref_gf() }
            flags |= cvpx_flag_no_ref_arf() | cvpx_flag_no_upd_arf()
            if !step.updateLast { flags |= cvpx_flag_no_upd_last() }
            if !step.updateGolden { flags |= cvpx_flag_no_upd_gf() }
            setLayerID(step.temporalID)
        } else if pattern.layers > 1 {
            setLayerID(0)
        }
        let pts = vpx_codec_pts_t(Self.presentationTime(captureMicros: captureMicros))
        let duration = UInt(90_000 / max(1, config.fps))
        let start = clock()
        let ls = frame.lumaSize, cs = frame.chromaSize
        let w = frame.width, cw = frame.chromaWidth
        let rc: vpx_codec_err_t = frame.data.withUnsafeMutableBufferPointer { buf in
            let base = buf.baseAddress!
            image.planes.0 = base
            image.planes.1 = base + ls
            image.planes.2 = base + ls + cs
            image.stride.0 = Int32(w)
            image.stride.1 = Int32(cw)
            image.stride.2 = Int32(cw)
            return vpx_codec_encode(&ctx, &image, pts, duration, vpx_enc_frame_flags_t(flags), cvpx_dl_realtime())
        }
        guard rc == VPX_CODEC_OK else { throw CodecError("vpx_codec_encode", code: Int32(rc.rawValue), message: Self.errorString(&ctx)) }
        var out: EncodedVideoFrame?
        var iter: vpx_codec_iter_t?
        var spatialFrames: [EncodedVideoFrame.SpatialLayerFrame] = []
        var svcBytes: [UInt8] = []
        var svcKey = false
        while let pkt = cvpx_get_cx_data(&ctx, &iter) {
            guard cvpx_pkt_is_frame(pkt) != 0 else { continue }
            let size = cvpx_pkt_size(pkt)
            var bytes = [UInt8](UnsafeRawBufferPointer(start: cvpx_pkt_buf(pkt), count: size))
            if spatialLayers > 1 {
                // One packet per superframe: its spatial layers' frames, lowest first, behind an index.
                for range in Self.superframeFrames(bytes) where spatialFrames.count < spatialLayers {
                    let (w, h) = config.spatialSize(spatialFrames.count)
                    spatialFrames.append(.init(size: range.count, width: w, height: h))
                    svcBytes += bytes[range]
                }
                svcKey = svcKey || cvpx_pkt_is_key(pkt) != 0
                guard !svcBytes.isEmpty else { continue }
                bytes = svcBytes
            }
            let key = spatialLayers > 1 ? svcKey : cvpx_pkt_is_key(pkt) != 0
            if key { frameIndex = 0 }
            let s = key ? pattern.step(0) : step
            let references = key ? [] : self.references(s)
            out = EncodedVideoFrame(
                layer: layer, bytes: bytes, isKeyFrame: key, width: config.width, height: config.height,
                frameNumber: frameNumber, captureMicros: captureMicros,
                temporalID: pattern.layers > 1 ? s.temporalID : nil,
                layerSync: pattern.layers > 1 && !key && s.layerSync, encodeMicros: clock() - start, referenceDistances: references)
            out?.spatialLayers = spatialFrames
            if spatialLayers > 1 { continue } // the picture's count moves once, below
            if key || s.updateLast || pattern.layers == 1 { lastBuffer = outputIndex }
            if key || s.updateGolden || pattern.layers == 1 { goldenBuffer = outputIndex }
            outputIndex += 1
        }
        if spatialLayers > 1, let o = out {
            let s = o.isKeyFrame ? pattern.step(0) : step
            if o.isKeyFrame || s.updateLast || pattern.layers == 1 { lastBuffer = outputIndex }
            if o.isKeyFrame || s.updateGolden || pattern.layers == 1 { goldenBuffer = outputIndex }
            outputIndex += 1
        }
        frameIndex += 1
        if trim != nil, trim!.add(captureMicros: captureMicros, bits: out.map { $0.bytes.count * 8 }, target: targetBitrate) != nil {
            try configureRate()
        }
        return out
    }
}
