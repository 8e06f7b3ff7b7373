/// One HTTP/1.1 request as the server read it.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The path without the query.
    public var path: String
    public var query: String?
    /// Header names lower-cased, in order.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The request asked to keep the connection open (HTTP/1.1 without `Connection: close`,
    /// RFC 9112 §9.3).
    public var keepAlive = false

    public init(method: String, path: String, query: String? = nil, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
    public func headers(_ name: String) -> [String] { headers.filter { $0.name == name }.map(\.value) }

    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.path == b.path && a.query == b.query && a.body == b.body && a.keepAlive == b.keepAlive
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }

    public enum ParseResult: Sendable, Equatable {
        case complete(HTTPRequest, consumed: Int)
        case needMore
        /// Malformed or too large: answer with this status and close.
        case invalid(status: Int, reason: String)
    }

    /// Parses what arrived so far (RFC 9112: request line, header fields, a body of
    /// Content-Length bytes; no chunked bodies — WHIP clients send the offer with a length).
    /// Strict where a lenient reading could be steered: CRLF line ends only (a bare LF is
    /// refused, not waited on: RFC 9112 §2.2 lets a server choose), Content-Length digits only and
    /// every copy equal (RFC 9110 §8.6), no obsolete line folding (RFC 9112 §5.2), field names
    /// tokens (RFC 9110 §5.1), no control characters in values, a Host header in HTTP/1.1
    /// (RFC 9112 §3.2), at most one Authorization (RFC 9110 §5.3: it is not a list).
    public static func parse(_ bytes: [UInt8], maxHeader: Int = 16_384, maxBody: Int = 262_144) -> ParseResult {
        guard let end = headerEnd(bytes, limit: maxHeader) else {
            if bareLineFeed(bytes, limit: maxHeader) { return .invalid(status: 400, reason: "lines must end with CRLF") }
            return bytes.count > maxHeader ? .invalid(status: 431, reason: "request header too large") : .needMore
        }
        guard end <= maxHeader else { return .invalid(status: 431, reason: "request header too large") }
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = 0
        var i = 0
        while i < end {
            if bytes[i] == 13, i + 1 < end + 2, bytes[i + 1] == 10 {
                lines.append(bytes[lineStart..<i])
                i += 2
                lineStart = i
                continue
            }
            // CR or LF alone, NUL and other controls but tab: refused (RFC 9112 §2.2, RFC 9110 §5.5).
            if bytes[i] == 10 || bytes[i] == 13 || (bytes[i] < 32 && bytes[i] != 9) || bytes[i] == 127 {
                return .invalid(status: 400, reason: "control character in the request header")
            }
            i += 1
        }
        lines.append(bytes[lineStart..<end])
        guard let first = lines.first else { return .invalid(status: 400, reason: "empty request") }
        let requestLine = first.split(separator: 32, omittingEmptySubsequences: false)
        guard requestLine.count == 3 else { return .invalid(status: 400, reason: "malformed request line") }
        let method = String(decoding: requestLine[0], as: UTF8.self), target = String(decoding: requestLine[1], as: UTF8.self)
        let version = String(decoding: requestLine[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else { return .invalid(status: 400, reason: "malformed request line") }
        guard !method.isEmpty, method.utf8.allSatisfy({ (65...90).contains($0) }) else {
            return .invalid(status: 400, reason: "malformed method")
        }
        guard target.hasPrefix("/") || target == "*", target.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            return .invalid(status: 400, reason: "malformed request target")
        }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: 58), colon != line.startIndex else {
                return .invalid(status: 400, reason: "malformed header field")
            }
            let name = line[..<colon]
            guard name.allSatisfy(isTokenByte) else {
                return .invalid(
                    status: 400, reason: line.first == 32 || line.first == 9 ? "obsolete line folding" : "malformed header field")
            }
            headers.append(
                (String(decoding: name, as: UTF8.self).lowercased(), String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces))
        }
        if version == "HTTP/1.1", !headers.contains(where: { $0.0 == "host" }) {
            return .invalid(status: 400, reason: "an HTTP/1.1 request needs a Host header")
        }
        if headers.filter({ $0.0 == "authorization" }).count > 1 {
            return .invalid(status: 400, reason: "more than one Authorization header")
        }
        if headers.contains(where: { $0.0 == "transfer-encoding" }) {
            return .invalid(status: 411, reason: "send a Content-Length, not a chunked body")
        }
        var length = 0
        let lengths = headers.filter { $0.0 == "content-length" }.map(\.1)
        if let l = lengths.first {
            // 1*DIGIT (RFC 9110 §8.6): no sign, no spaces, no list; at most 9 digits before the limit check.
            guard lengths.allSatisfy({ $0 == l }), (1...9).contains(l.utf8.count), l.utf8.allSatisfy({ (48...57).contains($0) }),
                let n = Int(l)
            else {
                return .invalid(status: 400, reason: "bad Content-Length")
            }
            guard n <= maxBody else { return .invalid(status: 413, reason: "request body too large") }
            length = n
        }
        let bodyStart = end + 4
        guard bytes.count >= bodyStart + length else { return .needMore }
        let connection = headers.filter { $0.0 == "connection" }.flatMap { $0.1.lowercased().split(separator: ",").map(\.trimmingSpaces) }
        let q = target.firstIndex(of: "?")
        var r = HTTPRequest(
            method: method, path: String(q.map { target[..<$0] } ?? target[...]),
            query: q.map { String(target[target.index(after: $0)...]) }, headers: headers,
            body: Array(bytes[bodyStart..<(bodyStart + length)]))
        r.keepAlive = version == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
        return .complete(r, consumed: bodyStart + length)
    }

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 48...57, 65...90, 97...122: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"),
            UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"),
            UInt8(ascii: "|"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    static func headerEnd(_ b: [UInt8], limit: Int) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...min(b.count - 4, limit) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
        return nil
    }

    /// A header that ends in LF LF (or CR LF LF) without CRLF CRLF: a bare-LF client.
    static func bareLineFeed(_ b: [UInt8], limit: Int) -> Bool {
        guard b.count >= 2 else { return false }
        for i in 1..<min(b.count, limit + 2) where b[i] == 10 && (b[i - 1] == 10 || (i >= 2 && b[i - 1] == 13 && b[i - 2] == 10)) {
            return true
        }
        return false
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return String(s)
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, text: String) {
        self.init(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(text.utf8))
    }

    static let reasons: [Int: String] = [
        200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
        403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
        408: "Request Timeout", 411: "Length Required", 413: "Content Too Large", 415: "Unsupported Media Type",
        422: "Unprocessable Content", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
        503: "Service Unavailable"
    ]

    /// The response bytes; `keepAlive` false adds `Connection: close`.
    public func serialized(keepAlive: Bool = false) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reasons[status] ?? "Status")\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        head += "Content-Length: \(body.count)\r\n" + (keepAlive ? "" : "Connection: close\r\n") + "\r\n"
        return Array(head.utf8) + body
    }
}
