import MediaCodecs
import PublisherEngine
import ReceiverEngine
import Simulation
import Transport
import Stats
import Platform
import Preflight
import PreflightRunner

/// `pubbot simulate`: a publisher session and a receiver session over the emulated link, in
/// virtual time — the same code and the same JSON Lines as `publish` + `receive --impair`,
/// deterministic for a seed, many times faster than real time.
enum SimulateCommand {
    static let spec: OptionSpec = {
        var o = CommonOptions.media
        for (k, v) in [
            "impair": OptionSpec.Kind.value, "downlink-impair": .value, "media": .value, "seed": .value, "no-audio": .flag,
            "no-decode": .flag, "one-encoding": .flag, "preflight": .flag, "verdict-thresholds": .value, "require": .value, "junit": .value
        ] { o[k] = v }
        o["srtp-suite"] = nil
        return OptionSpec(options: o)
    }()

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        let o = try ParsedOptions.parse(args, spec: spec, command: "simulate")
        if o.helpRequested { Output.out(Help.help("simulate")! + "\n"); return 0 }
        Output.stdoutIsStats = o.value("stats") == "-"
        return execute(try plan(o))
    }

    /// What the command line asks for, validated: nothing is built or run yet but the stats output.
    struct Plan {
        /// The publisher and receiver configurations, the duration and the seed; media not chosen yet.
        var config: SimulationConfig
        /// encode, replay or sized.
        var mediaKind: String
        var preflight: Bool
        var thresholds: VerdictThresholds
        var requirement: String?
        var junit: String?
        /// The impairment as given (the pre-flight's text names the link by it).
        var impairText: String?
        var stats: (JSONLinesWriter, Int64)?
        var json: Bool
    }

    static func plan(_ o: ParsedOptions) throws(UsageError) -> Plan {
        let key = SRTPKey.random(suite: .aesCm)
        let destination = try CommonOptions.address("127.0.0.1:5004", option: "to")
        var pc = PublisherConfig(destination: destination, key: key)
        try CommonOptions.apply(o, to: &pc)
        pc.sendAudio = !o.has("no-audio")
        // One encoding of the ladder's best layer that fits, as toward a server that refuses
        // simulcast (Chromium and aiortc as answerers): the publisher moves between sizes.
        if o.has("one-encoding") { (pc.singleEncoding, pc.sendRIDs) = (true, false) }
        let preflight = o.has("preflight")
        for option in ["verdict-thresholds", "require", "junit"] where o.value(option) != nil && !preflight {
            throw UsageError("--\(option) applies to a simulated pre-flight (--preflight)")
        }
        let duration =
            try o.value("duration").map { d throws(UsageError) in try ValueParsers.duration(d, option: "duration") }
            ?? (preflight ? 15_000_000 : 60_000_000)
        if preflight {
            // As `preflight`: the limit, and what the publisher does to measure the link.
            guard duration >= 2_000_000, duration <= 600_000_000 else { throw UsageError("--duration must be between 2s and 10m") }
            if let r = o.value("require"), !PreflightCommand.requirements.contains(r) {
                throw UsageError("invalid --require '\(r)' (one of \(PreflightCommand.requirements.joined(separator: ", ")))")
            }
            pc.probeCeiling = 12_000_000
            pc.padToEstimate = true
        }
        guard duration >= 1_000_000, duration <= 24 * 3_600_000_000 else { throw UsageError("--duration must be between 1s and 24h") }
        pc.durationMicros = duration
        let thresholds =
            try o.value("verdict-thresholds").map { t throws(UsageError) in try PreflightCommand.verdictThresholds(t) }
            ?? VerdictThresholds()
        let seed: UInt64 =
            try o.value("seed").map { s throws(UsageError) -> UInt64 in
                guard let n = UInt64(s) else { throw UsageError("invalid --seed '\(s)' (a non-negative integer)") }
                return n
            } ?? 1
        var rc = ReceiverConfig(listen: destination, key: key)
        rc.impairment = try o.value("impair").map { t throws(UsageError) in try ValueParsers.impairment(t, option: "impair") }
        rc.downlinkImpairment = try o.value("downlink-impair").map { t throws(UsageError) in
            try ValueParsers.impairment(t, option: "downlink-impair")
        }
        rc.impairmentSeed = seed
        rc.sourceContent = pc.content
        rc.decodeVideo = !o.has("no-decode")
        let mediaKind = o.value("media") ?? "encode"
        guard ["replay", "encode", "sized"].contains(mediaKind) else {
            throw UsageError("invalid --media '\(mediaKind)' (encode, replay or sized)")
        }
        if mediaKind == "sized" { rc.decodeVideo = false }
        if mediaKind == "sized" && pc.videoCodec != .vp8 {
            throw UsageError("--media sized frames are VP8-shaped: use --media encode or replay with --codec \(pc.videoCodec.rawValue)")
        }
        if mediaKind == "replay" && pc.layers.contains(where: { $0.temporalLayers > 1 }) {
            throw UsageError("--media replay loops have no temporal layers: use --media encode with --temporal-layers")
        }
        var config = SimulationConfig(publisher: pc, receiver: rc, media: .encode)
        config.durationMicros = duration
        config.seed = seed
        return Plan(
            config: config, mediaKind: mediaKind, preflight: preflight, thresholds: thresholds, requirement: o.value("require"),
            junit: o.value("junit"), impairText: o.value("impair"), stats: try CommonOptions.statsWriter(o), json: o.has("json"))
    }

    /// The media the publisher sends: replay loops (built in memory), frames sized to the
    /// targets, or live encoders. Nil when the loops could not be built (said).
    static func media(_ plan: Plan) -> SimulationConfig.Media? {
        switch plan.mediaKind {
        case "replay":
            // Loops of the ladder asked for, built in memory (deterministic; nothing to find on disk).
            let layers = plan.config.publisher.layers
            let t0 = Clock.monotonicMicros()
            guard
                let library = MediaCommand.buildLoops(
                    layers, seconds: 4, keyFrameIntervalMicros: 1_000_000, codec: plan.config.publisher.videoCodec,
                    label: "building replay loops")
            else { return nil }
            Output.err(
                "media: replay (frames keep their encoded sizes whatever the layer targets; only suspension reaches them): 4 s loops of \(layers.map { "\($0.width)x\($0.height)@\($0.fps)" }.joined(separator: ", ")) built in memory in \(Units.fixed(Double(Clock.monotonicMicros() - t0) / 1e6, 1)) s (key frame every 1 s)\n"
            )
            return .replay(library)
        case "sized":
            Output.err("media: frames sized to the layer targets (an ideal encoder; video is reassembled, not decoded)\n")
            return .sized
        default:
            Output.err("media: live \(plan.config.publisher.videoCodec.sdpName)/Opus encoders at simulated time\n")
            return .encode
        }
    }

    /// Builds the media, runs the simulation (or the simulated pre-flight) and reports.
    static func execute(_ plan: Plan) -> Int32 {
        guard let media = media(plan) else { return 2 }
        var config = plan.config
        config.media = media
        if plan.preflight { return runPreflight(plan, config: config) }
        let sim: Simulation
        do { sim = try Simulation(config: config) } catch {
            Output.err("Error: \(error)\n")
            return 2
        }
        let duration = config.durationMicros
        let interval = plan.stats?.1 ?? 1_000_000
        let publisherStream = plan.stats.map { StatsStream($0.0, startMillis: config.epochMicros / 1000) }
        let subscriberStream = plan.stats.map { SubscriberStatsStream($0.0) }
        let started = Clock.monotonicMicros()
        var lastProgress: Int64 = 0
        sim.run(intervalMicros: interval) { final in
            let time = (wall: sim.wallMicros, mono: sim.now)
            publisherStream?.emit(sim.publisherSnapshot, final: final, at: time)
            subscriberStream?.emit(sim.receiverSnapshot(final: final), final: final, at: time)
            let wall = Clock.monotonicMicros()
            if !final && wall - lastProgress >= 200_000 {
                lastProgress = wall
                let e = sim.publisherSnapshot.network.estimate.map { Units.bitrate($0.bitrate) } ?? "-"
                Output.progress(
                    "simulate \(Units.fixed(Double(sim.elapsedMicros) / 1e6, 0))/\(Units.fixed(Double(duration) / 1e6, 0)) s  estimate \(e)"
                )
            }
        }
        Output.endProgress()
        let wallSeconds = Double(Clock.monotonicMicros() - started) / 1e6
        let simulated = Double(duration) / 1e6
        Output.err(
            "simulated \(Units.fixed(simulated, 1)) s in \(Units.fixed(wallSeconds, 2)) s of wall time (\(Units.fixed(simulated / max(wallSeconds, 0.001), 0))× real time)\n"
        )
        let r = sim.receiverSnapshot(final: true)
        report(sim.publisherSnapshot, r, plan: plan)
        return r.packetsAccepted > 0 ? 0 : 2
    }

    /// The summary: JSON (`--json`) or the publisher's and the receiver's tables.
    static func report(_ p: PublisherSnapshot, _ r: ReceiverSnapshot, plan: Plan) {
        guard plan.json else {
            Output.out(
                "publisher (estimate \(p.network.estimate.map { Units.bitrate($0.bitrate) } ?? "-"), condition \(p.network.networkCondition.rawValue)):\n"
            )
            Output.out(Report.publisherTable(PublisherSnapshotView(streams: p.streams, elapsedMicros: p.elapsedMicros)))
            Output.out("receiver:\n" + ReceiveCommand.table(r, latency: plan.mediaKind == "encode"))
            return
        }
        let doc: JSONValue = .object([
            ("type", .string("summary")), ("command", .string("simulate")), ("seed", .int(Int64(plan.config.seed))),
            ("simulatedMs", .int(plan.config.durationMicros / 1000)), ("media", .string(plan.mediaKind)),
            (
                "publisher",
                .object([
                    ("streams", .array(p.streams.map(Report.outboundJSON))),
                    ("estimate", p.network.estimate.map { .int(Int64($0.bitrate)) } ?? .null),
                    ("networkCondition", .string(p.network.networkCondition.rawValue))
                ])
            ),
            (
                "receiver",
                .object([
                    ("packetsAccepted", .int(Int64(r.packetsAccepted))), ("streams", .array(r.streams.map(Report.inboundJSON))),
                    ("byes", .int(Int64(r.byes)))
                ])
            )
        ])
        Output.out(doc.serialized(pretty: true) + "\n")
    }

    /// `simulate --preflight`: the pre-flight over the emulated link in virtual time, reported as
    /// `preflight` reports it (same JSON, JUnit, --require and exit codes).
    static func runPreflight(_ plan: Plan, config: SimulationConfig) -> Int32 {
        let stats = plan.stats, thresholds = plan.thresholds
        let publisherStream = stats.map { StatsStream($0.0, startMillis: config.epochMicros / 1000) }
        let subscriberStream = stats.map { SubscriberStatsStream($0.0) }
        let interval = stats?.1 ?? 1_000_000
        var nextStats = 1_000_000 + interval // the simulation's clock starts at 1 s
        let started = Clock.monotonicMicros()
        var lastProgress: Int64 = 0
        let outcome: PreflightRunner.Outcome
        let sim: Simulation
        do {
            (outcome, sim) = try PreflightRunner.simulate(config, thresholds: thresholds) { sim in
                if sim.now >= nextStats {
                    nextStats += interval
                    let time = (wall: sim.wallMicros, mono: sim.now)
                    publisherStream?.emit(sim.publisherSnapshot, at: time)
                    subscriberStream?.emit(sim.receiverSnapshot(), at: time)
                }
                let wall = Clock.monotonicMicros()
                if wall - lastProgress >= 200_000 {
                    lastProgress = wall
                    let e = sim.publisherSnapshot.network.estimate.map { Units.bitrate($0.bitrate) } ?? "-"
                    Output.progress("simulated preflight \(Units.fixed(Double(sim.elapsedMicros) / 1e6, 1)) s  estimate \(e)")
                }
            }
        } catch {
            Output.err("Error: \(error)\n")
            return 2
        }
        let phase = outcome.phase
        let time = (wall: sim.wallMicros, mono: sim.now)
        publisherStream?.emit(sim.publisherSnapshot, final: true, at: time)
        subscriberStream?.emit(sim.receiverSnapshot(final: true), final: true, at: time)
        Output.endProgress()
        let wallSeconds = Double(Clock.monotonicMicros() - started) / 1e6
        Output.err(
            "simulated a \(Units.fixed(Double(phase.elapsedMicros) / 1e6, 1)) s pre-flight in \(Units.fixed(wallSeconds, 2)) s of wall time\n"
        )
        guard let verdict = outcome.verdict else {
            Output.err("Error: no answer from the simulated receiver within 3 s (the link lost everything)\n")
            PreflightCommand.writeJUnit(
                plan.junit, verdict: nil, requirement: plan.requirement, failure: "no answer from the receiver")
            return 2
        }
        let met = plan.requirement.map { verdict.meets($0) }
        PreflightCommand.writeJUnit(plan.junit, verdict: verdict, requirement: plan.requirement, failure: nil)
        if plan.json {
            Output.out(
                PreflightCommand.json(
                    verdict, phase: phase, audioOnly: outcome.audioOnly, requirement: plan.requirement, met: met,
                    thresholds: thresholds, timestampMillis: sim.wallMicros / 1000
                ).serialized(pretty: true) + "\n")
        } else {
            let link = plan.impairText.map { "simulated link \($0)" } ?? "simulated unimpaired link"
            Output.out(
                PreflightCommand.human(
                    verdict, phase: phase, audioOnly: outcome.audioOnly, target: link, requirement: plan.requirement, met: met))
        }
        if let met { return met ? 0 : 1 }
        return 0
    }
}
