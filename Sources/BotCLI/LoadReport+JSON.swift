import PublisherEngine
import Fleet
import ReceiverEngine
import Stats
import Platform

/// The report as JSON (`load-report.schema.json`): what `--report` writes and `--json` prints.
extension LoadReport {
    func json() -> JSONValue {
        var f: [(String, JSONValue)] = [
            ("type", .string("loadReport")), ("version", .int(1)), ("shards", .array(shards.map { .string($0) }))
        ]
        f.append(
            (
                "bots",
                .object([
                    ("requested", .int(Int64(requested))), ("started", .int(Int64(started))), ("failed", .int(Int64(failed))),
                    ("withFeedback", .int(Int64(withFeedback)))
                ])
            ))
        f.append(("durationMs", .int(durationMicros / 1000)))
        f.append(("srtpSuite", .string(suite)))
        f.append(("eventLoops", .int(Int64(loops))))
        f.append(("totals", totals.json))
        f.append(
            (
                "conditions",
                .object(conditions.sorted { $0.key.rawValue < $1.key.rawValue }.map { ($0.key.rawValue, .int(Int64($0.value))) })
            ))
        f.append(("metrics", metricsJSON))
        f.append(("cost", costJSON))
        f.append(("rooms", roomsJSON))
        f.append(("receiverRejected", receiverRejected.map { .int(Int64($0)) } ?? .null))
        if let w = handshakes { f.append(("webrtc", webrtcJSON(w))) }
        if let subscribers { f.append(("subscribers", subscribers.json)) }
        f.append(("requirements", requirementsJSON))
        f.append(("ok", .bool(exitCode == 0)))
        f.append(("perBot", .array(bots.map(\.json))))
        return .object(f)
    }

    /// Each metric's percentiles, mean and histogram.
    var metricsJSON: JSONValue {
        var m: [(String, JSONValue)] = []
        for (k, path) in Metrics.fields {
            let h = metrics[keyPath: path]
            func p(_ q: Double) -> JSONValue { h.percentile(q).map { .double(($0 * 10_000).rounded() / 10_000) } ?? .null }
            m.append(
                (
                    k,
                    .object([
                        ("p5", p(0.05)), ("p50", p(0.5)), ("p95", p(0.95)), ("p99", p(0.99)),
                        ("mean", h.mean.map { .double(($0 * 10_000).rounded() / 10_000) } ?? .null), ("histogram", h.json)
                    ])
                ))
        }
        return .object(m)
    }

    /// What the steady state cost (CPU, memory), when it lasted.
    var costJSON: JSONValue {
        guard let c = cost else { return .null }
        let perCore = c.loopCPUPercent > 0 ? Double(started) / (c.loopCPUPercent / 100) : nil
        func tenth(_ v: Double?) -> JSONValue { v.map { .double(($0 * 10).rounded() / 10) } ?? .null }
        var f: [(String, JSONValue)] = [
            ("eventLoopCPUPercent", tenth(c.loopCPUPercent)),
            ("botsPerCore", perCore.map { .double($0.rounded()) } ?? .null),
            ("peakRSSBytes", .int(Int64(c.peakRSSBytes))),
            ("rssPerBotBytes", .int(Int64(started > 0 ? c.peakRSSBytes / started : 0))),
            ("steadySeconds", tenth(c.seconds)),
            ("encoderCPUPercent", tenth(c.encoderCPUPercent))
        ]
        f.append(("driverLagMs", lagJSON(c.lag?.worst)))
        f.append(("machineBusyPercent", tenth(c.machineBusyPercent)))
        f.append(("cores", .int(Int64(c.cores))))
        f.append(("subscriberCPUPercent", tenth(c.subscriberCPUPercent)))
        f.append(("rssPerSubscriberBytes", c.rssPerSubscriberBytes.map { .int(Int64($0)) } ?? .null))
        f.append(("saturated", saturatedJSON))
        return .object(f)
    }

    /// Why pubbot was the bottleneck and what it spoiled, or null.
    var saturatedJSON: JSONValue {
        guard let why = saturation else { return .null }
        let spoiled: [JSONValue] = Self.saturationSpoils.map { .string($0) }
        return .object([("reason", .string(why)), ("untrustworthy", .array(spoiled))])
    }

    /// How late the drivers ran, from the meter's buckets (upper bounds), milliseconds.
    func lagJSON(_ worst: (name: String, lag: LagMeter)?) -> JSONValue {
        guard let worst, worst.lag.count > 0 else { return .null }
        let lag = worst.lag
        func ms(_ q: Double) -> JSONValue { lag.percentile(q).map { .double(Double($0) / 1000) } ?? .null }
        let maxMs: JSONValue = .double(Double(lag.maxMicros / 100) / 10)
        let buckets: [JSONValue] = lag.counts.map { .int(Int64($0)) }
        return .object([
            ("driver", .string(worst.name)), ("p50", ms(0.5)), ("p99", ms(0.99)), ("max", maxMs), ("turns", .int(Int64(lag.count))),
            ("buckets", .array(buckets))
        ])
    }

