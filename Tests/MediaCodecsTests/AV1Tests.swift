import Testing
@testable import RTPCore
@testable import MediaCodecs

/// libaom AV1 behind `VideoEncoder`/`VideoDecoder`, and its temporal units through the AV1 RTP
/// packetizer and the assembler: every frame decoded with its stamp, whatever the packet size
/// and arrival order.
@Suite(.serialized) struct AV1CodecTests {
    /// The packets of one temporal unit (payload, marker).
    static func packets(_ f: EncodedVideoFrame, maxPayload: Int) throws -> [([UInt8], Bool)] {
        var p = try AV1Packetizer(frame: f.bytes.span, maxPayloadSize: maxPayload, keyFrame: f.isKeyFrame)
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: maxPayload, alignment: 8)
        defer { buf.deallocate() }
        var out: [([UInt8], Bool)] = []
        while true {
            var w = ByteWriter(buf)
            guard let marker = try p.next(frame: f.bytes.span, into: &w) else { break }
            out.append((Array(buf[0..<w.count]), marker))
        }
        #expect(out.count == (try AV1Packetizer.packetCount(frame: f.bytes.span, maxPayloadSize: maxPayload)))
        #expect(out.last?.1 == true && out.dropLast().allSatisfy { !$0.1 })
        return out
    }

    // 131 and 67: a fragment's length at LEB128's two-byte boundary, and at the 64-byte floor
    // for a fragment behind other elements (the packet count is worked out apart from the writing).
    @Test(arguments: [1000, 300, 131, 67, 40])
    func packetizedFramesReassembleAndDecode(maxPayload: Int) throws {
        let config = VideoLayerConfig.defaults(width: 640, height: 360, rid: "h")
        let enc = try VideoCodec.av1.makeEncoder(config: config, keyFrameInterval: 0)
        let dec = try VideoCodec.av1.makeDecoder()
        var pic = I420Frame(width: 640, height: 360)
        var assembler = VideoFrameAssembler(codec: .av1)
        var seq: UInt16 = 65_500
        var decoded = 0, encoded = 0
        var rng = SplitMix64(seed: 11)
        for i in 0..<30 {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: UInt32(i * 33))
            guard
                let f = try enc.encode(
                    &pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: i == 20, clock: { 0 })
            else { continue }
            encoded += 1
            #expect(f.isKeyFrame == (i == 0 || i == 20) && AV1OBU.isKeyFrame(f.bytes.span) == f.isKeyFrame)
            let packets = try Self.packets(f, maxPayload: maxPayload)
            for (k, (payload, marker)) in packets.enumerated() {
                #expect(payload.count <= maxPayload && marker == (k == packets.count - 1))
                let h = try AV1Depacketizer.header(payload.span)
                // N on a key frame's first packet only; Z exactly when the packet before said Y.
                #expect(h.newCodedVideoSequence == (f.isKeyFrame && k == 0))
                let previous = k > 0 ? packets[k - 1].0 : [0, 0]
                let before = try AV1Depacketizer.header(previous.span).OBUContinues
                #expect(h.continuesOBU == before)
            }
            for k in packets.indices.shuffled(using: &rng) {
                let (payload, marker) = packets[k]
                assembler.insert(
                    sequenceNumber: seq &+ UInt16(k), timestamp: UInt32(i) * 3000, marker: marker, payload: payload.span, now: 0)
            }
            seq &+= UInt16(packets.count)
            while let out = assembler.pop(now: 0) {
                #expect(out.isKeyFrame == f.isKeyFrame)
                let d = try #require(try dec.decode(out.bytes, readStamp: true))
                #expect(d.width == 640 && d.height == 360 && d.stamp?.frameNumber == UInt32(i))
                decoded += 1
            }
        }
        #expect(encoded >= 28 && decoded == encoded && assembler.framesDropped == 0 && assembler.malformedPackets == 0)
    }

    /// The reassembled unit is the encoder's, OBU for OBU (the size fields restored, a temporal
    /// delimiter first), and a fragment cut at every possible byte comes back whole.
    @Test func depacketizedUnitIsTheEncodersBitstream() throws {
        let config = VideoLayerConfig.defaults(width: 320, height: 180, rid: "q")
        let enc = try VideoCodec.av1.makeEncoder(config: config, keyFrameInterval: 0)
        var pic = I420Frame(width: 320, height: 180)
        SyntheticVideoSource().fill(&pic, frameNumber: 0, captureMillis: 0)
        let f = try #require(try enc.encode(&pic, layer: 0, frameNumber: 0, captureMicros: 0, forceKeyFrame: true, clock: { 0 }))
        // libaom writes a temporal delimiter, then every OBU with its size.
        #expect(Array(f.bytes.prefix(2)) == [0x12, 0x00])
        for maxPayload in [3, 4, 5, 17, 64, 65, 66, 129, 200, 1200] {
            let packets = try Self.packets(f, maxPayload: maxPayload)
            let unit = try AV1Depacketizer.assemble(packets.map(\.0))
            #expect(unit.bytes == f.bytes && unit.isKeyFrame, "max payload \(maxPayload)")
        }
    }

    /// L1T3 through libaom's SVC interface: the 0-2-1-2 pattern, the temporal ID in each frame
    /// OBU's extension header, and the references are the truth — a receiver that gets only T0 (or T0
    /// and T1) decodes every one of those frames with its stamp. The control: an L1T1 stream
    /// thinned the same way does not decode.
    @Test(arguments: [([0], 3), ([0, 1], 3), ([0, 1, 2], 3), ([0], 1)] as [([UInt8], Int)])
    func temporalLayersDecodeWithoutTheLayersAbove(_ kept: [UInt8], layers: Int) throws {
        let config = VideoLayerConfig.defaults(width: 640, height: 360, temporalLayers: layers, rid: "h")
        let enc = try VideoCodec.av1.makeEncoder(config: config, keyFrameInterval: 0)
        let dec = try VideoCodec.av1.makeDecoder()
        var pic = I420Frame(width: 640, height: 360)
        var assembler = VideoFrameAssembler(codec: .av1)
        var seq: UInt16 = 100
        var tids: [UInt8] = [], decoded: [UInt32] = [], expected: [UInt32] = []
        var refs: [[UInt8]] = []
        var failed = 0
        for i in 0..<24 {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: UInt32(i * 33))
            let f = try #require(
                try enc.encode(&pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: false, clock: { 0 })
            )
            refs.append(f.referenceDistances)
            // L1T1: the pattern's layer by position, to thin it the same way.
            let pattern: [UInt8] = [0, 2, 1, 2]
            let tid: UInt8 = layers > 1 ? try #require(f.temporalID) : pattern[i % 4]
            tids.append(tid)
            if layers > 1 {
                // Every OBU but the temporal delimiter and the sequence header carries the TID.
                var at = 0
                while let u = try AV1OBU.unit(at: at, in: f.bytes.span) {
                    let type = u.type(f.bytes.span)
                    // libaom writes no extension when its value would be 0 (T0): such an OBU belongs
                    // to every operating point (AV1 §6.2.3).
                    if type == AV1OBU.frame {
                        let written: UInt8 = u.headerSize == 2 ? f.bytes[u.header + 1] >> 5 : 0
                        #expect(written == tid && (tid == 0 || u.headerSize == 2), "frame \(i) tid \(tid)")
                    }
                    at = u.end
                }
            }
            if kept.contains(tid) {
                expected.append(UInt32(i))
                assembler.insertInOrder(try Self.packets(f, maxPayload: 1000), frame: i, seq: &seq)
            }
            while let out = assembler.pop(now: 0) {
                do {
                    if let n = try dec.decode(out.bytes, readStamp: true)?.stamp?.frameNumber { decoded.append(n) }
                } catch { failed += 1 }
            }
        }
        // The references the Dependency Descriptor's templates state (frame diffs): L1T3's
        // T0 → the T0 before, T2 → the frame before, T1 → the T0 two back, the second T2 → the T1
        // and the T0 three back; L1T1's each frame the one before.
        #expect(
            refs.prefix(8) == (layers > 1 ? [[], [1], [2], [1, 3], [4], [1], [2], [1, 3]] : [[], [1], [1], [1], [1], [1], [1], [1]]),
            "\(refs.prefix(8))")
        if layers > 1 {
            #expect(tids.prefix(8) == [0, 2, 1, 2, 0, 2, 1, 2])
            #expect(decoded == expected && failed == 0, "kept T\(kept): decoded \(decoded)")
        } else {
            #expect(decoded.count < expected.count, "L1T1 thinned to T0 decoded \(decoded) of \(expected)")
        }
    }

    /// AV1 L3T3_KEY (libaom SVC, one encode per spatial layer): a picture is the frames of
    /// 320x180, 640x360 and 1280x720 in turn; each layer frame packetized on its own and
    /// reassembled as the receiver does (one temporal unit) decodes at the top size with the
    /// stamp; the lowest layers alone (an SFU forwarding fewer, the marker on the last it
    /// forwards) decode at their size, every picture; T0 alone of all three decodes every T0
    /// picture. The references are those the Dependency Descriptor's templates state.
    @Test(arguments: [(1, [0, 1, 2]), (2, [0, 1, 2]), (3, [0, 1, 2]), (3, [0])] as [(Int, [UInt8])])
    func spatialLayersDecodeWithoutTheLayersAbove(_ keptSpatial: Int, _ keptTemporal: [UInt8]) throws {
        let config = VideoLayerConfig.spatial(top: .defaults(width: 1280, height: 720, temporalLayers: 3, rid: "f"), spatialLayers: 3)
        let enc = try VideoCodec.av1.makeEncoder(config: config, keyFrameInterval: 0)
        let dec = try VideoCodec.av1.makeDecoder()
        var pic = I420Frame(width: 1280, height: 720)
        var assembler = VideoFrameAssembler(codec: .av1)
        var seq: UInt16 = 100
        var decoded: [UInt32] = [], expected: [UInt32] = [], sizes: Set<Int> = [], refs: [[UInt8]] = []
        var failed = 0
        for i in 0..<12 {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: UInt32(i * 33))
            let f = try #require(
                try enc.encode(
                    &pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: i == 8, clock: { 0 })
            )
            #expect(f.isKeyFrame == (i == 0 || i == 8))
            #expect(f.spatialLayers.map(\.width) == [320, 640, 1280] && f.spatialLayers.map(\.size).reduce(0, +) == f.bytes.count)
            refs.append(f.referenceDistances)
            let tid = try #require(f.temporalID)
            guard keptTemporal.contains(tid) else { continue }
            expected.append(UInt32(i))
            var offset = 0
            var packets: [([UInt8], Bool)] = []
            for (k, l) in f.spatialLayers.enumerated() where k < keptSpatial {
                let layer = EncodedVideoFrame(
                    layer: 0, bytes: Array(f.bytes[offset..<(offset + l.size)]), isKeyFrame: f.isKeyFrame && k == 0, width: l.width,
                    height: l.height, frameNumber: f.frameNumber, captureMicros: f.captureMicros, temporalID: f.temporalID,
                    layerSync: false,
                    encodeMicros: 0)
                packets += try Self.packets(layer, maxPayload: 1000).map { ($0.0, false) }
                offset += l.size
            }
            packets[packets.count - 1].1 = true
            assembler.insertInOrder(packets, frame: i, seq: &seq)
            while let out = assembler.pop(now: 0) {
                do {
                    let d = try #require(try dec.decode(out.bytes, readStamp: true))
                    sizes.insert(d.width)
                    if let n = d.stamp?.frameNumber { decoded.append(n) }
                } catch { failed += 1 }
            }
        }
        #expect(refs.prefix(8) == [[], [1], [2], [1, 3], [4], [1], [2], [1, 3]], "\(refs)")
        let top = [320, 640, 1280][keptSpatial - 1]
        #expect(sizes == [top] && failed == 0, "kept S0..S\(keptSpatial - 1): decoded sizes \(sizes), \(failed) failed")
        #expect(decoded == expected, "kept S0..S\(keptSpatial - 1) T\(keptTemporal): decoded \(decoded)")
    }

    /// A layer the estimate left unsent for 2 s resumes with a key frame of ordinary size: libaom
    /// derives its frame rate from the step between presentation times, and took the pause for
    /// 0.5 fps (a 65 KB key frame at 720p, 2.5 Mbit/s — Chromium counted a freeze behind one).
    @Test func aResumedLayersKeyFrameIsNotInflatedByThePause() throws {
        let config = VideoLayerConfig.defaults(width: 1280, height: 720, fps: 30, rid: "f")
        let enc = try VideoCodec.av1.makeEncoder(config: config, keyFrameInterval: 0)
        var pic = I420Frame(width: 1280, height: 720)
        var resumed: EncodedVideoFrame?
        for n in 0..<91 where n < 30 || n == 90 {
            let capture = Int64(n) * 33_333
            SyntheticVideoSource(seed: 1).fill(&pic, frameNumber: UInt32(n), captureMillis: UInt32(capture / 1000))
            let f = try enc.encode(
                &pic, layer: 0, frameNumber: UInt32(n), captureMicros: capture, forceKeyFrame: n == 0 || n == 90, clock: { 0 })
            if n == 90 { resumed = f }
        }
        let key = try #require(resumed)
        let average = config.targetBitrate / 8 / config.fps
        #expect(key.isKeyFrame && key.bytes.count <= 3 * average, "resumed key frame \(key.bytes.count) bytes, average frame \(average)")
    }

    /// Hostile payloads are rejected with an error, never a trap: truncated lengths, a Z without a
    /// fragment before it, a Y on the last packet, W counts that do not match, the forbidden bit.
    /// Element lengths as LEB128 (one and two bytes without a loop, longer ones by the loop):
    /// each value's size as `leb128Size` says, read back by the parser.
    @Test func leb128LengthsRoundTrip() throws {
        for v in [0, 1, 127, 128, 129, 1180, 16_383, 16_384, 2_097_151, 2_097_152, Int(UInt32.max)] {
            let bytes = try [UInt8].writing(capacity: 8) { (w: inout ByteWriter) throws(RTPWriteError) in AV1OBU.writeLEB128(v, into: &w) }
            #expect(bytes.count == AV1OBU.leb128Size(v), "\(v): \(bytes)")
            let back = AV1OBU.leb128(bytes.span, at: 0)
            #expect(back?.value == v && back?.size == bytes.count, "\(v): \(bytes)")
        }
    }

    /// The packet count `init` works out (full fragments counted at once) is the number of
    /// packets `next` writes, for temporal units of 1–4 OBUs of 1 byte to 40 KB and every kind
    /// of room: fragments at the LEB128 boundaries, behind other elements, at the 64-byte floor.
    /// Each unit comes back whole from its packets.
    @Test func packetCountIsWhatNextWrites() throws {
        var rng = SplitMix64(seed: 17)
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { buf.deallocate() }
        for trial in 0..<3000 {
            var unit: [UInt8] = [0x12, 0x00] // temporal delimiter
            for _ in 0...(rng.next() % 4) {
                let size = Int(rng.next() % 8 == 0 ? rng.next() % 40_000 : rng.next() % 3000) + 1
                unit.append(0x32) // OBU_FRAME with a size field
                AV1OBU.appendLEB128(size, to: &unit)
                unit += (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ trial) }
            }
            let rooms = [3, 4, 65, 66, 67, 128, 129, 130, 131, 132, 1200, 16_386]
            let maxPayload = rng.next() % 2 == 0 ? rooms[Int(rng.next() % UInt64(rooms.count))] : Int(rng.next() % 1500) + 3
            var p = try AV1Packetizer(frame: unit.span, maxPayloadSize: min(maxPayload, buf.count), keyFrame: false)
            let count = try AV1Packetizer.packetCount(frame: unit.span, maxPayloadSize: min(maxPayload, buf.count))
            var payloads: [[UInt8]] = []
            while true {
                var w = ByteWriter(UnsafeMutableRawBufferPointer(rebasing: buf[0..<min(maxPayload, buf.count)]))
                guard let marker = try p.next(frame: unit.span, into: &w) else { break }
                payloads.append(Array(buf[0..<w.count]))
                #expect(marker == (payloads.count == count))
            }
            #expect(payloads.count == count, "trial \(trial), room \(maxPayload)")
            #expect(try AV1Depacketizer.assemble(payloads).bytes == unit, "trial \(trial)")
        }
    }

    @Test func malformedPayloadsThrow() {
        let bad: [[[UInt8]]] = [
            [[0x00]], // no element
            [[0x00, 0x05, 0x30]], // length past the end
            [[0x80, 0x01, 0x30]], // Z on the first packet
            [[0x40, 0x01, 0x30]], // Y on the last packet
            [[0x30, 0x01, 0x30]], // W = 3 but one element
            [[0x00, 0x01, 0xB0]], // forbidden bit
            [[0x00, 0x00]], // a zero-length element
            [[0x00, 0x02, 0x32, 0x05]], // an OBU whose own size runs past its element
            [[0x00, 0x0A, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]] // LEB128 longer than 8 bytes
        ]
        for payloads in bad {
            #expect(throws: RTPParseError.self, "\(payloads)") { try AV1Depacketizer.assemble(payloads) }
        }
        var rng = SplitMix64(seed: 5)
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 3) + 1
            let payloads = (0..<n).map { _ in (0..<Int(rng.next() % 24)).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
            _ = try? AV1Depacketizer.assemble(payloads)
            let first = payloads.first ?? []
            _ = AV1OBU.isKeyFrame(first.span)
        }
    }
}
