import Testing
@testable import PublisherEngine
@testable import PublisherCore
import Transport
@testable import RTPCore
import Signalling
import MediaCodecs
import Platform

@Suite struct StreamPlanTests {
    func config(bundle: Bool) throws -> PublisherConfig {
        var c = PublisherConfig(destination: try SocketAddress(parsing: "127.0.0.1:5004"), key: .random(suite: .aesCm))
        c.bundle = bundle
        return c
    }

    @Test func bundlePutsEverythingOnOnePort() throws {
        let plan = StreamPlan(config: try config(bundle: true))
        #expect(plan.streams.map(\.kind) == [.audio, .video, .video, .video])
        #expect(Set(plan.streams.map(\.port)) == [5004])
        #expect(plan.streams.map(\.mid) == ["0", "1", "1", "1"])
        #expect(plan.streams.compactMap(\.rid) == ["q", "h", "f"])
        #expect(Set(plan.streams.map(\.ssrc)).count == 4)
        let sdp = plan.sessionDescription()
        #expect(sdp.bundle && sdp.media.count == 2)
        #expect(sdp.media[1].rids == ["q", "h", "f"] && sdp.media[1].ssrcs.count == 3)
        #expect(sdp.media.allSatisfy { $0.crypto?.suite == "AES_CM_128_HMAC_SHA1_80" && $0.rtcpMux })
        #expect(sdp.render().contains("a=simulcast:send q;h;f"))
    }

    @Test func noBundleGivesEachStreamItsOwnPorts() throws {
        let plan = StreamPlan(config: try config(bundle: false))
        #expect(plan.streams.map(\.port) == [5004, 5006, 5008, 5010])
        #expect(plan.streams.map { $0.rtcpDestination.port } == [5005, 5007, 5009, 5011])
        let sdp = plan.sessionDescription()
        #expect(!sdp.bundle && sdp.media.count == 4)
        #expect(sdp.media.allSatisfy { $0.crypto != nil && !$0.rtcpMux && $0.rids.isEmpty && $0.ssrcs.count == 1 })
        #expect(try SessionDescription.parse(sdp.render()) == sdp)
    }

