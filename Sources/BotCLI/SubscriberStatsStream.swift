import ReceiverEngine
import Stats
import Transport
import RTPCore
import Impairment
import Platform

/// The receiver's side of the stats stream (schema: `stats.schema.json`): `subscriberVideoStats` (one element per
/// video stream received), `subscriberAudioStats`, `subscriberMediaLinkStats` and
/// `subscriberEvent`s. The receiver terminates the publisher's uplink and decodes like a
/// subscriber behind its own downlink (`--downlink-impair`): `transport` (local) scores that
/// downlink, `remotePublisherTransport` comes from the publisher's sender-side stats track.
final class SubscriberStatsStream {
    /// A figure in dB to two decimals, or null.
    static func db(_ v: Double?) -> JSONValue { v.map { .double(($0 * 100).rounded() / 100) } ?? .null }
    /// A ratio to four decimals, or null.
    static func ratio(_ v: Double?) -> JSONValue { v.map { .double(($0 * 10000).rounded() / 10000) } ?? .null }

    let out: JSONLinesWriter
    var previous: (streams: [InboundStreamStats], micros: Int64, downlink: LinkEmulator.Counters?)?
    var connected = true
    var destroyed: Set<UInt32> = []
    var everReceived = false
    var localScorer = NetworkConditionScorer()
    var videoDisabled = false
    /// A WHEP subscriber (`receive --whep`): the server terminated the publisher's uplink and
    /// repaired it, so everything between the server and here is the local downlink — scored from
    /// the loss the streams measured (RTP sequence gaps), not from an emulator's counters.
    var viaServer = false
    /// Each video stream's last resolution: a change (the server switched the simulcast layer it
    /// forwards) is a `videoQualityChanged` event.
    var resolutions: [UInt32: (Int, Int)] = [:]

    init(_ out: JSONLinesWriter, viaServer: Bool = false) {
        self.out = out
        self.viaServer = viaServer
    }

    static func conditionName(_ value: UInt8) -> String { NetworkCondition.allCases[Int(min(value, 5))].rawValue }
    static func reasonName(_ value: UInt8) -> String { ["none", "unknown", "bandwidth", "packetLoss"][Int(min(value, 3))] }

    /// `final`: the line written when the receiver stops. Its rates (`bitrate`, `totalBitrate`,
    /// `decodedFrameRate`) are each stream's averages over the time it was received (first to
    /// last packet) and each line carries `"final": true`, rather than rates over the stub of an
    /// interval since the last periodic line, which read as a false drop.
    func emit(_ r: ReceiverSnapshot, final: Bool = false, at time: (wall: Int64, mono: Int64)? = nil) {
        let now = (time?.wall ?? Clock.wallMicros()) / 1000
        let mono = time?.mono ?? Clock.monotonicMicros()
        let prev = previous
        let intervalSeconds = prev.map { max(0.001, Double(mono - $0.micros) / 1e6) } ?? 1
        func before(_ s: InboundStreamStats) -> InboundStreamStats? { final ? nil : prev?.streams.first { $0.ssrc == s.ssrc } }
        func seconds(_ s: InboundStreamStats) -> Double {
            guard final else { return intervalSeconds }
            guard let f = s.firstPacketMicros, let l = s.lastPacketMicros else { return 1 }
            return max(0.001, Double(l - f) / 1e6)
        }
        func line(_ type: String, _ elements: [JSONValue]) -> JSONValue {
            .object(
                [("type", .string(type)), ("timestamp", .int(now))] + (final ? [("final", .bool(true))] : []) + [
                    ("stats", .array(elements))
                ])
        }
        var lines = mediaLines(r, now: now, before: before, seconds: seconds, line: line)
        lines.append(line("subscriberMediaLinkStats", [mediaLink(r, mono: mono)]))
        lines += events(r, now: now, mono: mono)
        out.write(lines)
        previous = (r.streams, mono, r.downlinkImpairment)
    }

