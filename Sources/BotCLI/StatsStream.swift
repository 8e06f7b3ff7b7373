#if canImport(Glibc)
    import Glibc
#endif
import PublisherEngine
import Stats
import Transport
import WebRTC
import Platform

/// The `--stats FILE|-` JSON Lines stream (schema: `stats.schema.json` beside this file): one object per line per interval,
/// `{"type": …, "timestamp": <epoch ms>, "stats": [ … ]}` — a routed session, so each array has
/// one element. This version carries the publisher's video, audio and media-link stats and its
/// events; the
/// network condition is scored by `NetworkConditionScorer` with hysteresis; events carry the stats they concern.
final class StatsStream {
    let out: JSONLinesWriter
    let startMillis: Int64
    var previous: [Int: (streams: [OutboundStreamStats], micros: Int64)] = [:]
    var lastEvents: [Int: Int] = [:]

    /// `startMillis`: the session's start on the wall clock (simulated runs pass theirs).
    init(_ out: JSONLinesWriter, startMillis: Int64? = nil) {
        self.out = out
        self.startMillis = startMillis ?? Clock.wallMicros() / 1000
    }

    /// One publisher (a routed session): arrays of one element, no connection ids.
    func emit(_ p: PublisherSnapshot, final: Bool = false, at time: (wall: Int64, mono: Int64)? = nil) {
        emit([(p, nil)], final: final, at: time)
    }

    /// Several publishers, one per receiver (a relayed session): one array element per receiver,
    /// each with `connectionId` and `subscriberId`.
    ///
    /// `final`: the line written when the run has stopped. Its rates (`bitrate`, `totalBitrate`,
    /// `encodedFrameRate`) are the run's averages — everything sent over the time the publisher
    /// ran — and each line carries `"final": true`. Rates over the stub of an interval between
    /// the last periodic line and the stop (often a few milliseconds with no frame in it) would
    /// show every layer at 0, a drop that never happened.
    /// `at`: the wall and monotonic time (µs) of this line; nil reads the clocks (a simulated
    /// run passes its own).
    func emit(
        _ connections: [(snapshot: PublisherSnapshot, subscriber: String?)], final: Bool = false, at time: (wall: Int64, mono: Int64)? = nil
    ) {
        let now = (time?.wall ?? Clock.wallMicros()) / 1000
        let mono = time?.mono ?? Clock.monotonicMicros()
        var videoElements: [JSONValue] = [], audioElements: [JSONValue] = [], linkElements: [JSONValue] = []
        var events: [JSONValue] = []
        for (index, (p, subscriber)) in connections.enumerated() {
            let prev = final ? nil : previous[index]
            let seconds = prev.map { max(0.001, Double(mono - $0.micros) / 1e6) } ?? max(0.001, Double(p.elapsedMicros) / 1e6)
            let ids: [(String, JSONValue)] =
                subscriber.map { [("connectionId", .string("connection-\(index + 1)")), ("subscriberId", .string($0))] } ?? []
            let videoStats = Self.videoStats(p, prev: prev, seconds: seconds, now: now, startMillis: startMillis, ids: ids)
            if let videoStats { videoElements.append(videoStats) }
            if let a = p.streams.first(where: { $0.kind == .audio }) {
                audioElements.append(
                    .object(
                        [
                            ("audioPacketsLost", .int(Int64(max(0, a.packetsLostReported)))),
                            ("audioPacketsSent", .int(Int64(a.packetsSent))),
                            ("audioBytesSent", .int(Int64(a.payloadBytesSent))), ("timestamp", .int(now)), ("startTime", .int(startMillis))
                        ] + ids))
            }
            let link: JSONValue = .object([("transport", Self.transport(p))] + ids)
            linkElements.append(link)
            events += newEvents(p, connection: index, link: link, videoStats: videoStats)
            previous[index] = (p.streams, mono)
        }
        func line(_ type: String, _ elements: [JSONValue]) -> JSONValue {
            .object(
                [("type", .string(type)), ("timestamp", .int(now))] + (final ? [("final", .bool(true))] : []) + [
                    ("stats", .array(elements))
                ])
        }
        var lines: [JSONValue] = []
        if !videoElements.isEmpty { lines.append(line("publisherVideoStats", videoElements)) }
        if !audioElements.isEmpty { lines.append(line("publisherAudioStats", audioElements)) }
        lines.append(line("publisherMediaLinkStats", linkElements))
        out.write(lines + events)
    }

