#if canImport(Glibc)
    import WHIP
    import Glibc
#endif
import MediaCodecs
import PublisherEngine
import Fleet
import LoopbackReceiver
import Transport
import Stats
import Platform
import WHIPPublish
import DTLS

/// `pubbot load`: many replay bots in one process against a receiver, a fleet report with
/// percentiles, requirements and exit codes; shards for a fleet of processes.
enum LoadCommand {
    static let spec = OptionSpec(
        options: [
            "to": .repeated, "rooms": .value, "key": .value, "srtp-suite": .value, "bots": .value, "ramp": .value, "duration": .value,
            "loops": .value,
            "media": .value, "report": .value, "require": .value, "shard": .value, "json": .flag, "impair": .value, "decode": .flag,
            "encode": .flag, "layers": .value, "whep": .value, "whep-token": .value, "publishers": .value, "subscribers": .value
        ].merging(CommonOptions.whip) { a, _ in a })

    static let defaultMedia = "Media/replay"

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        let o = try ParsedOptions.parse(args, spec: spec, command: "load")
        if o.helpRequested { Output.out(Help.help("load")! + "\n"); return 0 }
        if o.value("publishers") != nil && o.value("bots") != nil {
            throw UsageError("give --bots or --publishers (the same: publisher bots), not both")
        }
        let total =
            try (o.value("publishers") ?? o.value("bots")).map { b throws(UsageError) in
                guard let n = Int(b), (1...20_000).contains(n) else {
                    throw UsageError("invalid --\(o.value("publishers") != nil ? "publishers" : "bots") '\(b)' (1…20000)")
                }
                return n
            } ?? 10
        let shard = try shardOption(
            o.value("shard"), environment: getenv("JOB_COMPLETION_INDEX").map { String(cString: $0) },
            total: getenv("PUBBOT_SHARDS").map { String(cString: $0) })
        let range = shard.range(of: total)
        let duration =
            try o.value("duration").map { d throws(UsageError) in try ValueParsers.duration(d, option: "duration") } ?? 30_000_000
        guard duration >= 1_000_000, duration <= 86_400_000_000 else { throw UsageError("--duration must be between 1s and 24h") }
        // --ramp D: start every bot within D (default: 50 bots a second); never faster than 500 a second.
        var rampPerSecond = 50.0
        if let r = o.value("ramp") {
            let d = try ValueParsers.duration(r, option: "ramp")
            rampPerSecond = d == 0 ? 500 : min(500, Double(range.count) * 1e6 / Double(d))
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
        let tos = o.all("to")
        let whipOptions = try CommonOptions.whipOptions(o)
        let whipURL = whipOptions?.endpoint
        if whipURL != nil {
            for flag in ["to", "key", "impair", "decode", "srtp-suite"] where o.value(flag) != nil || o.has(flag) {
                throw UsageError("--\(flag) does not go with --whip (each bot negotiates with the server; keys come from DTLS)")
            }
        }
        // Subscribers through the server (WHEP): real subscriber bots beside the publishers.
        let whepOptions = try CommonOptions.whepOptions(
            o, whip: whipOptions, needs: "the subscribers watch the publisher bots through the server")
        var subscriberCount = 0
        if whepOptions != nil {
            subscriberCount =
                try o.value("subscribers").map { v throws(UsageError) in
                    guard let n = Int(v), (1...256).contains(n) else {
                        throw UsageError("invalid --subscribers '\(v)' (1…256: each is a receiver thread)")
                    }
                    return n
                } ?? total
            if o.value("shard") != nil || getenv("PUBBOT_SHARDS") != nil {
                throw UsageError("--whep runs the subscribers in one process: not with --shard")
            }
        } else {
            for flag in ["subscribers", "publishers"] where o.value(flag) != nil {
                throw UsageError("--\(flag) needs --whep URL (with --whip URL)")
            }
        }
        if !tos.isEmpty && o.value("impair") != nil {
            throw UsageError("--impair applies to the embedded receivers; with --to, impair at `pubbot receive --impair`")
        }
        if !tos.isEmpty && o.value("key") == nil { throw UsageError("--to needs the receivers' --key B64") }
        if !tos.isEmpty && o.has("decode") { throw UsageError("--decode applies to the embedded receivers") }
        var roomCount =
            try o.value("rooms").map { r throws(UsageError) in
                guard let n = Int(r), (1...1_000).contains(n) else { throw UsageError("invalid --rooms '\(r)' (1…1000)") }
                return n
            } ?? max(1, tos.count)
        if !tos.isEmpty {
            guard o.value("rooms") == nil || roomCount == tos.count else {
                throw UsageError("with --to, each room is one --to: give \(roomCount) of them or drop --rooms")
            }
            roomCount = tos.count
        }
        if let url = whipURL, roomCount > 1, !url.contains("{room}") {
            throw UsageError(
                "--rooms \(roomCount) with --whip: put {room} (and optionally {publisher}) in the URL, e.g. http://host/whip?room={room}")
        }
        let sharedKey: SRTPKey? = o.value("key") == nil ? nil : try CommonOptions.key(o, suite: suite)
        let impairment = try o.value("impair").map { t throws(UsageError) in try ValueParsers.impairment(t, option: "impair") }
        if o.has("encode") && o.value("media") != nil { throw UsageError("--encode encodes live; --media is for replay") }
        // Subscribers measure glass-to-glass latency from the stamps in the pictures: live frames
        // (replay loops carry the capture times of when they were built).
        let encodeLive = o.has("encode") || (whepOptions != nil && o.value("media") == nil)
        if !encodeLive && o.value("layers") != nil {
            throw UsageError("--layers is for --encode; replay loops have theirs (pubbot media build --layers)")
        }
        var library = ReplayLibrary(layers: [], audio: [], audioBitrate: 32_000)
        var live: SharedEncoder?
        if encodeLive {
            let layers =
                try o.value("layers").map { l throws(UsageError) in try ValueParsers.ladder(l, temporalLayers: 1, defaultFps: 30) }
                ?? VideoLayerConfig.ladder(top: 640, 360, layers: 2)
            live = SharedEncoder(layers: layers)
        } else if let dir = o.value("media") {
            do { library = try ReplayLibrary.load(directory: dir) } catch {
                Output.err("Error: \(error)\n")
                return 2
            }
        } else {
            guard let (dir, lib) = DefaultMedia.find() else { return 2 }
            library = lib
            Output.err("media: replay loops from \(dir)\n")
        }
        raiseFileLimit(to: range.count + 256)

        // The receivers: remote `pubbot receive`s (one per room), or one embedded per room, each
        // with its own key unless --key gives one for all.
        var receivers: [LoopbackReceiver] = []
        var rooms: [(SocketAddress, SRTPKey)] = []
        if whipURL != nil {
            rooms.append((try CommonOptions.address("127.0.0.1:9", option: "whip"), .random(suite: .gcm))) // each bot's answer decides
        } else if !tos.isEmpty {
            for to in tos { rooms.append((try CommonOptions.address(to, option: "to"), sharedKey!)) }
        } else {
            let perRoom = range.count / roomCount + 1
            for _ in 0..<roomCount {
                let key = sharedKey ?? .random(suite: suite)
                var rc = ReceiverConfig(listen: try CommonOptions.address("127.0.0.1:0", option: "listen"), key: key)
                rc.impairment = impairment
                rc.decodeVideo = o.has("decode")
                rc.maxPublishers = perRoom + 8
                rc.maxStreams = (perRoom + 8) * 8
                do { receivers.append(try LoopbackReceiver(config: rc)) } catch {
                    Output.err("Error: cannot start an embedded receiver: \(error)\n")
                    return 2
                }
                rooms.append((receivers.last!.localAddress, key))
            }
            for r in receivers { r.start() }
        }

        var template = PublisherConfig(destination: rooms[0].0, key: rooms[0].1)
        template.layers = live?.layers ?? library.layers.map(\.config)
        template.audioBitrate = live?.audioBitrate ?? library.audioBitrate
        template.sendAudio = live != nil || !library.audio.isEmpty
        template.sendVideo = !template.layers.isEmpty
        template.packetSlots = 512
        template.retransmissionHistory = 512
        template.publishIntervalMicros = 500_000
        let destination = rooms[0].0
        var fc = FleetConfig(template: template, bots: range.count, loops: loops, rampPerSecond: rampPerSecond, durationMicros: duration)
        fc.firstBot = range.lowerBound
        fc.live = live
        if let options = whipOptions {
            do { fc.whip = (options, try DTLSCertificate()) } catch {
                Output.err("Error: \(error)\n")
                return 2
            }
            fc.whipRooms = roomCount
        }
        if rooms.count > 1 {
            fc.rooms = rooms.map { room in
                var c = template
                c.destination = room.0
                c.key = room.1
                return c
            }
        }
        let fleet = Fleet(config: fc, library: library)
        Output.err(
            "load: \(range.count) bots\(shard.count > 1 ? " (shard \(shard.index)/\(shard.count): bots \(range.lowerBound)…\(range.upperBound - 1) of \(total))" : "") on \(loops) event loop\(loops == 1 ? "" : "s") → \(rooms.count > 1 ? "\(rooms.count) rooms (\(receivers.isEmpty ? "receivers" : "embedded receivers") \(rooms.map { $0.0.description }.joined(separator: ", ")))" : (whipURL.map(WHIPClient.redacted) ?? (receivers.isEmpty ? destination.description : "embedded receiver \(destination)"))), \(Units.fixed(Double(duration) / 1e6, 0)) s\n"
        )
        live?.start()
        fleet.start()
        let start = Clock.monotonicMicros()
        let rampEnd = start + Int64(Double(range.count) * 1e6 / rampPerSecond)
        // Subscribers join 2 s after the last publisher started and leave a second before the
        // publishers end (what they see is the steady room, not its start or end).
        let subscribers = whepOptions.map {
            SubscriberFleet(
                options: $0, count: subscriberCount, rooms: roomCount, publishersPerRoom: (range.count + roomCount - 1) / roomCount)
        }
        var subscribersStarted = false, subscribersStopped = false
        if subscribers != nil && rampEnd + 2_000_000 + 3_000_000 > start + duration - 1_000_000 {
            Output.err(
                "warning: --duration leaves the subscribers less than 3 s after the ramp (they join 2 s after it and leave 1 s before the end)\n"
            )
        }
        var steadyFrom: (wall: Int64, cpu: Int64, encoder: Int64)?
        var steadyTo: (wall: Int64, cpu: Int64, encoder: Int64)?
        var peakRSS = 0
        var vitals = ProcessVitals()
        while !Signals.isInterrupted {
            Clock.sleep(micros: 250_000)
            let now = Clock.monotonicMicros()
            let snaps = fleet.snapshot()
            let running = snaps.filter { $0.state == .running }.count
            let done = snaps.filter { $0.state == .done }.count
            let failed = snaps.filter { $0.state == .failed }.count
            peakRSS = max(peakRSS, vitals.sample().rssBytes)
            // Steady CPU: from a second after the ramp until a second before the end.
            if steadyFrom == nil && now >= rampEnd + 1_000_000 && now < start + duration - 1_000_000 {
                steadyFrom = (now, fleet.loopsCPUMicros, live?.encoderCPUMicros ?? 0)
            }
            if steadyFrom != nil && now < start + duration - 1_000_000 {
                steadyTo = (now, fleet.loopsCPUMicros, live?.encoderCPUMicros ?? 0)
            }
            if let subscribers, !subscribersStarted, now >= rampEnd + 2_000_000 { subscribersStarted = true; subscribers.start() }
            if let subscribers, subscribersStarted, !subscribersStopped, now >= start + duration - 1_000_000 {
                subscribersStopped = true; subscribers.stop()
            }
            Output.progress(
                "load \(Units.fixed(Double(now - start) / 1e6, 1))s  started \(running + done + failed)/\(range.count)  running \(running)  failed \(failed)"
                    + (subscribers.map { "  subscribers \($0.connected)/\(subscriberCount)" } ?? ""))
            if done + failed == range.count { break }
            if now - start > duration + 10_000_000 { break } // the loops should have ended by now
        }
        let interrupted = Signals.isInterrupted
        if let subscribers, !subscribersStopped { subscribersStopped = true; subscribers.stop() }
        fleet.stop()
        fleet.wait()
        live?.stop()
        if let e = live?.error { Output.err("Error: the shared encoder failed: \(e)\n") }
        Clock.sleep(micros: 300_000) // the last RTCP and BYEs reach the embedded receiver
        for r in receivers { r.stop() }
        for r in receivers { r.wait() }
        Output.endProgress()
        var cpu: LoadReport.Cost?
        if let a = steadyFrom, let b = steadyTo, b.wall - a.wall >= 1_000_000 {
            cpu = LoadReport.Cost(
                loopCPUPercent: Double(b.cpu - a.cpu) * 100 / Double(b.wall - a.wall), peakRSSBytes: peakRSS,
                seconds: Double(b.wall - a.wall) / 1e6,
                encoderCPUPercent: live == nil ? nil : Double(b.encoder - a.encoder) * 100 / Double(b.wall - a.wall))
        }
        var report = LoadReport(
            bots: fleet.snapshot(), receivers: receivers.map { $0.snapshot() },
            rooms: whipURL.map { u in (0..<roomCount).map { WHIPClient.redacted(u.replacing("{room}", with: String($0))) } }
                ?? rooms.map { $0.0.description }, requested: range.count, shard: shard,
            durationMicros: Clock.monotonicMicros() - start, cost: cpu,
            suite: whipURL == nil
                ? suite.rawValue
                : (fleet.snapshot().lazy.compactMap { $0.network.transport?.srtpCipher }.first.flatMap { SRTPSuite(sdesName: $0)?.rawValue }
                    ?? "dtls"),
            loops: loops)
        if let subscribers { report.subscribers = SubscriberSummary(subscribers.members.value, rooms: roomCount) }
        report.evaluate(requirements)
        guard report.emit(to: o.value("report"), json: o.has("json")) else { return 2 }
        // Not one bot could start: one line that says why (the report has each bot's reason).
        let bots = fleet.snapshot()
        if !bots.isEmpty, bots.allSatisfy({ $0.state == .failed }), let why = bots.lazy.compactMap(\.error).first {
            Output.err("Error: no bot could start (\(bots.count) failed); the first: \(why)\n")
        }
        if interrupted { return 130 }
        return report.exitCode
    }

