import Testing
@testable import PublisherEngine
@testable import PublisherCore
import Transport
import RTPCore
import MediaCodecs
import WebRTC
import ICE
import DTLS
import Crypto

/// The publisher session with a WebRTC transport inside, against a server transport (ICE-lite,
/// DTLS client — what Janus answers) over a virtual wire: media waits for ICE and DTLS, then
/// goes out under the exported keys with the answer's payload types and extension IDs.
@Suite struct WebRTCSessionTests {
    static let pub = STUNAddress(ip: [10, 0, 0, 2], port: 40_000)
    static let srv = STUNAddress(ip: [10, 0, 0, 1], port: 8189)

    struct Rig {
        let session: PublisherSession
        let plan: StreamPlan
        let server: WebRTCTransport
        var now: Int64 = 0
        var inFlight: [(at: Int64, bytes: [UInt8], toServer: Bool)] = []
        /// Media the server got (SRTP, still protected).
        var media: [[UInt8]] = []
        var serverEvents: [WebRTCTransport.Event] = []
        var dropDTLSToPublisher = false
        /// The server goes silent (everything it sends is lost) from this time on.
        var silentFrom: Int64 = .max

        init(configure: (inout PublisherConfig) -> Void = { _ in }) throws {
            let hmac: @Sendable ([UInt8], [UInt8]) -> [UInt8] = { Crypto.hmacSHA1(key: $0, data: $1) }
            let pc = try DTLSCertificate(commonName: "pub"), sc = try DTLSCertificate(commonName: "srv")
            let pCreds = ICEAgent.Credentials(ufrag: "pubu", password: "publisher-password-22ch"),
                sCreds = ICEAgent.Credentials(ufrag: "srvu", password: "server-password-24-chars")
            let pIce = ICEAgent(role: .controlling, local: pCreds, remote: sCreds, tieBreaker: 1, seed: 3, hmacSHA1: hmac)
            pIce.addLocal(.host(WebRTCSessionTests.pub))
            pIce.addRemote(.host(WebRTCSessionTests.srv))
            let sIce = ICEAgent(role: .controlled, local: sCreds, remote: pCreds, tieBreaker: 2, lite: true, seed: 4, hmacSHA1: hmac)
            sIce.addLocal(.host(WebRTCSessionTests.srv))
            server = WebRTCTransport(ice: sIce, dtls: try DTLSEndpoint(role: .client, certificate: sc, remoteFingerprint: pc.fingerprint))
            let transport = WebRTCTransport(
                ice: pIce, dtls: try DTLSEndpoint(role: .server, certificate: pc, remoteFingerprint: sc.fingerprint))
            // Placeholder destination and key: the transport replaces both.
            var c = PublisherConfig(
                destination: try SocketAddress(host: "10.0.0.1", port: 8189), layers: [.defaults(width: 320, height: 180, rid: "q")],
                key: .random(suite: .gcm))
            c.seed = 5
            configure(&c)
            var seed = SplitMix64(seed: 5)
            plan = StreamPlan(config: c, ssrcs: [11, 22, 33], random: { seed.next() })
            session = try PublisherSession(
                config: c, plan: plan, startMicros: 0, wallOffsetMicros: 0, webrtc: (transport, WebRTCSessionTests.pub))
            session.begin(now: 0)
        }

        /// Runs the wire (5 ms each way) until `until`, feeding 20 ms audio and 33 ms video frames.
        mutating func run(until: Int64, frames: Bool = true) {
            var nextAudio = now, nextVideo = now, frame: UInt32 = 0
            while now < until {
                if frames && now >= nextAudio {
                    session.handle(
                        .audio(
                            EncodedAudioFrame(
                                bytes: [0xFC] + [UInt8](repeating: 1, count: 60), frameNumber: UInt32(now / 20_000), captureMicros: now)))
                    nextAudio += 20_000
                }
                if frames && now >= nextVideo {
                    // Every layer the media side would encode (all key frames: any may start a switch).
                    for (layer, l) in session.config.layers.enumerated() {
                        session.handle(
                            .video(
                                EncodedVideoFrame(
                                    layer: layer,
                                    bytes: [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x40, 0x01, 0xB4, 0x00]
                                        + [UInt8](repeating: UInt8(layer), count: 1500),
                                    isKeyFrame: true, width: l.width, height: l.height, frameNumber: frame, captureMicros: now,
                                    temporalID: nil, layerSync: false, encodeMicros: 0)))
                    }
                    frame += 1
                    nextVideo += 33_333
                }
                var wake = min(until, nextAudio, nextVideo)
                if let w = session.step(now: now) { wake = min(wake, w) }
                let t = now
                session.pollTransmit { ptrs, lens, n, to throws(SocketError) in
                    #expect(to.description == "10.0.0.1:8189")
                    for i in 0..<n {
                        inFlight.append((t + 5_000, [UInt8](UnsafeRawBufferPointer(start: ptrs[i]!, count: Int(lens[i]))), true))
                    }
                    return n
                }
                if let w = server.step(now: now) { wake = min(wake, w) }
                while let x = server.pollTransmit() {
                    if dropDTLSToPublisher && (20...63).contains(x.bytes[0]) { continue }
                    if now >= silentFrom { continue }
                    inFlight.append((now + 5_000, x.bytes, false))
                }
                while let e = server.pollEvent() { serverEvents.append(e) }
                inFlight.sort { $0.at < $1.at }
                while let f = inFlight.first, f.at <= now {
                    inFlight.removeFirst()
                    if f.toServer {
                        if let m = server.handle(f.bytes, from: WebRTCSessionTests.pub, to: WebRTCSessionTests.srv, now: now) {
                            media.append(m)
                        }
                    } else {
                        var b = f.bytes
                        b.withUnsafeMutableBytes {
                            session.handleDatagram($0.baseAddress!, length: $0.count, from: SocketAddress(WebRTCSessionTests.srv), now: now)
                        }
                    }
                }
                while let e = server.pollEvent() { serverEvents.append(e) }
                if let f = inFlight.first { wake = min(wake, f.at) }
                now = max(now + 1, wake)
            }
        }

