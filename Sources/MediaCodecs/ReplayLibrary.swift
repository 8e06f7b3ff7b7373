#if canImport(Glibc)
    import Glibc
#endif
public import RTPCore

/// Pre-encoded media loops for replay bots (`pubbot media build` → `Media/replay/`): per simulcast
/// layer the synthetic loop encoded once by the project's own encoder (VP8 or H.264), with a key frame every
/// `keyFrameInterval` frames (a PLI is answered by jumping to the next one), and the Opus frames.
/// Bots packetize and protect these afresh with their own SSRCs, sequence numbers and timestamps.
///
/// On disk: `manifest.txt` (one line per layer: `layer RID WIDTH HEIGHT FPS MIN TARGET MAX FILE`,
/// then `audio BITRATE FILE`), one IVF file per layer (the format ffmpeg and libvpx tools read;
/// fourcc `VP80`, `VP90`, `H264` with each frame an Annex B access unit, or `AV01` with each
/// frame a temporal unit)
/// and the Opus frames as `PBOPUS01` followed by (u16 little-endian length, bytes) per 20 ms frame.
public struct ReplayLibrary: Sendable {
    public struct Frame: Sendable {
        public var bytes: [UInt8]
        public var isKeyFrame: Bool
    }

    public struct Layer: Sendable {
        public var config: VideoLayerConfig
        public var frames: [Frame]
        /// Indices of the key frames, ascending (index 0 is always one).
        public var keyFrames: [Int]

        init(config: VideoLayerConfig, frames: [Frame]) {
            self.config = config
            self.frames = frames
            keyFrames = frames.indices.filter { frames[$0].isKeyFrame }
        }

        /// The first key frame at or after `i`, wrapping to the start of the loop.
        public func keyFrame(atOrAfter i: Int) -> Int {
            for k in keyFrames where k >= i { return k }
            return keyFrames.first ?? 0
        }

        /// Mean bitrate of the loop, bits per second.
        public var bitrate: Int {
            guard !frames.isEmpty else { return 0 }
            return frames.reduce(0) { $0 + $1.bytes.count } * 8 * config.fps / frames.count
        }
    }

    public var layers: [Layer]
    public var audio: [[UInt8]]
    public var audioBitrate: Int
    /// The video codec of every layer's frames.
    public var codec: VideoCodec

    public init(layers: [Layer], audio: [[UInt8]], audioBitrate: Int, codec: VideoCodec = .vp8) {
        self.codec = codec
        self.layers = layers
        self.audio = audio
        self.audioBitrate = audioBitrate
    }

    /// Encodes `seconds` of the synthetic video for each layer and of the synthetic audio.
    /// `progress` hears the fraction done.
    /// Key frames every `keyFrameIntervalMicros`, in each layer's own frames.
    public static func build(
        layers: [VideoLayerConfig], seconds: Int, keyFrameIntervalMicros: Int64, audioBitrate: Int = 32_000, codec: VideoCodec = .vp8,
        progress: (Double) -> Void = { _ in }
    ) throws(CodecError) -> ReplayLibrary {
        let source = SyntheticVideoSource(seed: 1)
        var out: [Layer] = []
        let totalFrames = layers.reduce(0) { $0 + $1.fps * seconds }
        var done = 0
        for (i, l) in layers.enumerated() {
            var config = l
            config.temporalLayers = 1
            let encoder = try codec.makeEncoder(config: config, keyFrameInterval: 0, frameDrop: false)
            var picture = I420Frame(width: config.width, height: config.height)
            var frames: [Frame] = []
            let count = config.fps * seconds
            let keyFrameInterval = max(1, LibvpxEncoder.frames(in: keyFrameIntervalMicros, fps: config.fps))
            for n in 0..<count {
                let number = UInt32(n)
                source.fill(&picture, frameNumber: number, captureMillis: UInt32(n * 1000 / max(1, config.fps)))
                let capture = Int64(n) * 1_000_000 / Int64(max(1, config.fps))
                if let f = try encoder.encode(
                    &picture, layer: i, frameNumber: number, captureMicros: capture,
                    forceKeyFrame: n % max(1, keyFrameInterval) == 0, clock: { 0 })
                {
                    frames.append(Frame(bytes: f.bytes, isKeyFrame: f.isKeyFrame))
                }
                done += 1
                if done % 30 == 0 { progress(Double(done) / Double(max(1, totalFrames))) }
            }
            out.append(Layer(config: config, frames: frames))
        }
        let opus = try OpusAudioEncoder(bitrate: audioBitrate)
        var audioSource = SyntheticAudioSource()
        var pcm = [Int16](repeating: 0, count: OpusAudioEncoder.frameSamples)
        var packet = [UInt8]()
        var audio: [[UInt8]] = []
        for _ in 0..<(seconds * 50) {
            audioSource.fill(&pcm)
            try opus.encode(pcm, into: &packet)
            audio.append(packet)
        }
        progress(1)
        return ReplayLibrary(layers: out, audio: audio, audioBitrate: audioBitrate, codec: codec)
    }