    struct Shard: Equatable {
        var index: Int
        var count: Int

        /// This shard's bots: an even split of 0..<total (the first shards take the remainder).
        func range(of total: Int) -> Range<Int> {
            let base = total / count, extra = total % count
            let lo = index * base + min(index, extra)
            return lo..<(lo + base + (index < extra ? 1 : 0))
        }
    }

    /// `--shard I/N`, or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) with PUBBOT_SHARDS.
    static func shardOption(_ text: String?, environment index: String?, total: String?) throws(UsageError) -> Shard {
        if let text {
            let parts = text.split(separator: "/")
            guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, n <= 10_000, i >= 0, i < n else {
                throw UsageError("invalid --shard '\(text)' (I/N with 0 ≤ I < N, e.g. 0/4)")
            }
            return Shard(index: i, count: n)
        }
        if let index, let total {
            guard let i = Int(index), let n = Int(total), n >= 1, i >= 0, i < n else {
                throw UsageError("JOB_COMPLETION_INDEX=\(index) and PUBBOT_SHARDS=\(total) do not make a shard (0 ≤ index < shards)")
            }
            return Shard(index: i, count: n)
        }
        return Shard(index: 0, count: 1)
    }

    /// A bot is a socket: make room for them all.
    static func raiseFileLimit(to n: Int) {
        var l = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &l) == 0, l.rlim_cur < rlim_t(n) else { return }
        l.rlim_cur = min(l.rlim_max, rlim_t(n))
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &l)
    }
}

