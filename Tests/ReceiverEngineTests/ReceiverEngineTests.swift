import Testing
@testable import ReceiverEngine
@testable import Receiver
import Transport
import Platform
import RTPCore
import MediaCodecs

/// Hostile input at the receiver's port is counted by cause and never stops it.
@Suite struct HostileInputTests {
    @Test func countsEveryRejectedPacketByCause() throws {
        let key = SRTPKey.random(suite: .aesCm)
        let r = try ReceiverEngine(config: ReceiverConfig(listen: SocketAddress(host: "127.0.0.1", port: 0), key: key))
        r.start()
        defer { r.stop(); r.wait() }
        let tx = try UDPSocket(for: r.localAddress)
        var rng = SystemRandomNumberGenerator()
        func send(_ b: [UInt8]) throws { try b.withUnsafeBytes { try tx.send($0, to: r.localAddress) } }
        // 50 datagrams that are not RTP at all (version 0).
        for _ in 0..<50 { try send([0x00] + (0..<40).map { _ in UInt8.random(in: 0...255, using: &rng) }) }
        // 50 RTP-looking packets with garbage tags (wrong key / tampering).
        for i in 0..<50 {
            try send([0x80, 0x60, 0, UInt8(i), 0, 0, 0, 0, 1, 2, 3, 4] + (0..<60).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
        // 10 oversized datagrams.
        for _ in 0..<10 { try send([UInt8](repeating: 0x80, count: 2000)) }
        // 20 RTCP-looking garbage packets.
        for _ in 0..<20 { try send([0x80, 0xC8, 0, 6] + (0..<40).map { _ in UInt8.random(in: 0...255, using: &rng) }) }
        // A properly protected packet with a payload type nobody negotiated.
        let out = try SRTPSession(key: key, direction: .outbound)
        var good = [0x80, 0x22, 0, 1, 0, 0, 0, 1, 9, 9, 9, 9] + [UInt8](repeating: 7, count: 20) + [UInt8](repeating: 0, count: 160)
        let n = try good.withUnsafeMutableBytes { try out.protectRTP($0.baseAddress!, length: 32, capacity: $0.count) }
        try send(Array(good[0..<n]))
        // And the same packet again: a replay.
        try send(Array(good[0..<n]))
        var snap = r.snapshot()
        let deadline = Clock.monotonicMicros() + 3_000_000
        while snap.rejected.total < 132 && Clock.monotonicMicros() < deadline {
            Clock.sleep(micros: 50_000)
            snap = r.snapshot()
        }
        #expect(snap.rejected.notRTP == 50)
        // libsrtp2 checks the (unauthenticated) SRTCP index against the replay window before the
        // tag, so some RTCP garbage is reported as a replay rather than an authentication failure.
        #expect(snap.rejected.authenticationFailed >= 50)
        #expect(snap.rejected.authenticationFailed + snap.rejected.replayed + snap.rejected.malformed == 71)
        #expect(snap.rejected.oversized == 10)
        #expect(snap.rejected.unknownPayloadType == 1)
        #expect(snap.rejected.replayed >= 1)
        #expect(snap.keyMismatchSuspected) // nothing authenticated as media
        #expect(snap.streams.isEmpty)
    }
}

/// Freezes and pauses by the W3C definitions, against a scripted schedule of decoded frames.
@Suite struct FreezeAndPauseTests {
    @Test func countsFreezesAndPausesOnAScriptedSchedule() {
        let s = ReceiveStream(ssrc: 1, kind: .video, payloadType: 96, decodeVideo: true)
        var t: Int64 = 0
        func frames(_ n: Int, every ms: Int64) { for _ in 0..<n { t += ms * 1000; s.rendered(at: t) } }
        frames(60, every: 33) // steady 30 fps
        t += 300_000; s.rendered(at: t) // a 300 ms gap: ≥ max(3 × 33, 33 + 150) → a freeze
        frames(60, every: 33)
        t += 150_000; s.rendered(at: t) // 150 ms: ≥ 3 × 33 but < 33 + 150: not a freeze
        frames(60, every: 33)
        t += 6_000_000; s.rendered(at: t) // > 5 s: a pause, not a freeze
        frames(60, every: 33)
        t += 250_000; s.rendered(at: t) // another freeze (250 ms)
        #expect(s.stats.freezeCount == 2)
        #expect(abs(s.stats.totalFreezesDurationMillis - (300 + 250)) < 1)
        #expect(s.stats.pauseCount == 1)
        #expect(abs(s.stats.totalPausesDurationMillis - 6_000) < 1)
    }

    @Test func slowFrameRatesDoNotCountAsFreezes() {
        let s = ReceiveStream(ssrc: 1, kind: .video, payloadType: 96, decodeVideo: true)
        var t: Int64 = 0
        for _ in 0..<100 { t += 200_000; s.rendered(at: t) } // 5 fps, steady
        t += 500_000; s.rendered(at: t) // 500 ms < max(600, 350): no freeze
        #expect(s.stats.freezeCount == 0)
        t += 700_000; s.rendered(at: t) // 700 ms ≥ 3 × ~203: a freeze
        #expect(s.stats.freezeCount == 1)
    }
}

/// The receiver session alone, sans-IO: datagrams and the time in, no socket, no thread.
@Suite struct ReceiverSessionTests {
    /// Two publishers (source addresses) using one SSRC: the second one's packets are counted as
    /// an SSRC collision, not taken into the first one's stream nor called malformed.
    @Test func ssrcCollisionIsCountedAsSuch() throws {
        let key = SRTPKey.random(suite: .aesCm)
        let session = try ReceiverSession(
            config: ReceiverConfig(listen: SocketAddress(host: "127.0.0.1", port: 5004), key: key),
            startMicros: 0, wallOffsetMicros: 0, seed: 1)
        let a = try SocketAddress(host: "127.0.0.1", port: 40_000), b = try SocketAddress(host: "127.0.0.1", port: 40_001)
        // Each publisher has its own SRTP context (same key); B is further on in the sequence
        // space, so its packets are new to the receiver's replay window, not replays.
        let outA = try SRTPSession(key: key, direction: .outbound), outB = try SRTPSession(key: key, direction: .outbound)
        func packet(_ srtp: SRTPSession, seq: UInt16) throws -> [UInt8] {
            // Opus (PT 111), SSRC 0x01020304.
            var p =
                [0x80, 111, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0, UInt8(seq & 0xFF), 1, 2, 3, 4]
                + [UInt8](repeating: 0xAB, count: 40)
                + [UInt8](repeating: 0, count: SRTPSession.maxTrailer)
            let n = try p.withUnsafeMutableBytes { try srtp.protectRTP($0.baseAddress!, length: 52, capacity: $0.count) }
            return Array(p[0..<n])
        }
        for seq in UInt16(1)...10 {
            var pa = try packet(outA, seq: seq), pb = try packet(outB, seq: seq + 1_000)
            pa.withUnsafeMutableBytes { session.handleDatagram($0.baseAddress!, length: $0.count, from: a, now: Int64(seq) * 20_000) }
            pb.withUnsafeMutableBytes { session.handleDatagram($0.baseAddress!, length: $0.count, from: b, now: Int64(seq) * 20_000 + 1) }
        }
        let snap = session.snapshot(final: false)
        #expect(snap.rejected.ssrcCollision == 10)
        #expect(snap.rejected.malformed == 0)
        #expect(snap.streams.count == 1 && snap.streams[0].packetsReceived == 10)
        #expect(snap.publishers.count == 2)
    }

    /// One step may owe feedback to hundreds of publishers (a fleet on one port): all of it goes
    /// out (a fixed 64-datagram outbox once dropped the rest, and half a 200-bot fleet read
    /// `critical`).
    @Test func feedbackToEveryPublisherOfAFleetInOneStep() throws {
        let key = SRTPKey.random(suite: .aesCm)
        var config = ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 5004), key: key)
        config.maxPublishers = 1024 // as `pubbot receive` serves fleets
        config.maxStreams = 8192
        let session = try ReceiverSession(config: config, startMicros: 0, wallOffsetMicros: 0, seed: 1)
        for i in 0..<200 {
            let out = try SRTPSession(key: key, direction: .outbound)
            // Opus with a transport-wide sequence number (one-byte extension id 3).
            var p: [UInt8] =
                [0x90, 111, 0, 1, 0, 0, 0, 1, 0, 0, UInt8(i >> 8), UInt8(i & 0xFF), 0xBE, 0xDE, 0, 1, 0x31, 0, 1, 0]
                + [UInt8](repeating: 0xAB, count: 40) + [UInt8](repeating: 0, count: SRTPSession.maxTrailer)
            let n = try p.withUnsafeMutableBytes { try out.protectRTP($0.baseAddress!, length: 60, capacity: $0.count) }
            let from = try SocketAddress(host: "127.0.0.1", port: 30_000 + i)
            p.withUnsafeMutableBytes { session.handleDatagram($0.baseAddress!, length: n, from: from, now: 1_000) }
        }
        _ = session.step(now: 2_000)
        var destinations = Set<String>()
        session.pollTransmit { _, to throws(SocketError) in destinations.insert(to.description) }
        #expect(session.snapshot(final: false).publishers.count == 200)
        #expect(destinations.count == 200)
    }