    // MARK: files

    public struct FileError: Error, CustomStringConvertible, Sendable {
        public var description: String
        init(_ d: String) { description = d }
    }

    static let opusMagic: [UInt8] = Array("PBOPUS01".utf8)

    /// Writes the manifest, one IVF per layer and the Opus frames into `directory` (created).
    public func write(directory: String) throws(FileError) {
        _ = mkdir(directory, 0o755)
        var manifest = "pubbot-replay 1\n"
        for l in layers {
            let c = l.config
            let file = "\(c.rid)-\(c.width)x\(c.height).ivf"
            manifest += "layer \(c.rid) \(c.width) \(c.height) \(c.fps) \(c.minBitrate) \(c.targetBitrate) \(c.maxBitrate) \(file)\n"
            var ivf = [UInt8]()
            ivf += Array("DKIF".utf8); ivf += le16(0); ivf += le16(32); ivf += Self.fourcc(codec)
            ivf += le16(c.width); ivf += le16(c.height); ivf += le32(c.fps); ivf += le32(1); ivf += le32(l.frames.count); ivf += le32(0)
            for (n, f) in l.frames.enumerated() {
                ivf += le32(f.bytes.count); ivf += le32(n); ivf += le32(0)
                ivf += f.bytes
            }
            try Self.writeFile("\(directory)/\(file)", ivf)
        }
        manifest += "audio \(audioBitrate) audio.opusframes\n"
        var a = Self.opusMagic
        for f in audio { a += le16(f.count); a += f }
        try Self.writeFile("\(directory)/audio.opusframes", a)
        try Self.writeFile("\(directory)/manifest.txt", Array(manifest.utf8))
    }

    /// Reads what `write` wrote; every size is checked, so a damaged file is an error, not a crash.
    public static func load(directory: String) throws(FileError) -> ReplayLibrary {
        let text = String(decoding: try readFile("\(directory)/manifest.txt", limit: 1 << 16), as: UTF8.self)
        let lines = text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        guard lines.first == ["pubbot-replay", "1"] else {
            throw FileError("\(directory)/manifest.txt is not a pubbot replay manifest (run `pubbot media build`)")
        }
        var layers: [Layer] = []
        var audio: [[UInt8]] = []
        var audioBitrate = 32_000
        var codec: VideoCodec?
        for f in lines.dropFirst() {
            if f.first == "layer" {
                guard f.count == 9, let w = Int(f[2]), let h = Int(f[3]), let fps = Int(f[4]), let lo = Int(f[5]), let t = Int(f[6]),
                    let hi = Int(f[7]),
                    (16...4096).contains(w), (16...4096).contains(h), (1...120).contains(fps), !f[8].contains("/")
                else {
                    throw FileError("bad layer line in \(directory)/manifest.txt: \(f.joined(separator: " "))")
                }
                let config = VideoLayerConfig(width: w, height: h, fps: fps, minBitrate: lo, targetBitrate: t, maxBitrate: hi, rid: f[1])
                let (frames, layerCodec) = try readIVF("\(directory)/\(f[8])", width: w, height: h)
                guard codec == nil || codec == layerCodec else { throw FileError("\(directory): the layers' codecs differ") }
                codec = layerCodec
                guard frames.first?.isKeyFrame == true else { throw FileError("\(directory)/\(f[8]) does not start with a key frame") }
                layers.append(Layer(config: config, frames: frames))
            } else if f.first == "audio" {
                guard f.count == 3, let b = Int(f[1]), !f[2].contains("/") else {
                    throw FileError("bad audio line in \(directory)/manifest.txt")
                }
                audioBitrate = b
                let bytes = try readFile("\(directory)/\(f[2])", limit: 64 << 20)
                guard bytes.starts(with: opusMagic) else { throw FileError("\(directory)/\(f[2]) is not a pubbot Opus frame file") }
                var i = opusMagic.count
                while i < bytes.count {
                    guard i + 2 <= bytes.count else { throw FileError("\(directory)/\(f[2]) is truncated") }
                    let n = Int(bytes[i]) | Int(bytes[i + 1]) << 8
                    guard n > 0, n <= 1275, i + 2 + n <= bytes.count else {
                        throw FileError("\(directory)/\(f[2]) has a bad frame at byte \(i)")
                    }
                    audio.append(Array(bytes[(i + 2)..<(i + 2 + n)]))
                    i += 2 + n
                }
            }
        }
        guard !layers.isEmpty || !audio.isEmpty else { throw FileError("\(directory)/manifest.txt lists no media") }
        return ReplayLibrary(layers: layers, audio: audio, audioBitrate: audioBitrate, codec: codec ?? .vp8)
    }

