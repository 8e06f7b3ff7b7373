import Testing
import Signalling
import ICE
import RTPCore

let host = ICECandidate.host(STUNAddress(ip: [192, 168, 1, 20], port: 50_000))
func offer() -> WHIPOffer {
    WHIPOffer(
        iceUfrag: "pUfr", icePassword: "publisher-ice-password-1",
        fingerprint: "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":"),
        candidates: [host])
}

/// An answer shaped like Janus's (ICE-lite, `setup:active`, its own extension IDs, REMB but no
/// transport-cc, simulcast accepted as `recv`), written by hand from its documented behaviour.
let janusLikeAnswer = """
    v=0
    o=- 4215 1 IN IP4 10.0.0.1
    s=VideoRoom 1234
    t=0 0
    a=group:BUNDLE 0 1
    a=ice-lite
    a=msid-semantic: WMS janus
    m=audio 9 UDP/TLS/RTP/SAVPF 111
    c=IN IP4 10.0.0.1
    a=recvonly
    a=mid:0
    a=rtcp-mux
    a=ice-ufrag:jAnU
    a=ice-pwd:janus-ice-password-abcdef
    a=ice-options:trickle
    a=fingerprint:sha-256 11:22:33:44:55:66:77:88:99:00:AA:BB:CC:DD:EE:FF:11:22:33:44:55:66:77:88:99:00:AA:BB:CC:DD:EE:FF
    a=setup:active
    a=rtpmap:111 opus/48000/2
    a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
    a=candidate:1 1 udp 2015363327 10.0.0.1 20000 typ host
    a=end-of-candidates
    m=video 9 UDP/TLS/RTP/SAVPF 96 97
    c=IN IP4 10.0.0.1
    a=recvonly
    a=mid:1
    a=rtcp-mux
    a=rtpmap:96 VP8/90000
    a=rtcp-fb:96 ccm fir
    a=rtcp-fb:96 nack
    a=rtcp-fb:96 nack pli
    a=rtcp-fb:96 goog-remb
    a=rtpmap:97 rtx/90000
    a=fmtp:97 apt=96
    a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
    a=extmap:9 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id
    a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id
    a=rid:q recv
    a=rid:h recv
    a=rid:f recv
    a=simulcast:recv q;h;f
    a=candidate:1 1 udp 2015363327 10.0.0.1 20000 typ host
    a=end-of-candidates

    """

@Suite struct SignallingTests {
    /// The audio section has no RIDs: its SSRC is announced as browsers do (`a=ssrc … cname`,
    /// `a=ssrc … msid` matching the section's `a=msid`), so pion and SRS can map it; the video
    /// section (simulcast by RID) announces none; a subscriber's offer none at all.
    @Test func audioSSRCIsAnnouncedLikeABrowser() throws {
        var o = offer()
        o.audioSSRC = 0xDEAD_BEEF
        o.cname = "Qx7fK2mPz9TtR4wL"
        let doc = try SDPDocument.parse(o.sdp)
        #expect(doc.media[0].values("ssrc") == ["3735928559 cname:Qx7fK2mPz9TtR4wL", "3735928559 msid:pubbot pubbot-audio"])
        #expect(doc.media[0].value("msid") == "pubbot pubbot-audio" && doc.media[1].values("ssrc").isEmpty)
        o.direction = .receive
        #expect(try SDPDocument.parse(o.sdp).media.allSatisfy { $0.values("ssrc").isEmpty })
        #expect(try SDPDocument.parse(offer().sdp).media[0].values("ssrc").isEmpty, "no SSRC chosen: none announced")
    }

    /// One video encoding is offered as a browser offers it: no RIDs, no `a=simulcast`; its SSRC
    /// and its RTX SSRC announced, paired by `a=ssrc-group:FID` (RFC 5576 §4.2, RFC 4588 §8).
    @Test func oneVideoEncodingAnnouncesItsSSRCsLikeABrowser() throws {
        var o = offer()
        o.rids = []
        o.audioSSRC = 11
        o.videoSSRC = (22, 33)
        o.cname = "c1"
        let doc = try SDPDocument.parse(o.sdp)
        let video = doc.media[1]
        #expect(doc.media.map(\.kind) == [.audio, .video] && video.values("rid").isEmpty && video.value("simulcast") == nil)
        #expect(video.values("ssrc-group") == ["FID 22 33"])
        #expect(video.values("ssrc") == ["22 cname:c1", "22 msid:pubbot pubbot-video", "33 cname:c1", "33 msid:pubbot pubbot-video"])
        #expect(video.value("msid") == "pubbot pubbot-video")
        // Without RTX: the media SSRC alone, no group.
        o.videoSSRC = (22, nil)
        let plain = try SDPDocument.parse(o.sdp).media[1]
        #expect(plain.values("ssrc-group").isEmpty && plain.values("ssrc") == ["22 cname:c1", "22 msid:pubbot pubbot-video"])
        // No RIDs and no SSRC: no video section at all (nothing to send).
        o.videoSSRC = nil
        #expect(try SDPDocument.parse(o.sdp).media.map(\.kind) == [.audio])
    }

