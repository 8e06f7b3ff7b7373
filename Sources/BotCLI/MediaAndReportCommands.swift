#if canImport(Glibc)
    import Glibc
#endif
import MediaCodecs
import RTPCore
import Transport
import Stats

/// `pubbot media build`: encodes the synthetic loops once into `Media/replay/` for replay bots.
enum MediaCommand {
    static let spec = OptionSpec(options: [
        "out": .value, "seconds": .value, "keyframe-interval": .value, "layers": .value, "fps": .value, "codec": .value
    ])
    static let exportSpec = OptionSpec(options: ["y4m": .value, "size": .value, "seconds": .value, "fps": .value, "content": .value])

    /// Encodes replay loops with a progress line on a terminal; nil after saying why.
    static func buildLoops(
        _ layers: [VideoLayerConfig], seconds: Int, keyFrameIntervalMicros: Int64, codec: VideoCodec = .vp8, label: String
    ) -> ReplayLibrary? {
        defer { Output.endProgress() }
        do {
            return try ReplayLibrary.build(layers: layers, seconds: seconds, keyFrameIntervalMicros: keyFrameIntervalMicros, codec: codec) {
                f in
                Output.progress("\(label) \(Output.bar(f)) \(Int(f * 100)) %")
            }
        } catch {
            Output.endProgress()
            Output.err("Error: cannot encode the replay loops: \(error)\n")
            return nil
        }
    }

    /// `pubbot media export --y4m FILE [--content C] [--size WxH] [--seconds N] [--fps N]`: the synthetic source
    /// — the picture pubbot encodes, stamps included — as YUV4MPEG2, for Chromium's fake camera
    /// (`--use-file-for-fake-video-capture`), ffmpeg or another tool: what they send at the
    /// exported size is then measured by pubbot's receiver against the same source (at another
    /// size the receiver draws the source natively, not the sender's downscale).
    static func export(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        let o = try ParsedOptions.parse(args, spec: exportSpec, command: "media")
        if o.helpRequested { Output.out(Help.help("media")! + "\n"); return 0 }
        guard let path = o.value("y4m") else { throw UsageError("media export needs --y4m FILE", command: "media") }
        var width = 1280, height = 720
        if let s = o.value("size") {
            do throws(UsageError) {
                (width, height) = try ValueParsers.size(s, option: "--size", width: 16...4096, height: 16...2304, even: true)
            } catch { throw UsageError(error.message, command: "media") }
        }
        let (seconds, fps) = try secondsAndFps(o, range: 1...600, default: 10)

        guard let file = fopen(path, "w") else {
            Output.err("Error: cannot write \(path): \(String(cString: strerror(errno)))\n")
            return 2
        }
        defer { fclose(file) }
        fputs("YUV4MPEG2 W\(width) H\(height) F\(fps):1 Ip A1:1 C420jpeg\n", file)
        let content = try o.value("content").map { t throws(UsageError) in try ValueParsers.content(t) } ?? .natural
        let source = SyntheticVideoSource(seed: 1, content: content)
        var picture = I420Frame(width: width, height: height)
        let frames = seconds * fps
        defer { Output.endProgress() }
        for n in 0..<frames {
            source.fill(&picture, frameNumber: UInt32(n), captureMillis: UInt32(n * 1000 / fps))
            fputs("FRAME\n", file)
            let written = picture.data.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
            guard written == picture.data.count else {
                Output.endProgress()
                Output.err("Error: cannot write \(path): \(String(cString: strerror(errno)))\n")
                return 2
            }
            if n % fps == 0 { Output.progress("media export \(Output.bar(Double(n) / Double(frames))) \(n / fps) s of \(seconds)") }
        }
        Output.endProgress()
        Output.out(
            "\(path): \(frames) frames of \(width)x\(height) at \(fps) fps (\(seconds) s), the synthetic source (\(content.rawValue) content) with its stamps\n"
        )
        return 0
    }

