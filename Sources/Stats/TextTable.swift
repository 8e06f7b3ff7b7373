/// A plain-text table with aligned columns, for people (scripts read `--json`).
public struct TextTable: Sendable {
    public var headers: [String]
    public var rows: [[String]] = []
    /// Columns aligned right (numbers).
    public var rightAligned: Set<Int> = []

    public init(headers: [String], rightAligned: Set<Int> = []) {
        self.headers = headers
        self.rightAligned = rightAligned
    }

    public mutating func add(_ row: [String]) { rows.append(row) }

    public func render() -> String {
        var widths = headers.map(\.count)
        for r in rows { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
        func line(_ cells: [String]) -> String {
            var out = ""
            for (i, c) in cells.enumerated() where i < widths.count {
                let pad = String(repeating: " ", count: widths[i] - c.count)
                out += rightAligned.contains(i) ? pad + c : c + pad
                if i < cells.count - 1 { out += "  " }
            }
            return out
        }
        var out = line(headers) + "\n"
        out += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
        for r in rows { out += line(r) + "\n" }
        return out
    }
}

/// Human formatting of rates and sizes.
public enum Units {
    public static func bitrate(_ bps: Int) -> String {
        if bps >= 1_000_000 { return fixed(Double(bps) / 1e6, 2) + " Mbps" }
        if bps >= 1_000 { return fixed(Double(bps) / 1e3, 0) + " kbps" }
        return "\(bps) bps"
    }

    /// Formats with `digits` decimals, without Foundation.
    public static func fixed(_ v: Double, _ digits: Int) -> String {
        guard v.isFinite else { return "-" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let r = (abs(v) * scale).rounded()
        let whole = Int64(r / scale)
        var s = (v < 0 && r != 0 ? "-" : "") + String(whole)
        if digits > 0 {
            let frac = Int64(r) - whole * Int64(scale)
            let f = String(frac)
            s += "." + String(repeating: "0", count: digits - f.count) + f
        }
        return s
    }
}
