import Testing
@testable import RTPCore

@Suite struct RTCPTests {
    func write(_ body: (inout ByteWriter) throws(RTPWriteError) -> Void) throws -> [UInt8] {
        try [UInt8].writing(capacity: 1500, body)
    }

    func packets(_ bytes: [UInt8]) throws -> [RTCPPacket] {
        var it = RTCPCompoundIterator()
        var out: [RTCPPacket] = []
        while let p = try it.next(in: bytes.span) { out.append(p) }
        return out
    }

    let srBytes = hex(
        """
        80 c8 00 06   // V=2 RC=0 PT=200 (SR) length 6 words
        00 00 00 01   // SSRC of sender
        83 aa 7e 80   // NTP seconds (1970-01-01 in NTP time)
        80 00 00 00   // NTP fraction (0.5 s)
        00 00 03 e8   // RTP timestamp 1000
        00 00 00 0a   // packet count 10
        00 00 01 f4   // octet count 500
        """)

    @Test func senderReportGolden() throws {
        let sr = SenderReport(ssrc: 1, ntpTime: NTPTime.ntp(unixMicros: 500_000), rtpTimestamp: 1000, packetCount: 10, octetCount: 500)
        #expect(try write { w throws(RTPWriteError) in try sr.write(to: &w) } == srBytes)
        #expect(try packets(srBytes) == [.senderReport(sr)])
    }

    @Test func receiverReportGolden() throws {
        let bytes = hex(
            """
            81 c9 00 07   // V=2 RC=1 PT=201 (RR) length 7
            00 00 00 02   // SSRC of packet sender
            00 00 00 01   // SSRC_1
            40 ff ff ff   // fraction lost 64/256, cumulative lost -1
            00 01 00 10   // extended highest seq (1 cycle, seq 16)
            00 00 00 20   // jitter
            11 22 33 44   // LSR
            00 01 00 00   // DLSR (1 s)
            """)
        let rr = ReceiverReport(
            ssrc: 2,
            reports: [
                ReportBlock(
                    ssrc: 1, fractionLost: 64, cumulativeLost: -1, extendedHighestSequence: 0x10010,
                    jitter: 32, lastSenderReport: 0x1122_3344, delaySinceLastSenderReport: 0x10000)
            ])
        #expect(try write { w throws(RTPWriteError) in try rr.write(to: &w) } == bytes)
        #expect(try packets(bytes) == [.receiverReport(rr)])
    }

    @Test func sdesAndByeGolden() throws {
        let sdes = hex(
            """
            81 ca 00 03   // V=2 SC=1 PT=202 (SDES) length 3
            00 00 00 01   // SSRC
            01 02 61 62   // CNAME, length 2, "ab"
            00 00 00 00   // END + padding to 32 bits
            """)
        let bye = hex(
            """
            81 cb 00 02   // V=2 SC=1 PT=203 (BYE) length 2
            00 00 00 01   // SSRC
            01 78 00 00   // reason length 1, "x", padding
            """)
        let s = SourceDescription(chunks: [.init(ssrc: 1, cname: "ab")])
        let b = Goodbye(ssrcs: [1], reason: "x")
        #expect(try write { w throws(RTPWriteError) in try s.write(to: &w) } == sdes)
        #expect(try write { w throws(RTPWriteError) in try b.write(to: &w) } == bye)
        #expect(try packets(srBytes + sdes + bye).count == 3)
        #expect(try packets(sdes + bye) == [.sourceDescription(s), .goodbye(b)])
    }

    @Test func unknownTypesAreSkippedWhole() throws {
        let app = hex("81 cc 00 02 00 00 00 01 41 42 43 44") // APP subtype 1, name "ABCD"
        let parsed = try packets(app + srBytes)
        #expect(parsed.count == 2)
        #expect(parsed[0] == .application(ApplicationDefined(subtype: 1, ssrc: 1, name: "ABCD", data: [])))
        #expect(parsed[1] == (try packets(srBytes))[0])
    }

    @Test func rejectsLengthsPastTheEnd() {
        #expect(throws: RTPParseError.badLength) { try packets(hex("80 c8 00 09 00 00 00 01")) }
        #expect(throws: RTPParseError.badLength) { try packets(hex("81 c9 00 01 00 00 00 02")) } // RC=1 but no block
        #expect(throws: RTPParseError.badVersion) { try packets(hex("00 c8 00 00")) }
    }

    @Test func seededFuzzNeverCrashes() {
        var rng = SplitMix64(seed: 42)
        let seed = srBytes + hex("81 ca 00 03 00 00 00 01 01 02 61 62 00 00 00 00 81 cb 00 02 00 00 00 01 01 78 00 00")
        var ok = 0, failed = 0, roundTripped = 0
        for _ in 0..<100_000 {
            let input = mutate(seed, &rng)
            guard let parsed = try? packets(input) else { failed += 1; continue }
            ok += 1
            // What parses writes back to the same packets.
            if expectRTCPRoundTrip(parsed, input: input) { roundTripped += 1 }
        }
        #expect(ok > 1000 && failed > 1000 && roundTripped == ok)
    }
}

@Suite struct TimeAndSequenceTests {
    @Test func ntpConversions() {
        let ntp = NTPTime.ntp(unixMicros: 1_700_000_000_250_000)
        #expect(ntp >> 32 == 1_700_000_000 + 2_208_988_800)
        #expect(abs(NTPTime.unixMicros(ntp: ntp) - 1_700_000_000_250_000) <= 1)
        #expect(NTPTime.compact(0x1234_5678_9ABC_DEF0) == 0x5678_9ABC)
        // abs-send-time: 6.18 fixed point of the NTP time, 24 bits.
        #expect(NTPTime.absSendTime(UInt64(3) << 32 | 0x8000_0000) == (3 << 18 | 1 << 17))
    }

    @Test func unwrapsAcrossTheWrap() {
        var u = SequenceUnwrapper()
        #expect(u.unwrap(65534) == 65534)
        #expect(u.unwrap(65535) == 65535)
        #expect(u.unwrap(0) == 65536)
        #expect(u.unwrap(65535) == 65535) // reordered, stays in the previous cycle
        #expect(u.unwrap(2) == 65538)
    }

    @Test func opusTOC() throws {
        #expect(try OpusPayload.parse(hex("78 00").span) == 960) // config 15 (hybrid FB 20 ms), code 0
        #expect(try OpusPayload.parse(hex("f0").span) == 480) // config 30 (CELT FB 10 ms), code 0
        #expect(try OpusPayload.parse(hex("f9").span) == 1920) // config 31 (CELT FB 20 ms), code 1: two frames
        #expect(throws: RTPParseError.badPayload) { try OpusPayload.parse([UInt8]().span) }
        #expect(throws: RTPParseError.badPayload) { try OpusPayload.parse(hex("fb 00").span) } // code 3 with count 0
    }
}
