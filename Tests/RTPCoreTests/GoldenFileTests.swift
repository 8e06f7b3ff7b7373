import Testing
import Foundation
@testable import RTPCore

/// Golden vectors kept as files under Media/golden.
@Suite struct GoldenFileTests {
    static func load(_ name: String) throws -> [UInt8] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return hex(try String(contentsOf: root.appendingPathComponent("Media/golden/\(name)"), encoding: .utf8))
    }

    @Test func publisherGoodbyeCompound() throws {
        let bytes = try Self.load("rtcp-sr-sdes-bye.hex")
        #expect(bytes.count == 68)
        let sr = SenderReport(
            ssrc: 0x1234_5678, ntpTime: NTPTime.ntp(unixMicros: 1_704_067_200_250_000), rtpTimestamp: 90_000,
            packetCount: 1000, octetCount: 1_000_000)
        let sdes = SourceDescription(chunks: [.init(ssrc: 0x1234_5678, cname: "pubbot")])
        let bye = Goodbye(ssrcs: [0x1234_5678], reason: "pubbot done")
        var it = RTCPCompoundIterator()
        var parsed: [RTCPPacket] = []
        while let p = try it.next(in: bytes.span) { parsed.append(p) }
        #expect(parsed == [.senderReport(sr), .sourceDescription(sdes), .goodbye(bye)])
        let written = try [UInt8].writing(capacity: 200) { w throws(RTPWriteError) in
            try sr.write(to: &w); try sdes.write(to: &w); try bye.write(to: &w)
        }
        #expect(written == bytes)
    }
}
