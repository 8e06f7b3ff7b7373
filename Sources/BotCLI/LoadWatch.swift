import Fleet
import PublisherEngine
import ReceiverEngine
import Platform
import Stats

extension LoadCommand {
    /// The 250 ms loop while the fleet runs: progress, the steady-state CPU window (from a second
    /// after the ramp to a second before the end), the subscribers' join and leave.
    final class Watch {
        let plan: Plan
        let fleet: Fleet
        let live: SharedEncoder?
        let start = Clock.monotonicMicros()
        let rampEnd: Int64
        /// Subscribers join 2 s after the last publisher started and leave a second before the
        /// publishers end (what they see is the steady room, not its start or end).
        let subscribers: SubscriberFleet?
        var subscribersStarted = false, subscribersStopped = false
        var steadyFrom: Sample?
        var steadyTo: Sample?
        var peakRSS = 0
        /// The process's RSS just before the subscribers joined.
        var rssBeforeSubscribers: Int?
        var vitals = ProcessVitals()
        let receivers: [ReceiverEngine]
        /// The drivers' lag a second ago, for the live line's last second.
        var lastSecond: (at: Int64, lag: DriverLags)?
        var recentLagP99: Int64?
        /// `--metrics`: where the exposition rendered each second goes.
        var exposition: Locked<String>?
        var nextMetrics: Int64 = 0
        /// The live line (figures refreshed each second).
        var liveLine = ""
        var nextFigures: Int64 = 0
        var lastBytes: (Int64, Int)?
        var fleetBitrate: Double?
        var lossP95: Double?

        /// The figures the steady window is the difference of.
        struct Sample {
            var wall: Int64
            var cpu: Int64
            var encoder: Int64
            var lag: DriverLags
            var machine: (busy: Int64, total: Int64)?
            /// The subscribers' event loops' CPU time (0 without subscribers).
            var subscribers: Int64 = 0
        }

        init(plan: Plan, fleet: Fleet, live: SharedEncoder?, receivers: [ReceiverEngine] = []) {
            self.plan = plan
            self.fleet = fleet
            self.live = live
            self.receivers = receivers
            rampEnd = start + Int64(Double(plan.range.count) * 1e6 / plan.rampPerSecond)
            subscribers = plan.whep.map {
                var config = SubscriberFleet.Config(
                    options: $0, count: plan.subscriberCount, rooms: plan.roomCount,
                    publishersPerRoom: (plan.range.count + plan.roomCount - 1) / plan.roomCount, loops: plan.loops,
                    decoders: min(plan.subscriberCount, plan.decoders ?? plan.loops))
                config.spacingMicros = plan.subscriberSpacingMicros
                config.rotationMicros = plan.decoderRotationMicros
                config.content = plan.content
                // The subscribers restart as the publisher bots do, each after its own subscription.
                config.iceRestartsAfter = plan.iceRestarts
                config.iceRecoverAfter = plan.iceRecoverAfter
                return SubscriberFleet(config: config)
            }
            if subscribers != nil && rampEnd + 2_000_000 + 3_000_000 > start + plan.duration - 1_000_000 {
                Output.err(
                    "warning: --duration leaves the subscribers less than 3 s after the ramp (they join 2 s after it and leave 1 s before the end)\n"
                )
            }
        }

