import Testing
@testable import RTPCore

@Suite struct RTPHeaderTests {
    @Test func parsesMinimalHeader() throws {
        let bytes = hex(
            """
            80        // V=2 P=0 X=0 CC=0
            e0        // M=1 PT=96
            12 34     // sequence number 0x1234
            00 00 30 39 // timestamp 12345
            de ad be ef // SSRC
            01 02 03  // payload
            """)
        let h = try RTPHeader.parse(bytes.span)
        #expect(h.marker)
        #expect(h.payloadType == 96)
        #expect(h.sequenceNumber == 0x1234)
        #expect(h.timestamp == 12345)
        #expect(h.ssrc == 0xDEAD_BEEF)
        #expect(h.payloadRange == 12..<15)
        #expect(h.extensionProfile == nil)
    }

    @Test func parsesCSRCsAndPadding() throws {
        let bytes = hex(
            """
            a1 60 00 01   // V=2 P=1 CC=1, PT=96, seq 1
            00 00 00 02   // timestamp
            00 00 00 03   // SSRC
            00 00 00 04   // CSRC
            aa bb         // payload
            00 00 03      // 3 bytes of padding, count in the last byte
            """)
        let h = try RTPHeader.parse(bytes.span)
        #expect(h.csrcCount == 1)
        #expect(h.paddingLength == 3)
        #expect(h.payloadRange == 16..<18)
    }

