public import MediaCodecs
public import RTPCore

/// The resolution a libwebrtc publisher (Chrome, Edge, a native app on libwebrtc) would settle on
/// for a link: its rules, from its sources, applied to the link's settled estimate and to the
/// quantizer pubbot's own encoder reaches on the chosen content — measured, not assumed.
///
/// One encoding (a camera track without `sendEncodings`, degradation preference
/// maintain-framerate): the encoder is capped per size (`maxBitrate`,
/// `video/config/encoder_stream_factory.cc`); the first frames are dropped and the size stepped
/// down while the start rate is below 300 kbit/s for more than 320×240 or below 500 kbit/s for
/// more than 640×480, at most four times (`VideoStreamEncoder::DropDueToSize`,
/// `video/video_stream_encoder.cc`); then the quality scaler moves one step down while the
/// average QP (rounded down) is above the codec's high threshold (or more than 60 % of frames
/// are dropped) and one step up while it is at or below the low one
/// (`modules/video_coding/utility/quality_scaler.cc`),
/// never below 320×180 pixels (`kDefaultMinPixelsPerFrame`). A step is a scale of the camera's
/// picture from `media/base/video_adapter.cc` (3/4, 1/2, 3/8, 1/4, …).
///
/// Simulcast (three encodings from a 720p camera): no quality scaler; a layer runs when the
/// estimate covers the lower layers' targets and its own minimum (`video/config/simulcast.cc`,
/// `modules/video_coding/utility/simulcast_rate_allocator.cc`).
public enum BrowserResolution {
    public struct Size: Equatable, Sendable, CustomStringConvertible {
        public var width: Int
        public var height: Int
        public init(width: Int, height: Int) { (self.width, self.height) = (width, height) }
        public var pixels: Int { width * height }
        public var description: String { "\(width)x\(height)" }
    }

    /// The quality scaler never goes below this (`kDefaultMinPixelsPerFrame`, 320×180).
    public static let minPixels = 320 * 180
    /// The call's start rate (`kDefaultStartBitrateBps`, 300 kbit/s). A browser's first frames
    /// are judged by its video encoder's share of it (`videoBitrate`): below 300 kbit/s with
    /// audio beside it, so a 720p camera's first frames go out at 320×180.
    public static let startBitrate = 300_000

    /// Bytes each packet carries beside its payload: IPv4 and UDP 28, RTP 12, header extensions
    /// about 8, the SRTP tag 16 (AEAD-AES-128-GCM).
    public static let packetOverhead = 64

    /// What a browser's video encoder is given of a settled estimate: the audio's allocation on
    /// the wire (its bitrate and 50 packets a second of overhead) comes first
    /// (`call/bitrate_allocator.cc`), and the video's packets' overhead is taken from its share
    /// before the encoder sees it (`RtpVideoSender::OnBitrateUpdated`, `call/rtp_video_sender.cc`,
    /// 1200-byte packets).
    public static func videoBitrate(estimate: Int, audioBitrate: Int) -> Int {
        let audio = audioBitrate > 0 ? audioBitrate + 50 * packetOverhead * 8 : 0
        let video = max(0, estimate - audio)
        return video - video * packetOverhead / 1200
    }

    /// The sizes the camera's picture is scaled to, largest first (the camera's own size, then
    /// `video_adapter.cc`'s scales 3/4, 1/2, 3/8, 1/4, 3/16, 1/8 while at least `minPixels`).
    public static func ladder(camera: Size) -> [Size] {
        let scales: [(Int, Int)] = [(1, 1), (3, 4), (1, 2), (3, 8), (1, 4), (3, 16), (1, 8), (3, 32), (1, 16)]
        var out: [Size] = []
        for (n, d) in scales {
            let s = Size(width: camera.width * n / d, height: camera.height * n / d)
            guard s.pixels >= minPixels || out.isEmpty else { break }
            out.append(s)
        }
        return out
    }

