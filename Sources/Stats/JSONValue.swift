/// A minimal JSON value and serializer for the stats stream, reports and `--json` (no Foundation,
/// stable key order as built).
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.serialized() == b.serialized() }

    public func serialized(pretty: Bool = false) -> String {
        var out = ""
        write(&out, pretty: pretty, indent: 0)
        return out
    }

    func write(_ out: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .null: out += "null"
        case let .bool(b): out += b ? "true" : "false"
        case let .int(i): out += String(i)
        case let .double(d):
            if d.isFinite {
                if d == d.rounded() && abs(d) < 1e15 { out += String(Int64(d)) } else { out += String(d) }
            } else {
                out += "null"
            }
        case let .string(s): Self.quote(s, into: &out)
        case let .array(items):
            out += "["
            for (i, v) in items.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                v.write(&out, pretty: pretty, indent: indent + 1)
            }
            if pretty && !items.isEmpty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "]"
        case let .object(fields):
            out += "{"
            for (i, (k, v)) in fields.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                Self.quote(k, into: &out)
                out += pretty ? ": " : ":"
                v.write(&out, pretty: pretty, indent: indent + 1)
            }
            if pretty && !fields.isEmpty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "}"
        }
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        out += "\""
    }

    /// Field lookup on objects (tests and report merging).
    public subscript(key: String) -> JSONValue? {
        guard case let .object(fields) = self else { return nil }
        return fields.first { $0.0 == key }?.1
    }
}
