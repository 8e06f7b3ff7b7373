import Testing
import RTPCore
@testable import MediaCodecs

/// openh264 behind `VideoEncoder`/`VideoDecoder`, and its frames through the RFC 6184
/// packetizer and the assembler: what leaves the encoder is what the decoder gets back.
@Suite(.serialized) struct H264CodecTests {
    func encodeFrames(_ config: VideoLayerConfig, count: Int, forceAt: Set<Int> = [], kfInterval: Int = 0) throws -> [EncodedVideoFrame] {
        let enc = try VideoCodec.h264.makeEncoder(config: config, keyFrameInterval: kfInterval)
        var pic = I420Frame(width: config.width, height: config.height)
        var out: [EncodedVideoFrame] = []
        for i in 0..<count {
            SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: UInt32(i * 33))
            if let f = try enc.encode(
                &pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: forceAt.contains(i), clock: { 0 })
            {
                out.append(f)
            }
        }
        return out
    }

    /// The NAL unit types of an Annex B access unit.
    func nalTypes(_ bytes: [UInt8]) -> [UInt8] {
        var types: [UInt8] = [], at = 0
        while let r = H264NAL.next(in: bytes.span, from: at) {
            types.append(bytes[r.lowerBound] & 0x1F)
            at = r.upperBound
        }
        return types
    }

    @Test func roundTripKeepsStamps() throws {
        let config = VideoLayerConfig.defaults(width: 640, height: 360, rid: "h")
        let frames = try encodeFrames(config, count: 30)
        #expect(frames.count >= 28)
        #expect(frames[0].isKeyFrame && !frames[1].isKeyFrame)
        // A key frame: SPS, PPS, then the IDR slice; a delta frame: one non-IDR slice.
        #expect(nalTypes(frames[0].bytes) == [7, 8, 5])
        #expect(nalTypes(frames[1].bytes) == [1])
        let dec = try VideoCodec.h264.makeDecoder()
        var read = 0
        for f in frames {
            let d = try #require(try dec.decode(f.bytes, readStamp: true))
            #expect(d.width == 640 && d.height == 360)
            if let s = d.stamp { #expect(s.frameNumber == f.frameNumber); read += 1 }
        }
        #expect(read == frames.count)
    }

    @Test func keyFrameOnRequestAndPeriodic() throws {
        let config = VideoLayerConfig.defaults(width: 320, height: 180, rid: "q")
        let requested = try encodeFrames(config, count: 12, forceAt: [7])
        #expect(requested.filter(\.isKeyFrame).map(\.frameNumber) == [0, 7])
        let periodic = try encodeFrames(config, count: 12, kfInterval: 5)
        #expect(periodic.filter(\.isKeyFrame).map(\.frameNumber) == [0, 5, 10])
    }

    @Test func temporalLayersAreDyadic() throws {
        let frames = try encodeFrames(.defaults(width: 320, height: 180, temporalLayers: 3, rid: "q"), count: 8)
        #expect(frames.map { $0.temporalID ?? 9 } == [0, 2, 1, 2, 0, 2, 1, 2])
    }

    /// openh264 reports no QP; pubbot reads it back from each frame's slice headers as libwebrtc
    /// does (`H264SliceQP`, checked against x264 in RTPCoreTests): on the H.264 scale (0–51),
    /// lower at a higher rate on the same picture.
    @Test func theQPIsReadFromTheSliceHeaders() throws {
        func meanQP(_ bitrate: Int) throws -> Double {
            var config = VideoLayerConfig.defaults(width: 640, height: 360, rid: "h")
            config.targetBitrate = bitrate
            config.maxBitrate = bitrate
            let enc = try H264Encoder(config: config, rateTrim: false)
            #expect(enc.lastQP == nil)
            var pic = I420Frame(width: 640, height: 360)
            var qps: [Int] = []
            for i in 0..<60 {
                SyntheticVideoSource(seed: 1, content: .hard).fill(&pic, frameNumber: UInt32(i), captureMillis: UInt32(i * 33))
                if try enc.encode(
                    &pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: i == 0, clock: { 0 })
                    != nil, i >= 30, let qp = enc.lastQP
                {
                    qps.append(qp)
                }
            }
            #expect(qps.count >= 20 && qps.allSatisfy { (0...51).contains($0) }, "\(qps)")
            return Double(qps.reduce(0, +)) / Double(max(1, qps.count))
        }
        let low = try meanQP(200_000), high = try meanQP(2_000_000)
        #expect(high + 4 < low, "QP \(low) at 200 kbit/s, \(high) at 2 Mbit/s")
    }

    @Test func bitrateChangesWhileRunning() throws {
        let enc = try H264Encoder(config: .defaults(width: 640, height: 360, rid: "h"), rateTrim: false)
        var pic = I420Frame(width: 640, height: 360)
        func run(_ frames: Range<Int>) throws -> Int {
            var total = 0
            for i in frames {
                SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: 0)
                let f = try enc.encode(&pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: false) { 0 }
                total += f?.bytes.count ?? 0
            }
            return total
        }
        _ = try run(0..<30)
        let high = try run(30..<90)
        try enc.setTargetBitrate(100_000)
        _ = try run(90..<120)
        let low = try run(120..<180)
        #expect(enc.targetBitrate == 100_000)
        #expect(low * 2 < high) // 500 kbps → 100 kbps
    }

    /// Real frames through the packetizer (STAP-A for SPS+PPS, FU-A for the slices), shuffled,
    /// reassembled and decoded: every frame, its stamp, the SPS's size.
    @Test func packetizedFramesReassembleAndDecode() throws {
        let frames = try encodeFrames(.defaults(width: 1280, height: 720, rid: "f"), count: 10)
        var assembler = VideoFrameAssembler(codec: .h264)
        let dec = try H264Decoder()
        var seq: UInt16 = 65_000
        var decoded = 0
        var rng = SplitMix64(seed: 3)
        for f in frames {
            var p = try H264Packetizer(frame: f.bytes.span, maxPayloadSize: 1100)
            var packets: [([UInt8], Bool)] = []
            let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 1100, alignment: 8)
            defer { buf.deallocate() }
            while true {
                var w = ByteWriter(buf)
                guard let marker = try p.next(frame: f.bytes.span, into: &w) else { break }
                #expect(w.count <= 1100)
                packets.append((Array(buf[0..<w.count]), marker))
            }
            #expect(packets.count == p.packetCount && packets.last?.1 == true)
            if f.isKeyFrame { #expect(packets[0].0[0] & 0x1F == H264NAL.stapA) }
            // Any arrival order within the frame.
            let order = packets.indices.shuffled(using: &rng)
            for i in order {
                let (payload, marker) = packets[i]
                assembler.insert(
                    sequenceNumber: seq &+ UInt16(i), timestamp: f.frameNumber * 3000, marker: marker, payload: payload.span, now: 0)
            }
            seq &+= UInt16(packets.count)
            while let out = assembler.pop(now: 0) {
                #expect(out.isKeyFrame == f.isKeyFrame)
                if f.isKeyFrame { #expect(out.width == 1280 && out.height == 720) }
                let d = try #require(try dec.decode(out.bytes, readStamp: true))
                #expect(d.stamp?.frameNumber == f.frameNumber)
                decoded += 1
            }
        }
        #expect(decoded == frames.count)
        #expect(assembler.framesDropped == 0 && assembler.malformedPackets == 0)
    }
}