    @Test func mailboxIsBounded() throws {
        let m = try FrameMailbox(capacity: 4)
        for i in 0..<10 { m.push(.audio(EncodedAudioFrame(bytes: [1], frameNumber: UInt32(i), captureMicros: 0))) }
        var out: [FrameMailbox.Item] = []
        m.drain(into: &out)
        #expect(out.count == 4 && m.droppedCount == 6)
        if case let .audio(f) = out[0] { #expect(f.frameNumber == 6) } else { Issue.record("expected audio") }
    }
}

/// The publisher on its own: what reaches a plain UDP socket must be valid SRTP carrying
/// well-formed RTP, with continuous sequence numbers, markers, sender reports and a BYE.
@Suite(.serialized) struct PublisherWireTests {
    @Test func sendsWellFormedSRTP() throws {
        let sink = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let key = SRTPKey.random(suite: .aesCm)
        var c = PublisherConfig(
            destination: sink.localAddress, layers: [.defaults(width: 320, height: 180, temporalLayers: 3, rid: "q")], key: key)
        c.durationMicros = 1_500_000
        c.reportIntervalMicros = 300_000
        c.congestionControl = false // a plain socket sends no feedback: test the wire format alone
        let p = try Publisher(config: c)
        p.start()
        let srtp = try SRTPSession(key: key, direction: .inbound)
        let inbox = PacketBatch(capacity: 32)
        var lastSeq: [UInt32: UInt16] = [:]
        var gaps = 0, rtp = 0, markers = 0, srs = 0, byes = 0, tids = Set<UInt8>()
        let begin = Clock.monotonicMicros()
        let deadline = begin + 4_000_000
        var requested = false
        while byes == 0 && Clock.monotonicMicros() < deadline {
            if !requested && Clock.monotonicMicros() - begin > 600_000 {
                requested = true
                p.control.requestKeyFrame(layer: 0)
                p.control.setTargetBitrate(layer: 0, bps: 100_000)
            }
            _ = sink.wait(timeoutMicros: 50_000)
            let n = try sink.receive(into: inbox)
            for i in 0..<n {
                let ptr = inbox.slot(i).baseAddress!
                let bytes = ptr.assumingMemoryBound(to: UInt8.self)
                if RTPDemux.classify(Span(_unsafeStart: bytes, count: 2)) == .rtcp {
                    let len = try srtp.unprotectRTCP(ptr, length: Int(inbox.lengths[i]))
                    var it = RTCPCompoundIterator()
                    let span = Span(_unsafeStart: bytes, count: len)
                    while let pkt = try it.next(in: span) {
                        if case .senderReport = pkt { srs += 1 }
                        if case .goodbye = pkt { byes += 1 }
                    }
                    continue
                }
                let len = try srtp.unprotectRTP(ptr, length: Int(inbox.lengths[i]))
                let span = Span(_unsafeStart: bytes, count: len)
                let h = try RTPHeader.parse(span)
                let ext = try RTPExtensionValues.parse(span, header: h)
                #expect(ext.mid != nil && ext.transportSequenceNumber != nil && ext.absSendTime != nil)
                if let last = lastSeq[h.ssrc], last &+ 1 != h.sequenceNumber { gaps += 1 }
                lastSeq[h.ssrc] = h.sequenceNumber
                rtp += 1
                if h.payloadType == 96 {
                    if h.marker { markers += 1 }
                    #expect(ext.rid == "q")
                    let (d, _) = try VP8PayloadDescriptor.parse(span.extracting(h.payloadRange))
                    if let t = d.temporalID { tids.insert(t) }
                    #expect(d.pictureID != nil && d.tl0PicIdx != nil)
                }
            }
        }
        p.wait()
        #expect(rtp > 100 && gaps == 0)
        #expect(markers >= 40) // one per video frame
        #expect(tids == [0, 1, 2])
        #expect(srs >= 2 && byes >= 1)
        let snap = p.snapshot()
        #expect(snap.network.byeSent && snap.network.sendErrors == 0)
        #expect(snap.streams.reduce(0) { $0 + $1.packetsSent } == rtp)
        let video = try #require(snap.streams.first { $0.kind == .video })
        #expect(video.keyFramesSent == 2) // the first frame and the requested one
        #expect(video.targetBitrate == 100_000)
    }
}

/// PLI and FIR from a receiver turn into key frames on the layer they name.
@Suite(.serialized) struct KeyFrameRequestTests {
    @Test func answersPLIAndFIRWithKeyFrames() throws {
        let sink = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let key = SRTPKey.random(suite: .gcm)
        var c = PublisherConfig(destination: sink.localAddress, layers: [.defaults(width: 320, height: 180, rid: "q")], key: key)
        c.durationMicros = 2_000_000
        c.sendAudio = false
        c.congestionControl = false
        let p = try Publisher(config: c)
        let media = try #require(p.plan.streams.first { $0.kind == .video }?.ssrc)
        let publisher = try SocketAddress(host: "127.0.0.1", port: p.localAddress.port)
        let srtcp = try SRTPSession(key: key, direction: .outbound)
        func send(_ write: (inout ByteWriter) throws(RTPWriteError) -> Void) throws {
            var buf = [UInt8](repeating: 0, count: 300)
            var n = 0
            try buf.withUnsafeMutableBytes { raw in
                var w = ByteWriter(raw)
                try ReceiverReport(ssrc: 77).write(to: &w)
                try write(&w)
                n = try srtcp.protectRTCP(raw.baseAddress!, length: w.count, capacity: raw.count)
            }
            try buf.withUnsafeBytes { try sink.send(UnsafeRawBufferPointer(rebasing: $0[0..<n]), to: publisher) }
        }
        p.start()
        Clock.sleep(micros: 600_000)
        try send { w throws(RTPWriteError) in try PictureLossIndication(senderSSRC: 77, mediaSSRC: media).write(to: &w) }
        Clock.sleep(micros: 600_000)
        try send { w throws(RTPWriteError) in
            try FullIntraRequest(senderSSRC: 77, entries: [(ssrc: media, sequenceNumber: 1)]).write(to: &w)
        }
        p.wait()
        let video = try #require(p.snapshot().streams.first { $0.ssrc == media })
        #expect(video.pliReceived == 1 && video.firReceived == 1)
        #expect(video.keyFramesSent == 3) // the first frame, then one per request
    }
}

@Suite struct FrameRingTests {
    /// Regression: once full, the ring renumbered its frames and live bots stopped receiving.
    @Test func numbersStayContinuousPastTheDepth() {
        var r = FrameRing<Int>()
        var next = 0
        var got: [Int] = []
        for v in 0..<500 {
            r.append(v)
            if v % 7 == 0 { let (items, n) = r.since(next); got += items; next = n }
        }
        let (rest, n) = r.since(next)
        got += rest
        #expect(got == Array(0..<500) && n == 500)
        #expect(r.since(0).0 == Array(436..<500)) // older than the depth: only the last 64
        #expect(r.since(.max).0.isEmpty && r.since(.max).1 == 500)
    }
}

/// The publisher session alone, sans-IO: frames, datagrams and the time in, datagrams out.
@Suite struct PublisherSessionTests {
    /// One 360p layer, no audio, no congestion control, begun at 0.
    static func videoOnlySession() throws -> PublisherSession {
        var c = PublisherConfig(
            destination: try SocketAddress(host: "127.0.0.1", port: 5004), layers: [.defaults(width: 640, height: 360, rid: "h")],
            key: SRTPKey.random(suite: .aesCm))
        c.sendAudio = false
        c.congestionControl = false
        let session = try PublisherSession(config: c, plan: StreamPlan(config: c), startMicros: 0, wallOffsetMicros: 0)
        session.begin(now: 0)
        return session
    }