    /// One encoding's maximum bitrate at a size (`GetMaxDefaultVideoBitrateKbps`,
    /// `video/config/encoder_stream_factory.cc`).
    public static func maxBitrate(_ s: Size) -> Int {
        switch s.pixels {
        case ...(320 * 240): 600_000
        case ...(640 * 480): 1_700_000
        case ...(960 * 540): 2_000_000
        default: 2_500_000
        }
    }

    /// The quality scaler's QP thresholds (low, high) per codec, from each encoder's
    /// `GetEncoderInfo().scaling_settings`: VP8 29/95 (`libvpx_vp8_encoder.cc`), VP9 149/205
    /// (`libvpx_vp9_encoder.cc`), H.264 24/37 (`h264_encoder_impl.cc`), AV1 145/205
    /// (`libaom_av1_encoder.cc`).
    public static func qpThresholds(_ codec: VideoCodec) -> (low: Int, high: Int) {
        switch codec {
        case .vp8: (29, 95)
        case .vp9: (149, 205)
        case .h264: (24, 37)
        case .av1: (145, 205)
        }
    }

    /// What the encoder did at one size and rate.
    public struct Probe: Equatable, Sendable {
        public var qp: Double
        /// Frames the encoder dropped, of those it was given (0…1).
        public var dropRatio: Double
        /// The luma PSNR of the decoded frames against the source (dB), when measured.
        public var psnrY: Double?
        public init(qp: Double, dropRatio: Double, psnrY: Double? = nil) { (self.qp, self.dropRatio, self.psnrY) = (qp, dropRatio, psnrY) }
    }

    /// One step of the quality scaler's walk: where it was, what the encoder reached, what it did.
    public struct Step: Equatable, Sendable {
        public enum Move: String, Sendable { case down, up, stay }
        public var size: Size
        public var bitrate: Int
        public var probe: Probe
        public var move: Move
    }

    /// Where one encoding settles.
    public struct OneEncoding: Equatable, Sendable {
        public var size: Size
        public var bitrate: Int
        public var probe: Probe
        /// The size the first frames were sent at (the start-rate drops).
        public var start: Size
        public var steps: [Step]
        /// The walk came back to a size it had left the other way (the scaler would go on
        /// alternating between two sizes; the lower is given).
        public var oscillates: Bool
    }

    /// The size the first frames go out at: the start-rate drops (`DropDueToSize`), at most four.
    public static func startSize(ladder: [Size], startBitrate: Int) -> Int {
        var i = 0
        for _ in 0..<4 where i + 1 < ladder.count {
            let p = ladder[i].pixels
            let drop = startBitrate < 300_000 ? p > 320 * 240 : startBitrate < 500_000 ? p > 640 * 480 : false
            guard drop else { break }
            i += 1
        }
        return i
    }

    /// The quality scaler's settled size for one encoding, given the video's share of the
    /// settled estimate and a probe that encodes the content at a size and rate.
    public static func oneEncoding<E: Error>(
        videoBitrate: Int, camera: Size, codec: VideoCodec,
        startBitrate: Int = BrowserResolution.videoBitrate(estimate: startBitrate, audioBitrate: 32_000),
        probe: (Size, Int) throws(E) -> Probe
    ) throws(E) -> OneEncoding {
        let rungs = ladder(camera: camera)
        let (low, high) = qpThresholds(codec)
        let first = startSize(ladder: rungs, startBitrate: startBitrate)
        var i = first
        var steps: [Step] = []
        var left: [Int: Step.Move] = [:]
        var cache: [Int: Probe] = [:]
        var oscillates = false
        while steps.count < 2 * rungs.count + 2 {
            let rate = min(videoBitrate, maxBitrate(rungs[i]))
            let p: Probe
            if let c = cache[i] { p = c } else { p = try probe(rungs[i], rate); cache[i] = p }
            // The average rounded down, above the high threshold: down; at or below the low one: up
            // (`QualityScaler::CheckQp`, `GetAverageRoundedDown`).
            let qp = Int(p.qp.rounded(.down))
            var move = Step.Move.stay
            if (qp > high || p.dropRatio > 0.6) && i + 1 < rungs.count {
                move = .down
            } else if qp <= low && i > 0 {
                move = .up
            }
            // Back to a size left the other way: the scaler alternates; the lower size is given.
            if move == .up, left[i - 1] == .down {
                oscillates = true
                move = .stay
            }
            steps.append(Step(size: rungs[i], bitrate: rate, probe: p, move: move))
            guard move != .stay else { break }
            left[i] = move
            i += move == .down ? 1 : -1
        }
        let last = steps[steps.count - 1]
        return OneEncoding(
            size: last.size, bitrate: last.bitrate, probe: last.probe, start: rungs[first], steps: steps, oscillates: oscillates)
    }

