/// NTP 64-bit timestamps (RFC 3550 §4): seconds since 1900 in 32.32 fixed point.
public enum NTPTime {
    /// Seconds between the NTP epoch (1900) and the Unix epoch (1970).
    public static let unixOffsetSeconds: UInt64 = 2_208_988_800

    /// The 64-bit NTP timestamp for a wall-clock time in microseconds since the Unix epoch.
    @inlinable
    public static func ntp(unixMicros: Int64) -> UInt64 {
        let us = UInt64(max(0, unixMicros))
        let secs = us / 1_000_000 + unixOffsetSeconds
        let frac = ((us % 1_000_000) << 32) / 1_000_000
        return secs << 32 | frac
    }

    /// Unix microseconds for an NTP 64-bit timestamp.
    public static func unixMicros(ntp: UInt64) -> Int64 {
        let secs = Int64(ntp >> 32) - Int64(unixOffsetSeconds)
        let frac = Int64(((ntp & 0xFFFF_FFFF) * 1_000_000) >> 32)
        return secs * 1_000_000 + frac
    }

    /// The middle 32 bits (16.16 fixed point), as used by LSR/DLSR in report blocks.
    @inlinable
    public static func compact(_ ntp: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: ntp >> 16) }

    /// abs-send-time: 6.18 fixed-point seconds, 24 bits (`(NTP64 >> 14) & 0xFFFFFF`).
    @inlinable
    public static func absSendTime(_ ntp: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: ntp >> 14) & 0xFF_FFFF }
}