    /// `subscriberVideoStats` (one element per video stream) and one `subscriberAudioStats` per audio stream.
    func mediaLines(
        _ r: ReceiverSnapshot, now: Int64, before: (InboundStreamStats) -> InboundStreamStats?, seconds: (InboundStreamStats) -> Double,
        line: (String, [JSONValue]) -> JSONValue
    ) -> [JSONValue] {
        var lines: [JSONValue] = []
        // Each stream carries its own publisher's sender-side stats.
        func sender(_ s: InboundStreamStats) -> JSONValue {
            let i = r.streams.firstIndex { $0.ssrc == s.ssrc } ?? -1
            return r.senderStats(stream: i).map { s in
                .object([
                    ("connectionMaxAllocatedBitrate", .int(Int64(s.connectionMaxAllocatedBitrate))),
                    ("connectionEstimatedBandwidth", .int(Int64(s.connectionEstimatedBandwidth)))
                ])
            } ?? .null
        }

        var videos: [JSONValue] = []
        for s in r.streams where s.kind == .video {
            let b = before(s)
            let payload = s.payloadBytesReceived - (b?.payloadBytesReceived ?? 0)
            let header = s.headerBytesReceived - (b?.headerBytesReceived ?? 0)
            let frames = s.framesDecoded - (b?.framesDecoded ?? 0)
            // Picture quality since the stream began (its measured frames so far).
            let quality: [(String, JSONValue)] = [
                ("framesMeasured", .int(Int64(s.framesMeasured))), ("psnrYMeanDb", Self.db(s.psnrYMean)),
                ("psnrYP10Db", Self.db(s.psnrYP10)), ("ssimYMean", Self.ratio(s.ssimYMean)),
                ("psnrYCaptureMeanDb", Self.db(s.psnrYCaptureMean))
            ]
            videos.append(
                .object(
                    [
                        ("videoPacketsLost", .int(Int64(max(0, s.packetsLost)))), ("videoPacketsReceived", .int(Int64(s.packetsReceived))),
                        ("videoBytesReceived", .int(Int64(s.payloadBytesReceived))), ("timestamp", .int(now)),
                        ("senderStats", sender(s)), ("width", .int(Int64(s.width))), ("height", .int(Int64(s.height))),
                        ("decodedFrameRate", .double((Double(frames) / seconds(s) * 10).rounded() / 10)),
                        ("bitrate", .int(Int64(Double(payload * 8) / seconds(s)))),
                        ("totalBitrate", .int(Int64(Double((payload + header) * 8) / seconds(s)))),
                        ("pauseCount", .int(Int64(s.pauseCount))), ("totalPausesDuration", .double(s.totalPausesDurationMillis.rounded())),
                        ("freezeCount", .int(Int64(s.freezeCount))),
                        ("totalFreezesDuration", .double(s.totalFreezesDurationMillis.rounded())),
                        ("codec", .string(s.codec ?? "VP8")), ("ssrc", .int(Int64(s.ssrc))), ("rid", s.rid.map { .string($0) } ?? .null),
                        ("packetsRecovered", .int(Int64(s.packetsRecovered))),
                        ("latencyMeanMs", s.latencyMeanMillis.map { .double(($0 * 10).rounded() / 10) } ?? .null)
                    ] + quality))
        }
        if !videos.isEmpty { lines.append(line("subscriberVideoStats", videos)) }
        for s in r.streams where s.kind == .audio {
            lines.append(
                line(
                    "subscriberAudioStats",
                    [
                        .object([
                            ("audioPacketsLost", .int(Int64(max(0, s.packetsLost)))),
                            ("audioPacketsReceived", .int(Int64(s.packetsReceived))),
                            ("audioBytesReceived", .int(Int64(s.payloadBytesReceived))), ("timestamp", .int(now)),
                            ("senderStats", sender(s))
                        ])
                    ]))
        }

        return lines
    }

