import Testing
import RTPCore
@testable import MediaCodecs

/// libvpx VP9 behind `VideoEncoder`/`VideoDecoder`, and its frames through the RFC 9628
/// packetizer (flexible mode) and the assembler: every frame decoded with its stamp.
@Suite(.serialized) struct VP9CodecTests {
    @Test func packetizedFramesReassembleAndDecode() throws {
        let config = VideoLayerConfig.defaults(width: 640, height: 360, rid: "h")
        let enc = try VideoCodec.vp9.makeEncoder(config: config, keyFrameInterval: 0)
        let dec = try VideoCodec.vp9.makeDecoder()
        var pic = I420Frame(width: 640, height: 360)
        var assembler = VideoFrameAssembler(codec: .vp9)
        var seq: UInt16 = 65_500, pid: UInt16 = 0x7FF0
        var decoded = 0, encoded = 0
        var rng = SplitMix64(seed: 9)
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 8)
        defer { buf.deallocate() }
        for i in 0..<30 {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: UInt32(i * 33))
            guard
                let f = try enc.encode(
                    &pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: i == 20, clock: { 0 })
            else { continue }
            encoded += 1
            #expect(f.isKeyFrame == (i == 0 || i == 20) && VP9PayloadDescriptor.isKeyFrame(f.bytes.span) == f.isKeyFrame)
            var p = try VP9Packetizer(
                frameSize: f.bytes.count, maxPayloadSize: 1000, pictureID: pid, keyFrame: f.isKeyFrame, width: 640, height: 360)
            var packets: [([UInt8], Bool)] = []
            while true {
                var w = ByteWriter(buf)
                guard let marker = try p.next(frame: f.bytes.span, into: &w) else { break }
                #expect(w.count <= 1000)
                packets.append((Array(buf[0..<w.count]), marker))
            }
            // One UDP GSO run: every packet but the last the same size, the last no larger
            // (Linux udp(7), UDP_SEGMENT), the scalability structure counted in the first's.
            let sizes = packets.map(\.0.count)
            #expect(sizes.dropLast().allSatisfy { $0 == sizes[0] } && sizes.last! <= sizes[0], "\(sizes)")
            let firstPacket = packets[0].0
            let (first, _) = try VP9PayloadDescriptor.parse(firstPacket.span)
            #expect(first.pictureID == pid && first.flexible && first.beginningOfFrame && first.interPicturePredicted == !f.isKeyFrame)
            if f.isKeyFrame { #expect(first.scalability == VP9PayloadDescriptor.Scalability(sizes: [(640, 360)])) }
            if !f.isKeyFrame { #expect(first.pDiffs == [1]) }
            for k in packets.indices.shuffled(using: &rng) {
                let (payload, marker) = packets[k]
                assembler.insert(
                    sequenceNumber: seq &+ UInt16(k), timestamp: UInt32(i) * 3000, marker: marker, payload: payload.span, now: 0)
            }
            seq &+= UInt16(packets.count)
            pid = (pid &+ 1) & 0x7FFF
            while let out = assembler.pop(now: 0) {
                #expect(out.isKeyFrame == f.isKeyFrame)
                if out.isKeyFrame { #expect(out.width == 640 && out.height == 360) }
                let d = try #require(try dec.decode(out.bytes, readStamp: true))
                #expect(d.width == 640 && d.height == 360 && d.stamp?.frameNumber == UInt32(i))
                decoded += 1
            }
        }
        #expect(encoded >= 28 && decoded == encoded && assembler.framesDropped == 0)
    }

    /// L1T3 through libvpx's SVC interface: the temporal pattern 0-2-1-2, each inter frame's
    /// references as P_DIFFs in the descriptor, and the references are the truth — a receiver
    /// that gets only T0 (or T0 and T1) decodes every one of those frames with its stamp, as an
    /// SFU forwarding a lower frame rate relies on.
    @Test(arguments: [[0], [0, 1], [0, 1, 2]] as [[UInt8]])
    func temporalLayersDecodeWithoutTheLayersAbove(_ kept: [UInt8]) throws {
        let config = VideoLayerConfig.defaults(width: 640, height: 360, temporalLayers: 3, rid: "h")
        let enc = try VideoCodec.vp9.makeEncoder(config: config, keyFrameInterval: 0)
        let dec = try VideoCodec.vp9.makeDecoder()
        var pic = I420Frame(width: 640, height: 360)
        var assembler = VideoFrameAssembler(codec: .vp9)
        var seq: UInt16 = 100
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 8)
        defer { buf.deallocate() }
        var tids: [UInt8] = [], refs: [[UInt8]] = [], decoded: [UInt32] = [], expected: [UInt32] = []
        for i in 0..<24 {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: UInt32(i * 33))
            let f = try #require(
                try enc.encode(&pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: false, clock: { 0 })
            )
            let tid = try #require(f.temporalID)
            tids.append(tid)
            refs.append(f.referenceDistances)
            var p = try VP9Packetizer(
                frameSize: f.bytes.count, maxPayloadSize: 1000, pictureID: UInt16(i), keyFrame: f.isKeyFrame, width: 640, height: 360,
                temporalID: tid, switchingUp: f.layerSync, references: f.referenceDistances)
            var packets: [([UInt8], Bool)] = []
            while true {
                var w = ByteWriter(buf)
                guard let marker = try p.next(frame: f.bytes.span, into: &w) else { break }
                packets.append((Array(buf[0..<w.count]), marker))
            }
            let head = packets[0].0
            let (d, _) = try VP9PayloadDescriptor.parse(head.span)
            #expect(d.temporalID == tid && d.switchingUp == f.layerSync && d.pDiffs == (f.isKeyFrame ? [] : f.referenceDistances))
            // The layers above those kept never reach the receiver, and the sequence numbers
            // run on without a gap (as an SFU that drops a layer rewrites them).
            if kept.contains(tid) {
                expected.append(UInt32(i))
                assembler.insertInOrder(packets, frame: i, seq: &seq)
            }
            while let out = assembler.pop(now: 0) {
                let d = try #require(try dec.decode(out.bytes, readStamp: true))
                if let n = d.stamp?.frameNumber { decoded.append(n) }
            }
        }
        #expect(tids.prefix(8) == [0, 2, 1, 2, 0, 2, 1, 2])
        #expect(refs.prefix(8) == [[], [1], [2], [1, 3], [4], [1], [2], [1, 3]])
        #expect(decoded == expected, "kept T\(kept): decoded \(decoded)")
    }

    /// L3T3_KEY (VP9 SVC as libwebrtc sends it by default): one picture is three spatial layers'
    /// frames, 320x180, 640x360 and 1280x720, each its own packets (SID, B/E per layer frame, D on
    /// a key picture's upper layers, the structure with all three sizes on the first packet, the
    /// marker on the picture's last). A receiver that gets only the lowest spatial layers (an SFU
    /// forwarding a smaller picture sets the marker on the last it forwards) decodes every picture
    /// at that size; all three give the top size with the stamp; with the temporal layers above
    /// T0 also dropped, every T0 picture still decodes — the references are the truth.
    @Test(arguments: [(1, [0, 1, 2]), (2, [0, 1, 2]), (3, [0, 1, 2]), (3, [0]), (1, [0])] as [(Int, [UInt8])])
    func spatialLayersDecodeWithoutTheLayersAbove(_ keptSpatial: Int, _ keptTemporal: [UInt8]) throws {
        let config = VideoLayerConfig.spatial(
            top: .defaults(width: 1280, height: 720, temporalLayers: 3, rid: "f"), spatialLayers: 3)
        #expect(config.scalabilityMode == "L3T3_KEY" && config.spatialSize(0) == (320, 180) && config.spatialSize(1) == (640, 360))
        let enc = try VideoCodec.vp9.makeEncoder(config: config, keyFrameInterval: 0)
        let dec = try VideoCodec.vp9.makeDecoder()
        var pic = I420Frame(width: 1280, height: 720)
        var assembler = VideoFrameAssembler(codec: .vp9)
        var seq: UInt16 = 100
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 1200, alignment: 8)
        defer { buf.deallocate() }
        var decoded: [UInt32] = [], expected: [UInt32] = [], sizes: Set<Int> = []
        var layerBytes = [0, 0, 0]
        for i in 0..<16 {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: UInt32(i * 33))
            let f = try #require(
                try enc.encode(
                    &pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: i == 12, clock: { 0 })
            )
            #expect(f.isKeyFrame == (i == 0 || i == 12))
            #expect(f.spatialLayers.map(\.width) == [320, 640, 1280] && f.spatialLayers.map(\.size).reduce(0, +) == f.bytes.count)
            for (s, l) in f.spatialLayers.enumerated() { layerBytes[s] += l.size }
            let tid = try #require(f.temporalID)
            var p = try VP9Packetizer(
                frameSize: f.bytes.count, maxPayloadSize: 1200, pictureID: UInt16(i), keyFrame: f.isKeyFrame, width: 1280, height: 720,
                temporalID: tid, switchingUp: f.layerSync, references: f.referenceDistances,
                spatialLayers: f.spatialLayers.map { ($0.size, $0.width, $0.height) })
            var packets: [([UInt8], Bool, VP9PayloadDescriptor)] = []
            while true {
                var w = ByteWriter(buf)
                guard let marker = try p.next(frame: f.bytes.span, into: &w) else { break }
                let bytes = Array(buf[0..<w.count])
                packets.append((bytes, marker, try VP9PayloadDescriptor.parse(bytes.span).0))
            }
            #expect(packets.filter(\.1).count == 1 && packets.last!.1)
            for s in 0..<3 {
                let of = packets.map(\.2).filter { $0.spatialID == s }
                #expect(of.first?.beginningOfFrame == true && of.last?.endOfFrame == true && of.count >= 1)
                #expect(of.allSatisfy { $0.interLayerDependency == (f.isKeyFrame && s > 0) && $0.interPicturePredicted == !f.isKeyFrame })
                #expect(of.allSatisfy { $0.notUsedForInterLayerPrediction == (!f.isKeyFrame || s == 2) })
            }
            if f.isKeyFrame {
                #expect(packets[0].2.scalability == VP9PayloadDescriptor.Scalability(sizes: [(320, 180), (640, 360), (1280, 720)]))
            }
            guard keptTemporal.contains(tid) else { continue }
            var forwarded = packets.filter { $0.2.spatialID < keptSpatial }
            forwarded[forwarded.count - 1].1 = true
            expected.append(UInt32(i))
            assembler.insertInOrder(forwarded.map { ($0.0, $0.1) }, frame: i, seq: &seq)
            while let out = assembler.pop(now: 0) {
                let d = try #require(try dec.decode(out.bytes, readStamp: true))
                sizes.insert(d.width)
                if let n = d.stamp?.frameNumber { decoded.append(n) }
            }
        }
        let top = [320, 640, 1280][keptSpatial - 1]
        #expect(sizes == [top], "kept S0..S\(keptSpatial - 1): decoded sizes \(sizes)")
        #expect(decoded == expected, "kept S0..S\(keptSpatial - 1) T\(keptTemporal): decoded \(decoded)")
        // Each layer has its share: the lowest smallest, the top largest.
        #expect(layerBytes[0] < layerBytes[1] && layerBytes[1] < layerBytes[2], "bytes per spatial layer \(layerBytes)")
    }

    /// Starved (a three-layer 720p key picture, then 150 kbit/s for all three layers — the
    /// publisher's first seconds when the start probe fails), the SVC encoder drops at most two
    /// pictures in a row, as libwebrtc configures it (`libvpx_vp9_encoder.cc`,
    /// max_consec_drop = 2): unbounded, it sent 2 pictures a second for 3 s and Chromium counted
    /// a freeze.
    @Test func starvedSpatialLayersDropAtMostTwoPicturesInARow() throws {
        let config = VideoLayerConfig.spatial(
            top: .defaults(width: 1280, height: 720, temporalLayers: 3, rid: "f"), spatialLayers: 3)
        let enc = try VideoCodec.vp9.makeEncoder(config: config, keyFrameInterval: 0)
        try enc.setTargetBitrate(150_000)
        var pic = I420Frame(width: 1280, height: 720)
        var run = 0, longest = 0, dropped = 0
        for i in 0..<60 {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: UInt32(i * 33))
            let f = try enc.encode(
                &pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: false, clock: { 0 })
            if f == nil { run += 1; dropped += 1 } else { run = 0 }
            longest = max(longest, run)
        }
        // It does drop (the budget is real), but never three in a row.
        #expect(dropped > 0 && longest <= 2, "dropped \(dropped) of 60, at most \(longest) in a row")
    }

    @Test func descriptorIsReadTotally() throws {
        // Non-flexible with L and TL0PICIDX; flexible with three references; a structure with a group.
        let (a, na) = try VP9PayloadDescriptor.parse([0xA8, 0x05, 0x41, 0x07].span)
        #expect(na == 4 && a.pictureID == 5 && a.temporalID == 2 && a.tl0PicIdx == 7 && a.beginningOfFrame && !a.flexible)
        let (b, nb) = try VP9PayloadDescriptor.parse([0xD4, 0x81, 0x02, 0x03, 0x05, 0x06].span)
        #expect(nb == 6 && b.pictureID == 0x102 && b.pDiffs == [1, 2, 3] && b.endOfFrame)
        #expect(throws: RTPParseError.badPayload) { try VP9PayloadDescriptor.parse([0x50, 0x03, 0x03, 0x03, 0x02].span) }
        // B, V; one spatial layer with its size (320x180), one picture group with one reference.
        let (c, nc) = try VP9PayloadDescriptor.parse([0x0A, 0x18, 0x01, 0x40, 0x00, 0xB4, 0x01, 0x04, 0x01].span)
        #expect(nc == 9 && c.scalability?.sizes.first?.width == 320 && c.scalability?.sizes.first?.height == 180)
        let full: [UInt8] = [0x0A, 0x18, 0x01, 0x40, 0x00, 0xB4, 0x01, 0x04, 0x01]
        for n in 0..<9 {
            let cut = Array(full[0..<n])
            #expect((try? VP9PayloadDescriptor.parse(cut.span)) == nil, "a descriptor cut to \(n) bytes")
        }
        #expect(throws: RTPParseError.truncated) { try VP9PayloadDescriptor.parse([0x0A, 0x38, 0x01].span) }
    }
}