    /// Every SDES publisher's packets are unprotected in a session of its own (one shared
    /// session's stream list, walked per packet by libsrtp2, grew with the fleet: 15 % of the
    /// receiver's CPU at 300 bots); the first packet's replay state moves with it, and a
    /// publisher beyond the limit leaves nothing behind in the spare session.
    @Test func eachPublisherHasItsOwnSRTPSessionAndReplaysStayRefused() throws {
        let key = SRTPKey.random(suite: .aesCm)
        var config = ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 5004), key: key)
        config.maxPublishers = 3
        let session = try ReceiverSession(config: config, startMicros: 0, wallOffsetMicros: 0, seed: 1)
        func packet(ssrc: UInt32, seq: UInt16, _ out: SRTPSession) throws -> [UInt8] {
            var p: [UInt8] =
                [0x80, 111, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0, 1]
                + withUnsafeBytes(of: ssrc.bigEndian, Array.init) + [UInt8](repeating: 0xAB, count: 40)
                + [UInt8](repeating: 0, count: SRTPSession.maxTrailer)
            let n = try p.withUnsafeMutableBytes { try out.protectRTP($0.baseAddress!, length: 52, capacity: $0.count) }
            return Array(p[0..<n])
        }
        func deliver(_ p: [UInt8], port: Int) throws {
            var copy = p
            let from = try SocketAddress(host: "127.0.0.1", port: port)
            copy.withUnsafeMutableBytes { session.handleDatagram($0.baseAddress!, length: p.count, from: from, now: 1_000) }
        }
        for i in 0..<4 {
            let out = try SRTPSession(key: key, direction: .outbound)
            let first = try packet(ssrc: 100 + UInt32(i), seq: 1, out)
            try deliver(first, port: 30_000 + i)
            try deliver(first, port: 30_000 + i) // the first packet again: a replay
            try deliver(try packet(ssrc: 100 + UInt32(i), seq: 2, out), port: 30_000 + i)
        }
        let snap = session.snapshot(final: false)
        #expect(snap.publishers.count == 3)
        #expect(snap.packetsAccepted == 6) // two of each publisher served
        #expect(snap.rejected.replayed == 3) // the fourth is refused before its replay is looked at
        #expect(snap.refusedOverCapacity == 3)
        let own = session.peers.compactMap(\.srtpIn)
        #expect(own.count == 3 && Set(own.map(ObjectIdentifier.init)).count == 3)
        #expect(!own.contains { $0 === session.srtp })
        // The refused publisher's stream was taken back out of the spare: a new publisher could
        // start in it with a clean replay window (the fourth's packet 1 authenticates again).
        let spare = try #require(session.spare)
        var again = try packet(ssrc: 103, seq: 1, try SRTPSession(key: key, direction: .outbound))
        let n = try again.withUnsafeMutableBytes { try spare.unprotectRTP($0.baseAddress!, length: $0.count) }
        #expect(n == 52)
    }
}

