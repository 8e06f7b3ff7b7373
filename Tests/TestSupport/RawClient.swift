import Glibc
import Platform

/// A TCP client on loopback from a chosen source address (every 127/8 address is this machine's).
public final class RawClient: @unchecked Sendable {
    public let fd: Int32

    public init?(port: Int, from source: String = "127.0.0.1", nonBlocking: Bool = false) {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { return nil }
        var local = sockaddr_in(), to = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        to.sin_family = sa_family_t(AF_INET)
        to.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &to.sin_addr)
        if nonBlocking { _ = fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK) }
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, size) } }
        let rc = withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, size) } }
        guard bound == 0, rc == 0 || (nonBlocking && errno == EINPROGRESS) else { _ = Glibc.close(s); return nil }
        fd = s
    }

    public func send(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// What arrives until the peer closes, one whole response (by its Content-Length) has come,
    /// or `micros` pass.
    public func read(micros: Int64 = 3_000_000) -> String {
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65_536)
        let end = Clock.monotonicMicros() + micros
        // The whole answer's size once its header is in (found once: the body is counted, not
        // decoded again on every read — an 8 MB answer read 4 KB at a time was quadratic).
        var expected: Int?
        while Clock.monotonicMicros() < end {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 50) > 0 else { continue }
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            got += buf[0..<n]
            if expected == nil, let h = got.firstRange(of: Array("\r\n\r\n".utf8)) {
                let header = String(decoding: got[..<h.lowerBound], as: UTF8.self)
                if let l = header.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
                    let length = Int(l.dropFirst("content-length:".count).trimmingPrefix(" "))
                {
                    expected = h.upperBound + length
                }
            }
            if let expected, got.count >= expected { break }
        }
        return String(decoding: got, as: UTF8.self)
    }

    public func close() { _ = Glibc.close(fd) }
}

/// The status of an HTTP/1.1 response's first line.
public func httpStatus(_ response: String) -> Int? { response.hasPrefix("HTTP/1.1 ") ? Int(response.dropFirst(9).prefix(3)) : nil }
