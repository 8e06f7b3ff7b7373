import Testing
@testable import Stats

@Suite struct StatsTests {
    @Test func jsonSerializesInOrderAndEscapes() {
        let v: JSONValue = .object([
            ("type", .string("summary")), ("n", .int(-3)), ("x", .double(1.5)), ("ok", .bool(true)),
            ("s", .string("a\"b\\c\n\u{1}")), ("list", .array([.null, .int(1)]))
        ])
        #expect(v.serialized() == #"{"type":"summary","n":-3,"x":1.5,"ok":true,"s":"a\"b\\c\n\u0001","list":[null,1]}"#)
        #expect(v["n"] == .int(-3))
        #expect(JSONValue.double(.nan).serialized() == "null")
        #expect(JSONValue.double(3).serialized() == "3")
    }

    @Test func tableAlignsColumns() {
        var t = TextTable(headers: ["stream", "pkts"], rightAligned: [1])
        t.add(["audio", "150"])
        t.add(["video q", "9"])
        #expect(t.render() == "stream   pkts\n-------  ----\naudio     150\nvideo q     9\n")
    }

    @Test func unitsFormat() {
        #expect(Units.bitrate(2_400_000) == "2.40 Mbps")
        #expect(Units.bitrate(149_500) == "150 kbps")
        #expect(Units.bitrate(12) == "12 bps")
        #expect(Units.fixed(1.25, 1) == "1.3" || Units.fixed(1.25, 1) == "1.2")
        #expect(Units.fixed(-0.5, 2) == "-0.50")
    }

    @Test func latencyPercentiles() {
        var l = LatencyTracker()
        for i in 1...100 { l.add(Double(i)) }
        #expect(l.mean == 50.5)
        #expect(l.percentile(95) == 95)
        #expect(l.percentile(50) == 50)
        #expect(LatencyTracker().percentile(95) == nil)
    }

    @Test func inboundBitrateUsesActiveTime() {
        var s = InboundStreamStats(ssrc: 1, kind: .video, payloadType: 96)
        s.payloadBytesReceived = 125_000
        s.firstPacketMicros = 0
        s.lastPacketMicros = 1_000_000
        #expect(s.bitrate == 1_000_000)
    }
}