    /// The IVF fourcc of a codec's frames (what ffmpeg's IVF reader maps: `VP80`, `H264`).
    static func fourcc(_ codec: VideoCodec) -> [UInt8] {
        switch codec {
        case .vp8: Array("VP80".utf8)
        case .h264: Array("H264".utf8)
        case .vp9: Array("VP90".utf8)
        case .av1: Array("AV01".utf8)
        }
    }

    static func readIVF(_ path: String, width: Int, height: Int) throws(FileError) -> ([Frame], VideoCodec) {
        let b = try readFile(path, limit: 256 << 20)
        guard b.count >= 32, b.starts(with: Array("DKIF".utf8)),
            let codec = VideoCodec.allCases.first(where: { fourcc($0) == Array(b[8..<12]) })
        else {
            throw FileError("\(path) is not a VP8, VP9, H.264 or AV1 IVF file")
        }
        guard u16(b, 12) == width, u16(b, 14) == height else {
            throw FileError("\(path) is \(u16(b, 12))x\(u16(b, 14)), the manifest says \(width)x\(height)")
        }
        var frames: [Frame] = []
        var i = u16(b, 6)
        while i < b.count {
            guard i + 12 <= b.count else { throw FileError("\(path) is truncated") }
            let n = u32(b, i)
            guard n > 0, n <= 4 << 20, i + 12 + n <= b.count else { throw FileError("\(path) has a bad frame at byte \(i)") }
            let data = Array(b[(i + 12)..<(i + 12 + n)])
            frames.append(Frame(bytes: data, isKeyFrame: Self.isKeyFrame(data, codec: codec)))
            i += 12 + n
        }
        return (frames, codec)
    }

    /// VP8: the frame tag's bit 0 clear (RFC 6386 §9.1); H.264: the access unit holds an IDR slice.
    static func isKeyFrame(_ data: [UInt8], codec: VideoCodec) -> Bool {
        switch codec {
        case .vp8: return data[0] & 1 == 0
        case .vp9: return VP9PayloadDescriptor.isKeyFrame(data.span)
        case .av1: return AV1OBU.isKeyFrame(data.span)
        case .h264:
            var at = 0
            while let r = H264NAL.next(in: data.span, from: at) {
                if data[r.lowerBound] & 0x1F == H264NAL.idr { return true }
                at = r.upperBound
            }
            return false
        }
    }

    static func readFile(_ path: String, limit: Int) throws(FileError) -> [UInt8] {
        guard let f = fopen(path, "rb") else { throw FileError("cannot read \(path) (run `pubbot media build`)") }
        defer { fclose(f) }
        var data = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            data += buf[0..<n]
            if data.count > limit { throw FileError("\(path) is larger than \(limit) bytes") }
        }
        return data
    }

    static func writeFile(_ path: String, _ bytes: [UInt8]) throws(FileError) {
        guard let f = fopen(path, "wb") else { throw FileError("cannot write \(path)") }
        let n = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        guard fclose(f) == 0, n == bytes.count else { throw FileError("cannot write \(path)") }
    }
}

private func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8 & 0xff)] }
private func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8 & 0xff), UInt8(v >> 16 & 0xff), UInt8(v >> 24 & 0xff)] }
private func u16(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
private func u32(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24 }
