import Testing
@testable import SRTP

/// Each opened packet is recorded in its stream's replay list in place: a stream copied out of
/// the session's table and written back shared its words with the copy, so every packet copied
/// the whole list (a 1 024-packet list: an allocation and 128 bytes per packet).
@Suite struct ReplayInPlaceTests {
    @Test(arguments: SRTPSuite.allCases)
    func theReplayListIsUpdatedWhereItLives(_ suite: SRTPSuite) throws {
        let key = SRTPKey.random(suite: suite)
        let out = try SRTPSession(key: key, direction: .outbound)
        let into = try SRTPSession(key: key, direction: .inbound)
        var buf = [UInt8](repeating: 0, count: 1400)
        var places: Set<UnsafeRawPointer> = []
        var rtcpPlaces: Set<UnsafeRawPointer> = []
        for i in 0..<200 {
            buf[0] = 0x80; buf[1] = 96; buf[8] = 1
            buf[2] = UInt8(truncatingIfNeeded: i >> 8); buf[3] = UInt8(truncatingIfNeeded: i)
            let plain = try buf.withUnsafeMutableBytes { b in
                try into.unprotectRTP(b.baseAddress!, length: try out.protectRTP(b.baseAddress!, length: 1100, capacity: b.count))
            }
            #expect(plain == 1100)
            if let p = into.rtpStreams[0x0100_0000]?.window?.storage { places.insert(p) }
            // An RTCP receiver report from the same SSRC.
            let rr: [UInt8] = [0x80, 201, 0, 1, 0, 0, 0, 1]
            for (k, v) in rr.enumerated() { buf[k] = v }
            let opened = try buf.withUnsafeMutableBytes { b in
                try into.unprotectRTCP(b.baseAddress!, length: try out.protectRTCP(b.baseAddress!, length: 8, capacity: b.count))
            }
            #expect(opened == 8)
            if let p = into.rtcpStreams[1]?.window?.storage { rtcpPlaces.insert(p) }
        }
        #expect(places.count == 1, "the RTP replay list moved \(places.count - 1) times in 200 packets")
        #expect(rtcpPlaces.count == 1, "the SRTCP replay list moved \(rtcpPlaces.count - 1) times in 200 packets")
    }
}