    var roomsJSON: JSONValue {
        .array(
            roomSummaries().map { r in
                .object([
                    ("room", .int(Int64(r.room))), ("destination", r.destination.map { .string($0) } ?? .null),
                    ("bots", .int(Int64(r.bots))),
                    ("withFeedback", .int(Int64(r.withFeedback))),
                    ("lossP95", r.loss.percentile(0.95).map { .double(($0 * 10_000).rounded() / 10_000) } ?? .null),
                    ("rttP95", r.rtt.percentile(0.95).map { .double(($0 * 10).rounded() / 10) } ?? .null)
                ])
            })

    }

    /// WHIP bots: ICE, DTLS and TURN times, and what the server negotiated.
    func webrtcJSON(_ w: (ice: [Int], dtls: [Int])) -> JSONValue {
        func stats(_ v: [Int]) -> JSONValue {
            .object([
                ("p50", .int(Int64(Self.percentile(v, 0.5)))), ("p95", .int(Int64(Self.percentile(v, 0.95)))),
                ("max", .int(Int64(v.max() ?? 0)))
            ])
        }
        let allocations = bots.compactMap(\.turnAllocateMicros)
        let relayRTT = bots.filter(\.relayed).compactMap(\.rtt)
        return .object([
            ("connected", .int(Int64(w.ice.count))), ("iceMs", stats(w.ice)), ("dtlsMs", stats(w.dtls)),
            (
                "turn",
                allocations.isEmpty
                    ? .null
                    : .object([
                        ("allocated", .int(Int64(allocations.count))), ("relayed", .int(Int64(relayRTT.count))),
                        ("allocateMicros", stats(allocations)),
                        (
                            "relayRTTMsP50",
                            relayRTT.isEmpty ? .null : .double((Self.percentileD(relayRTT, 0.5) * 10).rounded() / 10)
                        ),
                        (
                            "relayRTTMsP95",
                            relayRTT.isEmpty ? .null : .double((Self.percentileD(relayRTT, 0.95) * 10).rounded() / 10)
                        )
                    ])
            ),
            ("negotiated", .object(negotiated.map { ($0.0, .string($0.1)) })),
            ("iceRestarts", restartsJSON)
        ])

    }

    /// `--ice-restart-at`: what the server made of the fleet's restarts (RFC 9725 §4.3.3): asked,
    /// refused, the bots whose restart selected a new pair and how long that took; null when
    /// none was asked.
    var restartsJSON: JSONValue {
        guard !bots.compactMap(\.iceRestarts).isEmpty else { return .null }
        return Self.restartsJSON(
            asked: bots.compactMap(\.iceRestarts).reduce(0, +), refused: bots.compactMap(\.iceRestartsRefused).reduce(0, +),
            recovery: bots.compactMap(\.iceRestartRecoveryMs), byConsentWatch: bots.compactMap(\.iceRecoveries).reduce(0, +),
            byInterfaceChange: bots.compactMap(\.interfaceRestarts).reduce(0, +), recoveredKey: "botsRecovered")
    }

    /// Restarts of bots or subscribers in the report's shape: asked, refused, how many ended on a
    /// new pair (`recoveredKey`), what set them off, the time to the new pair after the answer.
    static func restartsJSON(
        asked: Int, refused: Int, recovery: [Int], byConsentWatch: Int, byInterfaceChange: Int, recoveredKey: String,
        extra: [(String, JSONValue)] = []
    ) -> JSONValue {
        .object(
            [
                ("asked", .int(Int64(asked))), ("refused", .int(Int64(refused))), (recoveredKey, .int(Int64(recovery.count))),
                ("byConsentWatch", .int(Int64(byConsentWatch))), ("byInterfaceChange", .int(Int64(byInterfaceChange))),
                (
                    "recoveryMs",
                    recovery.isEmpty
                        ? .null
                        : .object([
                            ("p50", .int(Int64(percentile(recovery, 0.5)))), ("p95", .int(Int64(percentile(recovery, 0.95)))),
                            ("max", .int(Int64(recovery.max() ?? 0)))
                        ])
                )
            ] + extra)
    }

    var requirementsJSON: JSONValue {
        .array(
            results.map { r in
                .object([
                    ("require", .string(r.0.text)), ("value", r.1.map { .double(($0 * 10_000).rounded() / 10_000) } ?? .null),
                    ("met", .bool(r.2))
                ])
            })

    }

    /// WHIP: the bots' ICE and DTLS times (ms), for those that connected.
    var handshakes: (ice: [Int], dtls: [Int])? {
        let ice = bots.compactMap(\.iceMs), dtls = bots.compactMap(\.dtlsMs)
        return ice.isEmpty ? nil : (ice, dtls)
    }
}
