import Testing
#if canImport(Glibc)
    import Glibc
#endif
@testable import MediaCodecs

@Suite struct ReplayLibraryTests {
    func tempDir() -> String {
        var template = Array("/tmp/pubbot-replay-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    @Test func buildWriteLoadRoundTripDecodes() throws {
        let layers = VideoLayerConfig.ladder(top: 640, 360, layers: 2)
        let lib = try ReplayLibrary.build(layers: layers, seconds: 1, keyFrameIntervalMicros: 333_333)
        #expect(lib.layers.map { $0.frames.count } == [30, 30])
        #expect(lib.layers.allSatisfy { $0.keyFrames == [0, 10, 20] })
        #expect(lib.audio.count == 50)
        let dir = tempDir()
        try lib.write(directory: dir)
        let back = try ReplayLibrary.load(directory: dir)
        #expect(back.layers.map { $0.config.width } == [320, 640])
        #expect(back.layers[1].frames.map(\.bytes) == lib.layers[1].frames.map(\.bytes))
        #expect(back.layers[0].keyFrames == [0, 10, 20] && back.audio == lib.audio)
        // A PLI at frame 11 is answered at 20, at frame 25 by wrapping to 0.
        #expect(back.layers[0].keyFrame(atOrAfter: 11) == 20 && back.layers[0].keyFrame(atOrAfter: 25) == 0)
        // What a bot sends is a real VP8 stream: decoding from a key frame works.
        let decoder = try LibvpxDecoder()
        for f in back.layers[1].frames[10..<20] { _ = try decoder.decode(f.bytes) }
    }

    @Test func damagedFilesAreErrorsNotCrashes() throws {
        let lib = try ReplayLibrary.build(
            layers: [VideoLayerConfig.ladder(top: 320, 180, layers: 1)[0]], seconds: 1, keyFrameIntervalMicros: 1_000_000)
        let dir = tempDir()
        try lib.write(directory: dir)
        #expect(throws: ReplayLibrary.FileError.self) { try ReplayLibrary.load(directory: dir + "/missing") }
        // Truncate the IVF in the middle of a frame.
        let ivf = dir + "/\(lib.layers[0].config.rid)-320x180.ivf"
        let bytes = try ReplayLibrary.readFile(ivf, limit: 1 << 24)
        try ReplayLibrary.writeFile(ivf, Array(bytes.prefix(bytes.count - 7)))
        #expect(throws: ReplayLibrary.FileError.self) { try ReplayLibrary.load(directory: dir) }
        try ReplayLibrary.writeFile(dir + "/manifest.txt", Array("pubbot-replay 1\nlayer q 99999 180 30 1 2 3 ../etc/passwd\n".utf8))
        #expect(throws: ReplayLibrary.FileError.self) { try ReplayLibrary.load(directory: dir) }
    }
}
