import PublisherEngine
import Fleet
import ReceiverEngine
import Stats
import Platform

/// The fleet report (`pubbot load --report`, schema `load-report.schema.json`): per-bot
/// summaries, totals, condition counts and fleet percentiles from log-bucketed histograms that
/// `pubbot report merge` adds up exactly across shards.
struct LoadReport {
    struct Cost {
        var loopCPUPercent: Double
        var peakRSSBytes: Int
        var seconds: Double
        /// `--encode`: the shared encoder's CPU (% of a core), on top of the event loops.
        var encoderCPUPercent: Double? = nil
        /// How late this process's drivers ran what was due over the steady window.
        var lag: DriverLags? = nil
        /// The whole machine's CPU over the steady window (% of all its cores), and the cores.
        var machineBusyPercent: Double? = nil
        var cores = 1
        /// `--whep`: the subscribers' event loops (% of a core) over the same window.
        var subscriberCPUPercent: Double? = nil
        /// `--whep`: the process's RSS growth from just before the subscribers joined to its
        /// peak, per subscriber (their sockets, sessions, buffers, streams).
        var rssPerSubscriberBytes: Int? = nil
    }

    /// A driver whose timed work runs more than this late at p99 has fallen behind: the loops'
    /// timer slack is 2 ms (200 bots on this 2-core machine ran at ≤ 10 ms p99, 500 at 500 ms),
    /// and what they time (glass-to-glass latency, frame rate, loss after a late read, the pacing
    /// the estimate sees) then measures this machine, not the network or the server.
    static let saturatedLagMicros: Int64 = 50_000
    /// Above this (p99) the figures are timed less finely than a loopback RTT: said, not failed.
    static let laggingMicros: Int64 = 20_000
    /// `--require` was given: a saturated run fails it (the requirements could not be judged).
    var saturationFails = false

    /// Why pubbot itself was the bottleneck of this run, or nil when it kept up.
    var saturation: String? {
        guard let c = cost, let worst = c.lag?.worst, let p99 = worst.lag.percentile(0.99), p99 > Self.saturatedLagMicros else {
            return nil
        }
        var why = "pubbot's own \(worst.name) ran their timed work \(p99 / 1000) ms late at p99 (a few ms when they keep up)"
        if let busy = c.machineBusyPercent { why += ", the machine's \(c.cores) cores \(Int(busy.rounded())) % busy" }
        return why
    }

    /// The figures a saturated pubbot makes untrustworthy.
    static let saturationSpoils = ["latency", "frame rate", "loss", "bitrate", "estimate"]

    struct Bot {
        var number: Int
        var room = 0
        var state: BotState
        var address: String?
        var seconds: Double
        var bitrate: Int
        var estimate: Int?
        var loss: Double?
        var rtt: Double?
        var condition: NetworkCondition
        var layersActive: Int
        var rtcpReceived: Int
        var pliReceived: Int
        var keyFramesSent: Int
        /// At the embedded receiver: packets and frames (video reassembled, audio decoded).
        var packetsReceived: Int?
        var framesReceived: Int?
        var error: String?
        /// WHIP: how long ICE and then DTLS took for this bot.
        var iceMs: Int? = nil
        var dtlsMs: Int? = nil
        /// TURN: the allocation time (µs) and whether the selected pair ran through the relay.
        var turnAllocateMicros: Int? = nil
        var relayed = false
        /// `--ice-restart-at`: restarts asked, refused, and the last applied one's time to a new
        /// pair (ms; nil while none recovered).
        var iceRestarts: Int? = nil
        var iceRestartsRefused: Int? = nil
        var iceRestartRecoveryMs: Int? = nil
        /// Of `iceRestarts`, those the consent watch set off (`--ice-recover-after`).
        var iceRecoveries: Int? = nil
        /// Of `iceRestarts`, those a change of the local interfaces set off.
        var interfaceRestarts: Int? = nil