    /// A socket that refuses part of a batch (a full buffer, or ENOBUFS from a full qdisc):
    /// what it refused waits in the outbox and goes next, in order — none dropped by the session,
    /// none sent twice — and the waits are counted apart from errors and loss.
    @Test func refusedDatagramsWaitAndGoOnceInOrder() throws {
        let session = try Self.videoOnlySession()
        var sent: [UInt16] = []
        /// An RTP packet's sequence number (RTCP, its second byte 200–207, is not counted).
        func record(_ p: UnsafeMutableRawPointer) {
            let b = p.assumingMemoryBound(to: UInt8.self)
            if !(200...207).contains(b[1]) { sent.append(UInt16(b[2]) << 8 | UInt16(b[3])) }
        }
        var refuse = true
        var now: Int64 = 0
        for frame in 0..<6 {
            session.handle(
                .video(
                    EncodedVideoFrame(
                        layer: 0,
                        bytes: [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0x68, 0x01]
                            + [UInt8](repeating: UInt8(frame), count: 6_000),
                        isKeyFrame: frame == 0, width: 640, height: 360, frameNumber: UInt32(frame), captureMicros: now,
                        temporalID: nil, layerSync: false, encodeMicros: 0)))
            for _ in 0..<5 {
                _ = session.step(now: now)
                session.pollTransmit { ptrs, _, n, _ throws(SocketError) in
                    // Every other call the socket takes only half the datagrams (none of one).
                    let take = refuse ? n / 2 : n
                    refuse.toggle()
                    for i in 0..<take { record(ptrs[i]!) }
                    return take
                }
                now += 5_000
            }
        }
        for _ in 0..<20 {
            _ = session.step(now: now)
            session.pollTransmit { ptrs, _, n, _ throws(SocketError) in
                for i in 0..<n { record(ptrs[i]!) }
                return n
            }
            now += 5_000
        }
        let stats = session.statistics
        #expect(
            stats.1.sendDeferred > 0 && stats.1.sendBlocked > 0 && stats.1.sendErrors == 0 && stats.1.sendBufferDrops == 0,
            "\(stats.1) sent \(sent.count) of \(stats.0[0].packetsSent)")
        #expect(Set(sent).count == sent.count, "a datagram went twice")
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "out of order or missing: \(sent.prefix(40))")
        #expect(sent.count == stats.0[0].packetsSent && sent.count >= 30, "\(sent.count) \(stats.0[0].packetsSent) \(sent)")
    }

    /// Control goes ahead of media the socket deferred: a sender report queued behind a backlog
    /// would time that wait into the RTT every receiver report computes from it (it read 1.5 s
    /// behind a full qdisc whose queue held 130 ms).
    @Test func senderReportsGoAheadOfDeferredMedia() throws {
        let session = try Self.videoOnlySession()
        var now: Int64 = 0
        var order: [Bool] = [] // true: RTCP
        // The socket refuses everything for 3 s of frames: media piles up, reports fall due.
        for frame in 0..<90 {
            session.handle(
                .video(
                    EncodedVideoFrame(
                        layer: 0,
                        bytes: [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0x68, 0x01]
                            + [UInt8](repeating: UInt8(frame & 0xFF), count: 600),
                        isKeyFrame: frame == 0, width: 640, height: 360, frameNumber: UInt32(frame), captureMicros: now,
                        temporalID: nil, layerSync: false, encodeMicros: 0)))
            _ = session.step(now: now)
            session.pollTransmit { _, _, _, _ throws(SocketError) in 0 }
            now += 33_333
        }
        #expect(session.hasDeferredTransmit)
        // Then it takes one datagram a call: the reports come first, media after, in order.
        for _ in 0..<400 where session.hasDeferredTransmit {
            session.pollTransmit { ptrs, _, n, _ throws(SocketError) in
                let b = ptrs[0]!.assumingMemoryBound(to: UInt8.self)
                order.append((200...207).contains(b[1]))
                return 1
            }
        }
        let reports = order.filter { $0 }.count
        #expect(reports >= 2, "\(reports) reports in \(order.count) datagrams")
        #expect(order.prefix(reports).allSatisfy { $0 } && order.count > reports, "\(order.prefix(20))")
    }

    /// A stream starts on the wire with a key frame: a delta frame that reaches the session
    /// first (encoded before the transport connected, still in flight when it did) is not sent —
    /// a receiver could not decode it nor anything after it up to the next key frame — and the
    /// key frame is asked for.
    @Test func aStreamStartsWithItsKeyFrame() throws {
        let session = try Self.videoOnlySession()
        var packets = 0
        var now: Int64 = 0
        var requests = 0
        for (frame, key) in [false, false, true, false].enumerated() {
            session.handle(
                .video(
                    EncodedVideoFrame(
                        layer: 0,
                        bytes: [key ? 0x10 : 0x11, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0x68, 0x01]
                            + [UInt8](repeating: 1, count: 2_000),
                        isKeyFrame: key, width: 640, height: 360, frameNumber: UInt32(frame), captureMicros: now,
                        temporalID: nil, layerSync: false, encodeMicros: 0)))
            for _ in 0..<10 {
                _ = session.step(now: now)
                session.pollTransmit { ptrs, _, n, _ throws(SocketError) in
                    for i in 0..<n where !(200...207).contains(ptrs[i]!.assumingMemoryBound(to: UInt8.self)[1]) { packets += 1 }
                    return n
                }
                now += 5_000
            }
            while let e = session.pollEvent() { if case .keyFrameRequest(layer: 0) = e { requests += 1 } }
            if frame == 1 { #expect(packets == 0 && requests >= 1) }
        }
        let (streams, counters) = session.statistics
        #expect(streams[0].framesSent == 2 && streams[0].keyFramesSent == 1, "\(streams[0])")
        #expect(counters.framesBeforeConnected == 2 && packets == streams[0].packetsSent && packets >= 4)
    }

    /// PLIs: the first is answered at once; those inside the next 300 ms (libwebrtc's minimum
    /// key-frame interval) make one more request when the interval ends, not one each and not
    /// none — a server repeating its request with every packet (Janus 1.1.2) costs one key
    /// frame per interval, one asking once (pion) still gets its key frame.
    @Test func keyFrameRequestsInsideTheIntervalAreDeferredNotDropped() throws {
        var c = PublisherConfig(
            destination: try SocketAddress(host: "127.0.0.1", port: 5004), layers: [.defaults(width: 640, height: 360, rid: "h")],
            key: SRTPKey.random(suite: .aesCm))
        c.sendAudio = false
        c.congestionControl = false
        let plan = StreamPlan(config: c)
        let session = try PublisherSession(config: c, plan: plan, startMicros: 0, wallOffsetMicros: 0)
        session.begin(now: 0)
        let srtcp = try SRTPSession(key: c.key, direction: .outbound)
        var buffer = [UInt8](repeating: 0, count: 1500)
        func pli(at now: Int64) throws {
            let n = try buffer.withUnsafeMutableBytes { raw in
                var w = ByteWriter(raw)
                try PictureLossIndication(senderSSRC: 1, mediaSSRC: plan.streams[0].ssrc).write(to: &w)
                return try srtcp.protectRTCP(raw.baseAddress!, length: w.count, capacity: raw.count)
            }
            buffer.withUnsafeMutableBytes { session.handleDatagram($0.baseAddress!, length: n, now: now) }
        }
        var requests: [Int64] = []
        var now: Int64 = 0
        func run(until end: Int64, pliEvery: Int64?) throws {
            while now < end {
                if let p = pliEvery, now % p == 0 { try pli(at: now) }
                let wake = session.step(now: now) ?? end
                while let e = session.pollEvent() { if case .keyFrameRequest(layer: 0) = e { requests.append(now) } }
                session.pollTransmit { _, _, n, _ throws(SocketError) in n }
                now = min(now + 5_000, max(now + 1, wake))
            }
        }
        try run(until: 1_000_000, pliEvery: 10_000) // a request with every packet for a second
        #expect(session.statistics.0[0].pliReceived == 100)
        #expect(requests.count == 4, "\(requests)") // at 0, 300, 600 and 900 ms
        #expect(zip(requests, requests.dropFirst()).allSatisfy { $1 - $0 >= 300_000 && $1 - $0 <= 310_000 }, "\(requests)")
        requests.removeAll()
        try run(until: 1_500_000, pliEvery: nil)
        try pli(at: now) // one more, alone, 600 ms after the last request: answered at once
        try run(until: 2_000_000, pliEvery: nil)
        #expect(requests == [1_200_000, 1_500_000], "\(requests)") // the storm's last, deferred; the lone one
    }

    /// One 360p layer, no audio, no congestion control, 600-byte packets (a frame takes many).
    static func smallPacketConfig(key: SRTPKey) throws -> PublisherConfig {
        var c = PublisherConfig(
            destination: try SocketAddress(host: "127.0.0.1", port: 5004), layers: [.defaults(width: 640, height: 360, rid: "h")], key: key)
        c.sendAudio = false
        c.maxPacketSize = 600
        c.congestionControl = false
        return c
    }

    /// AV1's packets are laid out once, as they are written, so a frame's last is known only when
    /// it is written: its marker (RFC 3550 §5.1) and its Dependency Descriptor's end_of_frame (the
    /// AOM RTP format, Appendix A.8.1) are set after it — on that packet alone, with start_of_frame
    /// on the first; every packet of every frame sent, in order.
    @Test func av1MarksEachFramesLastPacketOnceWritten() throws {
        let key = SRTPKey.random(suite: .aesCm)
        var c = try Self.smallPacketConfig(key: key)
        c.videoCodec = .av1
        c.videoExtensions.dependencyDescriptor = 12
        let session = try PublisherSession(config: c, plan: StreamPlan(config: c), startMicros: 0, wallOffsetMicros: 0)
        session.begin(now: 0)
        // Temporal units as libaom writes them: a temporal delimiter, then OBU_FRAMEs with sizes.
        let sizes = [[5_000], [1_200, 90], [300], [570, 570, 2]]
        for (i, obus) in sizes.enumerated() {
            var unit: [UInt8] = [0x12, 0x00]
            for n in obus {
                unit.append(0x32)
                AV1OBU.appendLEB128(n, to: &unit)
                unit += [UInt8](repeating: UInt8(i + 1), count: n)
            }
            session.handle(
                .video(
                    EncodedVideoFrame(
                        layer: 0, bytes: unit, isKeyFrame: i == 0, width: 640, height: 360, frameNumber: UInt32(i),
                        captureMicros: Int64(i) * 33_333, temporalID: nil, layerSync: false, encodeMicros: 0)))
        }
        let srtp = try SRTPSession(key: key, direction: .inbound)
        var packets: [(seq: UInt16, marker: Bool, dd: DependencyDescriptor, payload: [UInt8], ts: UInt32)] = []
        var structure: FrameDependencyStructure? = nil
        var now: Int64 = 0
        for _ in 0..<100 {
            _ = session.step(now: now)
            try session.pollTransmit { ptrs, lens, n, _ throws(SocketError) in
                for k in 0..<n {
                    let ptr = ptrs[k]!
                    let bytes = ptr.assumingMemoryBound(to: UInt8.self)
                    guard RTPDemux.classify(Span(_unsafeStart: bytes, count: 2)) != .rtcp else { continue }
                    let len = (try? srtp.unprotectRTP(ptr, length: Int(lens[k]))) ?? 0
                    let span = Span(_unsafeStart: bytes, count: len)
                    guard let h = try? RTPHeader.parse(span),
                        let ext = try? RTPExtensionValues.parse(span, header: h, ids: c.videoExtensions),
                        let r = ext.dependencyDescriptor, let dd = try? DependencyDescriptor.parse(span.extracting(r), known: structure)
                    else {
                        Issue.record("a video packet without a readable descriptor")
                        continue
                    }
                    if let s = dd.structure { structure = s }
                    packets.append(
                        (
                            h.sequenceNumber, h.marker, dd,
                            Array(UnsafeBufferPointer(start: bytes + h.payloadRange.lowerBound, count: h.payloadRange.count)), h.timestamp
                        ))
                }
                return n
            }
            now += 10_000
        }
        let frames = Dictionary(grouping: packets, by: \.ts).values.sorted { $0[0].seq < $1[0].seq }
        #expect(frames.count == sizes.count)
        #expect(zip(packets, packets.dropFirst()).allSatisfy { $0.seq &+ 1 == $1.seq })
        for (i, f) in frames.enumerated() {
            #expect(f.map(\.marker) == Array(repeating: false, count: f.count - 1) + [true], "frame \(i)")
            #expect(
                f.map(\.dd.endOfFrame) == f.map(\.marker)
                    && f.map(\.dd.startOfFrame) == [true] + Array(repeating: false, count: f.count - 1))
            let back = try AV1Depacketizer.assemble(f.map(\.payload))
            #expect(back.bytes.count == 2 + sizes[i].reduce(0) { $0 + 1 + AV1OBU.leb128Size($1) + $1 }, "frame \(i)")
        }
    }

    /// Every packet of a frame, and its retransmission (RTX header + 2-byte OSN, RFC 4588), fit
    /// the configured packet size: the packetizer reserves the RTX overhead.
    @Test func retransmissionsFitThePacketSize() throws {
        let key = SRTPKey.random(suite: .aesCm)
        let c = try Self.smallPacketConfig(key: key)
        let plan = StreamPlan(config: c)
        let session = try PublisherSession(config: c, plan: plan, startMicros: 0, wallOffsetMicros: 0)
        session.begin(now: 0)
        session.handle(
            .video(
                EncodedVideoFrame(
                    layer: 0, bytes: [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0x68, 0x01] + [UInt8](repeating: 7, count: 9_000),
                    isKeyFrame: true, width: 640, height: 360, frameNumber: 0, captureMicros: 0,
                    temporalID: nil, layerSync: false, encodeMicros: 0)))
        var now: Int64 = 0
        var lengths: [Int] = []
        func drain() {
            _ = session.step(now: now)
            session.pollTransmit { _, lens, n, _ throws(SocketError) in
                for i in 0..<n { lengths.append(Int(lens[i])) }
                return n
            }
        }
        for _ in 0..<50 { drain(); now += 10_000 }
        let tag = SRTPSession.tagLength(.aesCm)
        let media = session.statistics.0[0]
        #expect(media.packetsSent >= 16)
        // NACK every packet of the frame (the receiver's feedback, protected as SRTCP).
        let srtcp = try SRTPSession(key: key, direction: .outbound)
        var buffer = [UInt8](repeating: 0, count: 1500)
        let first = session.senders[0].sequenceNumber &- UInt16(media.packetsSent)
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: plan.streams[0].ssrc, lost: (0..<UInt16(media.packetsSent)).map { first &+ $0 })
        let n = try buffer.withUnsafeMutableBytes { raw in
            var w = ByteWriter(raw)
            try nack.write(to: &w)
            return try srtcp.protectRTCP(raw.baseAddress!, length: w.count, capacity: raw.count)
        }
        lengths.removeAll()
        buffer.withUnsafeMutableBytes { session.handleDatagram($0.baseAddress!, length: n, now: now) }
        for _ in 0..<50 { now += 10_000; drain() }
        #expect(session.statistics.0[0].retransmittedPacketsSent == media.packetsSent)
        #expect(!lengths.isEmpty && lengths.allSatisfy { $0 - tag <= 600 }, "largest datagram \(lengths.max() ?? 0) (tag \(tag))")
    }
}

