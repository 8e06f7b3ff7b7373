#if canImport(Glibc)
    import Glibc
#endif
import MediaCodecs
import Platform

/// `--dump-frames DIR`: each measured frame's decoded and reference luma as YUV4MPEG2 files an
/// outside tool reads (`ffmpeg -i decoded.y4m -i reference.y4m -lavfi psnr -f null -`), so
/// pubbot's PSNR can be checked by something it did not write. One pair of files per stream
/// and size, `<ssrc>-<W>x<H>-decoded.y4m` and `…-reference.y4m`; the chroma planes are written
/// neutral (128) in both: the figure is the luma's. With `--capture-size`, the frames also
/// measured at the capture size go to `<ssrc>-capture-<W>x<H>-…` (the decoded picture as scaled up).
final class FrameDump: DecodedFrameSink, @unchecked Sendable {
    let directory: String
    let ssrc: UInt32
    let label: String
    /// The capture-size pairs' files.
    lazy var captures = FrameDump(directory: directory, ssrc: ssrc, label: "-capture")
    var files: (decoded: UnsafeMutablePointer<FILE>, reference: UnsafeMutablePointer<FILE>)?
    var size = (0, 0)
    var chroma: [UInt8] = []
    /// Frames written (the check counts them against the frames measured).
    private(set) var frames = 0
    private(set) var error: String?

    init(directory: String, ssrc: UInt32, label: String = "") {
        self.directory = directory
        self.ssrc = ssrc
        self.label = label
    }

    func writeCapture(decoded: UnsafeBufferPointer<UInt8>, reference: UnsafeBufferPointer<UInt8>, width: Int, height: Int) {
        captures.write(decoded: decoded, reference: reference, width: width, height: height)
        if error == nil, let e = captures.error { error = e }
    }

    deinit { close() }

    /// Closes every file (the run ended).
    func close() {
        closeFiles()
        if label.isEmpty { captures.closeFiles() }
    }

    func closeFiles() {
        if let f = files { fclose(f.decoded); fclose(f.reference) }
        files = nil
    }

    func write(decoded: UnsafeBufferPointer<UInt8>, reference: UnsafeBufferPointer<UInt8>, width: Int, height: Int) {
        guard error == nil else { return }
        if files == nil || size != (width, height) {
            closeFiles()
            let base = "\(directory)/\(ssrc)\(label)-\(width)x\(height)"
            guard let d = fopen(base + "-decoded.y4m", "w"), let r = fopen(base + "-reference.y4m", "w") else {
                error = "cannot write \(base)-*.y4m: \(String(cString: strerror(errno)))"
                return
            }
            files = (d, r)
            size = (width, height)
            chroma = [UInt8](repeating: 128, count: 2 * ((width + 1) / 2) * ((height + 1) / 2))
            let header = "YUV4MPEG2 W\(width) H\(height) F30:1 Ip A1:1 C420jpeg\n"
            fputs(header, d)
            fputs(header, r)
        }
        guard let (d, r) = files else { return }
        for (f, plane) in [(d, decoded), (r, reference)] {
            fputs("FRAME\n", f)
            fwrite(plane.baseAddress, 1, plane.count, f)
            chroma.withUnsafeBufferPointer { _ = fwrite($0.baseAddress, 1, $0.count, f) }
        }
        frames += 1
    }
}

/// The sinks of one run, made per stream as the receiver asks for them.
final class FrameDumps: Sendable {
    let directory: String
    let dumps = Locked<[FrameDump]>([])

    init(directory: String) { self.directory = directory }

    /// A sink for one stream (`ReceiverConfig.frameSinks`).
    func sink(ssrc: UInt32) -> (any DecodedFrameSink)? {
        let d = FrameDump(directory: directory, ssrc: ssrc)
        dumps.withLock { $0.append(d) }
        return d
    }

    /// Closes every file (the run ended); the first error, if any.
    func finish() -> String? {
        dumps.withLock { all in
            for d in all { d.close() }
            return all.lazy.compactMap(\.error).first
        }
    }
}