        var json: JSONValue {
            var f: [(String, JSONValue)] = [("bot", .int(Int64(number))), ("room", .int(Int64(room))), ("state", .string(state.rawValue))]
            f.append(("address", address.map { .string($0) } ?? .null))
            f.append(("seconds", .double((seconds * 10).rounded() / 10)))
            f.append(("bitrate", .int(Int64(bitrate))))
            f.append(("estimate", estimate.map { .int(Int64($0)) } ?? .null))
            f.append(("packetLoss", loss.map { .double(($0 * 10_000).rounded() / 10_000) } ?? .null))
            f.append(("roundTripTimeMs", rtt.map { .double(($0 * 10).rounded() / 10) } ?? .null))
            f.append(("networkCondition", .string(condition.rawValue)))
            f.append(("layersActive", .int(Int64(layersActive))))
            f.append(("rtcpReceived", .int(Int64(rtcpReceived))))
            f.append(("pliReceived", .int(Int64(pliReceived))))
            f.append(("keyFramesSent", .int(Int64(keyFramesSent))))
            f.append(("packetsReceived", packetsReceived.map { .int(Int64($0)) } ?? .null))
            f.append(("framesReceived", framesReceived.map { .int(Int64($0)) } ?? .null))
            f.append(("error", error.map { .string($0) } ?? .null))
            if iceMs != nil || dtlsMs != nil {
                f.append(("iceMs", iceMs.map { .int(Int64($0)) } ?? .null))
                f.append(("dtlsMs", dtlsMs.map { .int(Int64($0)) } ?? .null))
                f.append(("turnAllocateMicros", turnAllocateMicros.map { .int(Int64($0)) } ?? .null))
                f.append(("relayed", .bool(relayed)))
            }
            if let n = iceRestarts {
                f.append(("iceRestarts", .int(Int64(n))))
                f.append(("iceRestartsRefused", .int(Int64(iceRestartsRefused ?? 0))))
                f.append(("iceRestartRecoveryMs", iceRestartRecoveryMs.map { .int(Int64($0)) } ?? .null))
                f.append(("iceRecoveries", .int(Int64(iceRecoveries ?? 0))))
                f.append(("interfaceRestarts", .int(Int64(interfaceRestarts ?? 0))))
            }
            return .object(f)
        }
    }

    /// Fleet totals (the report's `totals` object; the names are its keys).
    struct Totals: Equatable {
        var packetsSent = 0
        var bytesSent = 0
        var retransmissions = 0
        var paddingPackets = 0
        var nackReceived = 0
        var pliReceived = 0
        var keyFramesSent = 0
        var packetsLostReported = 0
        var rtcpReceived = 0
        var receiverPacketsReceived = 0
        var receiverFramesReceived = 0
        /// `--impair` toward a server: what the bots' emulated uplinks dropped before the network
        /// (at random, and at their full queues); the server's feedback counts these as loss too.
        var uplinkDroppedByLoss = 0
        var uplinkDroppedByQueue = 0

        static var fields: [(String, WritableKeyPath<Totals, Int>)] {
            [
                ("packetsSent", \.packetsSent), ("bytesSent", \.bytesSent), ("retransmissions", \.retransmissions),
                ("paddingPackets", \.paddingPackets),
                ("nackReceived", \.nackReceived), ("pliReceived", \.pliReceived), ("keyFramesSent", \.keyFramesSent),
                ("packetsLostReported", \.packetsLostReported), ("rtcpReceived", \.rtcpReceived),
                ("receiverPacketsReceived", \.receiverPacketsReceived), ("receiverFramesReceived", \.receiverFramesReceived),
                ("uplinkDroppedByLoss", \.uplinkDroppedByLoss), ("uplinkDroppedByQueue", \.uplinkDroppedByQueue)
            ]
        }

        mutating func add(_ o: Totals) { for (_, k) in Self.fields { self[keyPath: k] += o[keyPath: k] } }
        var json: JSONValue { .object(Self.fields.map { ($0.0, .int(Int64(self[keyPath: $0.1]))) }) }
        init() {}
        init(json j: JSONValue?) { for (name, k) in Self.fields { self[keyPath: k] = j?[name]?.intValue ?? 0 } }
    }

    /// The fleet distributions (the report's `metrics` object), histograms that merge exactly.
    struct Metrics {
        var bitrate = Histogram()
        var estimate = Histogram()
        var loss = Histogram()
        var rtt = Histogram()

        static var fields: [(String, WritableKeyPath<Metrics, Histogram>)] {
            [("bitrate", \.bitrate), ("estimate", \.estimate), ("loss", \.loss), ("rtt", \.rtt)]
        }

