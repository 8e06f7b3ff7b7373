import PublisherEngine
import Stats
import Transport

/// Prometheus text exposition (format 0.0.4) of the publisher's stats, for `--metrics ADDR`.
enum PrometheusExposition {
    static func render(_ connections: [(snapshot: PublisherSnapshot, subscriber: String)]) -> String {
        var families: [(name: String, help: String, type: String, samples: [String])] = []
        func family(_ name: String, _ help: String, _ type: String, _ samples: [String]) { families.append((name, help, type, samples)) }
        func labels(_ pairs: [(String, String)]) -> String {
            "{" + pairs.map { "\($0.0)=\"\($0.1.replacingBackslashesAndQuotes)\"" }.joined(separator: ",") + "}"
        }
        var estimate: [String] = [], condition: [String] = [], rtt: [String] = [], packets: [String] = [], bytes: [String] = []
        var frames: [String] = [], target: [String] = [], limited: [String] = [], rtx: [String] = [], nacks: [String] = [],
            plis: [String] = []
        for (i, (p, subscriber)) in connections.enumerated() {
            let conn = [("connection", String(i + 1)), ("subscriber", subscriber)]
            if let e = p.network.estimate { estimate.append("pubbot_estimated_bandwidth_bps\(labels(conn)) \(e.bitrate)") }
            condition.append("pubbot_network_condition\(labels(conn)) \(p.network.networkCondition.value)")
            if let r = p.streams.compactMap(\.roundTripTimeMillis).max() {
                rtt.append("pubbot_round_trip_time_seconds\(labels(conn)) \(r / 1000)")
            }
            rtx.append("pubbot_retransmitted_packets_total\(labels(conn)) \(p.network.retransmissionsSent)")
            for s in p.streams {
                let l = labels(conn + [("ssrc", String(s.ssrc)), ("kind", s.kind.rawValue), ("rid", s.rid ?? "")])
                packets.append("pubbot_packets_sent_total\(l) \(s.packetsSent)")
                bytes.append("pubbot_bytes_sent_total\(l) \(s.payloadBytesSent + s.headerBytesSent)")
                frames.append("pubbot_frames_sent_total\(l) \(s.framesSent)")
                nacks.append("pubbot_nack_received_total\(l) \(s.nackReceived)")
                plis.append("pubbot_pli_received_total\(l) \(s.pliReceived)")
                if s.kind == .video {
                    target.append("pubbot_layer_target_bitrate_bps\(l) \(s.targetBitrate)")
                    for reason in [QualityLimitationReason.bandwidth, .cpu] {
                        let ll = labels(conn + [("ssrc", String(s.ssrc)), ("rid", s.rid ?? ""), ("reason", reason.rawValue)])
                        limited.append("pubbot_layer_quality_limited\(ll) \(s.qualityLimitationReason == reason ? 1 : 0)")
                    }
                }
            }
        }
        family("pubbot_estimated_bandwidth_bps", "Send-side bandwidth estimate (connectionEstimatedBandwidth).", "gauge", estimate)
        family(
            "pubbot_network_condition", "Network condition 0 unknown, 1 critical, 2 warning, 3 fair, 4 good, 5 excellent.", "gauge",
            condition)
        family("pubbot_round_trip_time_seconds", "Round-trip time from receiver reports.", "gauge", rtt)
        family("pubbot_packets_sent_total", "RTP packets sent per stream.", "counter", packets)
        family("pubbot_bytes_sent_total", "RTP payload + header bytes sent per stream.", "counter", bytes)
        family("pubbot_frames_sent_total", "Frames sent per stream.", "counter", frames)
        family(
            "pubbot_layer_target_bitrate_bps", "Encoder target the allocator gave each simulcast layer (0 = suspended).", "gauge", target)
        family("pubbot_layer_quality_limited", "1 when the layer's qualityLimitationReason is this reason.", "gauge", limited)
        family("pubbot_retransmitted_packets_total", "RTX packets sent in answer to NACKs.", "counter", rtx)
        family("pubbot_nack_received_total", "Generic NACK messages received per stream.", "counter", nacks)
        family("pubbot_pli_received_total", "Picture loss indications received per stream.", "counter", plis)
        var out = ""
        for f in families where !f.samples.isEmpty {
            out += "# HELP \(f.name) \(f.help)\n# TYPE \(f.name) \(f.type)\n" + f.samples.joined(separator: "\n") + "\n"
        }
        return out
    }
}

extension String {
    var replacingBackslashesAndQuotes: String {
        var s = ""
        for c in self {
            switch c {
            case "\\": s += "\\\\"
            case "\"": s += "\\\""
            case "\n": s += "\\n"
            default: s.append(c)
            }
        }
        return s
    }
}
