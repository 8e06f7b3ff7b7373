import HTTPSignaling
import MediaCodecs
import PublisherEngine
import ReceiverEngine
import Transport
import Stats
import Preflight
import PreflightRunner
import RTPCore
import Platform
import WebRTCClient
import DTLS
#if canImport(Glibc)
    import Glibc
#endif

/// What `pubbot preflight` prints: the JSON document (schema: preflight.schema.json), the
/// human verdict, the JUnit report and the per-stream table.
extension PreflightCommand {
    /// One connectivity path in the JSON report (the publisher's and the subscriber's alike).
    static func pathJSON(_ r: PathResult) -> JSONValue {
        .object([
            ("path", .string(r.path)), ("reachable", .bool(r.reachable)),
            ("connectMs", r.connectMs.map { .double(($0 * 10).rounded() / 10) } ?? .null),
            ("roundTripTimeMs", r.rttMs.map { .double(($0 * 100).rounded() / 100) } ?? .null),
            ("detail", .string(r.detail)), ("announcedByServer", .bool(r.announced))
        ])
    }

    /// The connectivity paths as a text table.
    static func pathTable(_ paths: [PathResult]) -> String {
        var table = TextTable(headers: ["path", "reachable", "connect", "RTT", "detail"], rightAligned: [2, 3])
        for r in paths {
            table.add([
                r.path, r.reachable ? "yes" : "NO", r.connectMs.map { Units.fixed($0, 1) + " ms" } ?? "-",
                r.rttMs.map { Units.fixed($0, 2) + " ms" } ?? "-", r.detail
            ])
        }
        return table.render()
    }

    /// A finished pre-flight, as printed: the verdict with, through a WHIP server, what was
    /// negotiated, each connectivity path and what the WHEP subscriber saw.
    struct Summary {
        var outcome: PreflightRunner.Outcome
        var verdict: Verdict
        var met: Bool?
        var connectivity: [PathResult]
        var whip: WHIPConnection?
        var subscriber: WHEPProbe.Result?
        /// The main phase's ICE restarts (`--ice-restart-at`, `--ice-recover-after`).
        var restarts: [ICERestarts.Outcome] = []
        /// The resolution a browser would send on this link (not for an audio-only run).
        var browser: BrowserEquivalent?

        func json(_ plan: Plan) -> JSONValue {
            let phase = outcome.phase
            let doc = PreflightCommand.json(
                verdict, phase: phase, audioOnly: outcome.audioOnly, requirement: plan.requirement, met: met, thresholds: plan.thresholds,
                browser: browser)
            guard case var .object(f) = doc, let w = whip else { return doc }
            let t = phase.publisher?.network.transport
            let negotiated: [(String, JSONValue)] = [
                ("endpoint", .string(SignalingClient.redacted(w.resource.resourceURL))),
                ("negotiated", .object(w.summary.map { ($0.0, .string($0.1)) })),
                ("deviations", .array(w.resource.deviations.map { .string($0) }))
            ]
            let first = phase.publisher.flatMap { PublishCommand.timeToFirstMedia($0, w) }
            f.append(
                (
                    "whip",
                    .object(
                        negotiated + [("timeToFirstMediaMs", first.map { .int($0) } ?? .null)]
                            + (t.map { TransportFields.json($0, rttMillis: phase.measurement.roundTripTimeMillis) } ?? []))
                ))
            f.append(("connectivity", .array(connectivity.map(PreflightCommand.pathJSON))))
            // No direct path worked: only a relay can carry this client's media.
            f.append(("turnRequired", .bool(!connectivity.contains { $0.path == "host-udp" && $0.reachable })))
            let path = t.flatMap { t in t.localCandidateType.map { "\($0) → \(t.remoteCandidateType ?? "?")" } }
            f.append(("path", path.map { .string($0) } ?? .null))
            if let subscriber { f.append(("subscriber", WHEPProbe.json(subscriber))) }
            if !plan.iceRestarts.isEmpty || plan.iceRecoverAfter != nil || !restarts.isEmpty {
                f.append(("iceRestarts", .array(restarts.map(\.json))))
            }
            if let u = phase.publisher?.network.uplink {
                f.append(("uplinkEmulator", UplinkReport.json(u, spec: plan.config.uplinkImpairment?.summary)))
            }
            return .object(f)
        }

