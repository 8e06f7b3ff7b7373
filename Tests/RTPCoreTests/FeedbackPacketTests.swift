import Testing
@testable import RTPCore

@Suite struct FeedbackPacketTests {
    func roundTrip(_ bytes: [UInt8], _ write: (inout ByteWriter) throws(RTPWriteError) -> Void) throws -> RTCPPacket {
        #expect(try [UInt8].writing(capacity: 1500, write) == bytes)
        var it = RTCPCompoundIterator()
        let p = try #require(try it.next(in: bytes.span))
        #expect(try it.next(in: bytes.span) == nil)
        return p
    }

    @Test func genericNACK() throws {
        let bytes = hex(
            """
            81 cd 00 04   // V=2 FMT=1 PT=205 (RTPFB) length 4
            00 00 00 01   // SSRC of packet sender
            00 00 00 02   // SSRC of media source
            00 64 00 05   // PID 100, BLP 0b101: 101 and 103 lost too
            00 78 00 00   // PID 120 (more than 16 after 100: a new entry)
            """)
        let n = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [100, 101, 103, 120])
        #expect(try roundTrip(bytes) { w throws(RTPWriteError) in try n.write(to: &w) } == .nack(n))
        // Across the wrap.
        let wrap = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [65535, 0, 2])
        #expect(wrap.entries.count == 1 && wrap.entries[0].0 == 65535 && wrap.entries[0].1 == 0b101)
    }

    @Test func pictureLossAndFullIntraRequest() throws {
        let pli = PictureLossIndication(senderSSRC: 1, mediaSSRC: 2)
        #expect(
            try roundTrip(hex("81 ce 00 02 00 00 00 01 00 00 00 02")) { w throws(RTPWriteError) in try pli.write(to: &w) }
                == .pictureLossIndication(pli))
        let fir = FullIntraRequest(senderSSRC: 1, entries: [(ssrc: 9, sequenceNumber: 7)])
        let bytes = hex(
            """
            84 ce 00 04   // V=2 FMT=4 PT=206 (PSFB) length 4
            00 00 00 01   // SSRC of packet sender
            00 00 00 00   // media source: 0 for FIR
            00 00 00 09   // FCI: SSRC
            07 00 00 00   // command sequence number 7, reserved
            """)
        #expect(try roundTrip(bytes) { w throws(RTPWriteError) in try fir.write(to: &w) } == .fullIntraRequest(fir))
    }

    @Test func remb() throws {
        let r = ReceiverEstimatedMaxBitrate(senderSSRC: 1, bitrate: 1_000_000, ssrcs: [0x1234])
        let bytes = hex(
            """
            8f ce 00 05   // V=2 FMT=15 PT=206 (AFB) length 5
            00 00 00 01   // SSRC of packet sender
            00 00 00 00   // media source: unused
            52 45 4d 42   // "REMB"
            01 0b d0 90   // 1 SSRC; exp 2, mantissa 250000 (= 1 Mbps)
            00 00 12 34   // SSRC
            """)
        #expect(try roundTrip(bytes) { w throws(RTPWriteError) in try r.write(to: &w) } == .remb(r))
        // exp 63 with a full mantissa does not fit 64 bits: saturated, not trapped.
        var it = RTCPCompoundIterator()
        let huge = hex("8f ce 00 04 00 00 00 01 00 00 00 00 52 45 4d 42 00 ff ff ff")
        #expect(try it.next(in: huge.span) == .remb(ReceiverEstimatedMaxBitrate(senderSSRC: 1, bitrate: .max, ssrcs: [])))
    }

    @Test func senderSideStatsInAnAppPacket() throws {
        let stats = SenderSideStats(
            connectionMaxAllocatedBitrate: 3_432_000, connectionEstimatedBandwidth: 800_000, networkCondition: 3, networkConditionReason: 2)
        let bytes = hex(
            """
            80 cc 00 05   // V=2 subtype 0, PT=204 (APP), length 5
            00 00 00 2a   // SSRC
            53 53 54 53   // "SSTS"
            01 03 02 00   // version 1, condition 3 (fair), reason 2 (bandwidth), reserved
            00 34 5e 40   // connectionMaxAllocatedBitrate 3 432 000
            00 0c 35 00   // connectionEstimatedBandwidth 800 000
            """)
        let app = stats.packet(ssrc: 42)
        #expect(try roundTrip(bytes) { w throws(RTPWriteError) in try app.write(to: &w) } == .application(app))
        #expect(SenderSideStats(app) == stats)
        // Another APP name, or a version 0 payload, is not sender-side stats.
        #expect(SenderSideStats(ApplicationDefined(subtype: 0, ssrc: 1, name: "XYZW", data: Array(bytes[12...]))) == nil)
        var v0 = app
        v0.data[0] = 0
        #expect(SenderSideStats(v0) == nil)
    }

    @Test func transportFeedbackGolden() throws {
        let bytes = hex(
            """
            8f cd 00 05   // V=2 FMT=15 PT=205 length 5
            00 00 00 01   // SSRC of packet sender
            00 00 00 02   // SSRC of media source
            00 64 00 03   // base sequence 100, 3 packets
            00 00 01 00   // reference time 1 (64 ms), feedback count 0
            d1 00         // 2-bit status vector: received(small), not received, received(small)
            00 04         // deltas: 0 ticks, 4 ticks (1 ms)
            """)
        let fb = TransportFeedback(
            senderSSRC: 1, mediaSSRC: 2, baseSequence: 100, referenceTime: 1, feedbackCount: 0, arrivals: [0, nil, 1000])
        #expect(try roundTrip(bytes) { w throws(RTPWriteError) in try fb.write(to: &w) } == .transportFeedback(fb))
        #expect(fb.packets.map(\.sequenceNumber) == [100, 101, 102])
        #expect(fb.packets.map(\.arrivalMicros) == [64_000, nil, 65_000])
    }

    @Test func transportFeedbackRoundTripsRunsVectorsAndLargeDeltas() throws {
        var arrivals: [Int64?] = []
        var t: Int64 = 0
        for i in 0..<300 {
            if i % 50 == 7 { arrivals.append(nil); continue } // isolated losses
            if (100..<130).contains(i) { arrivals.append(nil); continue } // a run of losses
            t += i == 200 ? 300_000 : (i == 201 ? -20_000 : 1_250) // a large and a negative delta
            arrivals.append(t)
        }
        let fb = TransportFeedback(
            senderSSRC: 5, mediaSSRC: 6, baseSequence: 65500, referenceTime: -3, feedbackCount: 9, arrivals: arrivals)
        let bytes = try [UInt8].writing(capacity: 1500) { w throws(RTPWriteError) in try fb.write(to: &w) }
        #expect(bytes.count % 4 == 0)
        var it = RTCPCompoundIterator()
        #expect(try it.next(in: bytes.span) == .transportFeedback(fb))
        #expect(fb.packets.last?.sequenceNumber == 65500 &+ 299)
    }

    @Test func transportFeedbackRejectsOutOfRangeDeltas() {
        let fb = TransportFeedback(
            senderSSRC: 1, mediaSSRC: 2, baseSequence: 0, referenceTime: 0, feedbackCount: 0, arrivals: [0, 9_000_000])
        #expect(throws: RTPWriteError.valueOutOfRange) {
            try [UInt8].writing(capacity: 100) { w throws(RTPWriteError) in try fb.write(to: &w) }
        }
    }

    @Test func hugeStatusCountsAreBoundedByThePacket() {
        // Claims 65535 packets in a run, then no deltas: truncated, not a 65535-iteration read past the end.
        let bytes = hex("8f cd 00 05 00 00 00 01 00 00 00 02 00 00 ff ff 00 00 00 00 3f ff 00 00")
        var it = RTCPCompoundIterator()
        #expect(throws: RTPParseError.truncated) { try it.next(in: bytes.span) }
    }

    @Test func seededFuzzNeverCrashes() throws {
        var rng = SplitMix64(seed: 99)
        let fb = TransportFeedback(
            senderSSRC: 1, mediaSSRC: 2, baseSequence: 7, referenceTime: 5, feedbackCount: 1,
            arrivals: (0..<40).map { $0 % 9 == 3 ? nil : Int64($0) * 5000 })
        let seed = try [UInt8].writing(capacity: 1500) { w throws(RTPWriteError) in
            try fb.write(to: &w)
            try GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [1, 2, 9, 40]).write(to: &w)
            try FullIntraRequest(senderSSRC: 1, entries: [(ssrc: 3, sequenceNumber: 1)]).write(to: &w)
            try ReceiverEstimatedMaxBitrate(senderSSRC: 1, bitrate: 5_000_000, ssrcs: [1, 2]).write(to: &w)
        }
        var ok = 0, failed = 0, roundTripped = 0
        for _ in 0..<100_000 {
            let input = mutate(seed, &rng)
            var it = RTCPCompoundIterator()
            var parsed: [RTCPPacket] = []
            do { while let p = try it.next(in: input.span) { parsed.append(p) }; ok += 1 } catch { failed += 1; continue }
            // What parses writes back to the same packets (transport-cc, NACK, FIR, REMB).
            if expectRTCPRoundTrip(parsed, input: input) { roundTripped += 1 }
        }
        #expect(ok > 1000 && failed > 1000 && roundTripped == ok)
    }
}