/// The frame stamp read back from the decoded frames, each codec, 180p–720p, L1T3: every one
/// for VP8 and H.264. VP9 (libvpx real-time, speeds 5–9, AQ on or off) leaves a 64×64
/// superblock of stamp cells unchanged when two of its cells flip opposite ways (the block's
/// average stays the same), so some frames read back a stale stamp in one superblock: measured
/// 29–35 of 150 at 720p and 16 of 300 at 360p (2026-12-02). Spacing the cells a superblock apart
/// fixes it, but changes the synthetic picture every rate and pre-flight figure was tuned on —
/// not done yet; this holds VP9 to what it reads today and to no wrong stamp ever being read.
/// libaom's AV1 does the same with its superblocks.
@Suite struct StampReadBackTests {
    @Test(arguments: [VideoCodec.vp8, .h264, .vp9, .av1])
    func decodedFramesCarryTheirStamps(_ codec: VideoCodec) throws {
        for (w, h) in [(320, 180), (640, 360), (1280, 720)] {
            let enc = try codec.makeEncoder(config: .defaults(width: w, height: h, temporalLayers: 3, rid: "f"), keyFrameInterval: 0)
            let dec = try codec.makeDecoder()
            var pic = I420Frame(width: w, height: h)
            var encoded = 0
            var unread: [Int] = [], wrong: [Int] = []
            for i in 0..<300 {
                SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: UInt32(i * 33))
                guard
                    let f = try enc.encode(
                        &pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: false, clock: { 0 })
                else { continue }
                encoded += 1
                let d = try dec.decode(f.bytes, readStamp: true)
                if let stamp = d?.stamp {
                    if stamp != FrameStamp(frameNumber: UInt32(i), captureMillis: UInt32(i * 33)) { wrong.append(i) }
                } else {
                    unread.append(i)
                }
            }
            let name = "\(codec.sdpName) \(h)p: \(encoded) frames, unread at \(unread), wrong at \(wrong)"
            #expect(encoded >= 250 && wrong.isEmpty, "\(name)")
            #expect(codec == .vp9 || codec == .av1 ? unread.count * 4 <= encoded : unread.isEmpty, "\(name)")
        }
    }
}

extension VideoFrameAssembler {
    /// Inserts a picture's packets in order, numbered on from `seq` (which moves past them), at
    /// the picture's 90 kHz timestamp (30 fps: frame `frame` × 3000) — as a forwarder with no
    /// gap sends what it keeps.
    mutating func insertInOrder(_ packets: [([UInt8], Bool)], frame: Int, seq: inout UInt16) {
        for (k, (payload, marker)) in packets.enumerated() {
            insert(sequenceNumber: seq &+ UInt16(k), timestamp: UInt32(frame) * 3000, marker: marker, payload: payload.span, now: 0)
        }
        seq &+= UInt16(packets.count)
    }
}