        func text(_ plan: Plan, destination: SocketAddress, embedded: Bool) -> String {
            let phase = outcome.phase
            let target =
                plan.whipOptions.map { SignalingClient.redacted($0.endpoint) }
                ?? (embedded ? "embedded loopback receiver" : "\(destination)")
            var text = PreflightCommand.human(
                verdict, phase: phase, audioOnly: outcome.audioOnly, target: target, requirement: plan.requirement, met: met)
            if let browser { text += "\n" + browser.text }
            if !connectivity.isEmpty {
                text += "\nconnectivity (each path on its own):\n" + PreflightCommand.pathTable(connectivity)
                if !connectivity.contains(where: { $0.path == "host-udp" && $0.reachable }) {
                    text += "TURN required: no direct path worked\n"
                }
            }
            if let w = whip, let t = phase.publisher?.network.transport {
                text += "\nWHIP: " + w.summary.map { "\($0.0) \($0.1)" }.joined(separator: ", ") + "\n"
                let first = phase.publisher.flatMap { PublishCommand.timeToFirstMedia($0, w) }.map {
                    ", first media \($0) ms after the set-up began"
                }
                text +=
                    "ICE \(t.iceDurationMs ?? 0) ms (\(t.localCandidateType ?? "?") \(t.localAddress ?? "?") → \(t.remoteCandidateType ?? "?") \(t.remoteAddress ?? "?")), DTLS \(t.dtlsDurationMs ?? 0) ms, \(t.srtpCipher ?? "-")\(first ?? "")\n"
            }
            for r in restarts {
                text += "ICE restart at \(Units.fixed(Double(r.atMicros) / 1e6, 1)) s\(r.trigger.map { " (\($0))" } ?? ""): \(r.text)\n"
            }
            if let subscriber { text += WHEPProbe.text(subscriber) }
            return text
        }
    }

    static func json(
        _ v: Verdict, phase: PreflightRunner.Phase, audioOnly: Measurement?, requirement: String?, met: Bool?,
        thresholds: VerdictThresholds, browser: BrowserEquivalent? = nil,
        timestampMillis: Int64 = Clock.wallMicros() / 1000
    ) -> JSONValue {
        let m = v.measurement
        func part(_ p: Verdict.Part) -> JSONValue {
            .object([("supported", .bool(p.supported)), ("reason", .string(p.reason)), ("mos", .double(p.mos))])
        }
        var f: [(String, JSONValue)] = [("type", .string("verdict")), ("timestamp", .int(timestampMillis))]
        f.append(("audio", part(v.audio)))
        f.append(("video", part(v.video)))
        var recommended: JSONValue = .null
        if let r = v.recommended {
            recommended = .object([
                ("name", .string(r.name)), ("width", .int(Int64(r.width))), ("height", .int(Int64(r.height))),
                ("frameRate", .int(Int64(r.fps)))
            ])
        }
        f.append(("recommended", recommended))
        f.append(("estimate", .int(Int64(m.estimate))))
        f.append(("packetLoss", .double((m.lossFraction * 10_000).rounded() / 10_000)))
        var window: [(String, JSONValue)] = [
            ("durationMs", m.lossWindowMillis.map { .int($0) } ?? .null),
            ("source", .string(m.lossCountedFromFeedback ? "transport-cc" : "receiver reports")),
            ("afterSettling", .bool(m.lossAfterSettling))
        ]
        if let c = m.lossCount {
            window += [
                ("packetsReported", .int(Int64(c.reported))), ("packetsLost", .int(Int64(c.lost))),
                ("transportSequenceNumbers", .object([("first", .int(c.firstSequence)), ("last", .int(c.lastSequence))]))
            ]
        }
        f.append(("packetLossWindow", .object(window)))
        f.append(("lossAtFullQueue", .double((m.lossAtFullQueue * 10_000).rounded() / 10_000)))
        f.append(("networkLoss", .double((m.networkLoss * 10_000).rounded() / 10_000)))
        f.append(
            (
                "startupLoss",
                m.startupLoss.map { c in
                    .object([
                        ("fraction", .double((c.fraction * 10_000).rounded() / 10_000)), ("packetsReported", .int(Int64(c.reported))),
                        ("packetsLost", .int(Int64(c.lost)))
                    ])
                } ?? .null
            ))
        f.append(("roundTripTimeMs", m.roundTripTimeMillis.map { JSONValue.double(($0 * 10).rounded() / 10) } ?? .null))
        f.append(("jitterMs", m.jitterMillis.map { JSONValue.double(($0 * 10).rounded() / 10) } ?? .null))
        f.append(("steady", .bool(phase.steady)))
        f.append(("durationMs", .int(m.durationMillis)))
        var audioPhase: JSONValue = .null
        if let a = audioOnly {
            audioPhase = .object([
                ("packetLoss", .double(a.lossFraction)), ("roundTripTimeMs", a.roundTripTimeMillis.map { JSONValue.double($0) } ?? .null)
            ])
        }
        f.append(("audioOnlyPhase", audioPhase))
        f.append(("require", requirement.map { JSONValue.string($0) } ?? .null))
        f.append(("requirementMet", met.map { JSONValue.bool($0) } ?? .null))
        f.append(
            (
                "thresholds",
                .object([
                    ("tierShare", .double(thresholds.tierShare)), ("audioMinMOS", .double(thresholds.audioMinMOS)),
                    ("videoMaxLoss", .double(thresholds.videoMaxLoss)), ("simulcast", .bool(thresholds.simulcast))
                ])
            ))
        let sr = streamReport(phase.publisher, phase.receiver)
        f.append(("ok", .bool(sr.problems.isEmpty)))
        f.append(("streams", .array(sr.rows)))
        f.append(("problems", .array(sr.problems.map { JSONValue.string($0) })))
        f.append(("suspended", .array(sr.suspended.map { JSONValue.string($0) })))
        f.append(("browserEquivalent", browser?.json ?? .null))
        return .object(f)
    }

