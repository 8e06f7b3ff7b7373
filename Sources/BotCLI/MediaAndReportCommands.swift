import MediaCodecs
import RTPCore
import Transport
import Stats

/// `pubbot media build`: encodes the synthetic loops once into `Media/replay/` for replay bots.
enum MediaCommand {
    static let spec = OptionSpec(options: [
        "out": .value, "seconds": .value, "keyframe-interval": .value, "layers": .value, "fps": .value, "codec": .value
    ])

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

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        guard let sub = args.first, !sub.hasPrefix("-") else {
            if args.contains("--help") || args.contains("-h") { Output.out(Help.help("media")! + "\n"); return 0 }
            throw UsageError("missing subcommand (build)", command: "media")
        }
        guard sub == "build" else { throw UsageError("unknown subcommand '\(sub)' (build)", command: "media") }
        let o = try ParsedOptions.parse(args.dropFirst(), spec: spec, command: "media")
        if o.helpRequested { Output.out(Help.help("media")! + "\n"); return 0 }
        let codecs = try o.value("codec").map { c throws(UsageError) in try ValueParsers.codecs(c) } ?? [.vp8]
        guard codecs.count == 1 else { throw UsageError("--codec takes one codec for replay loops", command: "media") }
        let codec = codecs[0]
        let out = o.value("out") ?? "Media/\(DefaultMedia.name(codec))"
        let seconds =
            try o.value("seconds").map { s throws(UsageError) in
                guard let n = Int(s), (1...60).contains(n) else { throw UsageError("invalid --seconds '\(s)' (1…60)", command: "media") }
                return n
            } ?? 4
        var fps = 30
        if let f = o.value("fps") {
            guard let v = Int(f), ValueParsers.frameRates.contains(v) else {
                throw UsageError("invalid --fps '\(f)' (\(ValueParsers.frameRateList))", command: "media")
            }
            fps = v
        }
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
