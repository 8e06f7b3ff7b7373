#if canImport(Glibc)
    import Glibc
    internal import CLinuxNet
#endif

/// Reads the process's own CPU time and resident memory: one `getrusage` and one read of
/// /proc/self/statm per sample, nothing else.
public struct ProcessVitals {
    var lastCPUMicros: Int64?
    var lastWallMicros: Int64?
    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    public init() {}

    /// CPU use since the previous call (% of one core) and the current RSS in bytes.
    public mutating func sample() -> (cpuPercent: Double, rssBytes: Int) {
        var u = rusage()
        getrusage(RUSAGE_SELF.rawValue, &u)
        let cpu = Int64(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1_000_000 + Int64(u.ru_utime.tv_usec + u.ru_stime.tv_usec)
        let wall = Clock.monotonicMicros()
        var percent = 0.0
        if let c = lastCPUMicros, let w = lastWallMicros, wall > w { percent = Double(cpu - c) * 100 / Double(wall - w) }
        lastCPUMicros = cpu
        lastWallMicros = wall
        return (percent, residentBytes())
    }

    func residentBytes() -> Int {
        let fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 128)
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, 127) }
        guard n > 0 else { return 0 }
        let fields = String(decoding: buf[0..<n], as: UTF8.self).split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * pageSize
    }
}

/// The process's heap.
public enum Heap {
    /// Returns the heap's free pages to the kernel (glibc `malloc_trim`): for a driver that has
    /// just released many sessions at once, so its RSS follows what it holds.
    public static func releaseFreeMemory() { clinux_release_free_memory() }
}
