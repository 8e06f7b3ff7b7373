import MediaCodecs
import PublisherCore
import RTPCore
import Stats

/// The pre-flight's answer to "what would my users see": the resolution a libwebrtc publisher
/// would settle on for the link just measured (`BrowserResolution`), one encoding and simulcast,
/// from the settled estimate and the QP pubbot's own encoder reaches on the chosen content at
/// each size the quality scaler visits — with the picture quality measured there.
struct BrowserEquivalent {
    var camera: BrowserResolution.Size
    var content: SyntheticVideoSource.Content
    var codec: VideoCodec
    /// The settled estimate, and what the video encoder is given of it (the audio and the packets'
    /// overhead taken off).
    var estimate: Int
    var videoBitrate: Int
    var oneEncoding: BrowserResolution.OneEncoding?
    var simulcast: BrowserResolution.Simulcast
    /// Why one encoding could not be predicted (the probe's encoder failed).
    var error: String?

    /// `--camera 720p|1080p|WxH`: the camera a browser would capture from (1280x720 by default).
    static func camera(_ text: String?) throws(UsageError) -> BrowserResolution.Size {
        guard let text else { return .init(width: 1280, height: 720) }
        let (w, h) = try ValueParsers.size(text, option: "--camera", width: 320...3840, height: 180...2160)
        return .init(width: w, height: h)
    }

    /// Walks the quality scaler with probes of pubbot's encoder (a few seconds of CPU at most),
    /// saying each probe on the progress line.
    static func predict(
        estimate: Int, audioBitrate: Int, camera: BrowserResolution.Size, codec: VideoCodec, content: SyntheticVideoSource.Content
    ) -> BrowserEquivalent {
        let video = BrowserResolution.videoBitrate(estimate: estimate, audioBitrate: audioBitrate)
        var r = BrowserEquivalent(
            camera: camera, content: content, codec: codec, estimate: estimate, videoBitrate: video, oneEncoding: nil,
            simulcast: BrowserResolution.simulcast(videoBitrate: video, camera: camera))
        defer { Output.endProgress() }
        do throws(BrowserResolution.ProbeError) {
            let start = BrowserResolution.videoBitrate(estimate: BrowserResolution.startBitrate, audioBitrate: audioBitrate)
            r.oneEncoding = try BrowserResolution.oneEncoding(videoBitrate: video, camera: camera, codec: codec, startBitrate: start) {
                size, rate throws(BrowserResolution.ProbeError) in
                Output.progress("browser-equivalent: encoding \(content.rawValue) content at \(size) and \(Units.bitrate(rate))…")
                return try BrowserResolution.measure(size: size, camera: camera, bitrate: rate, codec: codec, content: content)
            }
        } catch {
            r.error = "\(error)"
        }
        return r
    }

    var json: JSONValue {
        func size(_ s: BrowserResolution.Size) -> [(String, JSONValue)] {
            [("width", .int(Int64(s.width))), ("height", .int(Int64(s.height)))]
        }
        func round(_ v: Double, _ places: Double) -> JSONValue { .double((v * places).rounded() / places) }
        var one: JSONValue = .null
        if let o = oneEncoding {
            let steps: [JSONValue] = o.steps.map { s in
                .object(
                    size(s.size) + [
                        ("bitrate", .int(Int64(s.bitrate))), ("qp", round(s.probe.qp, 10)),
                        ("droppedFraction", round(s.probe.dropRatio, 1000)), ("move", .string(s.move.rawValue))
                    ])
            }
            one = .object(
                size(o.size) + [
                    ("bitrate", .int(Int64(o.bitrate))), ("qp", round(o.probe.qp, 10)),
                    ("psnrYDb", o.probe.psnrY.map { round($0, 100) } ?? .null),
                    ("start", .object(size(o.start))), ("oscillates", .bool(o.oscillates)), ("steps", .array(steps))
                ])
        }
        let thresholds = BrowserResolution.qpThresholds(codec)
        return .object([
            ("camera", .object(size(camera))), ("content", .string(content.rawValue)), ("codec", .string(codec.rawValue)),
            ("estimate", .int(Int64(estimate))), ("videoBitrate", .int(Int64(videoBitrate))),
            ("qpThresholds", .object([("low", .int(Int64(thresholds.low))), ("high", .int(Int64(thresholds.high)))])),
            ("oneEncoding", one),
            (
                "simulcast",
                .object(
                    size(simulcast.top) + [
                        ("layers", .int(Int64(simulcast.running))), ("topBitrate", .int(Int64(simulcast.topBitrate)))
                    ])
            ),
            ("error", error.map { .string($0) } ?? .null)
        ])
    }

    var text: String {
        var out = "a browser would send (libwebrtc's rules, \(camera) camera, \(content.rawValue) content, \(codec.rawValue)):\n"
        if let o = oneEncoding {
            let walk = o.steps.map { "\($0.size) QP \(Units.fixed($0.probe.qp, 0))" }.joined(separator: " → ")
            out +=
                "  one encoding: \(o.size) at \(Units.bitrate(o.bitrate)), QP \(Units.fixed(o.probe.qp, 0))"
                + (o.probe.psnrY.map { ", PSNR-Y \(Units.fixed($0, 1)) dB" } ?? "")
                + (o.oscillates ? " (the scaler would alternate with the size above)" : "") + "  [\(walk)]\n"
        } else {
            out += "  one encoding: not predicted (\(error ?? "no probe"))\n"
        }
        out +=
            "  simulcast: \(simulcast.top) on top (\(simulcast.running) of \(simulcast.layers.count) layers, \(Units.bitrate(simulcast.topBitrate)))\n"
        return out
    }
}
