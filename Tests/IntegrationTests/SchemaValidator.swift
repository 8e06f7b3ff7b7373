import Foundation

/// A small JSON Schema (2020-12) validator for the keywords `stats.schema.json` uses: type (one
/// or several), required, properties, items, const, enum, minimum and local $ref. Lines are
/// dispatched to `$defs[line.type]`.
struct SchemaValidator {
    let root: [String: Any]

    init(path: String) throws {
        root = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
    }

    /// Problems with a whole document validated against the root schema.
    func validateDocument(_ doc: [String: Any]) -> [String] { validate(doc, against: root, at: "$") }

    /// Problems with one stats line (empty when it conforms).
    func validateLine(_ line: [String: Any]) -> [String] {
        var problems = validate(line, against: root, at: "$")
        guard let type = line["type"] as? String, let defs = root["$defs"] as? [String: Any], let def = defs[type] as? [String: Any] else {
            return problems + ["$: no definition for type \(line["type"] ?? "nil")"]
        }
        problems += validate(line, against: def, at: "$")
        return problems
    }

    func resolve(_ schema: [String: Any]) -> [String: Any] {
        guard let ref = schema["$ref"] as? String, ref.hasPrefix("#/$defs/"), let defs = root["$defs"] as? [String: Any] else {
            return schema
        }
        return resolve(defs[String(ref.dropFirst("#/$defs/".count))] as! [String: Any])
    }

    func typeName(_ v: Any) -> String {
        if v is NSNull { return "null" }
        if let n = v as? NSNumber {
            if String(cString: n.objCType) == "c" { return "boolean" }
            return n.doubleValue == n.doubleValue.rounded() && !"\(n)".contains(".") ? "integer" : "number"
        }
        if v is String { return "string" }
        if v is [Any] { return "array" }
        if v is [String: Any] { return "object" }
        return "unknown"
    }

    func validate(_ value: Any, against raw: [String: Any], at path: String) -> [String] {
        let s = resolve(raw)
        var out: [String] = []
        let t = typeName(value)
        if let types = (s["type"] as? [String]) ?? (s["type"] as? String).map({ [$0] }) {
            let ok = types.contains(t) || (t == "integer" && types.contains("number"))
            if !ok { return ["\(path): \(t), expected \(types)"] }
        }
        if let c = s["const"], "\(c)" != "\(value)" { out.append("\(path): \(value) ≠ const \(c)") }
        if let e = s["enum"] as? [Any],
            !e.contains(where: { ($0 is NSNull && value is NSNull) || (!($0 is NSNull) && "\($0)" == "\(value)") })
        {
            out.append("\(path): \(value) not in \(e)")
        }
        if let m = s["minimum"] as? Double, let n = value as? NSNumber, n.doubleValue < m { out.append("\(path): \(n) < \(m)") }
        if let obj = value as? [String: Any] {
            for r in s["required"] as? [String] ?? [] where obj[r] == nil { out.append("\(path): missing \(r)") }
            for (k, sub) in s["properties"] as? [String: Any] ?? [:] {
                if let v = obj[k] { out += validate(v, against: sub as! [String: Any], at: "\(path).\(k)") }
            }
        }
        if let arr = value as? [Any], let items = s["items"] as? [String: Any] {
            for (i, v) in arr.enumerated() { out += validate(v, against: items, at: "\(path)[\(i)]") }
        }
        return out
    }
}