/// A stream joined mid-frame (the publisher's first packets were a frame whose start never
/// came): the partial frame is let go when the key frame after it is released, and that is no
/// break in the reference chain — every frame from the key frame on decodes, no key frame is
/// asked for. (It once was: every frame up to the next key frame was skipped, 16 of 175 at
/// 180p in a clean-clone run, and the sender was sent a PLI for nothing.)
@Suite struct StreamStartTests {
    @Test func aPartialFrameBeforeTheKeyFrameBreaksNothing() throws {
        let enc = try VideoCodec.h264.makeEncoder(config: .defaults(width: 320, height: 180, rid: "q"), keyFrameInterval: 0)
        var pic = I420Frame(width: 320, height: 180)
        var frames: [EncodedVideoFrame] = []
        for i in 0..<12 {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: 0)
            // Frame 0 is the encoder's first key frame, frame 2 the one asked for on connecting.
            let f = try enc.encode(&pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: i == 2) { 0 }
            frames.append(try #require(f))
        }
        #expect(frames[2].isKeyFrame && !frames[1].isKeyFrame)
        let stream = ReceiveStream(ssrc: 7, kind: .video, payloadType: 102, codec: .h264, decodeVideo: true)
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 1200, alignment: 8)
        defer { buf.deallocate() }
        var seq: UInt16 = 100
        var now: Int64 = 0
        for (n, f) in frames.enumerated().dropFirst() {
            let packets = try h264Packets(f, buffer: buf)
            // Of frame 1, only the last packet arrives.
            let first = n == 1 ? packets.count - 1 : 0
            for (i, (payload, marker)) in packets.enumerated() where i >= first {
                stream.receiveVideo(
                    sequenceNumber: seq &+ UInt16(i), timestamp: UInt32(n) * 3000, marker: marker, payload.span, nowMicros: now,
                    wallMicros: now)
            }
            seq &+= UInt16(packets.count)
            now += 33_333
            stream.releaseFrames(nowMicros: now, wallMicros: now)
        }
        #expect(stream.stats.framesDecoded == 10, "\(stream.stats)")
        #expect(stream.assembler.framesDropped == 1) // the partial frame, counted as W3C's framesDropped
        #expect(!stream.wantsKeyFrame && !stream.needKeyFrame)
    }
}

