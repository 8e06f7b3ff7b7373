import Testing
@testable import ReceiverEngine
@testable import Receiver
import Transport
import RTPCore
import ICE
import DTLS
import WebRTC
import Crypto

/// The receiver as a WHEP subscriber, sans-IO and in virtual time: it offered, so it runs full
/// ICE controlling against a full-ICE server that starts controlling too (RFC 8445 §7.3.1.1 must
/// settle it), DTLS in the role the answer left, and follows the server's own numbers.
@Suite struct WHEPReceiverTests {
    static let sub = STUNAddress(ip: [10, 0, 0, 2], port: 40_000)
    static let srv = STUNAddress(ip: [10, 0, 0, 1], port: 8189)

    @Test(arguments: [UInt64(1), UInt64.max]) func connectsToAFullICEServerAndFollowsItsNumbers(serverTieBreaker: UInt64) throws {
        let hmac: @Sendable ([UInt8], [UInt8]) -> [UInt8] = { Crypto.hmacSHA1(key: $0, data: $1) }
        let subCert = try DTLSCertificate(commonName: "sub"), srvCert = try DTLSCertificate(commonName: "srv")
        let subCreds = ICEAgent.Credentials(ufrag: "subu", password: "subscriber-password-22"),
            srvCreds = ICEAgent.Credentials(ufrag: "srvu", password: "server-password-24-chars")
        // The server offered to Janus-style: full ICE, controlling.
        let sIce = ICEAgent(role: .controlling, local: srvCreds, remote: subCreds, tieBreaker: serverTieBreaker, seed: 4, hmacSHA1: hmac)
        sIce.addLocal(.host(Self.srv))
        sIce.addRemote(.host(Self.sub))
        let server = WebRTCTransport(
            ice: sIce, dtls: try DTLSEndpoint(role: .server, certificate: srvCert, remoteFingerprint: subCert.fingerprint))

        var config = ReceiverConfig(listen: SocketAddress(Self.sub)!, key: .random(suite: .gcm))
        config.webrtc = WebRTCListenConfig(certificate: subCert, local: Self.sub)
        let session = try ReceiverSession(config: config, startMicros: 0, wallOffsetMicros: 0, seed: 9)
        var spec = WebRTCPublisherSpec(
            resource: "/whep/1", localUfrag: subCreds.ufrag, localPassword: subCreds.password, remoteUfrag: srvCreds.ufrag,
            remotePassword: srvCreds.password, remoteFingerprint: srvCert.fingerprint, audioPayloadTypes: [109],
            videoPayloadTypes: [100], rtxPayloadTypes: [101], extensions: RTPExtensionIDs(negotiated: [:]))
        spec.offerer = true
        spec.dtlsServer = false
        spec.remoteCandidates = [.host(Self.srv)]
        session.addPublisher(spec, seed: 1 << 40, now: 0)

        var now: Int64 = 0
        var toSubscriber: [(at: Int64, bytes: [UInt8])] = [], toServer: [(at: Int64, bytes: [UInt8])] = []
        var serverKeys: SRTPKey?
        func deliver() {
            for x in toSubscriber where x.at <= now {
                var b = x.bytes
                b.withUnsafeMutableBytes {
                    session.handleDatagram($0.baseAddress!, length: $0.count, from: SocketAddress(Self.srv), now: now)
                }
            }
            toSubscriber.removeAll { $0.at <= now }
            for x in toServer where x.at <= now { _ = server.handle(x.bytes, from: Self.sub, to: Self.srv, now: now) }
            toServer.removeAll { $0.at <= now }
        }
        while now < 5_000_000 && (serverKeys == nil || session.snapshot(final: false).webrtcPublishers.first?.state != .connected) {
            deliver()
            _ = session.step(now: now)
            session.pollTransmit { b, _ throws(SocketError) in toServer.append((now + 2_000, [UInt8](b))) }
            _ = server.step(now: now)
            while let x = server.pollTransmit() { toSubscriber.append((now + 2_000, x.bytes)) }
            while let e = server.pollEvent() { if case let .connected(_, _, _, send, _) = e { serverKeys = send } }
            now += 1_000
        }
        let state = try #require(session.snapshot(final: false).webrtcPublishers.first)
        #expect(state.state == .connected && serverKeys != nil, "\(state)")
        // Exactly one side ended up controlling, whichever the tie-breakers chose.
        let t = try #require(state.transport)
        #expect(t.iceRole != sIce.role, "subscriber \(t.iceRole), server \(sIce.role)")
        #expect(t.iceMillis != nil && t.dtlsMillis != nil && t.srtpCipher != nil && t.dtlsState == .connected, "\(t)")

        // The server's media with its own payload type (109 for Opus, not pubbot's 111) is taken.
        let out = try SRTPSession(key: try #require(serverKeys), direction: .outbound)
        for seq in UInt16(1)...5 {
            var p =
                [0x80, 109, 0, UInt8(seq), 0, 0, 0, UInt8(seq), 0, 0, 0, 7] + [UInt8](repeating: 0xFC, count: 40)
                + [UInt8](repeating: 0, count: SRTPSession.maxTrailer)
            let n = try p.withUnsafeMutableBytes { try out.protectRTP($0.baseAddress!, length: 52, capacity: $0.count) }
            p.withUnsafeMutableBytes { session.handleDatagram($0.baseAddress!, length: n, from: SocketAddress(Self.srv), now: now) }
            now += 20_000
        }
        let snap = session.snapshot(final: false)
        #expect(snap.streams.count == 1 && snap.streams[0].kind == .audio && snap.streams[0].packetsReceived == 5, "\(snap.rejected)")
    }
}

/// Feedback as an SFU can attribute it: video and audio reports from two SSRCs in two compounds;
/// without RFC 5506 reduced size, a NACK travels behind the video streams' report and SDES.
@Suite struct ReceiverFeedbackShapeTests {
    @Test func reportsPerMediaKindAndCompoundNacks() throws {
        let key = SRTPKey.random(suite: .aesCm)
        let session = try ReceiverSession(
            config: ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 5004), key: key),
            startMicros: 0, wallOffsetMicros: 0, seed: 1)
        let from = try SocketAddress(host: "127.0.0.1", port: 40_000)
        let out = try SRTPSession(key: key, direction: .outbound)
        func send(pt: UInt8, ssrc: UInt8, seq: UInt16, now: Int64) throws {
            let payload: [UInt8] = pt == 96 ? [0x10, 0x00] + [UInt8](repeating: 0x55, count: 30) : [0xFC] + [UInt8](repeating: 1, count: 30)
            var p =
                [0x80, pt, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0, UInt8(seq & 0xFF), 0, 0, 0, ssrc] + payload
                + [UInt8](repeating: 0, count: SRTPSession.maxTrailer)
            let n = try p.withUnsafeMutableBytes { try out.protectRTP($0.baseAddress!, length: 12 + payload.count, capacity: $0.count) }
            p.withUnsafeMutableBytes { session.handleDatagram($0.baseAddress!, length: n, from: from, now: now) }
        }
        let inbound = try SRTPSession(key: key, direction: .inbound)
        func compounds() throws -> [[RTCPPacket]] {
            var all: [[UInt8]] = []
            session.pollTransmit { b, _ throws(SocketError) in all.append([UInt8](b)) }
            return try all.map { d in
                var d = d
                let n = try d.withUnsafeMutableBytes { try inbound.unprotectRTCP($0.baseAddress!, length: $0.count) }
                var it = RTCPCompoundIterator(), packets: [RTCPPacket] = []
                try d.withUnsafeBufferPointer { b in
                    let span = Span(_unsafeElements: UnsafeBufferPointer(rebasing: b[0..<n]))
                    while let p = try it.next(in: span) { packets.append(p) }
                }
                return packets
            }
        }
        for seq in UInt16(1)...3 { try send(pt: 111, ssrc: 0x0A, seq: seq, now: 1_000) }
        for seq: UInt16 in [1, 2, 4] { try send(pt: 96, ssrc: 0x0B, seq: seq, now: 1_000) }
        _ = session.step(now: 2_000)
        var rrs: [(UInt32, [UInt32])] = [], nackCompounds: [[RTCPPacket]] = []
        for c in try compounds() {
            for p in c { if case let .receiverReport(rr) = p { rrs.append((rr.ssrc, rr.reports.map(\.ssrc))) } }
            if c.contains(where: { if case .nack = $0 { true } else { false } }) { nackCompounds.append(c) }
        }
        let video = try #require(rrs.first { $0.1 == [0x0B] }), audio = try #require(rrs.first { $0.1 == [0x0A] }, "\(rrs)")
        #expect(video.0 != audio.0, "one SSRC for both kinds: \(rrs)")
        // Reduced size (pubbot's own sessions negotiate it): the NACK may travel alone.
        #expect(nackCompounds.count == 1 && nackCompounds[0].count == 1)

