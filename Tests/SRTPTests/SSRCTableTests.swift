import Testing
@testable import SRTP

/// The session's per-SSRC table: compared in turn up to `linearLimit` SSRCs, through a
/// dictionary of positions past it; removal moves the last entry into the gap.
@Suite struct SSRCTableTests {
    @Test func findsAddsAndRemovesOnBothSidesOfTheLimit() {
        var t = SSRCTable<Int>()
        let ssrcs = (0..<40).map { UInt32(0x1000_0000 + $0 * 7919) }
        for (k, s) in ssrcs.enumerated() {
            #expect(t.position(of: s) == nil)
            let i = t.position(of: s, adding: { k })
            #expect(t.values[i] == k && t.position(of: s, adding: { -1 }) == i, "SSRC \(k) added twice")
            // Every SSRC so far still found with its value, in the linear and the indexed range.
            for (j, earlier) in ssrcs.prefix(k + 1).enumerated() { #expect(t[earlier] == j, "\(j) of \(k + 1)") }
        }
        // Removals from the middle, the end and the start; the rest keep their values.
        var left = Dictionary(uniqueKeysWithValues: ssrcs.enumerated().map { ($1, $0) })
        for s in [ssrcs[20], ssrcs[39], ssrcs[0], ssrcs[5], 0xDEAD_BEEF] {
            t.remove(s)
            left[s] = nil
            #expect(t[s] == nil)
            #expect(t.count == left.count)
            for (ssrc, v) in left { #expect(t[ssrc] == v, "\(ssrc) after removing \(s)") }
        }
        // Below the limit again: still found.
        for s in ssrcs.dropFirst(6).prefix(20) { t.remove(s) }
        for (ssrc, v) in left where t[ssrc] != nil { #expect(t[ssrc] == v) }
    }

    /// Twenty streams of one session (past the linear range): each packet opens with its own
    /// stream's index and replay list.
    @Test(arguments: SRTPSuite.allCases)
    func twentyStreamsOfOneSessionEachOpen(_ suite: SRTPSuite) throws {
        let key = SRTPKey.random(suite: suite)
        let out = try SRTPSession(key: key, direction: .outbound)
        let into = try SRTPSession(key: key, direction: .inbound)
        var buf = [UInt8](repeating: 0, count: 1400)
        for round in 0..<30 {
            for s in 0..<20 {
                buf[0] = 0x80; buf[1] = 96
                buf[2] = UInt8(truncatingIfNeeded: (round + s * 1000) >> 8); buf[3] = UInt8(truncatingIfNeeded: round + s * 1000)
                buf[8] = 0x40; buf[11] = UInt8(s)
                let plain = try buf.withUnsafeMutableBytes { b in
                    try into.unprotectRTP(b.baseAddress!, length: try out.protectRTP(b.baseAddress!, length: 300, capacity: b.count))
                }
                #expect(plain == 300)
            }
        }
        #expect(into.rtpStreams.count == 20 && out.rtpStreams.count == 20)
        // A replay of a packet is refused by its stream's list (the next one of stream 19).
        buf[2] = UInt8(truncatingIfNeeded: (30 + 19_000) >> 8); buf[3] = UInt8(truncatingIfNeeded: 30 + 19_000)
        let n = try buf.withUnsafeMutableBytes { b in try out.protectRTP(b.baseAddress!, length: 300, capacity: b.count) }
        var first = Array(buf[0..<n]), again = first
        let opened = try first.withUnsafeMutableBytes { b in try into.unprotectRTP(b.baseAddress!, length: n) }
        #expect(opened == 300)
        let replayed = again.withUnsafeMutableBytes { b in (try? into.unprotectRTP(b.baseAddress!, length: n)) == nil }
        #expect(replayed)
    }
}
