import Testing
import RTPCore
@testable import Signalling

@Suite struct SessionDescriptionTests {
    let sample = SessionDescription(
        sessionID: 42, address: "127.0.0.1", bundle: true,
        media: [
            .init(
                kind: .audio, port: 5004, payloadType: 111, codec: "opus", clockRate: 48000, channels: 2,
                fmtp: "minptime=10;useinbandfec=1",
                mid: "0", rtcpMux: true,
                crypto: .init(suite: "AES_CM_128_HMAC_SHA1_80", inlineKey: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVoxMjM0"),
                extensions: [(UInt8(4), RTPExtension.mid.uri)], ssrcs: [(UInt32(1111), "bot")]),
            .init(
                kind: .video, port: 5004, payloadType: 96, codec: "VP8", clockRate: 90000, mid: "1", rtcpMux: true,
                crypto: .init(suite: "AES_CM_128_HMAC_SHA1_80", inlineKey: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVoxMjM0"),
                extensions: [(UInt8(4), RTPExtension.mid.uri), (UInt8(10), RTPExtension.rid.uri)],
                ssrcs: [(UInt32(1), "bot"), (UInt32(2), "bot"), (UInt32(3), "bot")], rids: ["q", "h", "f"])
        ])

    @Test func rendersWhatIsSent() {
        let text = sample.render()
        #expect(text.hasPrefix("v=0\r\n"))
        #expect(text.contains("a=group:BUNDLE 0 1\r\n"))
        #expect(text.contains("m=video 5004 RTP/SAVPF 96\r\n"))
        #expect(text.contains("a=rtpmap:111 opus/48000/2\r\n"))
        #expect(text.contains("a=simulcast:send q;h;f\r\n"))
        // On every m-line.
        #expect(text.split(separator: "\r\n").filter { $0.hasPrefix("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:") }.count == 2)
    }

    @Test func roundTrips() throws {
        #expect(try SessionDescription.parse(sample.render()) == sample)
    }

    @Test func noBundleUsesSeparateRTCPPorts() {
        var s = sample
        s.bundle = false
        s.media[0].rtcpMux = false
        let text = s.render()
        #expect(!text.contains("a=group:BUNDLE"))
        #expect(text.contains("a=rtcp:5005\r\n"))
    }

    @Test func rejectsNonsense() {
        #expect(throws: SDPDocument.ParseError.self) { try SessionDescription.parse("hello") }
        #expect(throws: SDPDocument.ParseError.self) { try SessionDescription.parse("v=0\r\nm=video x RTP/AVP 96\r\n") }
        #expect(throws: SDPDocument.ParseError.self) { try SessionDescription.parse("v=0\r\ns=x\r\n") }
    }

    /// Regression: the seeded fuzzer found `a=extmap:/ …` crashing the parser (index out of range).
    @Test func extmapWithoutIDIsAnErrorNotACrash() {
        #expect(throws: SDPDocument.ParseError.self) {
            try SessionDescription.parse("v=0\r\nm=audio 5004 RTP/SAVPF 111\r\na=extmap:/ urn:x\r\n")
        }
    }

    /// Regression (the `sdp` fuzz target with the real offers as seeds): an RTX SSRC's `a=ssrc`
    /// line before its `a=ssrc-group:FID` was read as a media stream, and after a round trip not.
    @Test func rtxSSRCIsNotAStreamWhicheverLineComesFirst() throws {
        let text =
            "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\nm=video 5004 RTP/SAVPF 96 97\r\na=rtpmap:96 VP8/90000\r\n"
            + "a=rtpmap:97 rtx/90000\r\na=ssrc:22 cname:x\r\na=ssrc:11 cname:x\r\na=ssrc-group:FID 11 22\r\n"
        let sd = try SessionDescription.parse(text)
        #expect(sd.media[0].ssrcs.map(\.ssrc) == [11] && sd.media[0].rtxSSRCs.map(\.rtx) == [22])
        #expect(try SessionDescription.parse(sd.render()) == sd)
    }

    /// Errors name the line of the one parser's document, blank lines counted.
    @Test func errorsNameTheLine() {
        #expect(throws: SDPDocument.ParseError(line: 4, reason: "bad m= line")) {
            try SessionDescription.parse("v=0\r\n\r\no=- 1 1 IN IP4 127.0.0.1\r\nm=video 5004 RTP/SAVPF x\r\n")
        }
        #expect(throws: SDPDocument.ParseError(line: 3, reason: "bad crypto")) {
            try SessionDescription.parse("v=0\nm=audio 5004 RTP/SAVPF 111\na=crypto:1 AES_CM_128_HMAC_SHA1_80 x\n")
        }
    }

    /// 10 000 seeded mutations (3 s in a debug build; the `sdp` libFuzzer target of
    /// `scripts/fuzz` is where the parser gets millions).
    @Test func seededFuzzNeverCrashes() {
        var rng = SplitMix64(seed: 3)
        let seed = Array(sample.render().utf8)
        var ok = 0, failed = 0
        for _ in 0..<10_000 {
            var input = seed
            for _ in 0..<Int(1 + rng.next() % 6) {
                let i = Int(rng.next() % UInt64(input.count))
                input[i] =
                    [
                        UInt8(ascii: ":"), UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "="), UInt8(ascii: "/"),
                        UInt8(truncatingIfNeeded: rng.next())
                    ][Int(rng.next() % 6)]
            }
            if let sd = try? SessionDescription.parse(String(decoding: input, as: UTF8.self)) {
                ok += 1
                // Round trip: what parsed renders to text that parses to the same description.
                do {
                    let again = try SessionDescription.parse(sd.render())
                    #expect(again == sd, "\(String(decoding: input, as: UTF8.self))\nfirst \(sd)\nagain \(again)")
                } catch {
                    Issue.record("what parsed rendered to an SDP that does not: \(error)\n\(sd.render())")
                }
            } else {
                failed += 1
            }
        }
        #expect(ok > 100 && failed > 100)
    }
}