    static func human(_ v: Verdict, phase: PreflightRunner.Phase, audioOnly: Measurement?, target: String, requirement: String?, met: Bool?)
        -> String
    {
        let m = v.measurement
        var out =
            "pubbot preflight — \(target), \(Units.fixed(Double(m.durationMillis) / 1000, 1)) s\(phase.steady ? " (estimate steady)" : " (time limit)")\n\n"
        var t = TextTable(headers: ["", "supported", "MOS", "why"])
        t.add(["audio", v.audio.supported ? "yes" : "NO", Units.fixed(v.audio.mos, 2), v.audio.reason])
        t.add(["video", v.video.supported ? "yes" : "NO", Units.fixed(v.video.mos, 2), v.video.reason])
        out += t.render()
        out += "\nrecommended: " + v.recommendation + "\n"
        let window =
            m.lossWindowMillis.map {
                " over the last \(Units.fixed(Double($0) / 1000, 1)) s" + (m.lossAfterSettling ? " after the estimate settled" : "")
                    + (m.lossCountedFromFeedback ? " (transport-cc)" : "")
            } ?? ""
        out +=
            "measured: estimate \(Units.bitrate(m.estimate)), loss \(Units.fixed(m.lossFraction * 100, 1)) %\(window), RTT \(m.roundTripTimeMillis.map { Units.fixed($0, 1) + " ms" } ?? "-"), jitter \(m.jitterMillis.map { Units.fixed($0, 1) + " ms" } ?? "-")\n"
        if m.lossAtFullQueue > 0 {
            out +=
                "of that loss, \(Units.fixed(m.lossAtFullQueue * 100, 1)) % came at a full queue (tail drop behind pubbot's own overshoot; not judged); "
                + "judged: \(Units.fixed(m.networkLoss * 100, 1)) % (packets that met no full queue)\n"
        }
        if let st = m.startupLoss, st.lost > 0 {
            out +=
                "start-up: \(Units.fixed(st.fraction * 100, 1)) % of \(st.reported) packets lost while probing (pubbot's own overshoot; not judged)\n"
        }
        if let a = audioOnly {
            out +=
                "audio-only phase: loss \(Units.fixed(a.lossFraction * 100, 1)) %, RTT \(a.roundTripTimeMillis.map { Units.fixed($0, 1) + " ms" } ?? "-")\n"
        }
        let sr = streamReport(phase.publisher, phase.receiver)
        if !sr.table.isEmpty {
            out += "\n" + sr.table + "\n" + sr.details
            if !sr.suspended.isEmpty { out += "suspended for lack of bandwidth: " + sr.suspended.joined(separator: ", ") + "\n" }
            if phase.receiver != nil {
                out += sr.problems.isEmpty ? "every stream sent was decoded\n" : "PROBLEMS:\n" + sr.problems.map { "  - \($0)\n" }.joined()
            }
        }
        if let requirement, let met { out += "\nrequire \(requirement): \(met ? "met" : "NOT met")\n" }
        return out
    }