        mutating func merge(_ o: Metrics) { for (_, k) in Self.fields { self[keyPath: k].merge(o[keyPath: k]) } }
    }

    var requested: Int
    var started: Int
    var failed: Int
    var withFeedback: Int
    var shards: [String]
    /// Each room's destination (receiver), by room number.
    var rooms: [String] = []
    var durationMicros: Int64
    var suite: String
    var loops: Int
    var bots: [Bot]
    var totals = Totals()
    var conditions: [NetworkCondition: Int] = [:]
    var metrics = Metrics()
    var cost: Cost?
    var receiverRejected: Int?
    var results: [(LoadRequirement, Double?, Bool)] = []
    var requirementTexts: [String] = []
    /// WHIP: what the first bot's answer negotiated.
    var negotiated: [(String, String)] = []
    /// `--whep`: what the subscriber bots got through the server.
    var subscribers: SubscriberSummary?

    init(
        bots snaps: [BotSnapshot], receivers: [ReceiverSnapshot], rooms: [String], requested: Int, shard: LoadCommand.Shard,
        durationMicros: Int64, cost: Cost?, suite: String, loops: Int
    ) {
        self.rooms = rooms
        self.requested = requested
        self.durationMicros = durationMicros
        self.cost = cost
        self.suite = suite
        self.loops = loops
        shards = ["\(shard.index)/\(shard.count)"]
        started = snaps.filter { $0.state != .pending && $0.state != .failed }.count
        failed = snaps.filter { $0.state == .failed }.count
        withFeedback = snaps.filter { $0.network.rtcpReceived > 0 }.count
        // The embedded receiver's figures per publisher (by the bot's source address).
        // Matched by source port: the bots bind the wildcard address, the receiver sees 127.0.0.1.
        var received: [Int: (packets: Int, frames: Int)] = [:]
        let embedded = !receivers.isEmpty
        for r in receivers {
            for (i, s) in r.streams.enumerated() where i < r.streamPublisher.count && r.streamPublisher[i] < r.publishers.count {
                let a = r.publishers[r.streamPublisher[i]].port
                received[a, default: (0, 0)].packets += s.packetsReceived
                received[a, default: (0, 0)].frames += s.framesAssembled
            }
            receiverRejected = (receiverRejected ?? 0) + r.rejected.total
        }
        bots = []
        for s in snaps {
            let seconds = s.startedMicros.map { Double((s.stoppedMicros ?? (s.startedMicros! + durationMicros)) - $0) / 1e6 } ?? 0
            let bytes = s.streams.reduce(0) { $0 + $1.payloadBytesSent + $1.headerBytesSent }
            let packets = s.streams.reduce(0) { $0 + $1.packetsSent }
            let lost = s.streams.reduce(0) { $0 + $1.packetsLostReported }
            let rtts = s.streams.compactMap(\.roundTripTimeMillis)
            let bitrate = seconds > 0 ? Int(Double(bytes * 8) / seconds) : 0
            let loss: Double? = s.network.rtcpReceived > 0 && packets > 0 ? Double(max(0, lost)) / Double(packets) : nil
            let rtt = rtts.isEmpty ? nil : rtts.reduce(0, +) / Double(rtts.count)
            let rx = s.localAddress.flatMap { received[$0.port] }
            // A wildcard socket (a host candidate per interface): the address its pair uses.
            var address = s.localAddress?.description
            if s.localAddress?.isWildcard == true, let t = s.network.transport, t.localCandidateType == "host" {
                address = t.localAddress ?? address
            }
            let b = Bot(
                number: s.number, room: s.room, state: s.state, address: address, seconds: seconds, bitrate: bitrate,
                estimate: s.network.estimate?.bitrate, loss: loss, rtt: rtt, condition: s.network.networkCondition,
                layersActive: s.network.allocation?.layers.filter { $0 > 0 }.count ?? 0, rtcpReceived: s.network.rtcpReceived,
                pliReceived: s.streams.reduce(0) { $0 + $1.pliReceived }, keyFramesSent: s.keyFramesSent,
                packetsReceived: embedded ? (rx?.packets ?? 0) : nil, framesReceived: embedded ? (rx?.frames ?? 0) : nil,
                error: s.error, iceMs: s.network.transport?.iceDurationMs, dtlsMs: s.network.transport?.dtlsDurationMs,
                turnAllocateMicros: s.network.transport?.turnAllocateMicros.map { Int($0) },
                relayed: s.network.transport?.localCandidateType == "relay",
                iceRestarts: s.iceRestartsAsked > 0 ? s.iceRestartsAsked : nil,
                iceRestartsRefused: s.iceRestartsAsked > 0 ? s.iceRestartsRefused : nil,
                iceRestartRecoveryMs: s.network.transport?.lastRestartRecoveryMicros.map { Int($0 / 1000) },
                iceRecoveries: s.iceRestartsAsked > 0 ? s.iceRecoveries : nil,
                interfaceRestarts: s.iceRestartsAsked > 0 ? s.iceRestartsOnInterfaceChange : nil)
            bots.append(b)
            if negotiated.isEmpty { negotiated = s.negotiated }
            guard s.state != .failed && s.state != .pending else { continue }
            totals.packetsSent += packets
            totals.bytesSent += bytes
            totals.retransmissions += s.network.retransmissionsSent
            totals.paddingPackets += s.network.paddingPacketsSent
            totals.nackReceived += s.network.nackReceived
            totals.pliReceived += b.pliReceived
            totals.keyFramesSent += s.keyFramesSent
            totals.packetsLostReported += max(0, lost)
            totals.rtcpReceived += s.network.rtcpReceived
            totals.uplinkDroppedByLoss += s.network.uplink?.droppedByLoss ?? 0
            totals.uplinkDroppedByQueue += s.network.uplink?.droppedByQueue ?? 0
            totals.receiverPacketsReceived += b.packetsReceived ?? 0
            totals.receiverFramesReceived += b.framesReceived ?? 0
            conditions[b.condition, default: 0] += 1
            metrics.bitrate.add(Double(bitrate))
            if let e = b.estimate { metrics.estimate.add(Double(e)) }
            if let l = loss { metrics.loss.add(l) }
            if let r = rtt { metrics.rtt.add(r) }
        }
    }