    /// The endpoint reads a one-encoding offer's `a=ssrc-group:FID` (Chromium's, pubbot's own):
    /// the RTX SSRC → media SSRC pairs by which its retransmissions find their stream.
    @Test func answerKeepsTheOffersRTXPairs() throws {
        var o = offer()
        o.rids = []
        o.videoSSRC = (22, 33)
        let a = try WHIPAnswer.answer(
            offer: o.sdp, iceUfrag: "lUfr", icePassword: "local-ice-password-0123",
            fingerprint: "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":"), candidates: [], sessionID: 1)
        #expect(a.streams.first { $0.kind == .video }?.rtxToMedia == [33: 22])
        #expect(a.streams.first { $0.kind == .audio }?.rtxToMedia == [:])
        // A malformed or self-referencing group is not a pair.
        let bad = o.sdp.replacingOccurrences(of: "a=ssrc-group:FID 22 33", with: "a=ssrc-group:FID 22 22\r\na=ssrc-group:FID x 5")
        let b = try WHIPAnswer.answer(
            offer: bad, iceUfrag: "lUfr", icePassword: "local-ice-password-0123",
            fingerprint: "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":"), candidates: [], sessionID: 1)
        #expect(b.streams.first { $0.kind == .video }?.rtxToMedia == [:])
    }

    @Test func offerHasWhatServersNeed() throws {
        let text = offer().sdp
        let doc = try SDPDocument.parse(text)
        #expect(doc.sessionAttributes.contains(.init("group", "BUNDLE 0 1")))
        #expect(
            doc.media.map(\.kind) == [.audio, .video]
                && doc.media.allSatisfy { $0.has("sendonly") && $0.has("rtcp-mux") && $0.value("setup") == "actpass" })
        let video = doc.media[1]
        #expect(
            video.formats == ["96", "97"] && video.values("rid") == ["q send", "h send", "f send"]
                && video.value("simulcast") == "send q;h;f")
        #expect(video.values("rtcp-fb").contains("96 transport-cc") && video.values("fmtp").contains("97 apt=96"))
        #expect(video.values("extmap").contains("10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"))
        #expect(doc.media[0].values("candidate") == [String(host.description.dropFirst("candidate:".count))])
        #expect(doc.media.allSatisfy { $0.value("ice-ufrag") == "pUfr" && $0.value("fingerprint")?.hasPrefix("sha-256 AB:AB") == true })
        // The general parser round-trips what it renders.
        #expect(try SDPDocument.parse(doc.render()) == doc)
    }