    /// A simulcast layer of libwebrtc's table (`kSimulcastFormats`, `video/config/simulcast.cc`).
    public struct Layer: Equatable, Sendable {
        public var size: Size
        public var minBitrate: Int
        public var targetBitrate: Int
        public var maxBitrate: Int
    }

    /// The simulcast layers libwebrtc makes from a camera: three for 720p and up (each half the
    /// one above), with their rates from `kSimulcastFormats`.
    public static func simulcastLayers(camera: Size) -> [Layer] {
        // (width, height, max layers, max, target, min kbit/s) — `kSimulcastFormats`.
        let table: [(Int, Int, Int, Int, Int, Int)] = [
            (1920, 1080, 3, 5000, 4000, 800), (1280, 720, 3, 2500, 2500, 600), (960, 540, 3, 1200, 1200, 350),
            (640, 360, 2, 700, 500, 150), (480, 270, 2, 450, 350, 150), (320, 180, 1, 200, 150, 30)
        ]
        func row(_ s: Size) -> (Int, Int, Int, Int, Int, Int) {
            table.first { $0.0 * $0.1 <= s.pixels } ?? table[table.count - 1]
        }
        let count = row(camera).2
        var layers: [Layer] = []
        for k in (0..<count).reversed() {
            let s = Size(width: camera.width >> k, height: camera.height >> k)
            let r = row(s)
            layers.append(Layer(size: s, minBitrate: r.5 * 1000, targetBitrate: r.4 * 1000, maxBitrate: r.3 * 1000))
        }
        return layers
    }

    /// Where simulcast settles: the layers that run on the video's share of the estimate, the top
    /// one being what the best viewer gets.
    public struct Simulcast: Equatable, Sendable {
        public var layers: [Layer]
        public var running: Int
        public var top: Size { layers[max(0, running - 1)].size }
        /// The top running layer's rate (what is left after the lower layers' targets, up to its maximum).
        public var topBitrate: Int
    }

    public static func simulcast(videoBitrate: Int, camera: Size) -> Simulcast {
        let layers = simulcastLayers(camera: camera)
        var running = 1
        var below = 0
        for (k, l) in layers.enumerated() where k > 0 {
            below += layers[k - 1].targetBitrate
            guard videoBitrate >= below + l.minBitrate else { break }
            running = k + 1
        }
        let lower = layers.prefix(running - 1).reduce(0) { $0 + $1.targetBitrate }
        let top = min(layers[running - 1].maxBitrate, max(0, videoBitrate - lower))
        return Simulcast(layers: layers, running: running, topBitrate: top)
    }
}

extension BrowserResolution {
    /// Encodes `seconds` of the synthetic source's `content`, drawn at the `camera`'s size and
    /// scaled down to `size` as a browser's capture pipeline does, at a rate with pubbot's own
    /// encoder for `codec` (libwebrtc's settings, `LibvpxEncoder` and the others), then reports
    /// the mean QP and the drops over the frames after the first second (the rate control has
    /// settled by then), and the decoded frames' PSNR-Y against the source.
    public static func measure(
        size: Size, camera: Size? = nil, bitrate: Int, codec: VideoCodec, content: SyntheticVideoSource.Content, fps: Int = 30,
        seconds: Double = 3
    ) throws(ProbeError) -> Probe {
        let p: Probe?
        do throws(CodecError) {
            p = try encode(size: size, camera: camera ?? size, bitrate: bitrate, codec: codec, content: content, fps: fps, seconds: seconds)
        } catch {
            throw ProbeError(description: "\(error)")
        }
        guard let p else { throw ProbeError(description: "the \(codec.rawValue) encoder does not report its QP") }
        return p
    }