        var serverKeys: (send: SRTPKey, receive: SRTPKey)? {
            for e in serverEvents { if case let .connected(_, _, _, send, receive) = e { return (send, receive) } }
            return nil
        }
    }

    /// Media waits for ICE and DTLS; then every packet decrypts with the server's keys and carries
    /// the answer's payload types and header-extension IDs, not pubbot's own.
    @Test func mediaFollowsTheAnswer() throws {
        var rig = try Rig { c in
            c.audioPayloadType = 109
            c.videoPayloadType = 100
            c.rtxPayloadType = 101
            let ids = RTPExtensionIDs(mid: 1, rid: 9, repairedRid: 12, absSendTime: nil, transportSequence: 5)
            c.audioExtensions = ids
            c.videoExtensions = ids
        }
        rig.run(until: 1_500_000)
        let status = try #require(rig.session.statistics.1.transport)
        #expect(status.iceState == .connected && status.dtlsState == .connected && status.srtpCipher == "AEAD_AES_128_GCM", "\(status)")
        #expect(status.localCandidateType == "host" && status.remoteAddress == "10.0.0.1:8189")
        let ice = try #require(status.iceDurationMs), dtls = try #require(status.dtlsDurationMs)
        #expect(ice >= 10 && ice < 100 && dtls >= 10 && dtls < 100, "ICE \(ice) ms, DTLS \(dtls) ms")
        #expect(rig.session.statistics.1.framesBeforeConnected > 0)
        let keys = try #require(rig.serverKeys)
        let rx = try SRTPSession(key: keys.receive, direction: .inbound)
        var rtp = 0, seen: [UInt8: Set<UInt8>] = [:]
        for var m in rig.media where RTPDemux.classify(m.span) == .rtp {
            let n = try m.withUnsafeMutableBytes { try rx.unprotectRTP($0.baseAddress!, length: $0.count) }
            let h = try RTPHeader.parse(m.span.extracting(0..<n))
            var it = h.extensions()
            var ids = Set<UInt8>()
            while let e = try it.next(in: m.span) { ids.insert(e.id) }
            seen[h.payloadType, default: []].formUnion(ids)
            rtp += 1
        }
        #expect(rtp > 40, "\(rtp) RTP packets")
        #expect(Set(seen.keys).isSubset(of: [109, 100, 101]) && seen[109] != nil && seen[100] != nil, "\(seen)")
        #expect(seen[109] == [1, 5] && seen[100] == [1, 5, 9], "extension IDs \(seen)")
    }

    /// Only goog-remb negotiated: the estimate follows the receiver's REMB (and no probing).
    @Test func rembDrivesTheEstimate() throws {
        var rig = try Rig { c in c.feedback = .remb }
        rig.run(until: 1_000_000)
        let keys = try #require(rig.serverKeys)
        let tx = try SRTPSession(key: keys.send, direction: .outbound)
        var buffer = [UInt8](repeating: 0, count: 200)
        let n = try buffer.withUnsafeMutableBytes { raw in
            var w = ByteWriter(raw)
            try ReceiverEstimatedMaxBitrate(senderSSRC: 1, bitrate: 150_000, ssrcs: [22]).write(to: &w)
            return try tx.protectRTCP(raw.baseAddress!, length: w.count, capacity: raw.count)
        }
        rig.inFlight.append((rig.now, Array(buffer[0..<n]), false))
        rig.run(until: 1_500_000)
        let net = rig.session.statistics.1
        #expect(net.rembReceived == 1 && net.estimate?.bitrate == 150_000, "\(String(describing: net.estimate))")
    }