    @Test func janusLikeAnswerIsApplied() throws {
        let n = try NegotiatedSession.from(answer: janusLikeAnswer, offer: offer())
        #expect(n.iceLite && n.iceUfrag == "jAnU" && n.dtlsServer) // setup:active: the server is the DTLS client
        #expect(n.candidates.count == 1 && n.candidates[0].address.description == "10.0.0.1:20000")
        let v = try #require(n.video)
        #expect(v.payloadType == 96 && v.rtxPayloadType == 97 && v.simulcast == ["q", "h", "f"])
        // Its numbers, not ours: the header template must use them.
        #expect(
            v.extensions["urn:ietf:params:rtp-hdrext:sdes:mid"] == 4 && v.extensions["urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"] == 9)
        #expect(!v.transportCC && v.remb && v.nack && v.pli) // REMB only: the estimator must be REMB-driven
        #expect(n.audio?.payloadType == 111 && n.audio?.mid == "0")
    }

    @Test func answersThatRefuseOrRenumber() throws {
        // Simulcast refused (no a=simulcast), a different VP8 payload type, transport-cc on.
        var text = janusLikeAnswer.replacingOccurrences("a=simulcast:recv q;h;f\n", "")
        text = text.replacingOccurrences("96", "100").replacingOccurrences("a=rtcp-fb:100 goog-remb", "a=rtcp-fb:100 transport-cc")
        let n = try NegotiatedSession.from(answer: text, offer: offer())
        #expect(n.video?.simulcast == nil && n.video?.payloadType == 100 && n.video?.rtxPayloadType == 97 && n.video?.transportCC == true)
        // Only two layers accepted, one paused.
        let two = try NegotiatedSession.from(answer: janusLikeAnswer.replacingOccurrences("recv q;h;f", "recv q;~h;f"), offer: offer())
        #expect(two.video?.simulcast == ["q", "f"])
        // Video rejected (port 0).
        let audioOnly = try NegotiatedSession.from(answer: janusLikeAnswer.replacingOccurrences("m=video 9", "m=video 0"), offer: offer())
        #expect(audioOnly.video == nil && audioOnly.audio != nil)
    }

    @Test func brokenAnswersSaySo() {
        for (change, expected) in [
            ("a=fingerprint:sha-256", "no DTLS fingerprint"), ("a=setup:active", "must choose a DTLS role"),
            ("a=ice-pwd:janus-ice-password-abcdef", "no ICE credentials"), ("a=rtpmap:96 VP8/90000", "no vp8 payload type")
        ] {
            var broken = janusLikeAnswer
            switch change {
            case "a=fingerprint:sha-256": broken = broken.split(separator: "\n").filter { !$0.hasPrefix(change) }.joined(separator: "\n")
            case "a=setup:active": broken = broken.replacingOccurrences(change, "a=setup:actpass")
            default: broken = broken.split(separator: "\n").filter { !$0.hasPrefix(change) }.joined(separator: "\n")
            }
            #expect(throws: NegotiatedSession.AnswerError.self) { try NegotiatedSession.from(answer: broken, offer: offer()) }
            do { _ = try NegotiatedSession.from(answer: broken, offer: offer()) } catch {
                #expect(error.description.contains(expected), "\(change): \(error)")
            }
        }
        #expect(throws: NegotiatedSession.AnswerError.self) { try NegotiatedSession.from(answer: "HTTP/1.1 500", offer: offer()) }
    }
}

extension String {
    func replacingOccurrences(_ a: String, _ b: String) -> String {
        split(separator: a, omittingEmptySubsequences: false).joined(separator: b)
    }
}

/// The client's answer the test tree's WHEP shim writes from Janus 1.1.2's subscriber offer (the
/// offer as Janus's handle_info showed it: sendonly, its own SSRCs with an RTX FID group, no
/// rtcp-rsize, full ICE).
let janusSubscriberAnswer = """
    v=0
    o=- 365625126436 2 IN IP4 127.0.0.1
    s=-
    t=0 0
    a=group:BUNDLE 0 1
    m=audio 9 UDP/TLS/RTP/SAVPF 111
    c=IN IP4 0.0.0.0
    a=mid:0
    a=sendonly
    a=ice-ufrag:/eCD
    a=ice-pwd:5KLl372uv3pdoJV3pGT1jN
    a=fingerprint:sha-256 30:64:D1:E8:C8:2A:1A:58:09:03:F9:50:3B:26:24:FF:19:15:1A:EA:2E:C3:8F:99:21:58:14:01:27:ED:AB:2B
    a=setup:passive
    a=rtcp-mux
    a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
    a=rtpmap:111 opus/48000/2
    a=rtcp-fb:111 transport-cc
    a=fmtp:111 useinbandfec=1
    a=ssrc:2659805433 cname:janus
    a=candidate:1 1 udp 2015363327 10.78.33.2 36022 typ host
    a=end-of-candidates
    m=video 9 UDP/TLS/RTP/SAVPF 96 97
    c=IN IP4 0.0.0.0
    a=mid:1
    a=sendonly
    a=ice-ufrag:/eCD
    a=ice-pwd:5KLl372uv3pdoJV3pGT1jN
    a=fingerprint:sha-256 30:64:D1:E8:C8:2A:1A:58:09:03:F9:50:3B:26:24:FF:19:15:1A:EA:2E:C3:8F:99:21:58:14:01:27:ED:AB:2B
    a=setup:passive
    a=rtcp-mux
    a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
    a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
    a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
    a=rtpmap:96 VP8/90000
    a=rtcp-fb:96 ccm fir
    a=rtcp-fb:96 nack
    a=rtcp-fb:96 nack pli
    a=rtcp-fb:96 goog-remb
    a=rtcp-fb:96 transport-cc
    a=rtpmap:97 rtx/90000
    a=fmtp:97 apt=96
    a=ssrc-group:FID 3683104090 1057313614
    a=ssrc:3683104090 cname:janus
    a=ssrc:1057313614 cname:janus
    a=candidate:1 1 udp 2015363327 10.78.33.2 36022 typ host
    a=end-of-candidates

    """