    @Test func rejectsBadInput() {
        #expect(throws: RTPParseError.truncated) { try RTPHeader.parse(hex("80 60 00").span) }
        #expect(throws: RTPParseError.badVersion) { try RTPHeader.parse(hex("40 60 00 01 00 00 00 02 00 00 00 03").span) }
        // X set but the extension length points past the end.
        #expect(throws: RTPParseError.badLength) {
            try RTPHeader.parse(hex("90 60 00 01 00 00 00 02 00 00 00 03 be de 00 05 00 00 00 00").span)
        }
        // Padding count of zero.
        #expect(throws: RTPParseError.badPadding) { try RTPHeader.parse(hex("a0 60 00 01 00 00 00 02 00 00 00 03 00").span) }
        // CSRC count past the end.
        #expect(throws: RTPParseError.truncated) { try RTPHeader.parse(hex("8f 60 00 01 00 00 00 02 00 00 00 03").span) }
    }

    @Test func templateWritesOneByteExtensions() throws {
        let t = RTPHeaderTemplate(
            payloadType: 96, ssrc: 0x0102_0304, strings: [(RTPExtension.mid.id, "1"), (RTPExtension.rid.id, "q")],
            transportSequence: true, absSendTime: true)
        let out = try [UInt8].writing(capacity: 64) { w throws(RTPWriteError) in
            try t.write(to: &w, sequenceNumber: 0x1234, timestamp: 0xA0B0_C0D0, marker: true)
        }
        #expect(
            out
                == hex(
                    """
                    90 e0 12 34   // V=2 X=1, M=1 PT=96, seq
                    a0 b0 c0 d0   // timestamp
                    01 02 03 04   // SSRC
                    be de 00 03   // one-byte form, 3 words
                    22 00 00 00   // id 2 (abs-send-time) len 3
                    31 00 00      // id 3 (transport-wide seq) len 2
                    40 31         // id 4 (MID) "1"
                    a0 71         // id 10 (RID) "q"
                    00            // padding
                    """))
        #expect(t.absSendTimeOffset == 17)
        #expect(t.transportSequenceOffset == 21)
        let h = try RTPHeader.parse(out.span)
        let ext = try RTPExtensionValues.parse(out.span, header: h)
        #expect(ext.mid == "1")
        #expect(ext.rid == "q")
        #expect(ext.transportSequenceNumber == 0)
        #expect(ext.absSendTime == 0)
        #expect(h.payloadRange == 28..<28)
    }

    @Test func patchesSendTimeFields() throws {
        let t = RTPHeaderTemplate(payloadType: 111, ssrc: 7, transportSequence: true, absSendTime: true)
        var out = try [UInt8].writing(capacity: 64) { w throws(RTPWriteError) in
            try t.write(to: &w, sequenceNumber: 1, timestamp: 2, marker: false)
        }
        out.withUnsafeMutableBytes { p in
            RTPHeaderPatch.setTransportSequence(p.baseAddress!, offset: t.transportSequenceOffset!, 0xBEEF)
            RTPHeaderPatch.setAbsSendTime(p.baseAddress!, offset: t.absSendTimeOffset!, 0x123456)
        }
        let ext = try RTPExtensionValues.parse(out.span, header: try RTPHeader.parse(out.span))
        #expect(ext.transportSequenceNumber == 0xBEEF)
        #expect(ext.absSendTime == 0x123456)
    }

    @Test func templateFallsBackToTwoByteForm() throws {
        let longMid = String(repeating: "m", count: 17)
        let t = RTPHeaderTemplate(payloadType: 96, ssrc: 1, strings: [(RTPExtension.mid.id, longMid)])
        #expect(t.bytes[12] == 0x10 && t.bytes[13] == 0x00)
        let h = try RTPHeader.parse(t.bytes.span)
        #expect(try RTPExtensionValues.parse(t.bytes.span, header: h).mid == longMid)
    }

    @Test func parsesTwoByteForm() throws {
        let bytes = hex(
            """
            90 60 00 01 00 00 00 02 00 00 00 03
            10 00 00 02   // two-byte form (0x100 + appbits 0), 2 words
            04 02 68 69   // id 4 (MID) length 2 "hi"
            0a 00         // id 10 (RID) length 0
            00 00         // padding
            """)
        let h = try RTPHeader.parse(bytes.span)
        var it = h.extensions()
        #expect(try it.next(in: bytes.span) == HeaderExtensionElement(id: 4, range: 18..<20))
        #expect(try it.next(in: bytes.span) == HeaderExtensionElement(id: 10, range: 22..<22))
        #expect(try it.next(in: bytes.span) == nil)
    }

    @Test func oneByteIDFifteenStopsParsing() throws {
        let bytes = hex("90 60 00 01 00 00 00 02 00 00 00 03 be de 00 01 f0 41 00 00")
        let h = try RTPHeader.parse(bytes.span)
        var it = h.extensions()
        #expect(try it.next(in: bytes.span) == nil)
    }

    @Test func rejectsElementPastBlockEnd() throws {
        let bytes = hex("90 60 00 01 00 00 00 02 00 00 00 03 be de 00 01 4f 00 00 00")
        let h = try RTPHeader.parse(bytes.span)
        #expect(throws: RTPParseError.badExtension) { try RTPExtensionValues.parse(bytes.span, header: h) }
    }

    @Test func demuxSeparatesRTCP() {
        #expect(RTPDemux.classify(hex("80 c8").span) == .rtcp)
        #expect(RTPDemux.classify(hex("80 60").span) == .rtp)
        #expect(RTPDemux.classify(hex("80 e0").span) == .rtp) // PT 96 with marker
        #expect(RTPDemux.classify(hex("00 60").span) == .other)
    }

    @Test func seededFuzzNeverCrashes() {
        var rng = SplitMix64(seed: 0xF00D)
        let seed =
            RTPHeaderTemplate(payloadType: 96, ssrc: 9, strings: [(4, "1"), (10, "f")], transportSequence: true, absSendTime: true).bytes
            + [1, 2, 3]
        var ok = 0, failed = 0
        for _ in 0..<100_000 {
            let input = mutate(seed, &rng)
            do {
                let h = try RTPHeader.parse(input.span)
                #expect(h.payloadRange.upperBound <= input.count && h.extensionRange.upperBound <= h.payloadRange.lowerBound)
                // Round trip: the fixed header written back from the parsed fields, with the CSRC,
                // extension, payload and padding bytes where the ranges say, is the input again.
                var w = [
                    UInt8(0x80 | (h.paddingLength > 0 ? 0x20 : 0) | (h.extensionProfile != nil ? 0x10 : 0) | UInt8(h.csrcCount)),
                    (h.marker ? 0x80 : 0) | h.payloadType, UInt8(h.sequenceNumber >> 8), UInt8(h.sequenceNumber & 0xFF)
                ]
                for v in [h.timestamp, h.ssrc] { w += [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
                w += input[12..<h.payloadRange.upperBound] + input[h.payloadRange.upperBound...]
                #expect(w == input && h.payloadRange.upperBound + h.paddingLength == input.count, "\(input)")
                #expect((try? RTPHeader.parse(w.span)) == h)
                _ = try RTPExtensionValues.parse(input.span, header: h)
                ok += 1
            } catch { failed += 1 }
        }
        #expect(ok > 1000 && failed > 1000)
    }
}