    /// One connection's `publisherVideoStats` element (rates over `seconds` since `prev`), nil without video.
    static func videoStats(
        _ p: PublisherSnapshot, prev: (streams: [OutboundStreamStats], micros: Int64)?, seconds: Double, now: Int64, startMillis: Int64,
        ids: [(String, JSONValue)]
    ) -> JSONValue? {
        func delta(_ s: OutboundStreamStats, _ key: KeyPath<OutboundStreamStats, Int>) -> Int {
            s[keyPath: key] - (prev?.streams.first { $0.ssrc == s.ssrc }?[keyPath: key] ?? 0)
        }
        let video = p.streams.filter { $0.kind == .video }
        let layers: [JSONValue] = video.map { s in
            let payload = delta(s, \.payloadBytesSent), header = delta(s, \.headerBytesSent), frames = delta(s, \.framesSent)
            let before = prev?.streams.first { $0.ssrc == s.ssrc }?.spatialLayers
            // Each spatial layer's frames and encoded bytes over the interval, and its part of the target.
            let spatial: [(String, JSONValue)] =
                s.spatialLayers.isEmpty
                ? []
                : [
                    (
                        "spatialLayers",
                        .array(
                            s.spatialLayers.enumerated().map { i, l in
                                let f = l.framesSent - (before.map { i < $0.count ? $0[i].framesSent : 0 } ?? 0)
                                let b = l.bytesSent - (before.map { i < $0.count ? $0[i].bytesSent : 0 } ?? 0)
                                return .object([
                                    ("spatialId", .int(Int64(i))), ("width", .int(Int64(l.width))), ("height", .int(Int64(l.height))),
                                    ("encodedFrameRate", .double((Double(f) / seconds * 10).rounded() / 10)),
                                    ("bitrate", .int(Int64(Double(b * 8) / seconds))),
                                    ("targetBitrate", .int(Int64(Double(s.targetBitrate) * l.rateShare)))
                                ])
                            })
                    )
                ]
            return .object(
                [
                    ("width", .int(Int64(s.width))), ("height", .int(Int64(s.height))),
                    ("encodedFrameRate", .double((Double(frames) / seconds * 10).rounded() / 10)),
                    ("bitrate", .int(Int64(Double(payload * 8) / seconds))),
                    ("totalBitrate", .int(Int64(Double((payload + header) * 8) / seconds))),
                    ("scalabilityMode", .string(s.scalabilityMode ?? "L1T1")),
                    ("qualityLimitationReason", .string(s.qualityLimitationReason.rawValue)),
                    ("codec", .string(s.codec)), ("rid", s.rid.map { .string($0) } ?? .null),
                    ("targetBitrate", .int(Int64(s.targetBitrate)))
                ] + spatial)
        }
        return .object(
            [
                ("videoPacketsLost", .int(Int64(video.reduce(0) { $0 + max(0, $1.packetsLostReported) }))),
                ("videoPacketsSent", .int(Int64(video.reduce(0) { $0 + $1.packetsSent }))),
                ("videoBytesSent", .int(Int64(video.reduce(0) { $0 + $1.payloadBytesSent }))),
                ("timestamp", .int(now)), ("startTime", .int(startMillis)), ("videoLayers", .array(layers))
            ] + ids)
    }

    /// One connection's media-link `transport`: the estimate, the condition, RTT and loss, and the WebRTC transport's fields.
    static func transport(_ p: PublisherSnapshot) -> JSONValue {
        let rtt = p.streams.compactMap(\.roundTripTimeMillis).max()
        return .object(
            [
                ("connectionEstimatedBandwidth", p.network.estimate.map { .int(Int64($0.bitrate)) } ?? .null),
                ("networkCondition", .string(p.network.networkCondition.rawValue)),
                ("networkConditionValue", .int(Int64(p.network.networkCondition.value))),
                ("networkConditionReason", .string(p.network.networkConditionReason.rawValue)),
                ("roundTripTime", rtt.map { .double(($0 * 10).rounded() / 10) } ?? .null),
                ("packetLoss", p.network.estimate.map { .double($0.lossFraction) } ?? .null)
            ] + (p.network.transport.map { TransportFields.json($0, rttMillis: rtt) } ?? []))
    }

