/// A point in time in microseconds on some monotonic clock (the caller's; RTPCore reads none).
public struct Timestamp: Comparable, Hashable, Sendable {
    public var micros: Int64
    @inlinable public init(micros: Int64) { self.micros = micros }
    public static func millis(_ ms: Int64) -> Timestamp { Timestamp(micros: ms * 1000) }
    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.micros < b.micros }
    public static func - (a: Timestamp, b: Timestamp) -> Int64 { a.micros - b.micros }
    public static func + (a: Timestamp, us: Int64) -> Timestamp { Timestamp(micros: a.micros + us) }
    public var seconds: Double { Double(micros) / 1e6 }
}

/// A bit rate in bits per second.
public struct Bitrate: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var bps: Int64
    public init(bps: Int64) { self.bps = bps }
    public static func kbps(_ k: Int64) -> Bitrate { Bitrate(bps: k * 1000) }
    public static func < (a: Bitrate, b: Bitrate) -> Bool { a.bps < b.bps }
    public var description: String {
        if bps >= 1_000_000 { return String(format2: Double(bps) / 1e6) + " Mbps" }
        return String(format2: Double(bps) / 1e3) + " kbps"
    }
}

extension String {
    /// Formats with one decimal when useful, without Foundation.
    init(format2 v: Double) {
        let tenths = (v * 10).rounded()
        if tenths.truncatingRemainder(dividingBy: 10) == 0 { self = String(Int64(tenths / 10)) }
        else { self = String(Double(Int64(tenths)) / 10) }
    }
}
