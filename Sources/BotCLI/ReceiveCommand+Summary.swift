#if canImport(Glibc)
    import HTTPSignaling
    import Glibc
#endif
import ReceiverEngine
import Transport
import Stats
import RTPCore
import Signalling
import Platform
import WHIPEndpoint
import HTTPServer
import DTLS
import ICE
import WebRTCClient

extension ReceiveCommand {
    /// The summary document (`--json`).
    static func summaryJSON(_ r: ReceiverSnapshot, _ running: Running) -> JSONValue {
        let publishers: [JSONValue] = publisherSummaries(r).map { p in
            .object([
                ("address", .string(p.address)), ("streams", .int(Int64(p.streams))), ("packetsReceived", .int(Int64(p.packets))),
                ("packetsLost", .int(Int64(p.lost))), ("framesReceived", .int(Int64(p.frames))), ("byeReceived", .bool(p.bye))
            ])
        }
        let feedback: JSONValue = .object([
            ("rtcpSent", .int(Int64(r.rtcpSent))), ("nackSent", .int(Int64(r.nackSent))), ("pliSent", .int(Int64(r.pliSent))),
            ("transportFeedbackSent", .int(Int64(r.transportFeedbackSent))), ("rembSent", .int(Int64(r.rembSent))),
            ("retransmissionsReceived", .int(Int64(r.retransmissionsReceived)))
        ])
        var fields: [(String, JSONValue)] = [
            ("type", .string("summary")), ("command", .string("receive")), ("packetsAccepted", .int(Int64(r.packetsAccepted))),
            ("streams", .array(r.streams.map(Report.inboundJSON))), ("publishers", .array(publishers)),
            ("refusedOverCapacity", .int(Int64(r.refusedOverCapacity))), ("rejected", Report.rejectedJSON(r.rejected)),
            ("senderReports", .int(Int64(r.senderReports))), ("byes", .int(Int64(r.byes))), ("feedback", feedback)
        ]
        if let whep = running.whep { fields.append(("whep", whepJSON(whep, r))) }
        if let endpoint = running.endpoint { fields.append(("whipEndpoint", endpointJSON(endpoint, r))) }
        return .object(fields)
    }

    /// The WHIP endpoint's sessions (answered, live, and how the others ended: their slots were
    /// freed) and what its HTTP server refused or cut short.
    static func endpointJSON(_ e: WHIPEndpoint, _ r: ReceiverSnapshot) -> JSONValue {
        let h = e.httpStats, x = r.webrtcEndings, p = e.patches
        func n(_ v: Int) -> JSONValue { .int(Int64(v)) }
        return .object([
            ("sessionsAnswered", n(e.sessionsAnswered)), ("live", n(e.sessionsLive)), ("abandoned", n(x.abandoned)),
            ("consentLost", n(x.consentLost)), ("failed", n(x.failed)), ("closed", n(x.closed)),
            (
                "patches",
                .object([("trickles", n(p.trickles)), ("trickledCandidates", n(p.trickledCandidates)), ("restarts", n(p.restarts))])
            ),
            (
                "http",
                .object([
                    ("connections", n(h.accepted)), ("requests", n(h.requests)), ("timedOut", n(h.timedOut)),
                    ("overCapacity", n(h.overCapacity)), ("idleClosed", n(h.idleClosed)), ("malformed", n(h.malformed)),
                    ("tlsFailed", n(h.tlsFailed))
                ])
            )
        ])
    }

    static func endpointText(_ e: WHIPEndpoint, _ r: ReceiverSnapshot) -> String {
        let h = e.httpStats, x = r.webrtcEndings, p = e.patches
        return
            "WHIP endpoint: \(e.sessionsAnswered) sessions answered, \(e.sessionsLive) live, \(x.closed) closed, \(x.abandoned) abandoned (no ICE), "
            + "\(x.consentLost) consent lost, \(x.failed) failed; PATCH: \(p.trickles) trickles (\(p.trickledCandidates) candidates), "
            + "\(p.restarts) ICE restarts; HTTP: \(h.requests) requests, \(h.timedOut) timed out (408), "
            + "\(h.overCapacity) refused over the connection limits (503), \(h.malformed) malformed\n"
    }

