import Testing
@testable import MediaCodecs

@Suite struct FrameStampTests {
    @Test(arguments: [(320, 180), (640, 360), (1280, 720), (1920, 1080)])
    func drawsAndReadsBack(_ w: Int, _ h: Int) throws {
        var f = I420Frame(width: w, height: h)
        SyntheticVideoSource(seed: 3).fill(&f, frameNumber: 123_456, captureMillis: 0xDEAD_BEEF)
        let stamp = f.data.withUnsafeBufferPointer {
            FrameStamp.read(luma: UnsafeBufferPointer(rebasing: $0[0..<(w * h)]), width: w, height: h, stride: w)
        }
        #expect(stamp == FrameStamp(frameNumber: 123_456, captureMillis: 0xDEAD_BEEF))
    }

    @Test func rejectsCorruptedStamp() {
        var f = I420Frame(width: 320, height: 180)
        SyntheticVideoSource().fill(&f, frameNumber: 7, captureMillis: 99)
        let c = FrameStamp.cellSize(width: 320)
        // Invert one cell of the frame-number field: the check byte no longer matches.
        for row in c..<(2 * c) { for x in c..<(2 * c) { f.data[row * 320 + x] = 255 - f.data[row * 320 + x] } }
        let stamp = f.data.withUnsafeBufferPointer {
            FrameStamp.read(luma: UnsafeBufferPointer(rebasing: $0[0..<(320 * 180)]), width: 320, height: 180, stride: 320)
        }
        #expect(stamp == nil)
    }

    @Test func syntheticVideoIsDeterministicAndMoving() {
        var a = I420Frame(width: 320, height: 180), b = I420Frame(width: 320, height: 180), c = I420Frame(width: 320, height: 180)
        SyntheticVideoSource(seed: 5).fill(&a, frameNumber: 10, captureMillis: 1)
        SyntheticVideoSource(seed: 5).fill(&b, frameNumber: 10, captureMillis: 1)
        SyntheticVideoSource(seed: 5).fill(&c, frameNumber: 20, captureMillis: 1)
        #expect(a.data == b.data)
        let changed = zip(a.data, c.data).filter { $0 != $1 }.count
        #expect(changed > a.data.count / 4) // the content pans: most pixels change within 10 frames
    }

    @Test func syntheticAudioIsNeverSilent() {
        var src = SyntheticAudioSource()
        var pcm = [Int16](repeating: 0, count: 960)
        var quietest = Int.max
        for _ in 0..<100 { // 2 s, 20 ms at a time
            src.fill(&pcm)
            quietest = min(quietest, pcm.map { abs(Int($0)) }.max()!)
        }
        #expect(quietest > 1000)
    }
}

@Suite(.serialized) struct CodecTests {
    func encodeFrames(_ config: VideoLayerConfig, count: Int, keyEvery: Int = 0, forceAt: Set<Int> = [], kfInterval: Int = 0) throws
        -> [EncodedVideoFrame]
    {
        let enc = try LibvpxEncoder(config: config, keyFrameInterval: kfInterval)
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

    @Test func vp8RoundTripKeepsStampsAtLowestLayer() throws {
        let config = VideoLayerConfig.defaults(width: 320, height: 180, rid: "q")
        let frames = try encodeFrames(config, count: 30)
        #expect(frames.count == 30)
        #expect(frames[0].isKeyFrame && !frames[1].isKeyFrame)
        let dec = try LibvpxDecoder()
        var read = 0
        for (i, f) in frames.enumerated() {
            let d = try #require(try dec.decode(f.bytes))
            #expect(d.width == 320 && d.height == 180)
            if let s = d.stamp { #expect(s.frameNumber == UInt32(i)); read += 1 }
        }
        #expect(read == 30)
        // About the target rate (CBR): 30 frames at 150 kbps ≈ 18.75 kB, key frame included.
        let bytes = frames.reduce(0) { $0 + $1.bytes.count }
        #expect(bytes > 8_000 && bytes < 60_000)
    }

    @Test func fullHDWorks() throws {
        let frames = try encodeFrames(.defaults(width: 1920, height: 1080, rid: "f"), count: 3)
        let d = try #require(try LibvpxDecoder().decode(frames[0].bytes))
        #expect(d.width == 1920 && d.height == 1080 && d.stamp?.frameNumber == 0)
    }

    @Test func keyFrameOnRequestAndPeriodic() throws {
        let config = VideoLayerConfig.defaults(width: 320, height: 180, rid: "q")
        let requested = try encodeFrames(config, count: 12, forceAt: [7])
        #expect(requested.indices.filter { requested[$0].isKeyFrame } == [0, 7])
        let periodic = try encodeFrames(config, count: 12, kfInterval: 5)
        #expect(periodic.filter(\.isKeyFrame).count >= 2)
    }

    @Test func temporalLayersFollowThePattern() throws {
        var config = VideoLayerConfig.defaults(width: 320, height: 180, temporalLayers: 3, rid: "q")
        config.temporalLayers = 3
        let frames = try encodeFrames(config, count: 8)
        #expect(frames.map { $0.temporalID ?? 9 } == [0, 2, 1, 2, 0, 2, 1, 2])
        #expect(frames.map(\.layerSync) == [false, true, true, false, false, true, true, false])
        #expect(config.scalabilityMode == "L1T3")
        let two = try encodeFrames(.defaults(width: 320, height: 180, temporalLayers: 2, rid: "q"), count: 4)
        #expect(two.map { $0.temporalID ?? 9 } == [0, 1, 0, 1])
    }

    @Test func bitrateChangesWhileRunning() throws {
        let config = VideoLayerConfig.defaults(width: 640, height: 360, rid: "h")
        let enc = try LibvpxEncoder(config: config)
        var pic = I420Frame(width: 640, height: 360)
        func run(_ frames: Range<Int>) throws -> Int {
            var total = 0
            for i in frames {
                SyntheticVideoSource().fill(&pic, frameNumber: UInt32(i), captureMillis: 0)
                total +=
                    try enc.encode(
                        &pic, layer: 0, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: false, clock: { 0 })?.bytes
                    .count ?? 0
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

    @Test func opusRoundTripIsNotSilent() throws {
        let enc = try OpusAudioEncoder()
        let dec = try OpusAudioDecoder()
        var src = SyntheticAudioSource()
        var pcm = [Int16](repeating: 0, count: 960)
        var packet: [UInt8] = []
        var peak = 0, bytes = 0
        for _ in 0..<50 {
            src.fill(&pcm)
            try enc.encode(pcm, into: &packet)
            bytes += packet.count
            let r = try dec.decode(packet)
            #expect(r.samples == 960)
            peak = max(peak, r.peak)
        }
        #expect(peak > 2000)
        #expect(bytes > 50 * 40) // about 32 kbps: 80 bytes per 20 ms frame, far above DTX
    }

    @Test func ladderDefaultsFollowTheSimulcastTable() {
        let l = VideoLayerConfig.ladder(top: 1280, 720)
        #expect(l.map(\.width) == [320, 640, 1280])
        #expect(l.map(\.rid) == ["q", "h", "f"])
        #expect(l.map(\.targetBitrate) == [150_000, 500_000, 2_500_000])
        #expect(l.map(\.minBitrate) == [30_000, 150_000, 600_000])
        #expect(l.map(\.maxBitrate) == [200_000, 700_000, 2_500_000])
    }
}
