import PublisherEngine
import Stats
import Transport
import Platform

/// The raw view (W3C webrtc-stats, `--rtc-stats`): a W3C webrtc-stats report as a JSON array of stats objects, each with
/// `id`, `type` and `timestamp` (ms) and the W3C member names, cross-referenced by id.
enum RTCStatsReport {
    static func build(_ p: PublisherSnapshot, config: PublisherConfig, connection: Int = 1) -> JSONValue {
        let b = Builder(now: Double(Clock.wallMicros()) / 1000, suffix: connection == 1 ? "" : "-\(connection)")
        return .array(b.sources(p, config: config) + b.streams(p, config: config) + b.transport(p, config: config))
    }

    /// One connection's objects, their ids suffixed by the connection (`T`, `T-2`, …).
    struct Builder {
        let now: Double
        let suffix: String
        var transportID: String { "T\(suffix)" }
        var pairID: String { "CP\(suffix)" }

        func obj(_ id: String, _ type: String, _ fields: [(String, JSONValue)]) -> JSONValue {
            .object([("id", .string(id)), ("type", .string(type)), ("timestamp", .double(now))] + fields)
        }

        /// The codecs and the media sources.
        func sources(_ p: PublisherSnapshot, config: PublisherConfig) -> [JSONValue] {
            var out: [JSONValue] = []
            let v = Int(config.videoPayloadType), r = Int(config.rtxPayloadType), a = Int(config.audioPayloadType)
            let codecs: [(String, String, Int, Int)] = [
                ("COT01_\(v)", "video/\(config.videoCodec.sdpName)", 90_000, v), ("COT01_\(r)", "video/rtx", 90_000, r),
                ("COT01_\(a)", "audio/opus", 48_000, a)
            ]
            for (id, mime, rate, pt) in codecs {
                out.append(
                    obj(
                        id, "codec",
                        [
                            ("mimeType", .string(mime)), ("clockRate", .int(Int64(rate))), ("payloadType", .int(Int64(pt))),
                            ("transportId", .string(transportID))
                        ] + (mime == "audio/opus" ? [("channels", .int(2))] : [])))
            }
            if config.sendVideo, let top = config.layers.last {
                out.append(
                    obj(
                        "MS-video", "media-source",
                        [
                            ("kind", .string("video")), ("trackIdentifier", .string("pubbot-synthetic-video")),
                            ("width", .int(Int64(top.width))), ("height", .int(Int64(top.height))),
                            ("framesPerSecond", .int(Int64(top.fps))), ("frames", .int(Int64(p.media.framesEncoded.max() ?? 0)))
                        ]))
            }
            if config.sendAudio {
                out.append(
                    obj("MS-audio", "media-source", [("kind", .string("audio")), ("trackIdentifier", .string("pubbot-synthetic-audio"))]))
            }
            return out
        }

        /// Each stream's outbound-rtp and remote-inbound-rtp.
        func streams(_ p: PublisherSnapshot, config: PublisherConfig) -> [JSONValue] {
            var out: [JSONValue] = []
            for s in p.streams {
                let video = s.kind == .video
                let codecID = "COT01_\(video ? config.videoPayloadType : config.audioPayloadType)"
                var fields: [(String, JSONValue)] = [
                    ("ssrc", .int(Int64(s.ssrc))), ("kind", .string(s.kind.rawValue)), ("transportId", .string(transportID)),
                    ("codecId", .string(codecID)), ("mediaSourceId", .string(video ? "MS-video" : "MS-audio")),
                    ("remoteId", .string("RI-\(s.ssrc)")), ("mid", .string(s.mid)),
                    ("packetsSent", .int(Int64(s.packetsSent))), ("bytesSent", .int(Int64(s.payloadBytesSent))),
                    ("headerBytesSent", .int(Int64(s.headerBytesSent))),
                    ("retransmittedPacketsSent", .int(Int64(s.retransmittedPacketsSent))),
                    ("retransmittedBytesSent", .int(Int64(s.retransmittedBytesSent))),
                    ("nackCount", .int(Int64(s.nackReceived))), ("active", .bool(!video || s.targetBitrate > 0 || s.packetsSent > 0))
                ]
                if video {
                    fields += [
                        ("rid", s.rid.map { .string($0) } ?? .null), ("frameWidth", .int(Int64(s.width))),
                        ("frameHeight", .int(Int64(s.height))),
                        ("framesEncoded", .int(Int64(s.framesEncoded))), ("framesSent", .int(Int64(s.framesSent))),
                        ("keyFramesEncoded", .int(Int64(s.keyFramesSent))), ("targetBitrate", .int(Int64(s.targetBitrate))),
                        ("qualityLimitationReason", .string(s.qualityLimitationReason.rawValue)),
                        ("pliCount", .int(Int64(s.pliReceived))), ("firCount", .int(Int64(s.firReceived)))
                    ]
                    if let m = s.scalabilityMode { fields.append(("scalabilityMode", .string(m))) }
                }
                out.append(obj("OT-\(s.ssrc)", "outbound-rtp", fields))
                var remote: [(String, JSONValue)] = [
                    ("ssrc", .int(Int64(s.ssrc))), ("kind", .string(s.kind.rawValue)), ("transportId", .string(transportID)),
                    ("codecId", .string(codecID)), ("localId", .string("OT-\(s.ssrc)")),
                    ("packetsLost", .int(Int64(s.packetsLostReported))), ("fractionLost", .double(s.fractionLost))
                ]
                if let j = s.remoteJitterSeconds { remote.append(("jitter", .double(j))) }
                // W3C: roundTripTime exists only once an RR with a non-zero DLSR arrived.
                if let r = s.roundTripTimeMillis { remote.append(("roundTripTime", .double(r / 1000))) }
                out.append(obj("RI-\(s.ssrc)", "remote-inbound-rtp", remote))
            }
            return out
        }