/// A frame's RTP payloads (RFC 6184, 1200 bytes at most) and their markers.
func h264Packets(_ f: EncodedVideoFrame, buffer buf: UnsafeMutableRawBufferPointer) throws -> [([UInt8], Bool)] {
    var p = try H264Packetizer(frame: f.bytes.span, maxPayloadSize: 1200)
    var packets: [([UInt8], Bool)] = []
    while true {
        var w = ByteWriter(buf)
        guard let marker = try p.next(frame: f.bytes.span, into: &w) else { break }
        packets.append((Array(buf[0..<w.count]), marker))
    }
    return packets
}

/// A subscriber that does not decode (a sampled fleet member) still follows the reference chain
/// as a decoder would: a lost frame makes it ask for a key frame, the frames until one are not
/// shown, and the key frame ends the asking. (It once never stopped: every 500 ms for the rest
/// of the run, 64 PLIs from one subscriber through pion.)
@Suite struct NonDecodingChainTests {
    @Test func aLostFrameAsksOnceAndTheKeyFrameEndsIt() throws {
        let enc = try VideoCodec.h264.makeEncoder(config: .defaults(width: 320, height: 180, rid: "q"), keyFrameInterval: 0)
        var pic = I420Frame(width: 320, height: 180)
        let stream = ReceiveStream(ssrc: 7, kind: .video, payloadType: 102, codec: .h264, decodeVideo: false)
        stream.followsChain = true
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 1200, alignment: 8)
        defer { buf.deallocate() }
        var seq: UInt16 = 100
        var now: Int64 = 0
        var asked: [Int] = []
        for n in 0..<20 {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(n), captureMillis: 0)
            let f = try #require(
                try enc.encode(&pic, layer: 0, frameNumber: UInt32(n), captureMicros: Int64(n) * 33_333, forceKeyFrame: n == 14) { 0 })
            let packets = try h264Packets(f, buffer: buf)
            if n != 4 { // frame 4 is lost whole
                for (i, (payload, marker)) in packets.enumerated() {
                    stream.receiveVideo(
                        sequenceNumber: seq &+ UInt16(i), timestamp: UInt32(n) * 3000, marker: marker, payload.span, nowMicros: now,
                        wallMicros: now)
                }
            }
            seq &+= UInt16(packets.count)
            now += 33_333
            stream.releaseFrames(nowMicros: now, wallMicros: now)
            if stream.wantsKeyFrame { asked.append(n) }
        }
        // Asked once the frame after the gap was let go (after the 200 ms hold), until the key frame.
        #expect(!asked.isEmpty && asked.allSatisfy { $0 > 4 && $0 < 14 }, "asked after frames \(asked)")
        #expect(!stream.wantsKeyFrame && !stream.needKeyFrame)
        #expect(stream.stats.framesAssembled >= 17, "\(stream.stats)")
        #expect(stream.stats.freezeCount == 1, "\(stream.stats)") // nothing shown from frame 4 to the key frame
    }
}

