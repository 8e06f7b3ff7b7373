#if canImport(Glibc)
    import Glibc
#endif
import Stats
import Transport
import Platform
import HTTPSignaling
import Synchronization

/// Writing to the terminal: results to stdout, progress and errors to stderr.
enum Output {
    /// With `--stats -` standard output carries only the JSON Lines stream: results for people
    /// (and `--json` summaries) go to standard error instead.
    static var stdoutIsStats: Bool {
        get { stdoutIsStatsFlag.load(ordering: .relaxed) }
        set { stdoutIsStatsFlag.store(newValue, ordering: .relaxed) }
    }
    static let stdoutIsStatsFlag = Atomic<Bool>(false)

    static func out(_ s: String) { writeAll(stdoutIsStats ? 2 : 1, s) }
    static func err(_ s: String) { writeAll(2, s) }

    /// One warning per way a WHIP/WHEP endpoint's answer departed from RFC 9725 §4.2 and was
    /// taken all the same (`--strict` makes each an error instead).
    static func deviations(_ session: WHIPSession, _ warnings: [String] = []) {
        for d in session.deviations + warnings { err("warning: \(d)\n") }
    }

    /// A 20-character progress bar for a fraction in 0…1: `[#####...............]`.
    static func bar(_ fraction: Double) -> String {
        let n = Int(min(1, max(0, fraction)) * 20)
        return "[" + String(repeating: "#", count: n) + String(repeating: ".", count: 20 - n) + "]"
    }

    static func writeAll(_ fd: Int32, _ s: String) {
        var bytes = Array(s.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + off, $0.count - off) }
            if n <= 0 { if errno == EINTR { continue }; return }
            off += n
        }
    }

    static let progressEnabled = Terminal.isTTY(2)

    /// A one-line progress indicator, rewritten in place on a terminal, silent otherwise.
    static func progress(_ s: String) {
        guard progressEnabled else { return }
        err("\r\u{1B}[2K" + s)
    }

    static func endProgress() {
        guard progressEnabled else { return }
        if screenLines > 0 { clearScreen(); return }
        err("\r\u{1B}[2K")
    }

    /// Lines the live table occupies on the terminal (0: none drawn).
    static var screenLines: Int {
        get { screenLinesCount.load(ordering: .relaxed) }
        set { screenLinesCount.store(newValue, ordering: .relaxed) }
    }
    static let screenLinesCount = Atomic<Int>(0)

    /// A block of lines redrawn in place on a terminal (a live table), silent otherwise.
    static func screen(_ text: String) {
        guard progressEnabled else { return }
        var out = screenLines > 0 ? "\u{1B}[\(screenLines)F" : "\r"
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast(text.hasSuffix("\n") ? 1 : 0)
        for l in lines { out += "\u{1B}[2K" + l + "\n" }
        // Clear what a taller previous frame left below.
        if screenLines > lines.count {
            out += String(repeating: "\u{1B}[2K\n", count: screenLines - lines.count) + "\u{1B}[\(screenLines - lines.count)F"
        }
        screenLines = lines.count
        err(out)
    }

    static func clearScreen() {
        guard screenLines > 0 else { return }
        err("\u{1B}[\(screenLines)F\u{1B}[0J")
        screenLines = 0
    }
}

/// Renders per-stream results for people and for scripts.
enum Report {
    static func streamName(kind: MediaKind, rid: String?, width: Int, height: Int) -> String {
        kind == .audio ? "audio" : "video \(rid ?? "-") \(height)p"
    }

    static func publisherTable(_ s: PublisherSnapshotView) -> String {
        var t = TextTable(
            headers: ["stream", "ssrc", "resolution", "mode", "frames", "packets", "payload", "bitrate"], rightAligned: [1, 4, 5, 6, 7])
        for st in s.streams {
            let secs = max(0.001, Double(s.elapsedMicros) / 1e6)
            t.add([
                streamName(kind: st.kind, rid: st.rid, width: st.width, height: st.height), String(st.ssrc),
                st.kind == .audio ? "48 kHz" : "\(st.width)x\(st.height)", st.scalabilityMode ?? "-",
                String(st.framesSent), String(st.packetsSent), String(st.payloadBytesSent),
                Units.bitrate(Int(Double(st.payloadBytesSent * 8) / secs))
            ])
        }
        return t.render()
    }

    /// PSNR-Y mean/p10 and SSIM-Y mean as text ("-" when nothing was measured).
    static func psnrText(_ s: InboundStreamStats) -> String {
        guard s.kind == .video, let mean = s.psnrYMean else { return "-" }
        let ssim = s.ssimYMean.map { " SSIM \(Units.fixed($0, 3))" } ?? ""
        let capture = s.psnrYCaptureMean.map { ", \(Units.fixed($0, 1)) dB at capture" } ?? ""
        return "\(Units.fixed(mean, 1))/\(Units.fixed(s.psnrYP10 ?? mean, 1)) dB" + ssim + capture
    }

