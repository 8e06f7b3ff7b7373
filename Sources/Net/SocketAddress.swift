package import CLinuxNet
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

/// An IPv4 or IPv6 UDP endpoint.
public struct SocketAddress: Sendable, CustomStringConvertible, Hashable {
    package var raw: clinux_addr

    package init(raw: clinux_addr) { self.raw = raw }

    /// `--no-ipv6`: names resolve to IPv4 addresses only, in every resolution of this process
    /// (the endpoint's host, STUN and TURN servers); an IPv6 literal does not resolve.
    static let ipv4OnlySetting = Mutex(false)
    public static var ipv4Only: Bool {
        get { ipv4OnlySetting.withLock { $0 } }
        set { ipv4OnlySetting.withLock { $0 = newValue } }
    }

    /// Resolves `host` and `port` (numeric addresses or names such as `localhost`): the first
    /// address getaddrinfo gives (RFC 6724's order), an IPv4 one under `ipv4Only`.
    public init(host: String, port: Int) throws(SocketError) {
        guard (0...65535).contains(port) else { throw SocketError("resolve port \(port)", errno: 22) }
        var a = clinux_addr()
        let rc = clinux_resolve(host, Int32(port), Self.ipv4Only ? 4 : 0, &a)
        guard rc == 0 else { throw SocketError("resolve \(host)", errno: -rc) }
        raw = a
    }

    /// An address from its IP bytes (4: IPv4, 16: IPv6) and port: no resolver, no text (what
    /// the sessions convert ICE's addresses with, per datagram). nil for another length or port.
    public init?(ip: [UInt8], port: Int) {
        var a = clinux_addr()
        let rc = ip.withUnsafeBufferPointer { clinux_addr_from_ip($0.baseAddress, Int32($0.count), Int32(port), &a) }
        guard rc == 0 else { return nil }
        raw = a
    }

    /// The IP bytes (4 or 16).
    public var ipBytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16)
        let n = withUnsafePointer(to: raw) { clinux_addr_ip($0, &bytes) }
        return n > 0 ? Array(bytes.prefix(Int(n))) : []
    }

    /// The unspecified address (`0.0.0.0` or `[::]`): a socket bound to it takes every interface's.
    public var isWildcard: Bool { ipBytes.allSatisfy { $0 == 0 } }

    /// Parses `HOST:PORT` or `[V6]:PORT`.
    public init(parsing text: String) throws(SocketError) {
        let (host, port) = try Self.split(text)
        try self.init(host: host, port: port)
    }

    public static func split(_ text: String) throws(SocketError) -> (String, Int) {
        var host: Substring, portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw SocketError("parse address '\(text)'", errno: 22) }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw SocketError("parse address '\(text)' (expected HOST:PORT)", errno: 22) }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else {
            throw SocketError("parse address '\(text)' (expected HOST:PORT)", errno: 22)
        }
        return (String(host), port)
    }

    /// The address as a `struct sockaddr` and its length (for C calls).
    public func withRawSockaddr<R>(_ body: (UnsafeRawPointer, Int) -> R) -> R {
        withUnsafeBytes(of: raw.storage) { body($0.baseAddress!, Int(raw.length)) }
    }

    public var port: Int { Int(withUnsafePointer(to: raw) { clinux_addr_port($0) }) }
    public var isIPv6: Bool { withUnsafePointer(to: raw) { clinux_addr_family($0) } == 10 }

    /// The same host with another port.
    public func withPort(_ port: Int) -> SocketAddress {
        guard (0...65535).contains(port) else { return self }
        var a = raw
        return clinux_addr_set_port(&a, Int32(port)) == 0 ? SocketAddress(raw: a) : self
    }

    /// The host part, as text.
    public var host: String { (try? Self.split(description).0) ?? "?" }

    public var description: String {
        var buf = [CChar](repeating: 0, count: 80)
        withUnsafePointer(to: raw) { p in _ = clinux_format(p, &buf, 80) }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The bytes `==` compares, fed as words (a receiver looks a publisher up by its address per
    /// datagram; hashing them byte-wise was 1 % of its CPU).
    public func hash(into h: inout Hasher) {
        withUnsafeBytes(of: raw.storage) { b in
            let n = min(Int(raw.length), b.count)
            h.combine(n)
            var i = 0
            while i + 8 <= n {
                h.combine(b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                i += 8
            }
            while i < n {
                h.combine(b[i])
                i += 1
            }
        }
    }

    public static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        guard a.raw.length == b.raw.length else { return false }
        let n = min(Int(a.raw.length), MemoryLayout.size(ofValue: a.raw.storage))
        return withUnsafeBytes(of: a.raw.storage) { p in
            withUnsafeBytes(of: b.raw.storage) { q in memcmp(p.baseAddress!, q.baseAddress!, n) == 0 }
        }
    }
}