/// CPU adaptation, in virtual time: a media thread skipping frames takes a step down (the top
/// layer held back, or one encoding's resolution lowered) after two overusing checks, never past
/// the last step; recovery waits the ramp-up delay, which doubles after a ramp-up that overused
/// again soon.
@Suite struct CPUAdaptationTests {
    /// Runs checks of 2 s at 30 fps per running layer from `now`, skipping `share` of the due frames.
    static func run(
        _ a: inout CPUAdaptation, layers: Int = 3, from now: inout Int64, seconds: Int, share: Double, due: inout Int, skipped: inout Int
    ) -> [(Int64, CPUAdaptation.Change)] {
        var changes: [(Int64, CPUAdaptation.Change)] = []
        for _ in 0..<(seconds * 10) {
            now += 100_000
            let frames = 3 * (layers - a.level)
            due += frames
            skipped += Int((Double(frames) * share).rounded())
            if let c = a.update(now: now, framesDue: due, framesSkipped: skipped) { changes.append((now, c)) }
        }
        return changes
    }

    @Test func overuseHoldsTheTopLayerAndRecoveryBacksOff() {
        var a = CPUAdaptation(steps: 2, now: 0)
        var now: Int64 = 0, due = 0, skipped = 0
        // No skipped frame: nothing changes.
        #expect(Self.run(&a, from: &now, seconds: 10, share: 0, due: &due, skipped: &skipped).isEmpty)
        // A third of the frames skipped: down at the second check, then down again — never below one layer.
        let down = Self.run(&a, from: &now, seconds: 20, share: 0.34, due: &due, skipped: &skipped)
        #expect(down.map(\.1) == [.down, .down], "\(down)")
        #expect(down.first.map { $0.0 - 10_000_000 } == 4_000_000, "\(down)")
        #expect(a.level == 2 && a.changes == 2)
        // Load gone: one layer back after the quick ramp-up delay (10 s), the next 10 s later.
        let up = Self.run(&a, from: &now, seconds: 25, share: 0, due: &due, skipped: &skipped)
        #expect(up.map(\.1) == [.up, .up], "\(up)")
        #expect(up.count == 2 && up[1].0 - up[0].0 == 10_000_000, "\(up)")
        // Overuse right after that ramp-up: down again, and the next ramp-up waits 40 s, not 10.
        let again = Self.run(&a, from: &now, seconds: 4, share: 0.5, due: &due, skipped: &skipped)
        #expect(again.map(\.1) == [.down], "\(again)")
        let slow = Self.run(&a, from: &now, seconds: 38, share: 0, due: &due, skipped: &skipped)
        #expect(slow.isEmpty, "\(slow)")
        #expect(Self.run(&a, from: &now, seconds: 4, share: 0, due: &due, skipped: &skipped).map(\.1) == [.up])
    }