@Suite struct WHEPSignallingTests {
    @Test func subscriberOfferIsRecvonly() throws {
        var o = offer()
        o.direction = .receive
        let doc = try SDPDocument.parse(o.sdp)
        #expect(
            doc.media.map(\.kind) == [.audio, .video]
                && doc.media.allSatisfy { $0.has("recvonly") && !$0.has("sendonly") && !$0.has("msid") })
        let video = doc.media[1]
        // The server chooses what it sends: no RIDs, no simulcast; RTX and the feedback offered.
        #expect(video.values("rid").isEmpty && video.value("simulcast") == nil && video.formats == ["96", "97"])
        #expect(video.values("rtcp-fb").contains("96 nack") && video.values("rtcp-fb").contains("96 nack pli"))
        o.receiveVideo = false
        #expect(try SDPDocument.parse(o.sdp).media.map(\.kind) == [.audio])
    }

    @Test func janusSubscriberAnswerIsFollowed() throws {
        var o = offer()
        o.direction = .receive
        let n = try NegotiatedSession.from(answer: janusSubscriberAnswer, offer: o)
        #expect(!n.iceLite && !n.dtlsServer) // full ICE (a role conflict to settle); setup:passive: pubbot is the DTLS client
        let v = try #require(n.video), a = try #require(n.audio)
        #expect(v.sends && a.sends && v.direction == .sendonly)
        #expect(v.payloadType == 96 && v.rtxPayloadType == 97 && a.payloadType == 111)
        #expect(v.ssrcs == [3_683_104_090] && v.rtxSSRCs == [1_057_313_614: 3_683_104_090] && a.ssrcs == [2_659_805_433])
        #expect(v.extensions["http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"] == 3)
        #expect(!v.reducedSizeRTCP && v.nack && v.pli) // no a=rtcp-rsize: feedback goes in full compounds
        // A server that answers recvonly sends nothing.
        let refused = try NegotiatedSession.from(answer: janusSubscriberAnswer.replacingOccurrences("a=sendonly", "a=recvonly"), offer: o)
        #expect(refused.video?.sends == false && refused.audio?.sends == false)
    }
}

@Suite struct SignallingFuzzTests {
    /// 1.5·10⁴ mutated answers (a server's bytes are hostile input): each parses or is refused
    /// with an AnswerError, never a crash; what the general parser reads it renders again to
    /// text that parses to the same document.
    @Test func mutatedAnswersNeverCrash() throws {
        var state: UInt64 = 0xA115
        func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 17 }
        let seed = Array(janusLikeAnswer.utf8)
        let alphabet = Array(":= \n/;,~0123456789abcdefvmatrpc-".utf8)
        var accepted = 0, refused = 0
        for _ in 0..<15_000 {
            var bytes = seed
            for _ in 0..<Int(1 + next() % 6) {
                let at = Int(next() % UInt64(bytes.count))
                switch next() % 3 {
                case 0: bytes[at] = alphabet[Int(next() % UInt64(alphabet.count))]
                case 1: bytes.insert(alphabet[Int(next() % UInt64(alphabet.count))], at: at)
                default: bytes.remove(at: at)
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            if let doc = try? SDPDocument.parse(text) {
                let again = try? SDPDocument.parse(doc.render())
                #expect(again == doc, "\(text.debugDescription)\n→ \(doc.render().debugDescription)")
            }
            do { _ = try NegotiatedSession.from(answer: text, offer: offer()); accepted += 1 } catch { refused += 1 }
        }
        #expect(accepted > 1_000 && refused > 1_000, "accepted \(accepted), refused \(refused)")
    }
}

/// The endpoint side: pubbot's own offer answered, and the answer read back by the publisher's
/// side — simulcast, RTX, transport-cc and the offer's extension IDs survive the round trip.
@Suite struct WHIPAnswerTests {
    let fp = "sha-256 " + Array(repeating: "CD", count: 32).joined(separator: ":")
    let endpoint = ICECandidate.host(STUNAddress(ip: [127, 0, 0, 1], port: 8080))