        func run() {
            let end = start + plan.duration
            while !Signals.isInterrupted {
                Clock.sleep(micros: 250_000)
                let now = Clock.monotonicMicros()
                let snaps = fleet.snapshot()
                let running = snaps.filter { $0.state == .running }.count
                let done = snaps.filter { $0.state == .done }.count
                let failed = snaps.filter { $0.state == .failed }.count
                peakRSS = max(peakRSS, vitals.sample().rssBytes)
                let lag = driversLag()
                if steadyFrom == nil && now >= rampEnd + 1_000_000 && now < end - 1_000_000 {
                    steadyFrom = Sample(
                        wall: now, cpu: fleet.loopsCPUMicros, encoder: live?.encoderCPUMicros ?? 0, lag: lag, machine: MachineCPU.sample(),
                        subscribers: subscribers?.cpuMicros ?? 0)
                }
                if steadyFrom != nil && now < end - 1_000_000 {
                    steadyTo = Sample(
                        wall: now, cpu: fleet.loopsCPUMicros, encoder: live?.encoderCPUMicros ?? 0, lag: lag, machine: MachineCPU.sample(),
                        subscribers: subscribers?.cpuMicros ?? 0)
                }
                if let l = lastSecond, now - l.at >= 1_000_000 {
                    recentLagP99 = lag.since(l.lag).worst?.lag.percentile(0.99)
                    lastSecond = (now, lag)
                } else if lastSecond == nil {
                    lastSecond = (now, lag)
                }
                let behind = recentLagP99.map { $0 > LoadReport.saturatedLagMicros } ?? false
                if let exposition, now >= nextMetrics {
                    nextMetrics = now + 1_000_000
                    exposition.value = metricsText(snaps, lag: lag, saturated: behind, now: now)
                }
                if let subscribers, !subscribersStarted, now >= rampEnd + 2_000_000 {
                    subscribersStarted = true
                    rssBeforeSubscribers = vitals.sample().rssBytes
                    subscribers.start()
                }
                if subscribersStarted, now >= end - 1_000_000 { stopSubscribers() }
                if now >= nextFigures {
                    // The fleet's bitrate over the last second and its loss p95 so far.
                    nextFigures = now + 1_000_000
                    var bytes = 0, lossy: [Double] = []
                    for b in snaps where b.state == .running || b.state == .done {
                        bytes += b.streams.reduce(0) { $0 + $1.payloadBytesSent + $1.headerBytesSent }
                        let sent = b.streams.reduce(0) { $0 + $1.packetsSent }
                        let lost = b.streams.reduce(0) { $0 + max(0, $1.packetsLostReported) }
                        if b.network.rtcpReceived > 0 && sent > 0 { lossy.append(Double(lost) / Double(sent)) }
                    }
                    if let (t, b) = lastBytes, now > t { fleetBitrate = Double(bytes - b) * 8e6 / Double(now - t) }
                    lastBytes = (now, bytes)
                    lossP95 = lossy.isEmpty ? nil : LoadReport.percentileD(lossy, 0.95)
                    let withFeedback = snaps.filter { $0.network.rtcpReceived > 0 }.count
                    liveLine =
                        "load \(Units.fixed(Double(now - start) / 1e6, 0))s  started \(running + done + failed)/\(plan.range.count)  connected \(withFeedback)  failed \(failed)"
                        + (fleetBitrate.map { "  fleet \(Units.bitrate(Int($0)))" } ?? "")
                        + (lossP95.map { "  loss p95 \(Units.fixed($0 * 100, 2)) %" } ?? "")
                        + (subscribers.map { "  subscribers \($0.connected)/\(plan.subscriberCount)" } ?? "")
                        + (recentLagP99.map { "  lag p99 \(Units.fixed(Double($0) / 1000, 0)) ms" } ?? "")
                        + (behind ? "  SATURATED: pubbot is the bottleneck" : "")
                    // `--progress` off a terminal: the same line, once a second, as a log line.
                    if plan.progress && !Output.progressEnabled { Output.err(liveLine + "\n") }
                }
                Output.progress(liveLine)
                if done + failed == plan.range.count { break }
                if now - start > plan.duration + 10_000_000 { break } // the loops should have ended by now
            }
        }

        /// The fleet as Prometheus sees it now (FleetMetrics).
        func metricsText(_ snaps: [BotSnapshot], lag: DriverLags, saturated: Bool, now: Int64) -> String {
            let report = LoadReport(
                bots: snaps, receivers: [], rooms: [], requested: plan.range.count, shard: plan.shard, durationMicros: now - start,
                cost: nil, suite: plan.suite.rawValue, loops: plan.loops)
            var states: [BotState: Int] = [:]
            for b in snaps { states[b.state, default: 0] += 1 }
            return FleetMetrics.render(
                report, states: states, subscribers: subscribers.map { ($0.connected, plan.subscriberCount) }, lag: lag,
                saturated: saturated, codec: (live?.codec ?? plan.askedCodec ?? .vp8).rawValue, shard: "\(plan.shard.index)")
        }

        func stopSubscribers() {
            guard let subscribers, !subscribersStopped else { return }
            subscribersStopped = true
            subscribers.stop()
        }

        /// The steady state's cost, when it lasted at least a second.
        var cost: LoadReport.Cost? {
            guard let a = steadyFrom, let b = steadyTo, b.wall - a.wall >= 1_000_000 else { return nil }
            var c = LoadReport.Cost(
                loopCPUPercent: Double(b.cpu - a.cpu) * 100 / Double(b.wall - a.wall), peakRSSBytes: peakRSS,
                seconds: Double(b.wall - a.wall) / 1e6,
                encoderCPUPercent: live == nil ? nil : Double(b.encoder - a.encoder) * 100 / Double(b.wall - a.wall))
            c.lag = b.lag.since(a.lag)
            if let m0 = a.machine, let m1 = b.machine, m1.total > m0.total {
                c.machineBusyPercent = Double(m1.busy - m0.busy) * 100 / Double(m1.total - m0.total)
            }
            c.cores = MachineCPU.cores
            if let subscribers {
                c.subscriberCPUPercent = Double(b.subscribers - a.subscribers) * 100 / Double(b.wall - a.wall)
                if let before = rssBeforeSubscribers, subscribers.config.count > 0 {
                    c.rssPerSubscriberBytes = max(0, peakRSS - before) / subscribers.config.count
                }
            }
            return c
        }

        /// How late every driver of this process ran what was due: the fleet's event loops, the
        /// embedded receivers' threads and the subscribers' event loops.
        func driversLag() -> DriverLags {
            var embedded = LagMeter(), subscribed = LagMeter()
            for r in receivers { embedded.add(r.load.lag) }
            if let subscribers { subscribed.add(subscribers.lag) }
            return DriverLags(groups: [("event loops", fleet.loopsLag), ("embedded receivers", embedded), ("subscribers", subscribed)])
        }
    }
}