    /// Why a size could not be probed.
    public struct ProbeError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    static func encode(
        size: Size, camera: Size, bitrate: Int, codec: VideoCodec, content: SyntheticVideoSource.Content, fps: Int, seconds: Double
    ) throws(CodecError) -> Probe? {
        let w = max(16, size.width & ~1), h = max(16, size.height & ~1)
        var config = VideoLayerConfig(
            width: w, height: h, fps: fps, minBitrate: min(bitrate, 30_000), targetBitrate: bitrate, maxBitrate: bitrate, rid: "q")
        config.temporalLayers = 1
        // libwebrtc's encoder, not the publisher's: libvpx's own rate control alone (pubbot's
        // outer trim would hand it more than the target on an easy picture and lower the QP), at
        // VP8's speed for the size (`LibvpxVp8Encoder::GetCpuSpeed`: -6, -4 below CIF on x86).
        let encoder: any VideoEncoder =
            switch codec {
            case .vp8:
                try LibvpxEncoder(config: config, codec: .vp8, cpuUsed: w * h < 352 * 288 ? -4 : -6, rateTrim: false)
            case .vp9: try LibvpxEncoder(config: config, codec: .vp9, rateTrim: false)
            // openh264's own rate control as `H264EncoderImpl` sets it (RC_BITRATE_MODE, frame skip on).
            case .h264: try H264Encoder(config: config, rateTrim: false)
            default: try codec.makeEncoder(config: config, keyFrameInterval: 0)
            }
        let decoder = try codec.makeDecoder()
        // The browser captures at the camera's size and scales down to the rung (libyuv's box
        // filter): the encoder is given that downscale, not a picture drawn at the rung's size.
        let source = SyntheticVideoSource(seed: 1, content: content)
        let quality = PictureQuality(seed: 1, content: content)
        quality.ssimEvery = Int.max
        let cw = max(w, camera.width & ~1), ch = max(h, camera.height & ~1)
        quality.captureSize = (cw, ch)
        var captured = I420Frame(width: cw, height: ch)
        var picture = I420Frame(width: w, height: h)
        let frames = max(2 * fps, Int(seconds * Double(fps)))
        let warm = fps
        var qpSum = 0.0, qpCount = 0, dropped = 0, psnrSum = 0.0, psnrCount = 0
        var micros: Int64 = 0
        for n in 0..<frames {
            let capture = Int64(n) * 1_000_000 / Int64(fps)
            if cw == w && ch == h {
                source.fill(&picture, frameNumber: UInt32(n), captureMillis: UInt32(capture / 1000))
            } else {
                source.fill(&captured, frameNumber: UInt32(n), captureMillis: UInt32(capture / 1000))
                picture.downscale(from: captured)
            }
            let frame = try encoder.encode(
                &picture, layer: 0, frameNumber: UInt32(n), captureMicros: capture, forceKeyFrame: n == 0,
                clock: {
                    micros += 1; return micros
                })
            guard let frame else {
                if n >= warm { dropped += 1 }
                continue
            }
            let decoded = try decoder.decode(frame.bytes, readStamp: true, quality: n >= warm ? quality : nil)
            guard n >= warm else { continue }
            if let q = encoder.lastQP {
                qpSum += Double(q)
                qpCount += 1
            }
            if let p = decoded?.quality?.psnrY {
                psnrSum += p
                psnrCount += 1
            }
        }
        let measured = frames - warm
        if qpCount == 0 && dropped < measured { return nil }
        return Probe(
            qp: qpCount > 0 ? qpSum / Double(qpCount) : 0, dropRatio: Double(dropped) / Double(max(1, measured)),
            psnrY: psnrCount > 0 ? psnrSum / Double(psnrCount) : nil)
    }
}
