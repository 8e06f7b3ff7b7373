#if canImport(Glibc)
    import HTTPSignaling
    import Glibc
#endif
import MediaCodecs
import RTPCore
import Impairment
import PublisherEngine
import Fleet
import ReceiverEngine
import Transport
import Stats
import Platform
import WebRTCClient
import DTLS

/// `pubbot load`: many replay bots in one process against a receiver, a fleet report with
/// percentiles, requirements and exit codes; shards for a fleet of processes.
enum LoadCommand {
    static let spec = OptionSpec(
        options: [
            "to": .repeated, "rooms": .value, "key": .value, "srtp-suite": .value, "bots": .value, "ramp": .value, "duration": .value,
            "loops": .value,
            "media": .value, "report": .value, "require": .value, "shard": .value, "json": .flag, "impair": .value, "decode": .flag,
            "encode": .flag, "layers": .value, "codec": .value, "content": .value, "whep": .value, "whep-token": .value,
            "publishers": .value,
            "metrics": .value, "progress": .flag,
            "subscribers": .value, "decoders": .value, "decoder-rotation": .value, "ice-restart-at": .repeated,
            "ice-recover-after": .value
        ].merging(CommonOptions.whip) { a, _ in a })

    static let defaultMedia = "Media/replay"

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        let o = try ParsedOptions.parse(args, spec: spec, command: "load")
        if o.helpRequested { Output.out(Help.help("load")! + "\n"); return 0 }
        return execute(try plan(o))
    }

    /// What the command line asks for, validated: nothing is opened or started yet.
    struct Plan {
        var total: Int
        var shard: Shard
        /// This process's bots.
        var range: Range<Int>
        var duration: Int64
        var rampPerSecond: Double
        var loops: Int
        /// `--decoders`: subscribers that decode at a time (nil: one per event loop).
        var decoders: Int? = nil
        /// `--decoder-rotation D`: how long a rotating decoder stays on one subscriber.
        var decoderRotationMicros: Int64 = 10_000_000
        /// How far apart subscribers join: 50 ms, or `--ramp`'s pace when it is given.
        var subscriberSpacingMicros: Int64 = 50_000
        var requirements: [LoadRequirement]
        /// `--require` was given: a run where pubbot itself was saturated fails it.
        var requireGiven = false
        /// `--progress`: the live line once a second on stderr even when it is not a terminal.
        var progress = false
        /// `--metrics [HOST:]PORT`: Prometheus exposition of the fleet while it runs.
        var metrics: (host: String, port: Int, text: String)?
        var suite: SRTPSuite
        /// Remote receivers, one per room.
        var tos: [SocketAddress]
        var whip: WHIPOptions?
        var whep: WHIPOptions?
        var subscriberCount: Int
        var roomCount: Int
        var sharedKey: SRTPKey?
        var impairment: ImpairmentSchedule?
        var decode: Bool
        /// Live encoders (`--encode`, or subscribers measuring latency), else replay loops.
        var liveLayers: [VideoLayerConfig]?
        var mediaDirectory: String?
        var reportPath: String?
        var json: Bool
        /// `--codec`: every bot's video codec (nil: VP8, or the replay loops' own with `--media`).
        var askedCodec: VideoCodec?
        var codec: VideoCodec { askedCodec ?? .vp8 }
        /// `--ice-restart-at`: each WHIP bot's restarts, after its own start (µs, in order).
        var iceRestarts: [Int64] = []
        /// `--ice-recover-after`: each WHIP bot restarts ICE when its path is silent this long.
        var iceRecoverAfter: Int64?
        /// `--content`: the scene the live encoder draws.
        var content = SyntheticVideoSource.Content.natural
    }

    static func plan(_ o: ParsedOptions) throws(UsageError) -> Plan {
        let total = try botCount(o)
        let shard = try shardOption(
            o.value("shard"), environment: getenv("JOB_COMPLETION_INDEX").map { String(cString: $0) },
            total: getenv("PUBBOT_SHARDS").map { String(cString: $0) }, hostname: hostName())
        let range = shard.range(of: total)
        let duration =
            try o.value("duration").map { d throws(UsageError) in try ValueParsers.duration(d, option: "duration") } ?? 30_000_000
        guard duration >= 1_000_000, duration <= 86_400_000_000 else { throw UsageError("--duration must be between 1s and 24h") }
        // --ramp D: start every bot within D (default: 50 bots a second); never faster than 500 a second.
        var rampPerSecond = 50.0
        var rampMicros: Int64?
        if let r = o.value("ramp") {
            let d = try ValueParsers.duration(r, option: "ramp")
            rampPerSecond = d == 0 ? 500 : min(500, Double(range.count) * 1e6 / Double(d))
            // The subscribers join within it too (each one HTTP exchange; at most 500 a second):
            // a thousand 50 ms apart would take 50 s.
            rampMicros = d
        }
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let loops =
            try o.value("loops").map { l throws(UsageError) in
                guard let n = Int(l), (1...256).contains(n) else { throw UsageError("invalid --loops '\(l)' (1…256)") }
                return n
            } ?? max(1, min(cores, range.count))
        // Never "ok" on a lossy or silent run unless asked: a default that fails on 5 % loss.
        let requirements = try LoadRequirement.parseList(o.value("require") ?? "loss<5%,feedback>=100%")
        let suite = try CommonOptions.suite(o)
        let whipOptions = try CommonOptions.whipOptions(o)
        if whipOptions != nil {
            for flag in ["to", "key", "decode", "srtp-suite"] where o.value(flag) != nil || o.has(flag) {
                throw UsageError("--\(flag) does not go with --whip (each bot negotiates with the server; keys come from DTLS)")
            }
        }
        // Subscribers through the server (WHEP): real subscriber bots beside the publishers.
        let whepOptions = try CommonOptions.whepOptions(
            o, whip: whipOptions, needs: "the subscribers watch the publisher bots through the server")
        let subscriberCount = try subscribers(o, whep: whepOptions != nil, total: total)
        // --decoders N|all: how many subscribers decode (default one per event loop).
        let decoders = try o.value("decoders").map { v throws(UsageError) -> Int in
            guard whepOptions != nil else { throw UsageError("--decoders needs --whep URL (the subscribers decode)") }
            if v == "all" { return Int.max }
            guard let n = Int(v), n >= 0 else { throw UsageError("invalid --decoders '\(v)' (a count, or all)") }
            return n
        }
        let rotation = try o.value("decoder-rotation").map { v throws(UsageError) -> Int64 in
            guard whepOptions != nil else { throw UsageError("--decoder-rotation needs --whep URL (the subscribers decode)") }
            let d = try ValueParsers.duration(v, option: "decoder-rotation")
            guard d >= 2_000_000 else { throw UsageError("--decoder-rotation must be at least 2s (a decoder first waits for a key frame)") }
            return d
        }
        let tos = o.all("to")
        if !tos.isEmpty && o.value("impair") != nil {
            throw UsageError("--impair applies to the embedded receivers; with --to, impair at `pubbot receive --impair`")
        }
        if !tos.isEmpty && o.value("key") == nil { throw UsageError("--to needs the receivers' --key B64") }
        if !tos.isEmpty && o.has("decode") { throw UsageError("--decode applies to the embedded receivers") }
        let roomCount = try rooms(o, tos: tos.count, whip: whipOptions?.endpoint)
        let sharedKey: SRTPKey? = o.value("key") == nil ? nil : try CommonOptions.key(o, suite: suite)
        let impairment = try o.value("impair").map { t throws(UsageError) in try ValueParsers.impairment(t, option: "impair") }
        if o.has("encode") && o.value("media") != nil { throw UsageError("--encode encodes live; --media is for replay") }
        // Subscribers measure glass-to-glass latency from the stamps in the pictures: live frames
        // (replay loops carry the capture times of when they were built).
        let encodeLive = o.has("encode") || (whepOptions != nil && o.value("media") == nil)
        if !encodeLive && o.value("layers") != nil {
            throw UsageError("--layers is for --encode; replay loops have theirs (pubbot media build --layers)")
        }
        if !encodeLive && o.value("content") != nil {
            throw UsageError("--content is for --encode; replay loops are the natural scene (pubbot media build)")
        }
        let liveLayers =
            !encodeLive
            ? nil
            : try o.value("layers").map { l throws(UsageError) in try ValueParsers.ladder(l, temporalLayers: 1, defaultFps: 30) }
                ?? VideoLayerConfig.ladder(top: 640, 360, layers: 2)
        var addresses: [SocketAddress] = []
        for to in tos { addresses.append(try CommonOptions.address(to, option: "to")) }
        var plan = Plan(
            total: total, shard: shard, range: range, duration: duration, rampPerSecond: rampPerSecond, loops: loops,
            requirements: requirements, suite: suite, tos: addresses, whip: whipOptions, whep: whepOptions,
            subscriberCount: subscriberCount,
            roomCount: roomCount, sharedKey: sharedKey, impairment: impairment, decode: o.has("decode"), liveLayers: liveLayers,
            mediaDirectory: o.value("media"), reportPath: o.value("report")?.replacing("{shard}", with: "\(shard.index)"),
            json: o.has("json"),
            askedCodec: try o.value("codec").map { c throws(UsageError) in
                let codecs = try ValueParsers.codecs(c)
                guard codecs.count == 1 else { throw UsageError("load takes one --codec (every bot sends it)") }
                return codecs[0]
            })
        plan.requireGiven = o.value("require") != nil
        if let c = o.value("content") { plan.content = try ValueParsers.content(c) }
        plan.decoders = decoders
        if let rotation { plan.decoderRotationMicros = rotation }
        if let rampMicros { plan.subscriberSpacingMicros = max(2_000, rampMicros / Int64(max(1, subscriberCount))) }
        plan.progress = o.has("progress")
        plan.metrics = try o.value("metrics").map(PublishCommand.metricsAddress)
        for r in o.all("ice-restart-at") {
            guard whipOptions != nil else {
                throw UsageError("--ice-restart-at needs --whip (each bot's restart is a PATCH to its session, RFC 9725 §4.3.3)")
            }
            let at = try ValueParsers.duration(r, option: "ice-restart-at")
            guard at > 0, at < duration else { throw UsageError("--ice-restart-at \(r) must be after a bot's start and before --duration") }
            plan.iceRestarts.append(at)
        }
        plan.iceRestarts.sort()
        plan.iceRecoverAfter = try CommonOptions.iceRecoverAfter(o, whip: whipOptions != nil)
        return plan
    }

    /// `--bots N` or `--publishers N` (the same), 10 by default.
    static func botCount(_ o: ParsedOptions) throws(UsageError) -> Int {
        if o.value("publishers") != nil && o.value("bots") != nil {
            throw UsageError("give --bots or --publishers (the same: publisher bots), not both")
        }
        return try (o.value("publishers") ?? o.value("bots")).map { b throws(UsageError) in
            guard let n = Int(b), (1...20_000).contains(n) else {
                throw UsageError("invalid --\(o.value("publishers") != nil ? "publishers" : "bots") '\(b)' (1…20000)")
            }
            return n
        } ?? 10
    }

    /// `--subscribers N` with `--whep` (one per publisher by default), 0 without.
    static func subscribers(_ o: ParsedOptions, whep: Bool, total: Int) throws(UsageError) -> Int {
        guard whep else {
            for flag in ["subscribers", "publishers"] where o.value(flag) != nil {
                throw UsageError("--\(flag) needs --whep URL (with --whip URL)")
            }
            return 0
        }
        if o.value("shard") != nil || getenv("PUBBOT_SHARDS") != nil {
            throw UsageError("--whep runs the subscribers in one process: not with --shard")
        }
        return try o.value("subscribers").map { v throws(UsageError) in
            guard let n = Int(v), (1...5_000).contains(n) else {
                throw UsageError("invalid --subscribers '\(v)' (1…5000)")
            }
            return n
        } ?? total
    }

    /// `--rooms N`: with `--to`, one per receiver; with `--whip`, the URL must say where `{room}` goes.
    static func rooms(_ o: ParsedOptions, tos: Int, whip url: String?) throws(UsageError) -> Int {
        var roomCount =
            try o.value("rooms").map { r throws(UsageError) in
                guard let n = Int(r), (1...1_000).contains(n) else { throw UsageError("invalid --rooms '\(r)' (1…1000)") }
                return n
            } ?? max(1, tos)
        if tos > 0 {
            guard o.value("rooms") == nil || roomCount == tos else {
                throw UsageError("with --to, each room is one --to: give \(roomCount) of them or drop --rooms")
            }
            roomCount = tos
        }
        if let url, roomCount > 1, !url.contains("{room}") {
            throw UsageError(
                "--rooms \(roomCount) with --whip: put {room} (and optionally {publisher}) in the URL, e.g. http://host/whip?room={room}")
        }
        return roomCount
    }

    /// Starts the receivers and the fleet, runs it to its end (or Ctrl-C) and reports: the
    /// report's exit code, 130 (interrupted) or 2 (the media, a receiver or the report failed).
    static func execute(_ plan: Plan) -> Int32 {
        var library = ReplayLibrary(layers: [], audio: [], audioBitrate: 32_000)
        let live = plan.liveLayers.map { SharedEncoder(layers: $0, codec: plan.codec, content: plan.content) }
        if live == nil {
            if let dir = plan.mediaDirectory {
                do { library = try ReplayLibrary.load(directory: dir) } catch {
                    Output.err("Error: \(error)\n")
                    return 2
                }
                if let asked = plan.askedCodec, library.codec != asked {
                    Output.err(
                        "Error: the replay loops in \(dir) are \(library.codec.sdpName), not \(asked.sdpName) (pubbot media build --codec \(asked.rawValue) --out DIR)\n"
                    )
                    return 2
                }
            } else {
                guard let (dir, lib) = DefaultMedia.find(plan.codec) else { return 2 }
                library = lib
                Output.err("media: replay loops from \(dir)\n")
            }
        }
        raiseFileLimit(to: plan.range.count + plan.subscriberCount + 256)
        let receivers: [ReceiverEngine], rooms: [(SocketAddress, SRTPKey)]
        do { (receivers, rooms) = try startRooms(plan) } catch {
            Output.err("Error: cannot start an embedded receiver: \(error)\n")
            return 2
        }
        let fleet: Fleet
        do { fleet = Fleet(config: try fleetConfig(plan, rooms: rooms, live: live, library: library), library: library) } catch {
            Output.err("Error: \(error)\n")
            return 2
        }
        let exposition = Locked("")
        var metrics: MetricsServer?
        if let (host, port, _) = plan.metrics {
            do { metrics = try MetricsServer(host: host, port: port) { exposition.value } } catch {
                Output.err("Error: \(error)\n")
                return 2
            }
            Output.err("metrics on http://\(host):\(metrics!.port)/metrics\n")
        }
        defer { metrics?.stop() }
        announce(plan, rooms: rooms, embedded: !receivers.isEmpty)
        live?.start()
        fleet.start()
        let watch = Watch(plan: plan, fleet: fleet, live: live, receivers: receivers)
        watch.exposition = metrics == nil ? nil : exposition
        watch.run()
        let interrupted = Signals.isInterrupted
        watch.stopSubscribers()
        fleet.stop()
        fleet.wait()
        live?.stop()
        if let e = live?.error { Output.err("Error: the shared encoder failed: \(e)\n") }
        Clock.sleep(micros: 300_000) // the last RTCP and BYEs reach the embedded receiver
        for r in receivers { r.stop() }
        for r in receivers { r.wait() }
        Output.endProgress()
        var report = LoadReport(
            bots: fleet.snapshot(), receivers: receivers.map { $0.snapshot() },
            rooms: plan.whip.map { w in
                (0..<plan.roomCount).map { SignalingClient.redacted(w.endpoint.replacing("{room}", with: String($0))) }
            }
                ?? rooms.map { $0.0.description }, requested: plan.range.count, shard: plan.shard,
            durationMicros: Clock.monotonicMicros() - watch.start, cost: watch.cost,
            suite: plan.whip == nil
                ? plan.suite.rawValue
                : (fleet.snapshot().lazy.compactMap { $0.network.transport?.srtpCipher }.first.flatMap { SRTPSuite(sdesName: $0)?.rawValue }
                    ?? "dtls"),
            loops: plan.loops)
        if let subscribers = watch.subscribers {
            report.subscribers = SubscriberSummary(
                subscribers.members.value, rooms: plan.roomCount,
                rotation: subscribers.rotating ? (subscribers.config.decoders, Double(subscribers.config.rotationMicros) / 1e6) : nil)
        }
        report.evaluate(plan.requirements)
        report.saturationFails = plan.requireGiven
        guard report.emit(to: plan.reportPath, json: plan.json) else { return 2 }
        // Not one bot could start: one line that says why (the report has each bot's reason).
        let bots = fleet.snapshot()
        if !bots.isEmpty, bots.allSatisfy({ $0.state == .failed }), let why = bots.lazy.compactMap(\.error).first {
            Output.err("Error: no bot could start (\(bots.count) failed); the first: \(why)\n")
        } else if report.withFeedback == 0, !interrupted {
            // Not one heard back: say whether their transports ever connected (a run shorter than
            // ICE's own ~10 s of checks ends before any bot fails on its own).
            let unconnected = bots.filter { $0.state != .failed && $0.network.transport != nil && $0.network.transport?.srtpCipher == nil }
            if let t = unconnected.first?.network.transport {
                Output.err(
                    "Error: no bot heard back: \(unconnected.count) of \(bots.count) bots' WebRTC transports never connected "
                        + "(the first: ICE \(t.iceState.rawValue), DTLS \(t.dtlsState.rawValue) at the end)\n")
            } else {
                Output.err("Error: no bot heard back from its receiver\n")
            }
        }
        if interrupted { return 130 }
        return report.exitCode
    }

    /// The receivers: remote `pubbot receive`s (one per room), or one embedded per room (started),
    /// each with its own key unless --key gives one for all; with WHIP each bot's answer decides.
    static func startRooms(_ plan: Plan) throws -> ([ReceiverEngine], [(SocketAddress, SRTPKey)]) {
        if plan.whip != nil { return ([], [(try SocketAddress(host: "127.0.0.1", port: 9), .random(suite: .gcm))]) }
        if !plan.tos.isEmpty { return ([], plan.tos.map { ($0, plan.sharedKey!) }) }
        var receivers: [ReceiverEngine] = []
        var rooms: [(SocketAddress, SRTPKey)] = []
        let perRoom = plan.range.count / plan.roomCount + 1
        for _ in 0..<plan.roomCount {
            let key = plan.sharedKey ?? .random(suite: plan.suite)
            var rc = ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0), key: key)
            rc.impairment = plan.impairment
            rc.decodeVideo = plan.decode
            // Without --decode, Opus too is decoded for a sample only (every frame still counted).
            if !plan.decode { rc.decodedPublishers = 4 }
            rc.maxPublishers = perRoom + 8
            rc.maxStreams = (perRoom + 8) * 8
            receivers.append(try ReceiverEngine(config: rc))
            rooms.append((receivers.last!.localAddress, key))
        }
        for r in receivers { r.start() }
        return (receivers, rooms)
    }

    /// The fleet: every bot a copy of one template (replay or live media), per room where there are several.
    static func fleetConfig(
        _ plan: Plan, rooms: [(SocketAddress, SRTPKey)], live: SharedEncoder?, library: ReplayLibrary
    ) throws -> FleetConfig {
        var template = PublisherConfig(destination: rooms[0].0, key: rooms[0].1)
        template.layers = live?.layers ?? library.layers.map(\.config)
        template.videoCodec = live?.codec ?? library.codec
        template.audioBitrate = live?.audioBitrate ?? library.audioBitrate
        template.sendAudio = live != nil || !library.audio.isEmpty
        template.sendVideo = !template.layers.isEmpty
        template.packetSlots = 512
        template.retransmissionHistory = 512
        template.retransmissionHistorySeconds = 1
        template.publishIntervalMicros = 500_000
        var fc = FleetConfig(
            template: template, bots: plan.range.count, loops: plan.loops, rampPerSecond: plan.rampPerSecond, durationMicros: plan.duration)
        fc.firstBot = plan.range.lowerBound
        fc.live = live
        if let options = plan.whip {
            // Toward a real server --impair is each bot's own uplink (UplinkEmulator, its own seed).
            fc.template.uplinkImpairment = plan.impairment
            fc.whip = (options, try DTLSCertificate())
            fc.whipRooms = plan.roomCount
            fc.iceRestartsAfter = plan.iceRestarts
            fc.iceRecoverAfter = plan.iceRecoverAfter
        }
        if rooms.count > 1 {
            fc.rooms = rooms.map { room in
                var c = template
                c.destination = room.0
                c.key = room.1
                return c
            }
        }
        return fc
    }

    static func announce(_ plan: Plan, rooms: [(SocketAddress, SRTPKey)], embedded: Bool) {
        let (range, shard) = (plan.range, plan.shard)
        let target =
            rooms.count > 1
            ? "\(rooms.count) rooms (\(embedded ? "embedded receivers" : "receivers") \(rooms.map { $0.0.description }.joined(separator: ", ")))"
            : (plan.whip.map { SignalingClient.redacted($0.endpoint) }
                ?? (embedded ? "embedded receiver \(rooms[0].0)" : rooms[0].0.description))
        Output.err(
            "load: \(range.count) bots\(shard.count > 1 ? " (shard \(shard.index)/\(shard.count): bots \(range.lowerBound)…\(range.upperBound - 1) of \(plan.total))" : "") on \(plan.loops) event loop\(plan.loops == 1 ? "" : "s") → \(target), \(Units.fixed(Double(plan.duration) / 1e6, 0)) s\n"
        )
    }

    /// A bot is a socket: make room for them all.
    static func raiseFileLimit(to n: Int) {
        var l = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &l) == 0, l.rlim_cur < rlim_t(n) else { return }
        l.rlim_cur = min(l.rlim_max, rlim_t(n))
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &l)
    }
}