    /// A report read back from its JSON (for `report merge`).
    init(json j: JSONValue) throws(UsageError) {
        guard j["type"]?.stringValue == "loadReport", j["version"]?.intValue == 1, let b = j["bots"],
            let requested = b["requested"]?.intValue,
            let started = b["started"]?.intValue, let failed = b["failed"]?.intValue, let fb = b["withFeedback"]?.intValue
        else {
            throw UsageError("not a pubbot load report (version 1)")
        }
        self.requested = requested
        self.started = started
        self.failed = failed
        withFeedback = fb
        shards = j["shards"]?.arrayValue?.compactMap(\.stringValue) ?? []
        durationMicros = Int64(j["durationMs"]?.intValue ?? 0) * 1000
        suite = j["srtpSuite"]?.stringValue ?? "?"
        loops = j["eventLoops"]?.intValue ?? 0
        totals = Totals(json: j["totals"])
        if case let .object(fields)? = j["conditions"] {
            for (k, v) in fields {
                guard let c = NetworkCondition(rawValue: k) else {
                    throw UsageError("the report's conditions name an unknown condition '\(k)'")
                }
                conditions[c] = v.intValue ?? 0
            }
        }
        for (k, path) in Metrics.fields {
            guard let h = j["metrics"]?[k]?["histogram"], let hist = Histogram(json: h) else {
                throw UsageError("the report's \(k) histogram is missing or damaged")
            }
            metrics[keyPath: path] = hist
        }
        receiverRejected = j["receiverRejected"]?.intValue
        requirementTexts = j["requirements"]?.arrayValue?.compactMap { $0["require"]?.stringValue } ?? []
        rooms = j["rooms"]?.arrayValue?.compactMap { $0["destination"]?.stringValue } ?? []
        bots = []
        for o in j["perBot"]?.arrayValue ?? [] {
            guard let state = o["state"]?.stringValue.flatMap(BotState.init(rawValue:)) else {
                throw UsageError("bot \(o["bot"]?.intValue ?? -1) of the report has no valid state")
            }
            bots.append(
                Bot(
                    number: o["bot"]?.intValue ?? -1, room: o["room"]?.intValue ?? 0, state: state, address: o["address"]?.stringValue,
                    seconds: o["seconds"]?.doubleValue ?? 0, bitrate: o["bitrate"]?.intValue ?? 0, estimate: o["estimate"]?.intValue,
                    loss: o["packetLoss"]?.doubleValue, rtt: o["roundTripTimeMs"]?.doubleValue,
                    condition: o["networkCondition"]?.stringValue.flatMap(NetworkCondition.init(rawValue:)) ?? .unknown,
                    layersActive: o["layersActive"]?.intValue ?? 0, rtcpReceived: o["rtcpReceived"]?.intValue ?? 0,
                    pliReceived: o["pliReceived"]?.intValue ?? 0,
                    keyFramesSent: o["keyFramesSent"]?.intValue ?? 0, packetsReceived: o["packetsReceived"]?.intValue,
                    framesReceived: o["framesReceived"]?.intValue, error: o["error"]?.stringValue, iceMs: o["iceMs"]?.intValue,
                    dtlsMs: o["dtlsMs"]?.intValue,
                    turnAllocateMicros: o["turnAllocateMicros"]?.intValue, relayed: o["relayed"] == .bool(true),
                    iceRestarts: o["iceRestarts"]?.intValue, iceRestartsRefused: o["iceRestartsRefused"]?.intValue,
                    iceRestartRecoveryMs: o["iceRestartRecoveryMs"]?.intValue, iceRecoveries: o["iceRecoveries"]?.intValue,
                    interfaceRestarts: o["interfaceRestarts"]?.intValue))
        }
        cost = nil
    }