/// `--require loss<1%,rtt<200ms,bitrate>300kbit,estimate>500kbit,started>=100%`: upper bounds
/// apply to the fleet's p95 (loss, rtt), lower bounds to its p5 (bitrate, estimate); `started`
/// and `feedback` are the share of bots that started and that heard back from the receiver.
struct LoadRequirement: Equatable {
    enum Metric: String { case loss, rtt, bitrate, estimate, started, feedback }
    var text: String
    var metric: Metric
    var upper: Bool
    var inclusive: Bool
    var limit: Double

    static func parseList(_ text: String) throws(UsageError) -> [LoadRequirement] {
        var out: [LoadRequirement] = []
        for item in text.split(separator: ",") { out.append(try parse(String(item))) }
        guard !out.isEmpty else { throw UsageError("empty --require") }
        return out
    }

    static func parse(_ item: String) throws(UsageError) -> LoadRequirement {
        guard let at = item.firstIndex(where: { $0 == "<" || $0 == ">" }) else {
            throw UsageError("invalid --require '\(item)' (e.g. loss<1%, rtt<200ms, bitrate>300kbit, estimate>500kbit, started>=100%)")
        }
        var end = item.index(after: at)
        if end < item.endIndex, item[end] == "=" { end = item.index(after: end) }
        let op = String(item[at..<end])
        let name = String(item[..<at]), value = String(item[end...])
        guard let metric = Metric(rawValue: name) else {
            throw UsageError("unknown --require metric '\(name)' (loss, rtt, bitrate, estimate, started, feedback)")
        }
        let limit: Double
        switch metric {
        case .loss, .started, .feedback:
            guard value.hasSuffix("%"), let v = Double(value.dropLast()), v >= 0, v <= 100 else {
                throw UsageError("--require \(name) takes a percentage, e.g. \(name)\(op)1%")
            }
            limit = v / 100
        case .rtt:
            limit = Double(try ValueParsers.duration(value, option: "require")) / 1000
        case .bitrate, .estimate:
            limit = Double(try ValueParsers.bitrate(value, option: "require"))
        }
        return LoadRequirement(text: item, metric: metric, upper: op.hasPrefix("<"), inclusive: op.count == 2, limit: limit)
    }

    /// The figure the requirement is checked against.
    func figure(_ r: LoadReport) -> Double? {
        switch metric {
        case .loss: return r.metrics.loss.percentile(0.95)
        case .rtt: return r.metrics.rtt.percentile(0.95)
        case .bitrate: return r.metrics.bitrate.percentile(0.05)
        case .estimate: return r.metrics.estimate.percentile(0.05)
        case .started: return r.requested > 0 ? Double(r.started) / Double(r.requested) : nil
        case .feedback: return r.requested > 0 ? Double(r.withFeedback) / Double(r.requested) : nil
        }
    }

    func met(by v: Double) -> Bool {
        if upper { return inclusive ? v <= limit : v < limit }
        return inclusive ? v >= limit : v > limit
    }
}
