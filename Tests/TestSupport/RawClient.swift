import Glibc
import Platform

/// A TCP client on loopback from a chosen source address (every 127/8 address is this machine's).
public final class RawClient: @unchecked Sendable {
    public let fd: Int32

    /// A TCP connection to `host:port` from `source` (IPv4, or IPv6 when `host` has a colon:
    /// then from `source` only if it has one too, else the kernel's choice).
    public init?(port: Int, from source: String = "127.0.0.1", to host: String = "127.0.0.1", nonBlocking: Bool = false) {
        let v6 = host.contains(":")
        let s = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { return nil }
        var local = sockaddr_storage(), to = sockaddr_storage()
        let size: socklen_t
        if v6 {
            var l = sockaddr_in6(), t = sockaddr_in6()
            l.sin6_family = sa_family_t(AF_INET6)
            if source.contains(":") { inet_pton(AF_INET6, source, &l.sin6_addr) }
            t.sin6_family = sa_family_t(AF_INET6)
            t.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, host, &t.sin6_addr)
            withUnsafeMutableBytes(of: &local) { $0.storeBytes(of: l, as: sockaddr_in6.self) }
            withUnsafeMutableBytes(of: &to) { $0.storeBytes(of: t, as: sockaddr_in6.self) }
            size = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var l = sockaddr_in(), t = sockaddr_in()
            l.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &l.sin_addr)
            t.sin_family = sa_family_t(AF_INET)
            t.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &t.sin_addr)
            withUnsafeMutableBytes(of: &local) { $0.storeBytes(of: l, as: sockaddr_in.self) }
            withUnsafeMutableBytes(of: &to) { $0.storeBytes(of: t, as: sockaddr_in.self) }
            size = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        if nonBlocking { _ = fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK) }
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