/// A fleet's rotating decoder moving onto a counting subscriber and off it again: while it waits
/// for a key frame whose bytes it kept, it asks for one and the stream does not freeze (its chain
/// is whole); from the key frame every frame decodes; moving off counts the time it decoded.
@Suite struct RotatingDecoderTests {
    @Test func decodingSwitchedOnWaitsForAWholeKeyFrameThenDecodesAndCountsItsTime() throws {
        let enc = try VideoCodec.vp8.makeEncoder(config: .defaults(width: 320, height: 180, rid: "q"), keyFrameInterval: 0)
        var pic = I420Frame(width: 320, height: 180)
        let stream = ReceiveStream(ssrc: 7, kind: .video, payloadType: 96, codec: .vp8, decodeVideo: false)
        stream.followsChain = true
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 1200, alignment: 8)
        defer { buf.deallocate() }
        var seq: UInt16 = 65_000
        var now: Int64 = 0
        var askedWhileWaiting = 0
        for n in 0..<40 {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(n), captureMillis: 0)
            let f = try #require(
                try enc.encode(&pic, layer: 0, frameNumber: UInt32(n), captureMicros: Int64(n) * 33_333, forceKeyFrame: n == 20) { 0 })
            var p = try VP8Packetizer(frameSize: f.bytes.count, maxPayloadSize: 300, descriptor: VP8PayloadDescriptor(pictureID: UInt16(n)))
            var i: UInt16 = 0
            while true {
                // Switched on in the middle of frame 10 (a decoder rotating onto it), off after 30.
                if n == 10 && i == 1 { stream.setDecoding(true, nowMicros: now) }
                if n == 30 && i == 0 { stream.setDecoding(false, nowMicros: now) }
                var w = ByteWriter(buf)
                guard let marker = try p.next(frame: f.bytes.span, into: &w) else { break }
                let payload = Array(buf[0..<w.count])
                stream.receiveVideo(
                    sequenceNumber: seq, timestamp: UInt32(n) * 3000, marker: marker, payload.span, nowMicros: now, wallMicros: now)
                seq &+= 1
                i += 1
            }
            now += 33_333
            stream.releaseFrames(nowMicros: now, wallMicros: now)
            if (10..<20).contains(n) && stream.wantsKeyFrame { askedWhileWaiting += 1 }
        }
        stream.finalize()
        #expect(askedWhileWaiting == 10) // asked from the switch until the key frame
        #expect(stream.stats.framesDecoded == 10, "\(stream.stats)") // frames 20…29
        #expect(stream.stats.framesAssembled == 40 && stream.stats.decodeErrors == 0)
        #expect(stream.stats.freezeCount == 0, "\(stream.stats)")
        #expect(abs(stream.stats.decodingMillis - 10 * 33.333) < 40, "\(stream.stats.decodingMillis)")
        #expect(stream.videoDecoder == nil && !stream.wantsKeyFrame)
    }
}

/// The lag meter every driver keeps (how late it ran what was due): fixed buckets that add up
/// across drivers and subtract to a window, percentiles never above the largest lag seen.
@Suite struct LagMeterTests {
    @Test func percentilesAreBucketBoundsCappedByTheMaximum() {
        var m = LagMeter()
        #expect(m.percentile(0.99) == nil)
        for _ in 0..<98 { m.record(lateMicros: 300) } // ≤ 0.5 ms
        m.record(lateMicros: 7_000) // ≤ 10 ms
        m.record(lateMicros: 180_000) // ≤ 200 ms
        #expect(m.count == 100)
        #expect(m.percentile(0.5) == 500)
        #expect(m.percentile(0.99) == 10_000)
        #expect(m.percentile(1) == 180_000) // the 200 ms bucket, capped at the largest seen
        m.record(lateMicros: -5) // early counts as on time
        m.record(lateMicros: 5_000_000) // beyond the last bound
        #expect(m.counts.first == 99 && m.counts.last == 1)
        #expect(m.percentile(1) == 5_000_000)
    }

    @Test func metersAddAcrossDriversAndSubtractToAWindow() {
        var a = LagMeter(), b = LagMeter()
        for _ in 0..<10 { a.record(lateMicros: 1_500) }
        let before = a
        for _ in 0..<10 { a.record(lateMicros: 60_000) }
        b.record(lateMicros: 3_000)
        var all = a
        all.add(b)
        #expect(all.count == 21 && all.maxMicros == 60_000)
        let window = a.since(before)
        #expect(window.count == 10)
        #expect(window.percentile(0.5) == 60_000)
    }
}
