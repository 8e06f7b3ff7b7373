import Foundation
import Testing
@testable import RTPCore

/// The H.264 slice QP reader against an encoder pubbot did not write: x264 (through ffmpeg) in
/// bitrate mode — its PPS says pic_init_qp 26, so each slice carries slice_qp_delta — with the QP
/// held to one value (qpmin = qpmax, ipratio and pbratio 1): every I, P and B slice at it, in the
/// syntaxes libwebrtc's parser has to walk: Baseline (CAVLC), Main with B slices (CABAC,
/// cabac_init_idc, direct_spatial_mv_pred), High with weighted prediction and several
/// references (pred_weight_table, ref_pic_list_modification, MMCO) and interlaced coding
/// (field_pic_flag, bottom_field_flag).
@Suite struct H264SliceQPTests {
    static let ffmpeg = "/usr/bin/ffmpeg"

    func x264(_ qp: Int, _ options: [String]) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-qp-\(UUID().uuidString).h264").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.ffmpeg)
        p.arguments =
            ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "1", "-c:v", "libx264"]
            + options + ["-x264-params", "bitrate=300:qpmin=\(qp):qpmax=\(qp):ipratio=1:pbratio=1", "-y", path]
        try p.run()
        p.waitUntilExit()
        try #require(p.terminationStatus == 0, "ffmpeg \(options)")
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test(arguments: [
        "-profile:v baseline", "-profile:v main -bf 2", "-profile:v high -bf 3 -refs 4 -weightp 2",
        "-profile:v high -flags +ildct -x264opts tff=1"
    ])
    func everySliceReadsTheQPAsked(_ line: String) throws {
        let options = line.split(separator: " ").map(String.init)
        try #require(FileManager.default.isExecutableFile(atPath: Self.ffmpeg), "ffmpeg (scripts/setup installs it)")
        for qp in [18, 33, 47] {
            let stream = try x264(qp, options)
            var parser = H264SliceQP()
            var slices: [Int] = [], unreadable = 0
            // Slice by slice: each NAL unit on its own (the parameter sets stay with the parser).
            var at = 0
            while let r = H264NAL.next(in: stream.span, from: at) {
                at = r.upperBound
                let unit = [0, 0, 1] + stream[r]
                let type = stream[r.lowerBound] & 0x1F
                let got = parser.parse(unit.span)
                if type == 1 || type == 5 {
                    if let got { slices.append(got) } else { unreadable += 1 }
                }
            }
            #expect(slices.count >= 30 && unreadable == 0, "\(options) qp \(qp): \(slices.count) read, \(unreadable) not")
            #expect(Set(slices) == [qp], "\(options) qp \(qp): \(Set(slices))")
        }
    }

    /// Without its parameter sets a slice is not read; bytes that are not H.264 read nothing.
    @Test func slicesWithoutTheirParameterSetsAreNotRead() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.ffmpeg), "ffmpeg (scripts/setup installs it)")
        let stream = try x264(30, ["-profile:v", "main"])
        var fresh = H264SliceQP()
        var at = 0, read = 0
        while let r = H264NAL.next(in: stream.span, from: at) {
            at = r.upperBound
            let type = stream[r.lowerBound] & 0x1F
            let unit = [0, 0, 1] + stream[r]
            if type == 1 || type == 5, fresh.parse(unit.span) != nil { read += 1 }
        }
        #expect(read == 0)
        var rng = SplitMix64(seed: 7)
        var noise = H264SliceQP()
        for _ in 0..<2000 {
            let bytes = (0..<Int(rng.next() % 64)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let unit = [0, 0, 1] + bytes
            _ = noise.parse(unit.span)
        }
    }
}