        // A server that did not negotiate rtcp-rsize (Janus): RR with the video block, SDES, NACK.
        session.peers[0].reducedSizeRTCP = false
        try send(pt: 96, ssrc: 0x0B, seq: 6, now: 30_000)
        _ = session.step(now: 30_000)
        let nack = try #require(try compounds().first { c in c.contains { if case .nack = $0 { true } else { false } } })
        guard case let .receiverReport(rr) = nack.first else { Issue.record("the compound does not start with a report: \(nack)"); return }
        #expect(rr.ssrc == video.0 && rr.reports.map(\.ssrc) == [0x0B])
        #expect(nack.contains { if case .sourceDescription = $0 { true } else { false } })
    }
}

/// A loss too heavy for retransmissions: packets keep coming, no frame completes (so none is
/// ever dropped either). The stream must still ask for a key frame and show the freeze live.
@Suite struct StalledStreamTests {
    @Test func asksForAKeyFrameAndCountsTheFreezeWhileItLasts() {
        let s = ReceiveStream(ssrc: 1, kind: .video, payloadType: 96, decodeVideo: true)
        var t: Int64 = 1_000_000
        s.stats.firstPacketMicros = t
        for _ in 0..<30 { t += 33_333; s.rendered(at: t); s.lastFrameOutMicros = t } // 30 fps, then nothing renders
        s.wantsKeyFrame = false
        let lastRender = t
        var askedAt: Int64?, frozeAt: Int64?
        while t < lastRender + 2_000_000 {
            t += 20_000
            s.stats.lastPacketMicros = t // packets arrive; no frame comes out of them
            s.releaseFrames(nowMicros: t, wallMicros: t)
            if s.wantsKeyFrame && askedAt == nil { askedAt = t }
            if s.stats.freezeCount == 1 && frozeAt == nil { frozeAt = t }
        }
        // The freeze shows once the gap reaches max(3 × 33 ms, 33 ms + 150 ms); the key frame is
        // asked for after five hold times (1 s) without a frame.
        #expect(
            frozeAt.map { $0 - lastRender } ?? 0 >= 183_000 && frozeAt.map { $0 - lastRender } ?? .max <= 220_000,
            "\(String(describing: frozeAt))")
        #expect(
            askedAt.map { $0 - lastRender } ?? 0 >= 1_000_000 && askedAt.map { $0 - lastRender } ?? .max <= 1_040_000,
            "\(String(describing: askedAt))")
        #expect(s.stats.freezeCount == 1 && s.stats.totalFreezesDurationMillis == 0)
        // The next rendered frame ends it: one freeze, its whole length.
        t += 10_000
        s.rendered(at: t)
        #expect(s.stats.freezeCount == 1 && abs(s.stats.totalFreezesDurationMillis - Double(t - lastRender) / 1000) < 0.01)
    }
}