/// The packetizer on made-up access units: every unit comes back whole and in order, whether
/// the frame has few units (their ranges kept from the first scan) or many (scanned again),
/// with 3- and 4-byte start codes, units that share a STAP-A and units cut into FU-A fragments.
@Suite struct H264PacketizerShapeTests {
    func roundTrip(_ units: [[UInt8]], room: Int) throws -> [[UInt8]] {
        var frame: [UInt8] = []
        for (i, u) in units.enumerated() { frame += (i % 2 == 0 ? [0, 0, 0, 1] : [0, 0, 1]) + u }
        var p = try H264Packetizer(frame: frame.span, maxPayloadSize: room)
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: room, alignment: 8)
        defer { buf.deallocate() }
        var rebuilt: [UInt8] = []
        var markers: [Bool] = []
        while true {
            var w = ByteWriter(buf)
            guard let marker = try p.next(frame: frame.span, into: &w) else { break }
            #expect(w.count <= room)
            markers.append(marker)
            _ = try H264Depacketizer.append(
                Span(_unsafeStart: buf.baseAddress!.assumingMemoryBound(to: UInt8.self), count: w.count), to: &rebuilt)
        }
        #expect(markers.count == p.packetCount && markers.last == true && markers.dropLast().allSatisfy { !$0 })
        var out: [[UInt8]] = [], at = 0
        while let r = H264NAL.next(in: rebuilt.span, from: at) {
            out.append(Array(rebuilt[r]))
            at = r.upperBound
        }
        return out
    }

    @Test(arguments: [3, 40])
    func everyUnitComesBack(_ count: Int) throws {
        var rng = SplitMix64(seed: UInt64(count))
        let units = (0..<count).map { i -> [UInt8] in
            let size = [5, 30, 180, 700][Int(rng.next() % 4)]
            // A slice header byte, then bytes that never form a start code.
            return [UInt8(0x41 + (i % 2) * 0x24)] + (1..<size).map { UInt8(2 + ($0 * 7 + i) % 250) }
        }
        #expect(try roundTrip(units, room: 200) == units)
    }
}