    /// The `subscriberMediaLinkStats` element: the local downlink scored, the publisher's side
    /// from its sender-side stats, and which of the two degrades the media.
    func mediaLink(_ r: ReceiverSnapshot, mono: Int64) -> JSONValue {
        let prev = previous
        // Local transport = the subscriber's own downlink (router → subscriber): the loss the
        // downlink emulator caused in this interval; none on plain loopback. Losses on the
        // publisher's uplink are the publisher's (remotePublisherTransport).
        var localLoss: Double?
        if viaServer {
            let lost = r.streams.reduce(0) { $0 + max(0, $1.packetsLost) } - (prev?.streams.reduce(0) { $0 + max(0, $1.packetsLost) } ?? 0)
            let got = r.streams.reduce(0) { $0 + $1.packetsReceived } - (prev?.streams.reduce(0) { $0 + $1.packetsReceived } ?? 0)
            localLoss = lost + got > 0 ? Double(max(0, lost)) / Double(lost + got) : nil
        } else if let d = r.downlinkImpairment {
            let p0 = prev?.downlink
            let offered = d.packets - (p0?.packets ?? 0)
            let dropped = d.droppedByLoss + d.droppedByQueue - (p0.map { $0.droppedByLoss + $0.droppedByQueue } ?? 0)
            localLoss = offered > 0 ? Double(dropped) / Double(offered) : nil
        } else {
            let flowing = r.streams.reduce(0) { $0 + $1.packetsReceived } > (prev?.streams.reduce(0) { $0 + $1.packetsReceived } ?? 0)
            localLoss = flowing ? 0 : nil
        }
        _ = localScorer.add(
            TransportSample(
                micros: mono, lossFraction: localLoss, estimate: nil, desired: 0, activeLayers: 0, totalLayers: 0,
                layersAtTarget: true, lowestLayerMin: 0))
        let local = localScorer.condition
        var remote: JSONValue = .null
        var source: JSONValue = .string("unknown")
        if let s = r.senderStats {
            let rc = NetworkCondition.allCases[Int(min(s.networkCondition, 5))]
            remote = .object([
                ("connectionEstimatedBandwidth", .int(Int64(s.connectionEstimatedBandwidth))),
                ("connectionMaxAllocatedBitrate", .int(Int64(s.connectionMaxAllocatedBitrate))),
                ("networkCondition", .string(rc.rawValue)), ("networkConditionReason", .string(Self.reasonName(s.networkConditionReason)))
            ])
            let localBad = local != .unknown && local < .good, remoteBad = rc != .unknown && rc < .good
            source = localBad && remoteBad ? .string("bothOrUnclear") : localBad ? .string("local") : remoteBad ? .string("remote") : .null
        } else if viaServer && local != .unknown {
            // The server forwards no sender-side stats: the publisher's side is not known, but a
            // bad local link is (the server repaired what the publisher's uplink lost).
            source = local < .good ? .string("local") : .null
        }
        return .object([
            (
                "transport",
                .object([
                    ("networkCondition", .string(local.rawValue)),
                    ("networkConditionReason", .string(localScorer.reason.rawValue)),
                    ("packetLoss", localLoss.map { .double($0) } ?? .null)
                ])
            ),
            ("remotePublisherTransport", remote), ("networkDegradationSource", source)
        ])
    }

    /// `subscriberEvent`s: BYE or silence, video disabled and enabled, resolution changes.
    func events(_ r: ReceiverSnapshot, now: Int64, mono: Int64) -> [JSONValue] {
        let prev = previous
        var lines: [JSONValue] = []
        func event(_ name: String, _ fields: [(String, JSONValue)] = []) {
            lines.append(.object([("type", .string("subscriberEvent")), ("timestamp", .int(now)), ("event", .string(name))] + fields))
        }
        if let last = r.lastPacketMicros {
            everReceived = true
            let silent = mono - last > 2_000_000
            if silent && connected && r.byes == 0 { connected = false; event("disconnected") }
            if !silent && !connected { connected = true; event("reconnected") }
            if silent && !connected && mono - last > 10_000_000 {
                for s in r.streams where !destroyed.contains(s.ssrc) {
                    destroyed.insert(s.ssrc); event("streamDestroyed", [("reason", .string("timeout")), ("ssrc", .int(Int64(s.ssrc)))])
                }
            }
        }
        // Video stops while audio flows on: the publisher dropped it (audio fallback on a critical
        // link, or a property change); say so, and when it comes back.
        if let prev {
            let videoNow = r.streams.filter { $0.kind == .video }.reduce(0) { $0 + $1.packetsReceived }
            let videoBefore = prev.streams.filter { $0.kind == .video }.reduce(0) { $0 + $1.packetsReceived }
            let audioNow = r.streams.filter { $0.kind == .audio }.reduce(0) { $0 + $1.packetsReceived }
            let audioBefore = prev.streams.filter { $0.kind == .audio }.reduce(0) { $0 + $1.packetsReceived }
            let remoteCritical = r.senderStats.map { $0.networkCondition == 1 } ?? false
            if !videoDisabled && videoBefore > 0 && videoNow == videoBefore && audioNow > audioBefore && r.byes == 0 {
                videoDisabled = true
                event("videoDisabled", [("reason", .string(remoteCritical ? "qualityChanged" : "publisherPropertyChanged"))])
            } else if videoDisabled && videoNow > videoBefore {
                videoDisabled = false
                event("videoEnabled", [("reason", .string("qualityChanged"))])
            }
        }
        for s in r.streams where s.kind == .video && s.width > 0 {
            if let (w, h) = resolutions[s.ssrc], w != s.width || h != s.height {
                event(
                    "videoQualityChanged",
                    [
                        ("reason", .string("qualityChanged")), ("ssrc", .int(Int64(s.ssrc))), ("width", .int(Int64(s.width))),
                        ("height", .int(Int64(s.height))), ("previousWidth", .int(Int64(w))), ("previousHeight", .int(Int64(h)))
                    ])
            }
            resolutions[s.ssrc] = (s.width, s.height)
        }
        for s in r.streams where s.byeReceived && !destroyed.contains(s.ssrc) {
            destroyed.insert(s.ssrc)
            event("streamDestroyed", [("reason", .string("bye")), ("ssrc", .int(Int64(s.ssrc)))])
        }
        return lines
    }
}