    /// Without a step (one 320×180 encoding, or a spatial-SVC stream) nothing changes: the cpu
    /// limitation is reported instead.
    @Test func noStepNoChange() {
        var a = CPUAdaptation(steps: 0, now: 0)
        var now: Int64 = 0, due = 0, skipped = 0
        #expect(Self.run(&a, layers: 1, from: &now, seconds: 20, share: 0.5, due: &due, skipped: &skipped).isEmpty)
        #expect(a.level == 0 && a.changes == 0)
    }

    /// libwebrtc's series from 720p (media/base/video_adapter.cc's own comment lists it), down to
    /// 320×180 and no further; smaller sizes have fewer steps, odd ones round down to even.
    @Test func oneEncodingStepsDownLikeLibwebrtc() {
        let sizes = (0...4).map { ResolutionSteps.size(width: 1280, height: 720, step: $0) }
        #expect(sizes.map { "\($0.width)x\($0.height)" } == ["1280x720", "960x540", "640x360", "480x270", "320x180"])
        #expect(ResolutionSteps.count(width: 1280, height: 720) == 4)
        #expect(ResolutionSteps.count(width: 640, height: 360) == 2)
        #expect(ResolutionSteps.count(width: 320, height: 180) == 0)
        #expect(ResolutionSteps.count(width: 1920, height: 1080) == 5)
        #expect(ResolutionSteps.size(width: 1920, height: 1080, step: 3) == (720, 404))
        // Each step keeps at most 3/5 of the pixels (GetLowerResolutionThan) and more than a
        // third (the next scale of the series would go below 3/5 of 3/5).
        for step in 1...4 {
            let a = ResolutionSteps.size(width: 1280, height: 720, step: step - 1)
            let b = ResolutionSteps.size(width: 1280, height: 720, step: step)
            let share = Double(b.width * b.height) / Double(a.width * a.height)
            #expect(share <= 0.6 && share > 0.36, "step \(step): \(share)")
        }
    }
}