/// A server that negotiated goog-remb and no transport-cc: the receiver estimates and reports in
/// REMB (draft-alvestrand-rmcat-remb), naming the media SSRCs.
@Suite struct ReceiverRembTests {
    @Test func sendsRembWhenThatIsWhatWasNegotiated() throws {
        let key = SRTPKey.random(suite: .aesCm)
        let session = try ReceiverSession(
            config: ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 5004), key: key),
            startMicros: 0, wallOffsetMicros: 0, seed: 1)
        let from = try SocketAddress(host: "127.0.0.1", port: 40_000)
        let out = try SRTPSession(key: key, direction: .outbound), inbound = try SRTPSession(key: key, direction: .inbound)
        var rembs: [ReceiverEstimatedMaxBitrate] = []
        var transportCC = 0
        // 1.5 s of 1200-byte VP8 packets at ~1 Mbit/s with abs-send-time (one-byte ID 2).
        var now: Int64 = 0
        for seq in UInt16(1)...160 {
            let abs = UInt32((now << 18) / 1_000_000) & 0xFF_FFFF
            let payload: [UInt8] = [0x10, 0x00] + [UInt8](repeating: 0x55, count: 1178)
            var p: [UInt8] = [
                0x90, 96, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0, 1, 0, 0, 0, 0x0B, 0xBE, 0xDE, 0, 1, 0x22, UInt8(abs >> 16),
                UInt8((abs >> 8) & 0xFF), UInt8(abs & 0xFF)
            ]
            p += payload + [UInt8](repeating: 0, count: SRTPSession.maxTrailer)
            let n = try p.withUnsafeMutableBytes { try out.protectRTP($0.baseAddress!, length: 20 + payload.count, capacity: $0.count) }
            p.withUnsafeMutableBytes { session.handleDatagram($0.baseAddress!, length: n, from: from, now: now + 5_000) }
            if seq == 1 { session.peers[0].negotiated = NegotiatedFeedback(transportCC: false, remb: true) }
            _ = session.step(now: now + 5_000)
            var all: [[UInt8]] = []
            session.pollTransmit { b, _ throws(SocketError) in all.append([UInt8](b)) }
            for var d in all {
                let len = try d.withUnsafeMutableBytes { try inbound.unprotectRTCP($0.baseAddress!, length: $0.count) }
                var it = RTCPCompoundIterator()
                try d.withUnsafeBufferPointer { b in
                    let span = Span(_unsafeElements: UnsafeBufferPointer(rebasing: b[0..<len]))
                    while let p = try it.next(in: span) {
                        if case let .remb(r) = p { rembs.append(r) }
                        if case .transportFeedback = p { transportCC += 1 }
                    }
                }
            }
            now += 9_600
        }
        let last = try #require(rembs.last, "no REMB after 1.5 s")
        #expect(last.ssrcs == [0x0B] && last.bitrate >= 900_000 && last.bitrate <= 1_600_000, "\(last)")
        #expect(transportCC == 0) // not negotiated: not sent
        #expect(session.snapshot(final: false).rembSent == rembs.count)
    }
}