    static func inboundJSON(_ s: InboundStreamStats) -> JSONValue {
        var f: [(String, JSONValue)] = [
            ("ssrc", .int(Int64(s.ssrc))), ("kind", .string(s.kind.rawValue)), ("payloadType", .int(Int64(s.payloadType))),
            ("mid", s.mid.map { .string($0) } ?? .null), ("rid", s.rid.map { .string($0) } ?? .null),
            ("packetsReceived", .int(Int64(s.packetsReceived))), ("bytesReceived", .int(Int64(s.payloadBytesReceived))),
            ("headerBytesReceived", .int(Int64(s.headerBytesReceived))), ("packetsLost", .int(Int64(s.packetsLost))),
            ("framesAssembled", .int(Int64(s.framesAssembled))), ("framesDecoded", .int(Int64(s.framesDecoded))),
            ("framesDropped", .int(Int64(s.framesDropped))), ("decodeErrors", .int(Int64(s.decodeErrors))),
            ("bitrate", .int(Int64(s.bitrate))), ("byeReceived", .bool(s.byeReceived))
        ]
        if s.kind == .video {
            f += [
                ("codec", s.codec.map { .string($0) } ?? .null), ("width", .int(Int64(s.width))), ("height", .int(Int64(s.height))),
                ("stampsRead", .int(Int64(s.stampsRead))),
                ("stampsOutOfOrder", .int(Int64(s.stampsOutOfOrder))), ("resolutionChanges", .int(Int64(s.resolutionChanges))),
                ("freezeCount", .int(Int64(s.freezeCount))), ("totalFreezesDurationMs", .double(s.totalFreezesDurationMillis.rounded())),
                ("latencyMeanMs", s.latencyMeanMillis.map { .double(($0 * 10).rounded() / 10) } ?? .null),
                ("latencyP95Ms", s.latencyP95Millis.map { .double(($0 * 10).rounded() / 10) } ?? .null),
                ("framesMeasured", .int(Int64(s.framesMeasured))), ("framesNotMeasured", .int(Int64(s.framesNotMeasured))),
                ("psnrYMeanDb", s.psnrYMean.map { .double(($0 * 100).rounded() / 100) } ?? .null),
                ("psnrYP10Db", s.psnrYP10.map { .double(($0 * 100).rounded() / 100) } ?? .null),
                ("ssimFramesMeasured", .int(Int64(s.ssimFramesMeasured))),
                ("ssimYMean", s.ssimYMean.map { .double(($0 * 10000).rounded() / 10000) } ?? .null),
                ("ssimYP10", s.ssimYP10.map { .double(($0 * 10000).rounded() / 10000) } ?? .null)
            ]
            if s.captureFramesMeasured > 0 {
                f += [
                    ("captureFramesMeasured", .int(Int64(s.captureFramesMeasured))),
                    ("psnrYCaptureMeanDb", s.psnrYCaptureMean.map { .double(($0 * 100).rounded() / 100) } ?? .null),
                    ("psnrYCaptureP10Db", s.psnrYCaptureP10.map { .double(($0 * 100).rounded() / 100) } ?? .null)
                ]
            }
            if s.dependencyDescriptors + s.dependencyDescriptorErrors > 0 {
                f += [
                    ("dependencyDescriptors", .int(Int64(s.dependencyDescriptors))),
                    ("dependencyDescriptorErrors", .int(Int64(s.dependencyDescriptorErrors)))
                ]
            }
        } else {
            f += [("samplesDecoded", .int(Int64(s.samplesDecoded))), ("audioPeak", .int(Int64(s.audioPeak)))]
        }
        return .object(f)
    }

    static func outboundJSON(_ s: OutboundStreamStats) -> JSONValue {
        .object(
            [
                ("ssrc", .int(Int64(s.ssrc))), ("kind", .string(s.kind.rawValue)), ("mid", .string(s.mid)),
                ("rid", s.rid.map { .string($0) } ?? .null),
                ("codec", .string(s.codec)), ("width", .int(Int64(s.width))), ("height", .int(Int64(s.height))),
                ("scalabilityMode", s.scalabilityMode.map { .string($0) } ?? .null),
                ("packetsSent", .int(Int64(s.packetsSent))), ("bytesSent", .int(Int64(s.payloadBytesSent))),
                ("headerBytesSent", .int(Int64(s.headerBytesSent))), ("framesSent", .int(Int64(s.framesSent))),
                ("framesEncoded", .int(Int64(s.framesEncoded))), ("keyFramesSent", .int(Int64(s.keyFramesSent))),
                ("targetBitrate", .int(Int64(s.targetBitrate))), ("qualityLimitationReason", .string(s.qualityLimitationReason.rawValue)),
                ("roundTripTimeMs", s.roundTripTimeMillis.map { .double(($0 * 10).rounded() / 10) } ?? .null),
                ("fractionLost", .double(s.fractionLost)), ("pliReceived", .int(Int64(s.pliReceived))),
                ("firReceived", .int(Int64(s.firReceived)))
            ]
                + (s.spatialLayers.isEmpty
                    ? []
                    : [
                        (
                            "spatialLayers",
                            .array(
                                s.spatialLayers.map {
                                    .object([
                                        ("width", .int(Int64($0.width))), ("height", .int(Int64($0.height))),
                                        ("framesSent", .int(Int64($0.framesSent))),
                                        ("bytesSent", .int(Int64($0.bytesSent)))
                                    ])
                                })
                        )
                    ]))
    }

    static func rejectedJSON(_ r: RejectedPackets) -> JSONValue {
        .object([
            ("authenticationFailed", .int(Int64(r.authenticationFailed))), ("replayed", .int(Int64(r.replayed))),
            ("malformed", .int(Int64(r.malformed))), ("oversized", .int(Int64(r.oversized))),
            ("unknownPayloadType", .int(Int64(r.unknownPayloadType))), ("notRTP", .int(Int64(r.notRTP))),
            ("ssrcCollision", .int(Int64(r.ssrcCollision))), ("unknownSource", .int(Int64(r.unknownSource)))
        ])
    }
}

/// The part of a publisher snapshot the reports need (keeps Report independent of the engine).
struct PublisherSnapshotView {
    var streams: [OutboundStreamStats]
    var elapsedMicros: Int64
}