    /// JUnit XML: one test case per requirement (audio, video, and --require), for CI dashboards.
    static func writeJUnit(_ path: String?, paths results: [PathResult] = [], verdict v: Verdict?, requirement: String?, failure: String?) {
        guard let path else { return }
        func esc(_ s: String) -> String {
            s.replacingBackslashesAndQuotes.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
                .replacing("\\\"", with: "&quot;")
        }
        var cases: [(String, String?)] = []
        if let v {
            cases.append(("audio supported", v.audio.supported ? nil : v.audio.reason))
            cases.append(("video supported", v.video.supported ? nil : v.video.reason))
            if let r = requirement {
                if paths.contains(r) {
                    cases.append(("require \(r)", results.contains { $0.path == r && $0.reachable } ? nil : "not reachable"))
                } else {
                    cases.append(
                        (
                            "require \(r)",
                            v.meets(r)
                                ? nil
                                : "recommended \(v.recommended?.name ?? (v.audio.supported ? "audio only" : "none")): \(v.video.reason)"
                        ))
                }
            }
        } else {
            cases.append(("connectivity", failure ?? "no verdict"))
        }
        // One case per path of the connectivity pre-flight (--whip).
        for r in results { cases.append(("path \(r.path)", r.reachable ? nil : r.detail)) }
        if let r = requirement, paths.contains(r), v == nil {
            cases.append(("require \(r)", results.contains { $0.path == r && $0.reachable } ? nil : "not reachable"))
        }
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuite name=\"pubbot preflight\" tests=\"\(cases.count)\" failures=\"\(cases.filter { $0.1 != nil }.count)\">\n"
        for (name, fail) in cases {
            xml += "  <testcase classname=\"pubbot.preflight\" name=\"\(esc(name))\""
            if let fail { xml += ">\n    <failure message=\"\(esc(fail))\"/>\n  </testcase>\n" } else { xml += "/>\n" }
        }
        xml += "</testsuite>\n"
        if !PublishCommand.writeFile(path, xml) { Output.err("warning: cannot write the JUnit report to '\(path)'\n") }
    }

    struct StreamReport {
        var table = ""
        var rows: [JSONValue] = []
        var problems: [String] = []
        var suspended: [String] = []
        var details = ""
    }

