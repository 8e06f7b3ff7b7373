import Testing
import Foundation
import MediaCodecs

/// The picture-quality figures are checked by a tool pubbot did not write: ffmpeg's `psnr` and
/// `ssim` filters on the frames pubbot measured (`--dump-frames`: decoded and reference luma).
@Suite struct PictureQualityTests {
    static let binary = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/debug/pubbot")

    /// ffmpeg's per-frame luma figures of one dumped pair: PSNR-Y (capped at 48 dB as pubbot and
    /// libwebrtc's `I420PSNR` cap it; ffmpeg gives `inf` for an identical frame) and SSIM-Y.
    static func ffmpeg(_ decoded: String, _ reference: String, in dir: URL) throws -> (psnr: [Double], ssim: [Double]) {
        let psnrLog = dir.appendingPathComponent("psnr.log").path, ssimLog = dir.appendingPathComponent("ssim.log").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = [
            "-hide_banner", "-loglevel", "error", "-i", decoded, "-i", reference, "-lavfi",
            "[0:v][1:v]psnr=stats_file=\(psnrLog);[0:v][1:v]ssim=stats_file=\(ssimLog)", "-f", "null", "-"
        ]
        try p.run()
        p.waitUntilExit()
        try #require(p.terminationStatus == 0, "ffmpeg failed on \(decoded)")
        func values(_ path: String, _ key: String) throws -> [Double] {
            try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap { line in
                guard let field = line.split(separator: " ").first(where: { $0.hasPrefix(key) }) else { return nil }
                let text = field.dropFirst(key.count)
                return text == "inf" ? 48 : Double(text).map { min(48, $0) }
            }
        }
        return (try values(psnrLog, "psnr_y:"), try values(ssimLog, "Y:"))
    }

    /// `preflight --json --dump-frames` for 10 s (three simulcast layers decoded by the embedded
    /// receiver): on every layer, ffmpeg counts the frames pubbot measured, and its PSNR-Y mean is
    /// pubbot's within 0.1 dB, its SSIM-Y mean over pubbot's sample (every fourth frame) within 0.005.
    @Test func ffmpegAgreesWithThePreflightsPictureQuality() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "ffmpeg (scripts/setup installs it)")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-quality-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try runPubbot(Self.binary.path, ["preflight", "--duration", "10s", "--json", "--dump-frames", dir.path])
        #expect(r.code == 0, "\(r.err)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let received = (doc["streams"] as? [[String: Any]] ?? []).compactMap { $0["received"] as? [String: Any] }
        let video = received.filter { $0["kind"] as? String == "video" }
        #expect(video.count == 3, "three layers received")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        for s in video {
            let ssrc = try #require(s["ssrc"] as? Int)
            let measured = s["framesMeasured"] as? Int ?? 0
            #expect(measured > 10, "ssrc \(ssrc): frames measured \(measured)")
            let mean = try #require(s["psnrYMeanDb"] as? Double, "ssrc \(ssrc): no PSNR")
            let ssim = try #require(s["ssimYMean"] as? Double, "ssrc \(ssrc): no SSIM")
            // One pair of files per size the stream had; each size's SSIM sample starts at its first frame.
            var psnr: [Double] = [], sample: [Double] = []
            for f in files.sorted() where f.hasPrefix("\(ssrc)-") && f.hasSuffix("-decoded.y4m") {
                let base = dir.appendingPathComponent(String(f.dropLast("-decoded.y4m".count))).path
                let v = try Self.ffmpeg(base + "-decoded.y4m", base + "-reference.y4m", in: dir)
                psnr += v.psnr
                sample += stride(from: 0, to: v.ssim.count, by: 4).map { v.ssim[$0] }
            }
            #expect(psnr.count == measured, "ssrc \(ssrc): ffmpeg read \(psnr.count) frames, pubbot measured \(measured)")
            let theirs = psnr.reduce(0, +) / Double(max(1, psnr.count))
            #expect(abs(theirs - mean) <= 0.1, "ssrc \(ssrc): PSNR-Y ffmpeg \(theirs) dB, pubbot \(mean) dB")
            #expect(sample.count == s["ssimFramesMeasured"] as? Int, "ssrc \(ssrc): SSIM sample")
            let theirSSIM = sample.reduce(0, +) / Double(max(1, sample.count))
            #expect(abs(theirSSIM - ssim) <= 0.005, "ssrc \(ssrc): SSIM-Y ffmpeg \(theirSSIM), pubbot \(ssim)")
            // A picture that is not the source's scores far lower: the figure measures something.
            #expect(mean > 25 && ssim > 0.8, "ssrc \(ssrc): \(mean) dB, SSIM \(ssim)")
        }
    }

    /// `media export --y4m` writes the source pubbot encodes and measures against: the header,
    /// every frame, and each frame's picture the one `PictureQuality` draws for its stamp.
    @Test func theExportedSourceIsThePictureTheReceiverMeasuresAgainst() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-export-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("source.y4m").path
        let r = try runPubbot(Self.binary.path, ["media", "export", "--y4m", path, "--size", "320x180", "--seconds", "1", "--fps", "15"])
        #expect(r.code == 0, "\(r.err)")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let header = Array("YUV4MPEG2 W320 H180 F15:1 Ip A1:1 C420jpeg\n".utf8)
        #expect(Array(bytes.prefix(header.count)) == header)
        let frameSize = 320 * 180 * 3 / 2, marker = Array("FRAME\n".utf8)
        #expect(bytes.count == header.count + 15 * (marker.count + frameSize), "15 frames")
        let quality = PictureQuality()
        for n in [0, 7, 14] {
            let start = header.count + n * (marker.count + frameSize) + marker.count
            let picture = try #require(
                quality.referencePicture(
                    width: 320, height: 180, stamp: FrameStamp(frameNumber: UInt32(n), captureMillis: UInt32(n * 1000 / 15))))
            #expect(Array(bytes[start..<(start + frameSize)]) == picture.data, "frame \(n)")
        }
        let bad = try runPubbot(Self.binary.path, ["media", "export", "--y4m", path, "--size", "321x180"])
        #expect(bad.code == 64 && bad.err.contains("invalid --size"), "\(bad.err)")
    }
}
