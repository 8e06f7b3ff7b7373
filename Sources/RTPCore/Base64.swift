/// Standard base64 (RFC 4648 §4) for SDES key material; strict on decode.
public enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i], b1 = i + 1 < bytes.count ? bytes[i + 1] : 0, b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 3) << 4 | b1 >> 4)])
            out.append(i + 1 < bytes.count ? alphabet[Int((b1 & 0xF) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes, or nil on any character outside the alphabet or bad padding.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out = [UInt8]()
        var i = 0
        while i < chars.count {
            var v: UInt32 = 0
            var pad = 0
            for k in 0..<4 {
                let c = chars[i + k]
                let d: UInt32
                switch c {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): d = UInt32(c - UInt8(ascii: "A"))
                case UInt8(ascii: "a")...UInt8(ascii: "z"): d = UInt32(c - UInt8(ascii: "a")) + 26
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0")) + 52
                case UInt8(ascii: "+"): d = 62
                case UInt8(ascii: "/"): d = 63
                case UInt8(ascii: "=") where k >= 2 && i + 4 == chars.count: d = 0; pad += 1
                default: return nil
                }
                if pad > 0 && c != UInt8(ascii: "=") { return nil }
                v = v << 6 | d
            }
            out.append(UInt8(v >> 16))
            if pad < 2 { out.append(UInt8(truncatingIfNeeded: v >> 8)) }
            if pad < 1 { out.append(UInt8(truncatingIfNeeded: v)) }
            i += 4
        }
        return out
    }
}