    /// The connection's network events since the last line, each with the stats it concerns.
    func newEvents(_ p: PublisherSnapshot, connection index: Int, link: JSONValue, videoStats: JSONValue?) -> [JSONValue] {
        var events: [JSONValue] = []
        for e in p.network.events where e.number > (lastEvents[index] ?? 0) {
            lastEvents[index] = e.number
            switch e.kind {
            case .networkConditionChanged:
                events.append(
                    .object([
                        ("type", .string("networkConditionChanged")), ("timestamp", .int(e.wallMillis)),
                        ("networkCondition", .string(e.condition?.rawValue ?? "unknown")), ("reason", .string(e.reason)),
                        ("mediaLinkStats", .array([link]))
                    ]))
            case .videoQualityChanged:
                events.append(
                    .object([
                        ("type", .string("videoQualityChanged")), ("timestamp", .int(e.wallMillis)), ("reason", .string(e.reason)),
                        ("change", .string(e.change ?? "")), ("rid", e.rid.map { .string($0) } ?? .null),
                        ("width", .int(Int64(e.width ?? 0))), ("height", .int(Int64(e.height ?? 0))),
                        ("stats", .array(videoStats.map { [$0] } ?? []))
                    ]))
            }
        }
        return events
    }

}

/// A JSON Lines sink: a file or standard output ("-").
final class JSONLinesWriter {
    let fd: Int32
    let ownsFD: Bool

    init?(target: String) {
        if target == "-" {
            fd = 1; ownsFD = false
        } else {
            let f = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard f >= 0 else { return nil }
            fd = f
            ownsFD = true
        }
    }

    deinit { if ownsFD { close(fd) } }

    func write(_ lines: [JSONValue]) {
        guard !lines.isEmpty else { return }
        writeRaw(lines.map { $0.serialized() }.joined(separator: "\n") + "\n")
    }

    /// Writes already-serialised lines (a vitals chunk) in one go.
    func writeRaw(_ text: String) {
        var bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + off, $0.count - off) }
            if n <= 0 { return }
            off += n
        }
    }
}

/// The WebRTC transport's figures as W3C-shaped fields (`RTCIceTransport.state`,
/// `RTCDtlsTransport.state`, `RTCTransportStats.srtpCipher`, the selected `RTCIceCandidatePair`)
/// plus the time ICE and DTLS took.
enum TransportFields {
    static func json(_ t: TransportStats, rttMillis: Double?) -> [(String, JSONValue)] {
        let pair: JSONValue
        if let lt = t.localCandidateType, let la = t.localAddress, let rt = t.remoteCandidateType, let ra = t.remoteAddress {
            pair = .object([
                ("localCandidateType", .string(lt)), ("localAddress", .string(la)), ("remoteCandidateType", .string(rt)),
                ("remoteAddress", .string(ra)),
                // W3C: measured by STUN on the pair (checks, consent); RTCP's as a fallback.
                (
                    "currentRoundTripTime",
                    t.roundTripMicros.map { .double(Double($0) / 1e6) } ?? rttMillis.map { .double(($0 * 10).rounded() / 10000) }
                        ?? .null
                )
            ])
        } else {
            pair = .null
        }
        return [
            ("iceState", .string(t.iceState.rawValue)), ("dtlsState", .string(t.dtlsState.rawValue)),
            ("srtpCipher", t.srtpCipher.map { .string($0) } ?? .null),
            ("iceDurationMs", t.iceDurationMs.map { .int(Int64($0)) } ?? .null),
            ("dtlsDurationMs", t.dtlsDurationMs.map { .int(Int64($0)) } ?? .null),
            ("selectedCandidatePair", pair), ("transportFailure", t.failure.map { .string($0.reason) } ?? .null),
            // ICE restarts (RFC 9725 §4.3.3): how many, the pairs they selected, the last one's time to a new pair.
            ("iceRestarts", .int(Int64(t.iceRestarts))),
            ("selectedCandidatePairChangesAfterRestart", .int(Int64(t.selectedPairChangesAfterRestart))),
            ("lastIceRestartRecoveryMs", t.lastRestartRecoveryMicros.map { .int($0 / 1000) } ?? .null)
        ]
    }
}