    /// What the WHEP answer decided and what became of the transport.
    static func whepJSON(_ w: WHEPSubscription, _ r: ReceiverSnapshot) -> JSONValue {
        let t = r.webrtcPublishers.first
        func ms(_ v: Double?) -> JSONValue { v.map { .double(($0 * 10).rounded() / 10) } ?? .null }
        let restarts = JSONValue.int(Int64(t?.transport?.iceRestarts ?? 0))
        let recovery: JSONValue = t?.transport?.lastRestartRecoveryMicros.map { .int($0 / 1000) } ?? .null
        func text(_ v: String?) -> JSONValue { v.map { .string($0) } ?? .null }
        var pair = JSONValue.null
        if let x = t?.transport {
            pair = .object([
                ("localCandidateType", text(x.localCandidateType)), ("localAddress", text(x.localAddress)),
                ("remoteCandidateType", text(x.remoteCandidateType)), ("remoteAddress", text(x.remoteAddress))
            ])
        }
        return .object(
            [
                ("resource", .string(SignalingClient.redacted(w.resource.resourceURL))),
                ("deviations", .array(w.resource.deviations.map { .string($0) }))
            ] + w.summary.map { ($0.0, JSONValue.string($0.1)) } + [
                ("state", .string(t?.state.rawValue ?? "new")), ("failure", t?.failure.map { .string($0.reason) } ?? .null),
                ("failureLayer", t?.failure.map { .string($0.layer.rawValue) } ?? .null),
                ("server", t?.remote.map { .string($0) } ?? .null),
                ("selectedCandidatePair", pair),
                ("iceRole", (t?.transport?.iceRole).map { .string($0.rawValue) } ?? .null), ("iceDurationMs", ms(t?.transport?.iceMillis)),
                ("dtlsDurationMs", ms(t?.transport?.dtlsMillis)),
                ("srtpCipher", t?.transport?.srtpCipher.map { .string($0) } ?? .null),
                ("roundTripTimeMs", ms(t?.transport?.roundTripMillis)), ("iceRestarts", restarts), ("lastIceRestartRecoveryMs", recovery),
                ("rtcpSent", .int(Int64(r.rtcpSent))), ("nackSent", .int(Int64(r.nackSent))), ("pliSent", .int(Int64(r.pliSent))),
                ("transportFeedbackSent", .int(Int64(r.transportFeedbackSent))),
                ("retransmissionsReceived", .int(Int64(r.retransmissionsReceived))),
                ("rembSent", .int(Int64(r.rembSent))), ("rembBitrate", r.rembBitrate.map { .int(Int64($0)) } ?? .null)
            ])
    }

    static func whepText(_ w: WHEPSubscription, _ r: ReceiverSnapshot) -> String {
        let t = r.webrtcPublishers.first
        var out = "WHEP: " + w.summary.map { "\($0.0) \($0.1)" }.joined(separator: ", ") + "\n"
        out +=
            "transport: \(t?.state.rawValue ?? "new"), server \(t?.remote ?? "-"), ICE \(t?.transport?.iceMillis.map { Units.fixed($0, 1) } ?? "-") ms as \(t?.transport?.iceRole.rawValue ?? "-"), "
        out +=
            "DTLS \(t?.transport?.dtlsMillis.map { Units.fixed($0, 1) } ?? "-") ms, RTT \(t?.transport?.roundTripMillis.map { Units.fixed($0, 2) } ?? "-") ms; "
        out += "feedback sent: \(r.nackSent) NACK, \(r.pliSent) PLI, \(r.transportFeedbackSent) transport-cc, \(r.rembSent) REMB"
        if let b = r.rembBitrate { out += " (last \(Units.bitrate(b)))" }
        out += "; \(r.retransmissionsReceived) retransmissions received\n"
        return out
    }