    /// Per stream: what was sent and what the (embedded) receiver received and decoded.
    static func streamReport(_ p: PublisherSnapshot?, _ r: ReceiverSnapshot?) -> StreamReport {
        var out = StreamReport()
        guard let p else { return out }
        if let e = p.media.error { out.problems.append("encoder: \(e)") }
        if let r, r.keyMismatchSuspected { out.problems.append(r.keyMismatchMessage) }
        var t = TextTable(
            headers: [
                "stream", "sent", "decoded", "frames sent", "frames decoded", "pkts sent", "pkts recv", "lost", "bitrate", "stamps",
                "latency mean/p95", "quality (PSNR-Y mean/p10)"
            ],
            rightAligned: [3, 4, 5, 6, 7, 8, 9, 10, 11])
        // A remote receiver (--to, --whip): only what was sent is known here.
        var sentOnly = TextTable(
            headers: ["stream", "sent", "frames sent", "pkts sent", "lost (reported)", "limited by"], rightAligned: [2, 3, 4])
        for o in p.streams {
            let n = Report.streamName(kind: o.kind, rid: o.rid, width: o.width, height: o.height)
            sentOnly.add([
                n, o.kind == .audio ? "opus" : "\(o.width)x\(o.height)", String(o.framesSent), String(o.packetsSent),
                String(max(0, o.packetsLostReported)), o.kind == .audio ? "-" : o.qualityLimitationReason.rawValue
            ])
        }
        for o in p.streams {
            let inb = r?.streams.first { $0.ssrc == o.ssrc }
            let name = Report.streamName(kind: o.kind, rid: o.rid, width: o.width, height: o.height)
            let decodedRes =
                inb.map { $0.kind == .audio ? ($0.framesDecoded > 0 ? "opus" : "-") : ($0.width > 0 ? "\($0.width)x\($0.height)" : "-") }
                ?? "-"
            let lat =
                inb.flatMap { i in i.latencyMeanMillis.map { "\(Units.fixed($0, 1))/\(Units.fixed(i.latencyP95Millis ?? $0, 1)) ms" } }
                ?? "-"
            t.add([
                name, o.kind == .audio ? "opus" : "\(o.width)x\(o.height)", decodedRes, String(o.framesSent),
                String(inb?.framesDecoded ?? 0),
                String(o.packetsSent), String(inb?.packetsReceived ?? 0), String(inb?.packetsLost ?? 0), Units.bitrate(inb?.bitrate ?? 0),
                o.kind == .audio ? "-" : "\(inb?.stampsRead ?? 0)", o.kind == .audio ? "-" : lat, inb.map(Report.psnrText) ?? "-"
            ])
            if r != nil {
                if let inb {
                    if inb.framesDecoded == 0 { out.problems.append("\(name): nothing decoded") }
                    if o.kind == .video && (inb.width != o.width || inb.height != o.height) {
                        out.problems.append("\(name): decoded \(inb.width)x\(inb.height), sent \(o.width)x\(o.height)")
                    }
                    if o.kind == .video && inb.stampsRead == 0 { out.problems.append("\(name): no stamp read back") }
                } else if o.packetsSent == 0 && o.qualityLimitationReason == .bandwidth {
                    out.suspended.append(name) // the allocator switched it off: the link cannot carry it
                } else {
                    out.problems.append("\(name): nothing received")
                }
            }
            out.rows.append(.object([("sent", Report.outboundJSON(o)), ("received", inb.map(Report.inboundJSON) ?? .null)]))
        }
        out.table = r == nil ? sentOnly.render() : t.render()
        let n = p.network
        if let e = n.estimate {
            out.details +=
                "estimate \(Units.bitrate(e.bitrate)) (delay-based \(Units.bitrate(e.delayBased)), loss-based \(Units.bitrate(e.lossBased)), acknowledged \(e.acknowledged.map(Units.bitrate) ?? "-"))\n"
            if let a = n.allocation {
                let layers = a.layers.enumerated().map { i, b in
                    "\(p.streams.filter { $0.kind == .video }.dropFirst(i).first?.height ?? 0)p \(b == 0 ? "off" : Units.bitrate(b))\(a.bandwidthLimited[i] ? " (bandwidth)" : "")"
                }
                out.details += "allocation: audio \(Units.bitrate(a.audio)), " + layers.joined(separator: ", ") + "\n"
            }
            out.details +=
                "feedback: \(n.transportFeedbackReceived) transport-cc, \(n.nackReceived) NACK → \(n.retransmissionsSent) RTX (\(r?.streams.reduce(0) { $0 + $1.packetsRecovered } ?? 0) recovered), \(p.streams.reduce(0) { $0 + $1.pliReceived }) PLI, padding packets \(n.paddingPacketsSent)\n"
        }
        if let i = r?.impairment {
            out.details +=
                "impairment: \(i.packets) packets offered, \(i.droppedByLoss) lost, \(i.droppedByQueue) dropped by the queue, max queueing \(Units.fixed(Double(i.maxQueueMicros) / 1000, 0)) ms\n"
        }
        if let u = n.uplink { out.details += UplinkReport.text(u, spec: nil) }
        if let r, r.rejected.total > 0 {
            out.details +=
                "rejected packets: \(r.rejected.total) (auth \(r.rejected.authenticationFailed), malformed \(r.rejected.malformed))\n"
        }
        return out
    }
}
