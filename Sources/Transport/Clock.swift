internal import CLinuxNet

/// The process clocks. Only engines read them; the cores get `now` passed in.
public enum Clock {
    /// Monotonic time in microseconds.
    @inline(__always) public static func monotonicMicros() -> Int64 { clinux_monotonic_us() }
    /// CPU time the calling thread has used, microseconds.
    public static func threadCPUMicros() -> Int64 { clinux_thread_cpu_us() }
    /// Wall-clock time in microseconds since the Unix epoch.
    @inline(__always) public static func wallMicros() -> Int64 { clinux_realtime_us() }
    /// Sleeps until the monotonic clock reaches `deadline` (microseconds).
    public static func sleep(untilMicros deadline: Int64) { clinux_sleep_until_us(deadline) }
    public static func sleep(micros: Int64) { clinux_sleep_until_us(clinux_monotonic_us() + micros) }
}

/// Secure random bytes from the kernel.
public enum SecureRandom {
    public static func bytes(_ n: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        let rc = out.withUnsafeMutableBytes { clinux_random($0.baseAddress, n) }
        if rc != 0 {
            var g = SystemRandomNumberGenerator()
            for i in 0..<n { out[i] = UInt8.random(in: 0...255, using: &g) }
        }
        return out
    }

    public static func uint32() -> UInt32 {
        let b = bytes(4)
        return UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3])
    }
}

/// Terminal detection for progress output.
public enum Terminal {
    public static func isTTY(_ fd: Int32) -> Bool { clinux_isatty(fd) != 0 }
}
