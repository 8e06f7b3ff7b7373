#if canImport(Glibc)
import Glibc
#endif
import Platform

/// One HTTP/1.1 request as the server read it.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The path without the query.
    public var path: String
    public var query: String?
    /// Header names lower-cased, in order.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.path == b.path && a.query == b.query && a.body == b.body
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }

    public enum ParseResult: Sendable, Equatable {
        case complete(HTTPRequest)
        case needMore
        /// Malformed or too large: answer with this status and close.
        case invalid(status: Int, reason: String)
    }

    /// Parses what arrived so far (RFC 9112: request line, header fields, a body of
    /// Content-Length bytes; no chunked bodies — WHIP clients send the offer with a length).
    public static func parse(_ bytes: [UInt8], maxHeader: Int = 16_384, maxBody: Int = 262_144) -> ParseResult {
        guard let end = headerEnd(bytes) else {
            return bytes.count > maxHeader ? .invalid(status: 431, reason: "request header too large") : .needMore
        }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        guard !lines.isEmpty else { return .invalid(status: 400, reason: "empty request") }
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1."), requestLine[1].hasPrefix("/") || requestLine[1] == "*" else {
            return .invalid(status: 400, reason: "malformed request line")
        }
        guard requestLine[0].allSatisfy({ $0.isLetter && $0.isUppercase }) else { return .invalid(status: 400, reason: "malformed method") }
        var headers: [(String, String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex, !line[..<colon].contains(" ") else {
                return .invalid(status: 400, reason: "malformed header field")
            }
            headers.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingSpaces))
        }
        if headers.contains(where: { $0.0 == "transfer-encoding" }) { return .invalid(status: 411, reason: "send a Content-Length, not a chunked body") }
        let lengths = headers.filter { $0.0 == "content-length" }.map(\.1)
        var length = 0
        if let l = lengths.first {
            guard lengths.allSatisfy({ $0 == l }), let n = Int(l), n >= 0 else { return .invalid(status: 400, reason: "bad Content-Length") }
            guard n <= maxBody else { return .invalid(status: 413, reason: "request body too large") }
            length = n
        }
        let bodyStart = end + 4
        guard bytes.count >= bodyStart + length else { return .needMore }
        let target = requestLine[1]
        let q = target.firstIndex(of: "?")
        return .complete(HTTPRequest(method: String(requestLine[0]), path: String(q.map { target[..<$0] } ?? target[...]),
                                     query: q.map { String(target[target.index(after: $0)...]) }, headers: headers,
                                     body: Array(bytes[bodyStart..<(bodyStart + length)])))
    }

    static func headerEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
        return nil
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

    static let reasons: [Int: String] = [200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
                                         403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
                                         411: "Length Required", 413: "Content Too Large", 415: "Unsupported Media Type",
                                         422: "Unprocessable Content", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
                                         503: "Service Unavailable"]

    public var serialized: [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reasons[status] ?? "Status")\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }
}

/// A small HTTP/1.1 server: one thread, one request per connection (`Connection: close`), bounded
/// request size and read time. For pubbot's own endpoints (Prometheus metrics, the WHIP endpoint
/// of `receive --whip-listen`), not a general web server.
public final class HTTPServer: @unchecked Sendable {
    public let port: Int
    let fd: Int32
    let stopFlag = Locked(false)
    var thread: JoinableThread?

    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// - Parameters:
    ///   - host: a numeric IPv4 address (e.g. 127.0.0.1; 0.0.0.0 only when asked for).
    public init(host: String, port: Int, name: String = "pubbot-http", handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) throws(StartError) {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else { throw StartError(description: "needs a numeric IPv4 address, got '\(host)'") }
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw StartError(description: "socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0, listen(s, 64) == 0 else {
            let e = errno
            close(s)
            throw StartError(description: "cannot listen on \(host):\(port) (\(String(cString: strerror(e))))")
        }
        var bound = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) } }
        fd = s
        self.port = Int(UInt16(bigEndian: bound.sin_port))
        let stop = stopFlag
        thread = JoinableThread(name: name) {
            while !stop.value {
                var p = pollfd(fd: s, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 100) > 0 else { continue }
                let c = accept(s, nil, nil)
                guard c >= 0 else { continue }
                Self.serve(c, handler: handler)
                close(c)
            }
        }
    }

    static func serve(_ c: Int32, handler: (HTTPRequest) -> HTTPResponse) {
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 4096)
        var response: HTTPResponse?
        while response == nil {
            let n = buf.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return } // closed or timed out before a whole request
            request += buf[0..<n]
            switch HTTPRequest.parse(request) {
            case .needMore: continue
            case let .invalid(status, reason): response = HTTPResponse(status: status, text: reason + "\n")
            case let .complete(r): response = handler(r)
            }
        }
        var out = response!.serialized
        var off = 0
        while off < out.count {
            let n = out.withUnsafeMutableBytes { send(c, $0.baseAddress! + off, $0.count - off, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            off += n
        }
    }

    public func stop() {
        stopFlag.value = true
        thread?.join()
        thread = nil
        close(fd)
    }
}