    @Test func answersPubbotsOwnOffer() throws {
        let o = offer()
        let a = try WHIPAnswer.answer(
            offer: o.sdp, iceUfrag: "rcvr", icePassword: "receiver-ice-password-22", fingerprint: fp,
            candidates: [endpoint], sessionID: 7)
        #expect(a.remoteUfrag == "pUfr" && a.remotePassword == "publisher-ice-password-1")
        #expect(a.streams.map(\.kind) == [.audio, .video])
        let v = try #require(a.streams.last)
        #expect(v.payloadType == 96 && v.rtxPayloadType == 97 && v.rids == ["q", "h", "f"])
        #expect(v.extensions["urn:ietf:params:rtp-hdrext:sdes:mid"] == 4 && v.extensions.count == 6)
        // The AV1 Dependency Descriptor is read, and two-byte headers with it (RFC 8285 §6).
        #expect(v.extensions[RTPExtension.dependencyDescriptor.uri] == 12)
        let n = try NegotiatedSession.from(answer: a.sdp, offer: o)
        #expect(n.extmapAllowMixed)
        #expect(n.iceLite && n.dtlsServer && n.iceUfrag == "rcvr" && n.candidates == [endpoint])
        #expect(n.video?.simulcast == ["q", "h", "f"] && n.video?.transportCC == true && n.video?.nack == true && n.video?.pli == true)
        #expect(n.audio?.payloadType == 111 && n.audio?.transportCC == true)
    }

    /// What pubbot cannot receive is rejected per section (port 0), or the whole offer with a
    /// reason when nothing is left.
    @Test func rejectsWhatItCannotReceive() throws {
        var o = offer()
        o.rids = []
        let h264 = o.sdp.replacing("opus/48000/2", with: "PCMU/8000")
        #expect(throws: WHIPAnswer.OfferError.self) {
            try WHIPAnswer.answer(
                offer: h264, iceUfrag: "rcvr", icePassword: "receiver-ice-password-22", fingerprint: fp, candidates: [endpoint],
                sessionID: 1)
        }
        let noCreds = offer().sdp.split(separator: "\r\n").filter { !$0.hasPrefix("a=ice-pwd") }.joined(separator: "\r\n")
        do {
            _ = try WHIPAnswer.answer(
                offer: noCreds, iceUfrag: "rcvr", icePassword: "receiver-ice-password-22", fingerprint: fp, candidates: [endpoint],
                sessionID: 1)
            Issue.record("accepted an offer without ICE credentials")
        } catch {
            #expect(error.description.contains("ICE credentials"))
        }
        // Audio in PCMU, video in VP8: the audio section is refused with port 0, video answered.
        let mixed = offer().sdp.replacing("opus/48000/2", with: "PCMU/8000")
        let a = try WHIPAnswer.answer(
            offer: mixed, iceUfrag: "rcvr", icePassword: "receiver-ice-password-22", fingerprint: fp, candidates: [endpoint], sessionID: 1)
        let doc = try SDPDocument.parse(a.sdp)
        #expect(doc.media.map(\.port) == [0, 9] && a.streams.map(\.kind) == [.video])
    }

    /// Mutated offers never crash the answerer: an answer or an OfferError.
    @Test func mutatedOffersNeverCrash() {
        let base = Array(offer().sdp.utf8)
        var state: UInt64 = 99
        func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 11 }
        for _ in 0..<2000 {
            var b = base
            for _ in 0..<(1 + Int(next() % 8)) {
                let i = Int(next() % UInt64(b.count))
                switch next() % 3 {
                case 0: b[i] = UInt8(truncatingIfNeeded: next())
                case 1: b.remove(at: i)
                default: b.insert(b[Int(next() % UInt64(b.count))], at: i)
                }
            }
            _ = try? WHIPAnswer.answer(
                offer: String(decoding: b, as: UTF8.self), iceUfrag: "rcvr", icePassword: "receiver-ice-password-22",
                fingerprint: fp, candidates: [endpoint], sessionID: 1)
        }
    }
}