    /// Simulcast refused: one SSRC, no RID, carrying the best layer the estimate allows, moving
    /// up only at libwebrtc's singlecast start rate for the size (360p: 300 kbps of video, 720p:
    /// 900 kbps) — the REMB at 600 kbps carries 360p, not 720p; at 100 kbps only 180p.
    @Test func singleEncodingFollowsTheEstimate() throws {
        var rig = try Rig { c in
            c.layers = VideoLayerConfig.ladder(top: 1280, 720)
            c.singleEncoding = true
            c.sendRIDs = false
            c.feedback = .remb
            c.startBitrate = 600_000 // the loss-based bound starts here (no receiver reports in this rig)
        }
        var tx: SRTPSession?
        func remb(_ bps: UInt64) throws {
            // One SRTCP context for the run (a new one would repeat SRTCP indices: replays).
            if tx == nil { tx = try SRTPSession(key: try #require(rig.serverKeys).send, direction: .outbound) }
            let tx = tx!
            var buffer = [UInt8](repeating: 0, count: 200)
            let n = try buffer.withUnsafeMutableBytes { raw in
                var w = ByteWriter(raw)
                try ReceiverEstimatedMaxBitrate(senderSSRC: 1, bitrate: bps, ssrcs: [22]).write(to: &w)
                return try tx.protectRTCP(raw.baseAddress!, length: w.count, capacity: raw.count)
            }
            rig.inFlight.append((rig.now, Array(buffer[0..<n]), false))
        }
        func layerOnTheWire(since: Int) throws -> (ssrcs: Set<UInt32>, fill: Set<UInt8>) {
            let rx = try SRTPSession(key: try #require(rig.serverKeys).receive, direction: .inbound)
            var ssrcs = Set<UInt32>(), fill = Set<UInt8>()
            for var m in rig.media.dropFirst(since) where RTPDemux.classify(m.span) == .rtp {
                guard let n = try? m.withUnsafeMutableBytes({ try rx.unprotectRTP($0.baseAddress!, length: $0.count) }) else { continue }
                let h = try RTPHeader.parse(m.span.extracting(0..<n))
                if h.payloadType == 96 && h.payloadRange.count > 100 { ssrcs.insert(h.ssrc); fill.insert(m[h.payloadRange.upperBound - 1]) }
            }
            return (ssrcs, fill)
        }
        rig.run(until: 500_000)
        try remb(600_000)
        rig.run(until: 1_500_000)
        var mark = rig.media.count
        rig.run(until: 2_500_000)
        let mid = try layerOnTheWire(since: mark)
        #expect(mid.ssrcs.count == 1 && mid.fill == [1], "360p is layer 1: \(mid)")
        #expect(rig.session.statistics.0.first { $0.kind == .video }?.height == 360)
        try remb(100_000)
        rig.run(until: 3_500_000)
        mark = rig.media.count
        rig.run(until: 4_500_000)
        let low = try layerOnTheWire(since: mark)
        #expect(low.ssrcs == mid.ssrcs && low.fill == [0], "180p is layer 0: \(low)")
        #expect(rig.session.statistics.0.filter { $0.kind == .video }.count == 1)
    }

    /// The server stops answering after 2 s (consent checks unanswered, RFC 7675): the session
    /// ends by itself within the 30 s consent timeout and says why; garbage on the socket before
    /// that is counted and dropped.
    @Test func lostConsentEndsTheSession() throws {
        var rig = try Rig()
        rig.silentFrom = 2_000_000
        rig.run(until: 1_000_000)
        for junk: [UInt8] in [
            [0x40, 1, 2, 3], [0xFF] + Array(repeating: 0, count: 40), [2, 0, 0, 8] + Array(repeating: 0xAA, count: 20), [23, 254, 253, 0, 0]
        ] {
            var b = junk
            b.withUnsafeMutableBytes {
                rig.session.handleDatagram($0.baseAddress!, length: $0.count, from: SocketAddress(WebRTCSessionTests.srv), now: rig.now)
            }
        }
        // Each where it belongs (RFC 7983): not-RTP bytes at the session, ChannelData-range bytes
        // without TURN and STUN-range bytes that are not STUN at the transport.
        #expect(rig.session.statistics.1.rtcpRejected >= 1)
        #expect(rig.session.webrtc!.unknownDatagrams >= 2, "ChannelData-range bytes without TURN, and STUN-range bytes without the cookie")
        rig.run(until: 40_000_000)
        let net = rig.session.statistics.1
        #expect(
            net.transport?.failure?.layer == .ice && net.transport?.failure?.reason.contains("consent lost") == true,
            "\(String(describing: net.transport))")
        #expect(rig.session.step(now: rig.now) == nil)
    }

    /// The server answers ICE but never DTLS: the session fails within the DTLS deadline and says
    /// so, sending no media.
    @Test func silentDTLSPeerFailsInBoundedTime() throws {
        var rig = try Rig()
        rig.dropDTLSToPublisher = true
        rig.server.dtlsTimeoutMicros = 60_000_000
        rig.run(until: 12_000_000)
        let net = rig.session.statistics.1
        #expect(
            net.transport?.failure?.layer == .dtls
                && net.transport?.failure?.reason.contains("DTLS handshake did not finish within 10 s") == true,
            "\(String(describing: net.transport))")
        #expect(rig.session.step(now: rig.now) == nil)
        #expect(rig.session.statistics.0.allSatisfy { $0.packetsSent == 0 })
    }
}