    /// Adds another shard's report: counts and totals add, histograms merge bucket by bucket.
    mutating func merge(_ o: LoadReport) {
        requested += o.requested
        started += o.started
        failed += o.failed
        withFeedback += o.withFeedback
        shards += o.shards
        if rooms.isEmpty { rooms = o.rooms }
        durationMicros = max(durationMicros, o.durationMicros)
        loops += o.loops
        totals.add(o.totals)
        for (k, v) in o.conditions { conditions[k, default: 0] += v }
        metrics.merge(o.metrics)
        if let r = o.receiverRejected { receiverRejected = (receiverRejected ?? 0) + r }
        for t in o.requirementTexts where !requirementTexts.contains(t) { requirementTexts.append(t) }
        bots += o.bots
        bots.sort { $0.number < $1.number }
    }

    mutating func evaluate(_ reqs: [LoadRequirement]) {
        requirementTexts = reqs.map(\.text)
        results = reqs.map { r in
            let v = r.figure(self)
            return (r, v, v.map { r.met(by: $0) } ?? false)
        }
    }

    /// 2: no bot heard from the receiver; 1: a bot failed or never heard back, or a requirement
    /// was not met; 0 otherwise.
    var exitCode: Int32 {
        if withFeedback == 0 { return 2 }
        if failed > 0 || withFeedback < started || results.contains(where: { !$0.2 }) { return 1 }
        if saturation != nil && saturationFails { return 1 } // the requirements could not be judged
        if let s = subscribers, s.failed > 0 { return 1 }
        return 0
    }

    static func percentileD(_ v: [Double], _ q: Double) -> Double {
        guard !v.isEmpty else { return 0 }
        let s = v.sorted()
        return s[min(s.count - 1, Int((Double(s.count - 1) * q).rounded()))]
    }

    static func percentile(_ v: [Int], _ q: Double) -> Int {
        guard !v.isEmpty else { return 0 }
        let s = v.sorted()
        return s[min(s.count - 1, Int((Double(s.count - 1) * q).rounded()))]
    }

    struct RoomSummary {
        var room: Int; var destination: String?; var bots = 0; var withFeedback = 0; var loss = Histogram(); var rtt = Histogram()
    }

    /// Per room, from the per-bot lines (so merged shards summarise the same way).
    func roomSummaries() -> [RoomSummary] {
        let n = max(rooms.count, (bots.map(\.room).max() ?? -1) + 1, 1)
        var out = (0..<n).map { RoomSummary(room: $0, destination: $0 < rooms.count ? rooms[$0] : nil) }
        for b in bots where b.room >= 0 && b.room < n && b.state != .failed && b.state != .pending {
            out[b.room].bots += 1
            if b.rtcpReceived > 0 { out[b.room].withFeedback += 1 }
            if let l = b.loss { out[b.room].loss.add(l) }
            if let r = b.rtt { out[b.room].rtt.add(r) }
        }
        return out
    }

}
