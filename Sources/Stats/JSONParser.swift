/// A strict JSON reader (RFC 8259) for report files: numbers without a fraction or exponent
/// become `.int`, others `.double`. Depth and size are bounded; errors say where.
extension JSONValue {
    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public static func parse(_ text: String, maxDepth: Int = 64) throws(ParseError) -> JSONValue {
        var p = Reader(bytes: Array(text.utf8), maxDepth: maxDepth)
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        guard p.i == p.bytes.count else { throw p.fail("trailing characters") }
        return v
    }

    public var intValue: Int? {
        switch self {
        case let .int(i): return Int(i)
        case let .double(d) where d.rounded() == d && abs(d) < 9e18: return Int(d)
        default: return nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case let .int(i): return Double(i)
        case let .double(d): return d
        default: return nil
        }
    }

    public var stringValue: String? { if case let .string(s) = self { return s } else { return nil } }
    public var arrayValue: [JSONValue]? { if case let .array(a) = self { return a } else { return nil } }

    struct Reader {
        let bytes: [UInt8]
        let maxDepth: Int
        var i = 0

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        func fail(_ what: String) -> ParseError { ParseError(description: "invalid JSON at byte \(i): \(what)") }

        mutating func skipSpace() { while i < bytes.count, [0x20, 0x0a, 0x0d, 0x09].contains(bytes[i]) { i += 1 } }

        mutating func literal(_ word: String, _ v: JSONValue) throws(ParseError) -> JSONValue {
            let w = Array(word.utf8)
            guard i + w.count <= bytes.count, Array(bytes[i..<(i + w.count)]) == w else { throw fail("expected \(word)") }
            i += w.count
            return v
        }

        mutating func value(depth: Int) throws(ParseError) -> JSONValue {
            guard depth < maxDepth else { throw fail("nested too deeply") }
            guard i < bytes.count else { throw fail("unexpected end") }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                i += 1
                var fields: [(String, JSONValue)] = []
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(fields) }
                while true {
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                    let k = try string()
                    skipSpace()
                    guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    i += 1
                    skipSpace()
                    fields.append((k, try value(depth: depth + 1)))
                    skipSpace()
                    guard i < bytes.count else { throw fail("unexpected end") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(fields) }
                    throw fail("expected ',' or '}'")
                }
            case UInt8(ascii: "["):
                i += 1
                var items: [JSONValue] = []
                skipSpace()
                if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                while true {
                    skipSpace()
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard i < bytes.count else { throw fail("unexpected end") }
                    if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                    if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                    throw fail("expected ',' or ']'")
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default: return try number()
            }
        }

        mutating func number() throws(ParseError) -> JSONValue {
            let start = i
            var integral = true
            if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
            while i < bytes.count {
                let c = bytes[i]
                if c >= 0x30 && c <= 0x39 {
                    i += 1
                } else if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") || c == UInt8(ascii: "+")
                    || (c == UInt8(ascii: "-") && i > start)
                {
                    integral = false
                    i += 1
                } else {
                    break
                }
            }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            if integral, let v = Int64(text) { return .int(v) }
            guard !text.isEmpty, let d = Double(text), d.isFinite else { i = start; throw fail("expected a value") }
            return .double(d)
        }

        mutating func string() throws(ParseError) -> String {
            i += 1 // opening quote
            var out = [UInt8]()
            while i < bytes.count {
                let c = bytes[i]
                i += 1
                if c == UInt8(ascii: "\"") { return String(decoding: out, as: UTF8.self) }
                if c < 0x20 { throw fail("control character in string") }
                if c != UInt8(ascii: "\\") { out.append(c); continue }
                guard i < bytes.count else { break }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5c)
                case UInt8(ascii: "/"): out.append(0x2f)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0c)
                case UInt8(ascii: "n"): out.append(0x0a)
                case UInt8(ascii: "r"): out.append(0x0d)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard i + 4 <= bytes.count, let u = UInt32(String(decoding: bytes[i..<(i + 4)], as: UTF8.self), radix: 16) else {
                        throw fail("bad \\u escape")
                    }
                    i += 4
                    out += Array(String(Unicode.Scalar(u).map(Character.init) ?? "\u{FFFD}").utf8)
                default: throw fail("bad escape")
                }
            }
            throw fail("unterminated string")
        }
    }
}