        /// The transport, the candidate pair and its candidates.
        func transport(_ p: PublisherSnapshot, config: PublisherConfig) -> [JSONValue] {
            var out: [JSONValue] = []
            let sent = p.streams.reduce(0) { $0 + $1.payloadBytesSent + $1.headerBytesSent }
            let packets = p.streams.reduce(0) { $0 + $1.packetsSent }
            // SDES: no DTLS ("new"), the configured key's suite. WebRTC (WHIP): the transport's own
            // states, the cipher DTLS negotiated, and the selected pair's candidates.
            let t = p.network.transport
            var transport: [(String, JSONValue)] = [
                ("bytesSent", .int(Int64(sent))), ("packetsSent", .int(Int64(packets))),
                ("selectedCandidatePairId", .string(pairID)),
                ("srtpCipher", .string(t == nil ? config.key.suite.sdesName : t?.srtpCipher ?? "")),
                ("dtlsState", .string(t?.dtlsState.rawValue ?? "new")), ("iceRole", .string(t?.iceRole.rawValue ?? "controlling"))
            ]
            if let t {
                transport.append(("iceState", .string(t.iceState.rawValue)))
                if let d = t.dtlsDurationMs { transport.append(("dtlsDurationMs", .int(Int64(d)))) }
                if let d = t.iceDurationMs { transport.append(("iceDurationMs", .int(Int64(d)))) }
                transport.append(("dtlsRole", .string(t.dtlsRole?.rawValue ?? "unknown")))
            }
            out.append(obj(transportID, "transport", transport))
            var pair: [(String, JSONValue)] = [
                ("transportId", .string(transportID)), ("state", .string(t == nil || t?.localAddress != nil ? "succeeded" : "in-progress")),
                ("nominated", .bool(t == nil || t?.localAddress != nil)),
                ("bytesSent", .int(Int64(sent))), ("packetsSent", .int(Int64(packets)))
            ]
            if let t, let la = t.localAddress, let ra = t.remoteAddress {
                let localID = "IL\(suffix)", remoteID = "IR\(suffix)"
                pair += [("localCandidateId", .string(localID)), ("remoteCandidateId", .string(remoteID))]
                func candidate(_ id: String, _ type: String, _ address: String, _ kind: String) -> JSONValue {
                    let host =
                        address.hasPrefix("[") ? String(address.dropFirst().prefix { $0 != "]" }) : String(address.prefix { $0 != ":" })
                    let port = Int(address.split(separator: ":").last ?? "") ?? 0
                    return obj(
                        id, type,
                        [
                            ("transportId", .string(transportID)), ("address", .string(host)), ("port", .int(Int64(port))),
                            ("protocol", .string("udp")), ("candidateType", .string(kind))
                        ])
                }
                out.append(candidate(localID, "local-candidate", la, t.localCandidateType ?? "host"))
                out.append(candidate(remoteID, "remote-candidate", ra, t.remoteCandidateType ?? "host"))
            }
            // W3C: availableOutgoingBitrate exists only when congestion control produced an estimate.
            if let e = p.network.estimate { pair.append(("availableOutgoingBitrate", .int(Int64(e.bitrate)))) }
            if let r = p.streams.compactMap(\.roundTripTimeMillis).max() { pair.append(("currentRoundTripTime", .double(r / 1000))) }
            out.append(obj(pairID, "candidate-pair", pair))
            return out
        }
    }
}
