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
