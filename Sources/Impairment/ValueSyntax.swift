/// The value syntaxes of the command line and impairment specs (the Commands article, Values): durations `500ms`,
/// `15s`, `2m`; rates `800kbit`, `2.5mbit`, `4M`, `2500k`; percentages `2%`.
public enum ValueSyntax {
    public struct Invalid: Error, Equatable, Sendable, CustomStringConvertible {
        public var text: String
        public var expected: String
        public var description: String { "invalid \(expected) '\(text)'" }
    }

    /// Microseconds. A bare number is seconds.
    public static func duration(_ text: String) throws(Invalid) -> Int64 {
        let t = text.lowercased()
        var number = t, scale = 1_000_000.0
        for (suffix, s) in [("ms", 1_000.0), ("us", 1.0), ("s", 1_000_000.0), ("m", 60_000_000.0), ("h", 3_600_000_000.0)]
        where t.hasSuffix(suffix) {
            number = String(t.dropLast(suffix.count)); scale = s; break
        }
        guard let v = Double(number), v.isFinite, v >= 0, v * scale < 1e15 else {
            throw Invalid(text: text, expected: "duration (examples: 500ms, 15s, 2m)")
        }
        return Int64(v * scale)
    }

    /// Bits per second (> 0).
    public static func bitrate(_ text: String) throws(Invalid) -> Int {
        let t = text.lowercased()
        var number = t, scale = 1.0
        for (suffix, s) in [
            ("kbit", 1e3), ("mbit", 1e6), ("gbit", 1e9), ("kbps", 1e3), ("mbps", 1e6), ("bit", 1.0), ("bps", 1.0), ("k", 1e3), ("m", 1e6),
            ("g", 1e9)
        ]
        where t.hasSuffix(suffix) {
            number = String(t.dropLast(suffix.count)); scale = s; break
        }
        guard let v = Double(number), v.isFinite, v > 0, v * scale >= 1, v * scale <= 1e10 else {
            throw Invalid(text: text, expected: "rate (examples: 800kbit, 2.5mbit, 4M)")
        }
        return Int(v * scale)
    }

    /// Bytes, in `tc`'s units (`tc(8)`: `b` bytes, `kb`/`k` kibibytes, `mb`/`m` mebibytes; `kbit`
    /// and `mbit` are bits): `20kb` = 20 480 bytes, as `tbf … burst 20kb` reads it.
    public static func bytes(_ text: String) throws(Invalid) -> Int {
        let t = text.lowercased()
        var number = t, scale = 1.0
        for (suffix, s) in [
            ("kbit", 1024.0 / 8), ("mbit", 1024.0 * 1024 / 8), ("kb", 1024.0), ("mb", 1024.0 * 1024), ("k", 1024.0), ("m", 1024.0 * 1024),
            ("b", 1.0)
        ]
        where t.hasSuffix(suffix) {
            number = String(t.dropLast(suffix.count)); scale = s; break
        }
        guard let v = Double(number), v.isFinite, v >= 0, v * scale <= 1e12 else {
            throw Invalid(text: text, expected: "size (examples: 20kb, 1500b, 1mb)")
        }
        return Int(v * scale)
    }

    /// 0…100.
    public static func percent(_ text: String) throws(Invalid) -> Double {
        let number = text.hasSuffix("%") ? String(text.dropLast()) : text
        guard let v = Double(number), v.isFinite, v >= 0, v <= 100 else { throw Invalid(text: text, expected: "percentage (0%…100%)") }
        return v
    }
}