/// The live encoders on a virtual clock whose encodes take 100 ms (a machine that cannot keep up
/// with 30 fps): one VP8 encoding steps its resolution down, each size starting on a key frame
/// of that size; simulcast holds its top layers back instead; both report the steps.
@Suite struct LiveVideoEncodersTests {
    static func run(_ config: PublisherConfig, seconds: Int, encodeMicros: Int64) throws
        -> ([EncodedVideoFrame], MediaCounters, LiveVideoEncoders)
    {
        var live = try LiveVideoEncoders(config: config, startMicros: 0)
        var counters = MediaCounters(layers: config.layers.count)
        var frames: [EncodedVideoFrame] = []
        var now: Int64 = 0
        while now < Int64(seconds) * 1_000_000 {
            let t = now
            try live.encodeDue(now: t, wallOffset: 0, clock: { t + encodeMicros }, cpuClock: { 0 }, counters: &counters) {
                frames.append($0)
            }
            now = max(now + 1, live.nextWake ?? .max)
        }
        return (frames, counters, live)
    }

    @Test func oneEncodingLowersItsResolution() throws {
        var c = PublisherConfig(destination: try SocketAddress(parsing: "127.0.0.1:5004"), key: .random(suite: .aesCm))
        c.layers = [VideoLayerConfig.ladder(top: 640, 360).last!]
        #expect(c.layers.count == 1 && c.layers[0].width == 640)
        let (frames, counters, live) = try Self.run(c, seconds: 12, encodeMicros: 100_000)
        // Two overusing checks (4 s) per step: 640x360 → 480x270 → 320x180, and no further.
        #expect(counters.cpuResolutionSteps == 2 && counters.cpuLayersHeld == 0 && counters.cpuResolutionChanges == 2)
        #expect(live.runningLayers == 1)
        var sizes: [String] = []
        for f in frames where sizes.last != "\(f.width)x\(f.height)" {
            #expect(f.isKeyFrame, "the first \(f.width)x\(f.height) frame is a key frame")
            sizes.append("\(f.width)x\(f.height)")
        }
        #expect(sizes == ["640x360", "480x270", "320x180"], "\(sizes)")
        #expect(counters.framesSkipped > 0)
    }