    struct PublisherSummary { var address: String; var streams = 0; var packets = 0; var lost = 0; var frames = 0; var bye = true }

    /// Per publisher (source address): streams, packets, frames (video reassembled, audio decoded).
    static func publisherSummaries(_ r: ReceiverSnapshot) -> [PublisherSummary] {
        var out = r.publishers.map { PublisherSummary(address: $0.description) }
        for (i, s) in r.streams.enumerated() where i < r.streamPublisher.count && r.streamPublisher[i] < out.count {
            let k = r.streamPublisher[i]
            out[k].streams += 1
            out[k].packets += s.packetsReceived
            out[k].lost += s.packetsLost
            out[k].frames += s.framesAssembled
            out[k].bye = out[k].bye && s.byeReceived
        }
        return out
    }

    /// `latency: false` leaves the stamps' capture→decoded latency out (replayed loops carry the
    /// capture times of when they were built).
    static func table(_ r: ReceiverSnapshot, latency showLatency: Bool = true) -> String {
        // A fleet: one line per publisher instead of one per stream.
        if r.publishers.count > 4 {
            let ps = publisherSummaries(r)
            let frames = ps.map(\.frames).sorted()
            var out =
                "\(ps.count) publishers, \(r.streams.count) streams, \(r.packetsAccepted) packets, \(ps.reduce(0) { $0 + $1.lost }) lost, "
            out +=
                "frames per publisher min/median/max \(frames.first ?? 0)/\(frames.isEmpty ? 0 : frames[frames.count / 2])/\(frames.last ?? 0), "
            out += "\(ps.filter { $0.frames == 0 }.count) with no frames, \(ps.filter(\.bye).count) said BYE\n"
            let decoded = r.streams.filter { $0.kind == .video && $0.framesDecoded > 0 }.count
            out +=
                "video: every frame reassembled and checked; VP8-decoded for \(decoded) of \(r.streams.filter { $0.kind == .video }.count) streams (--decode-publishers), \(r.streams.reduce(0) { $0 + $1.decodeErrors }) decode errors; audio decoded for all\n"
            if r.refusedOverCapacity > 0 { out += "refused (over --max-publishers): \(r.refusedOverCapacity) packets\n" }
            if r.rejected.total > 0 { out += "rejected packets: \(r.rejected.total)\n" }
            return out
        }
        var t = TextTable(
            headers: [
                "stream", "ssrc", "resolution", "pkts recv", "lost", "frames decoded", "decode errors", "bitrate", "stamps",
                "latency mean/p95", "quality (PSNR-Y mean/p10)"
            ],
            rightAligned: [1, 3, 4, 5, 6, 7, 8, 9, 10])
        for s in r.streams {
            let lat =
                !showLatency
                ? "-" : s.latencyMeanMillis.map { "\(Units.fixed($0, 1))/\(Units.fixed(s.latencyP95Millis ?? $0, 1)) ms" } ?? "-"
            t.add([
                Report.streamName(kind: s.kind, rid: s.rid, width: s.width, height: s.height), String(s.ssrc),
                s.kind == .audio ? "opus" : "\(s.width)x\(s.height)", String(s.packetsReceived), String(s.packetsLost),
                String(s.framesDecoded), String(s.decodeErrors), Units.bitrate(s.bitrate),
                s.kind == .audio ? "-" : String(s.stampsRead), s.kind == .audio ? "-" : lat, Report.psnrText(s)
            ])
        }
        var out = t.render()
        if r.rejected.total > 0 {
            out +=
                "rejected packets: \(r.rejected.total) (auth \(r.rejected.authenticationFailed), replayed \(r.rejected.replayed), malformed \(r.rejected.malformed), oversized \(r.rejected.oversized), unknown PT \(r.rejected.unknownPayloadType), not RTP \(r.rejected.notRTP), SSRC collision \(r.rejected.ssrcCollision), unknown source \(r.rejected.unknownSource))\n"
        }
        return out
    }
}
