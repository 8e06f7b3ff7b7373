#if canImport(Glibc)
import Glibc
import Platform
#endif

/// A minimal HTTP/1.1 server for Prometheus scraping: answers `GET /metrics` with the text the
/// `render` closure returns, everything else with 404. One thread, one request per connection,
/// bounded request size; binds where it is told (the CLI defaults to loopback).
public final class MetricsServer: @unchecked Sendable {
    public let port: Int
    let fd: Int32
    let stopFlag = Locked(false)
    var thread: JoinableThread?

    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// - Parameters:
    ///   - host: a numeric IPv4 address (e.g. 127.0.0.1; 0.0.0.0 only when asked for).
    public init(host: String, port: Int, render: @escaping @Sendable () -> String) throws(StartError) {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else { throw StartError(description: "--metrics needs a numeric IPv4 address, got '\(host)'") }
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw StartError(description: "socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0, listen(s, 16) == 0 else {
            let e = errno
            close(s)
            throw StartError(description: "cannot listen on \(host):\(port) (errno \(e))")
        }
        var bound = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) } }
        fd = s
        self.port = Int(UInt16(bigEndian: bound.sin_port))
        let stop = stopFlag
        thread = JoinableThread(name: "pubbot-metrics") {
            while !stop.value {
                var p = pollfd(fd: s, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 100) > 0 else { continue }
                let c = accept(s, nil, nil)
                guard c >= 0 else { continue }
                Self.serve(c, render: render)
                close(c)
            }
        }
    }

    static func serve(_ c: Int32, render: () -> String) {
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 2048)
        while request.count < 8192 {
            let n = buf.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            request += buf[0..<n]
            if request.count >= 4, request.suffix(4).elementsEqual([13, 10, 13, 10]) { break }
        }
        let line = String(decoding: request.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self).split(separator: " ")
        let ok = line.count >= 2 && line[0] == "GET" && (line[1] == "/metrics" || line[1].hasPrefix("/metrics?"))
        let body = ok ? render() : "not found; try /metrics\n"
        let head = ok ? "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n" : "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
        var out = Array((head + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body).utf8)
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