    @Test func simulcastHoldsItsTopLayersBack() throws {
        var c = PublisherConfig(destination: try SocketAddress(parsing: "127.0.0.1:5004"), key: .random(suite: .aesCm))
        c.layers = VideoLayerConfig.ladder(top: 640, 360)
        let (frames, counters, live) = try Self.run(c, seconds: 10, encodeMicros: 100_000)
        #expect(counters.cpuLayersHeld == c.layers.count - 1 && counters.cpuResolutionSteps == 0)
        #expect(live.runningLayers == 1)
        // Every frame keeps its layer's configured size.
        for f in frames { #expect(f.width == c.layers[f.layer].width, "layer \(f.layer): \(f.width)") }
    }

    /// On time (virtual time, encodes taking none) nothing steps down.
    @Test func onTimeNothingChanges() throws {
        var c = PublisherConfig(destination: try SocketAddress(parsing: "127.0.0.1:5004"), key: .random(suite: .aesCm))
        c.layers = [VideoLayerConfig.ladder(top: 640, 360).last!]
        let (frames, counters, _) = try Self.run(c, seconds: 6, encodeMicros: 0)
        #expect(counters.cpuResolutionChanges == 0 && counters.framesSkipped == 0)
        #expect(frames.count >= 175 && frames.allSatisfy { $0.width == 640 }, "\(frames.count) frames")
    }
}

/// A fleet loop reads a bot's datagrams on the bot's turn, after the bots before it: what the
/// session works out from them (a receiver report's round trip, RFC 3550 §6.4.1) is at the kernel's
/// arrival time, not the turn's.
@Suite struct SessionSocketArrivalTests {
    @Test func aLateReadReportsTheRoundTripAtArrival() throws {
        let key = SRTPKey.random(suite: .aesCm)
        var c = PublisherConfig(
            destination: try SocketAddress(host: "127.0.0.1", port: 5004), layers: [.defaults(width: 640, height: 360, rid: "h")], key: key)
        c.sendAudio = false
        c.congestionControl = false
        let plan = StreamPlan(config: c)
        let video = try #require(plan.streams.first { $0.kind == .video }?.ssrc)
        let srtcp = try SRTPSession(key: key, direction: .outbound)
        let socket = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        try socket.enableArrivalTimestamps()
        let io = SessionSocket(socket)
        let peer = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))