    /// `--seconds N` (within `range`) and `--fps N` (30 by default).
    static func secondsAndFps(_ o: ParsedOptions, range: ClosedRange<Int>, default d: Int) throws(UsageError) -> (seconds: Int, fps: Int) {
        let seconds =
            try o.value("seconds").map { s throws(UsageError) in
                guard let n = Int(s), range.contains(n) else {
                    throw UsageError("invalid --seconds '\(s)' (\(range.lowerBound)…\(range.upperBound))", command: "media")
                }
                return n
            } ?? d
        guard let f = o.value("fps") else { return (seconds, 30) }
        guard let v = Int(f), ValueParsers.frameRates.contains(v) else {
            throw UsageError("invalid --fps '\(f)' (\(ValueParsers.frameRateList))", command: "media")
        }
        return (seconds, v)
    }

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        guard let sub = args.first, !sub.hasPrefix("-") else {
            if args.contains("--help") || args.contains("-h") { Output.out(Help.help("media")! + "\n"); return 0 }
            throw UsageError("missing subcommand (build, export)", command: "media")
        }
        if sub == "export" { return try export(args.dropFirst()) }
        guard sub == "build" else { throw UsageError("unknown subcommand '\(sub)' (build, export)", command: "media") }
        let o = try ParsedOptions.parse(args.dropFirst(), spec: spec, command: "media")
        if o.helpRequested { Output.out(Help.help("media")! + "\n"); return 0 }
        let codecs = try o.value("codec").map { c throws(UsageError) in try ValueParsers.codecs(c) } ?? [.vp8]
        guard codecs.count == 1 else { throw UsageError("--codec takes one codec for replay loops", command: "media") }
        let codec = codecs[0]
        let out = o.value("out") ?? "Media/\(DefaultMedia.name(codec))"
        let (seconds, fps) = try secondsAndFps(o, range: 1...60, default: 4)
        let layers =
            try o.value("layers").map { l throws(UsageError) in try ValueParsers.ladder(l, temporalLayers: 1, defaultFps: fps) }
            ?? VideoLayerConfig.ladder(top: 640, 360, layers: 2, fps: fps)
        let kfi =
            try o.value("keyframe-interval").map { d throws(UsageError) in try ValueParsers.duration(d, option: "keyframe-interval") }
            ?? 1_000_000
        guard kfi >= 100_000 else { throw UsageError("--keyframe-interval must be at least 100ms", command: "media") }
        guard let library = buildLoops(layers, seconds: seconds, keyFrameIntervalMicros: kfi, codec: codec, label: "media build") else {
            return 2
        }
        do { try library.write(directory: out) } catch {
            Output.err("Error: \(error)\n")
            return 2
        }
        var t = TextTable(
            headers: ["layer", "resolution", "frames", "key frames", "target", "bitrate", "bytes"], rightAligned: [2, 3, 4, 5, 6])
        for l in library.layers {
            t.add([
                l.config.rid, "\(l.config.width)x\(l.config.height)@\(l.config.fps)", String(l.frames.count), String(l.keyFrames.count),
                Units.bitrate(l.config.targetBitrate), Units.bitrate(l.bitrate), String(l.frames.reduce(0) { $0 + $1.bytes.count })
            ])
        }
        t.add([
            "audio", "opus", String(library.audio.count), "-", Units.bitrate(library.audioBitrate),
            Units.bitrate(library.audio.reduce(0) { $0 + $1.count } * 8 / max(1, seconds)),
            String(library.audio.reduce(0) { $0 + $1.count })
        ])
        Output.out(
            "wrote \(out)/ (\(codec.sdpName), \(seconds) s loops, a key frame every \(Units.fixed(Double(kfi) / 1e6, 2)) s)\n" + t.render())
        return 0
    }
}

/// `pubbot report merge A.json B.json … [--report OUT] [--json] [--require LIST]`: combines shard
/// reports exactly (counts add, histograms merge, percentiles recomputed from the merged buckets).
enum ReportCommand {
    static let spec = OptionSpec(options: ["report": .value, "json": .flag, "require": .value])

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        guard let sub = args.first, !sub.hasPrefix("-") else {
            if args.contains("--help") || args.contains("-h") { Output.out(Help.help("report")! + "\n"); return 0 }
            throw UsageError("missing subcommand (merge)", command: "report")
        }
        guard sub == "merge" else { throw UsageError("unknown subcommand '\(sub)' (merge)", command: "report") }
        let rest = args.dropFirst()
        var files: [String] = []
        var optionArgs: [String] = []
        var i = rest.startIndex
        while i < rest.endIndex {
            let a = rest[i]
            if a.hasPrefix("-") {
                optionArgs.append(a)
                if spec.options[String(a.drop { $0 == "-" })] == .value, !a.contains("="), i + 1 < rest.endIndex {
                    optionArgs.append(rest[i + 1]); i += 1
                }
            } else {
                files.append(a)
            }
            i += 1
        }
        let o = try ParsedOptions.parse(optionArgs[...], spec: spec, command: "report")
        if o.helpRequested { Output.out(Help.help("report")! + "\n"); return 0 }
        guard !files.isEmpty else { throw UsageError("give the shard reports to merge", command: "report") }
        var merged: LoadReport?
        for f in files {
            guard let text = ReceiveCommand.readFile(f, limit: 256 << 20) else { throw UsageError("cannot read '\(f)'", command: "report") }
            let j: JSONValue
            do { j = try JSONValue.parse(text) } catch { throw UsageError("'\(f)': \(error)", command: "report") }
            let r: LoadReport
            do { r = try LoadReport(json: j) } catch { throw UsageError("'\(f)': \(error.message)", command: "report") }
            if merged == nil { merged = r } else { merged!.merge(r) }
        }
        var report = merged!
        let reqs =
            try o.value("require").map { r throws(UsageError) in try LoadRequirement.parseList(r) }
            ?? report.requirementTexts.compactMap { try? LoadRequirement.parse($0) }
        report.evaluate(reqs)
        guard report.emit(to: o.value("report"), json: o.has("json")) else { return 2 }
        return report.exitCode
    }
}
