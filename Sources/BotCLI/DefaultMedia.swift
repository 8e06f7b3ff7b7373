#if canImport(Glibc)
    import Glibc
#endif
import MediaCodecs
import RTPCore

/// Where `pubbot load` finds its replay loops when `--media` is not given, wherever it runs:
/// `Media/replay` under the working directory (a checkout), beside the executable (an unpacked
/// release, or the checkout a `.build/…/pubbot` was built in), the installed share directory,
/// and otherwise a per-user cache, built there once on first use. VP8 loops live in `replay`,
/// another codec's in `replay-<codec>` (`replay-h264`).
enum DefaultMedia {
    static func name(_ codec: VideoCodec) -> String { codec == .vp8 ? "replay" : "replay-\(codec.rawValue)" }

    /// The candidate directories, in order, and the cache last.
    static func candidates(_ codec: VideoCodec = .vp8) -> [String] {
        let n = name(codec)
        var out = ["Media/\(n)"]
        if let exe = executableDirectory() {
            out.append(exe + "/Media/\(n)")
            out.append(exe + "/../share/pubbot/\(n)")
            out.append(exe + "/../../Media/\(n)") // .build/<config>/pubbot in a checkout
            out.append(exe + "/../../../Media/\(n)") // .build/<triple>/<config>/pubbot
        }
        out.append("/usr/local/share/pubbot/\(n)")
        out.append("/usr/share/pubbot/\(n)")
        return out
    }

    static func cacheDirectory(_ codec: VideoCodec = .vp8) -> String {
        let n = name(codec)
        if let x = getenv("XDG_CACHE_HOME"), x.pointee != 0 { return String(cString: x) + "/pubbot/\(n)" }
        if let h = getenv("HOME"), h.pointee != 0 { return String(cString: h) + "/.cache/pubbot/\(n)" }
        return "/tmp/pubbot-\(getuid())/\(n)"
    }

    /// The first directory with loops in it, loaded; otherwise loops built into the cache (with
    /// a progress line). nil after saying why on standard error.
    static func find(_ codec: VideoCodec = .vp8) -> (String, ReplayLibrary)? {
        for dir in candidates(codec) + [cacheDirectory(codec)] where access(dir + "/manifest.txt", R_OK) == 0 {
            do {
                let library = try ReplayLibrary.load(directory: dir)
                guard library.codec == codec else {
                    Output.err("warning: skipping the replay loops in \(dir): they are \(library.codec.sdpName), not \(codec.sdpName)\n")
                    continue
                }
                return (dir, library)
            } catch {
                Output.err("warning: skipping the replay loops in \(dir): \(error)\n")
            }
        }
        let cache = cacheDirectory(codec)
        Output.err(
            "no \(codec.sdpName) replay loops found (looked in \(candidates(codec).joined(separator: ", "))): building them once into \(cache)\n"
        )
        guard
            let library = MediaCommand.buildLoops(
                VideoLayerConfig.ladder(top: 640, 360, layers: 2), seconds: 4, keyFrameIntervalMicros: 1_000_000, codec: codec,
                label: "media build")
        else { return nil }
        var path = ""
        for part in cache.split(separator: "/") { path += "/" + part; _ = mkdir(path, 0o755) }
        do { try library.write(directory: cache) } catch {
            Output.err("warning: cannot keep the replay loops in \(cache) (\(error)); using them for this run only\n")
        }
        return (cache, library)
    }

    static func executableDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return String(path[..<slash])
    }
}