        /// A receiver report whose last SR was 5 ms before now (DLSR 0), read 40 ms after it was
        /// sent; the round trip the session reports (ms).
        func roundTrip(stamped: Bool) throws -> Double? {
            let start = Clock.monotonicMicros()
            let session = try PublisherSession(config: c, plan: plan, startMicros: start, wallOffsetMicros: 0)
            session.begin(now: start)
            var buf = [UInt8](repeating: 0, count: 200)
            let lsr = NTPTime.compact(NTPTime.ntp(unixMicros: Clock.monotonicMicros() - 5_000))
            let n = try buf.withUnsafeMutableBytes { raw throws -> Int in
                var w = ByteWriter(raw)
                let block = ReportBlock(
                    ssrc: video, fractionLost: 0, cumulativeLost: 0, extendedHighestSequence: 0, jitter: 0, lastSenderReport: lsr,
                    delaySinceLastSenderReport: 0)
                try ReceiverReport(ssrc: 77, reports: [block]).write(to: &w)
                return try srtcp.protectRTCP(raw.baseAddress!, length: w.count, capacity: raw.count)
            }
            try buf.withUnsafeBytes { try peer.send(UnsafeRawBufferPointer(rebasing: $0[0..<n]), to: socket.localAddress) }
            Clock.sleep(micros: 40_000)
            io.read(into: session, now: Clock.monotonicMicros(), notBefore: stamped ? start : nil)
            return session.statistics.0.first { $0.ssrc == video }?.roundTripTimeMillis
        }
        let atArrival = try #require(try roundTrip(stamped: true))
        #expect(atArrival >= 4.5 && atArrival < 15, "the round trip at the datagram's arrival: \(atArrival) ms")
        // The same read stamped with the time it ran counts the 40 ms the datagram waited.
        let atRead = try #require(try roundTrip(stamped: false))
        #expect(atRead >= 44, "the round trip at the read: \(atRead) ms")
    }
}
