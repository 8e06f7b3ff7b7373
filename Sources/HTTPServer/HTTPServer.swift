#if canImport(Glibc)
    import Glibc
#endif
import Platform
internal import COpenSSL

/// The certificate and key an HTTPS endpoint serves (`--tls-cert`, `--tls-key`): an OpenSSL
/// server context, TLS 1.2 at least, the chain and key read from PEM files and checked to match.
public final class TLSServerContext: @unchecked Sendable {
    let ctx: OpaquePointer

    public init(certificateFile: String, keyFile: String) throws(HTTPServer.StartError) {
        var reason = [CChar](repeating: 0, count: 256)
        guard let c = copenssl_tls_server_context(certificateFile, keyFile, &reason, reason.count) else {
            throw HTTPServer.StartError(
                description: String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        ctx = c
    }

    deinit { copenssl_tls_context_free(ctx) }
}

/// A small HTTP/1.1 server for pubbot's own endpoints (Prometheus metrics, the WHIP endpoint of
/// `receive --whip-listen`), not a general web server — but one no client can hold: every
/// connection is served by one `poll` loop (non-blocking sockets), so a client that sends one
/// byte a second, or nothing, or never reads its answer, delays nobody else. Each request has a
/// deadline for the whole of it (headers and body: 408 and close), an idle keep-alive
/// connection is closed, and open connections are limited in all and per source address
/// (503 with Retry-After beyond). Requests are parsed by `HTTPRequest.parse` (strict RFC 9112).
public final class HTTPServer: @unchecked Sendable {
    public let port: Int
    let fd: Int32
    let stopFlag = Locked(false)
    let thread = Locked<JoinableThread?>(nil)
    let counters = Locked(Counters())

    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// What the server holds a client to.
    public struct Limits: Sendable {
        /// Open connections in all, and from one source address.
        public var maxConnections = 512
        public var maxConnectionsPerSource = 64
        /// From a request's first byte (or the connection's accept) to its last: 408 after.
        public var requestDeadlineMicros: Int64 = 10_000_000
        /// A keep-alive connection with no request this long is closed; an answer not read
        /// within this long is dropped with its connection.
        public var idleMicros: Int64 = 5_000_000
        public var writeDeadlineMicros: Int64 = 10_000_000
        public var maxHeader = 16_384
        public var maxBody = 262_144
        public init() {}
    }

    /// What the server refused or cut short (for tests and the endpoint's summary).
    public struct Counters: Sendable, Equatable {
        public var accepted = 0
        public var requests = 0
        public var timedOut = 0
        public var overCapacity = 0
        public var idleClosed = 0
        public var malformed = 0
        /// HTTPS: handshakes that failed (a plain-HTTP client, an unknown CA, garbage).
        public var tlsFailed = 0
    }

    public var stats: Counters { counters.value }

    /// - Parameters:
    ///   - host: a numeric IPv4 or IPv6 address (127.0.0.1, ::1; 0.0.0.0 or :: only when asked for).
    ///   - handler: called on the server's thread, one request at a time; it must not block.
    /// Served over TLS (HTTPS).
    public let isTLS: Bool

    public init(
        host: String, port: Int, name: String = "pubbot-http", limits: Limits = Limits(), tls: TLSServerContext? = nil,
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) throws(StartError) {
        isTLS = tls != nil
        // IPv4, or IPv6 (brackets taken off): `::` is dual-stack, IPv4 clients arriving mapped
        // (RFC 3493 §5.3).
        var storage = sockaddr_storage()
        let length: Int
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let family: Int32
        if inet_pton(AF_INET, bare, &storage) == 1 {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
            _ = inet_pton(AF_INET, bare, &a.sin_addr)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: a, as: sockaddr_in.self) }
            length = MemoryLayout<sockaddr_in>.size
            family = AF_INET
        } else {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = in_port_t(UInt16(clamping: port).bigEndian)
            guard inet_pton(AF_INET6, bare, &a.sin6_addr) == 1 else {
                throw StartError(description: "needs a numeric IPv4 or IPv6 address, got '\(host)'")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: a, as: sockaddr_in6.self) }
            length = MemoryLayout<sockaddr_in6>.size
            family = AF_INET6
        }
        let s = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard s >= 0 else { throw StartError(description: "socket: errno \(errno)") }
        var one: Int32 = 1, zero: Int32 = 0
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 { setsockopt(s, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size)) }
        let rc = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(length)) }
        }
        guard rc == 0, listen(s, 1024) == 0 else {
            let e = errno
            close(s)
            throw StartError(description: "cannot listen on \(host):\(port) (\(String(cString: strerror(e))))")
        }
        var bound = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) } }
        // sin_port and sin6_port sit at the same offset (RFC 3493 §3.3).
        let boundPort = withUnsafeBytes(of: &bound) { $0.load(fromByteOffset: 2, as: UInt16.self) }
        fd = s
        self.port = Int(UInt16(bigEndian: boundPort))
        let stop = stopFlag, counters = self.counters
        thread.value = JoinableThread(name: name) {
            var loop = Loop(listener: s, limits: limits, handler: handler, counters: counters, tls: tls)
            while !stop.value { loop.turn(now: Clock.monotonicMicros()) }
            loop.closeAll()
        }
    }

    public func stop() {
        stopFlag.value = true
        thread.withLock { t in
            let taken = t
            t = nil
            return taken
        }?.join()
        close(fd)
    }

    /// A client's address as 128 bits, IPv4 as IPv4-mapped (RFC 4291 §2.5.5.2): one client is one
    /// source whichever family it came in by.
    struct SourceAddress: Hashable {
        var high: UInt64 = 0, low: UInt64 = 0

        init(_ peer: sockaddr_storage) {
            var bytes = [UInt8](repeating: 0, count: 16)
            withUnsafeBytes(of: peer) { raw in
                if Int32(peer.ss_family) == AF_INET6 {
                    for i in 0..<16 { bytes[i] = raw[8 + i] } // sin6_addr
                } else {
                    bytes[10] = 0xff
                    bytes[11] = 0xff
                    for i in 0..<4 { bytes[12 + i] = raw[4 + i] } // sin_addr
                }
            }
            for i in 0..<8 {
                high = high << 8 | UInt64(bytes[i])
                low = low << 8 | UInt64(bytes[8 + i])
            }
        }
    }

    /// One client connection: what it sent so far and what it is owed.
    struct Connection {
        var fd: Int32
        var source: SourceAddress
        var input: [UInt8] = []
        var output: [UInt8] = []
        var written = 0
        /// When the request being read started (accept, or its first byte on a kept connection).
        var requestStarted: Int64?
        var idleSince: Int64
        var writeStarted: Int64?
        var closeAfterWrite = false
        /// Answered and half-closed: what the client still sends is read and dropped until it
        /// closes or this time (so the kernel does not reset the connection over unread bytes
        /// and lose the answer before the client read it).
        var lingerUntil: Int64?
        /// HTTPS: the connection's TLS state (memory BIOs: the bytes go through `input` and
        /// `output` as ciphertext here, plaintext to the parser), and whether its handshake is done.
        var ssl: OpaquePointer?
        var handshaken = false
    }

    struct Loop {
        let listener: Int32
        let limits: Limits
        let handler: @Sendable (HTTPRequest) -> HTTPResponse
        let counters: Locked<Counters>
        var connections: [Connection] = []
        var perSource: [SourceAddress: Int] = [:]
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var plain = [UInt8](repeating: 0, count: 16_384)
        var fds: [pollfd] = []
        let tls: TLSServerContext?

        init(
            listener: Int32, limits: Limits, handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse, counters: Locked<Counters>,
            tls: TLSServerContext? = nil
        ) {
            self.listener = listener
            self.limits = limits
            self.handler = handler
            self.counters = counters
            self.tls = tls
        }

        mutating func turn(now: Int64) {
            fds.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0))
            for c in connections { fds.append(pollfd(fd: c.fd, events: Int16(c.output.isEmpty ? POLLIN : POLLOUT), revents: 0)) }
            // 100 ms at most: the stop flag and the deadlines are looked at that often.
            guard poll(&fds, nfds_t(fds.count), 100) >= 0 else { return }
            let now = Clock.monotonicMicros()
            let ready = fds
            var i = connections.count - 1
            while i >= 0 {
                let r = ready[i + 1].revents
                if r & Int16(POLLOUT) != 0 { write(i, now: now) } else if r & Int16(POLLIN | POLLHUP | POLLERR) != 0 { read(i, now: now) }
                i -= 1
            }
            expire(now: now)
            if ready[0].revents & Int16(POLLIN) != 0 { acceptAll(now: now) }
        }

        mutating func acceptAll(now: Int64) {
            for _ in 0..<64 {
                var peer = sockaddr_storage()
                var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let c = withUnsafeMutablePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &len) }
                }
                guard c >= 0 else { return }
                _ = fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK)
                _ = fcntl(c, F_SETFD, FD_CLOEXEC)
                let source = SourceAddress(peer)
                counters.withLock { $0.accepted += 1 }
                if connections.count >= limits.maxConnections || perSource[source, default: 0] >= limits.maxConnectionsPerSource {
                    // Told at once, not left in the backlog: the client learns to come back
                    // (over TLS no plaintext answer can be read before a handshake: closed).
                    counters.withLock { $0.overCapacity += 1 }
                    if tls != nil {
                        close(c)
                        continue
                    }
                    let busy = HTTPResponse(
                        status: 503, headers: [("Retry-After", "5"), ("Content-Type", "text/plain")],
                        body: Array("too many connections\n".utf8)
                    ).serialized()
                    _ = busy.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                    close(c)
                    continue
                }
                var connection = Connection(fd: c, source: source, requestStarted: now, idleSince: now)
                if let tls {
                    guard let ssl = copenssl_tls_server(tls.ctx) else {
                        close(c)
                        continue
                    }
                    connection.ssl = ssl
                }
                perSource[source, default: 0] += 1
                connections.append(connection)
            }
        }

        /// HTTPS: what OpenSSL has to send (handshake records, encrypted answers) goes after
        /// what is still unsent.
        mutating func queueTLSOutput(_ i: Int, now: Int64) {
            guard let ssl = connections[i].ssl else { return }
            var queued = false
            while copenssl_pending_out(ssl) > 0 {
                let n = plain.withUnsafeMutableBytes { copenssl_take_out(ssl, $0.baseAddress, Int32($0.count)) }
                guard n > 0 else { break }
                connections[i].output += plain[0..<Int(n)]
                queued = true
            }
            if queued && connections[i].writeStarted == nil { connections[i].writeStarted = now }
        }

        /// HTTPS: feeds `n` received bytes to the connection's TLS state, runs its handshake and
        /// appends what it decrypts to `input`. False when the connection was dropped.
        mutating func receiveTLS(_ i: Int, _ n: Int, now: Int64) -> Bool {
            guard let ssl = connections[i].ssl else { return true }
            _ = buffer.withUnsafeBytes { copenssl_feed(ssl, $0.baseAddress, Int32(n)) }
            if !connections[i].handshaken {
                var reason = [CChar](repeating: 0, count: 128)
                let rc = copenssl_handshake(ssl, &reason, reason.count)
                queueTLSOutput(i, now: now)
                if rc < 0 {
                    // A plain-HTTP client, an unknown CA, garbage: its alert goes out, then it is closed.
                    counters.withLock { $0.tlsFailed += 1 }
                    connections[i].closeAfterWrite = true
                    if !connections[i].output.isEmpty { write(i, now: now) } else { drop(i) }
                    return false
                }
                if !connections[i].output.isEmpty { write(i, now: now) }
                guard rc == 1, i < connections.count, connections[i].ssl == ssl else { return false }
                connections[i].handshaken = true
            }
            while true {
                let m = plain.withUnsafeMutableBytes { copenssl_tls_read(ssl, $0.baseAddress, Int32($0.count)) }
                if m < 0 {
                    drop(i)
                    return false
                }
                if m == 0 { break }
                connections[i].input += plain[0..<Int(m)]
            }
            return true
        }

        mutating func read(_ i: Int, now: Int64) {
            let n = buffer.withUnsafeMutableBytes { recv(connections[i].fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) { drop(i); return }
            guard n > 0, connections[i].lingerUntil == nil else { return }
            if connections[i].requestStarted == nil { connections[i].requestStarted = now }
            if connections[i].ssl != nil {
                let before = connections[i].input.count
                guard receiveTLS(i, n, now: now), connections[i].input.count > before else { return }
            } else {
                connections[i].input += buffer[0..<n]
            }
            switch HTTPRequest.parse(connections[i].input, maxHeader: limits.maxHeader, maxBody: limits.maxBody) {
            case .needMore: return
            case let .invalid(status, reason):
                counters.withLock { $0.malformed += 1 }
                respond(i, HTTPResponse(status: status, text: reason + "\n"), keepAlive: false, now: now)
            case let .complete(request, consumed):
                counters.withLock { $0.requests += 1 }
                // One request at a time: pipelined bytes wait for the answer to be written.
                connections[i].input.removeFirst(min(consumed, connections[i].input.count))
                respond(i, handler(request), keepAlive: request.keepAlive, now: now)
            }
        }

        mutating func respond(_ i: Int, _ response: HTTPResponse, keepAlive: Bool, now: Int64) {
            if let ssl = connections[i].ssl {
                // Encrypted into the memory BIO, queued after anything still unsent.
                let text = response.serialized(keepAlive: keepAlive)
                _ = text.withUnsafeBytes { copenssl_tls_write(ssl, $0.baseAddress, Int32($0.count)) }
                connections[i].closeAfterWrite = !keepAlive
                connections[i].requestStarted = nil
                queueTLSOutput(i, now: now)
                write(i, now: now)
                return
            }
            connections[i].output = response.serialized(keepAlive: keepAlive)
            connections[i].written = 0
            connections[i].closeAfterWrite = !keepAlive
            connections[i].requestStarted = nil
            connections[i].writeStarted = now
            write(i, now: now)
        }

        mutating func write(_ i: Int, now: Int64) {
            var c = connections[i]
            while c.written < c.output.count {
                let n = c.output.withUnsafeBytes {
                    send(c.fd, $0.baseAddress! + c.written, $0.count - c.written, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { connections[i] = c; return }
                guard n > 0 else { drop(i); return }
                c.written += n
            }
            if c.closeAfterWrite {
                // Half-close, so a client still sending (an over-long body) reads the answer before a reset.
                shutdown(c.fd, Int32(SHUT_WR))
                c.lingerUntil = now + 1_000_000
                c.output = []
                c.writeStarted = nil
                c.requestStarted = nil
                connections[i] = c
                return
            }
            c.output = []
            c.written = 0
            c.writeStarted = nil
            c.idleSince = now
            connections[i] = c
            // A pipelined request already read is answered now.
            if !c.input.isEmpty {
                connections[i].requestStarted = now
                switch HTTPRequest.parse(c.input, maxHeader: limits.maxHeader, maxBody: limits.maxBody) {
                case .needMore: break
                case let .invalid(status, reason): respond(i, HTTPResponse(status: status, text: reason + "\n"), keepAlive: false, now: now)
                case let .complete(request, consumed):
                    connections[i].input.removeFirst(min(consumed, connections[i].input.count))
                    respond(i, handler(request), keepAlive: request.keepAlive, now: now)
                }
            }
        }

        /// Deadlines: a request not whole in time gets 408; an idle or unread connection is closed.
        mutating func expire(now: Int64) {
            var i = connections.count - 1
            while i >= 0 {
                let c = connections[i]
                if let l = c.lingerUntil {
                    if now >= l { drop(i) }
                } else if let w = c.writeStarted, now - w > limits.writeDeadlineMicros {
                    drop(i)
                } else if c.output.isEmpty, let s = c.requestStarted, now - s > limits.requestDeadlineMicros {
                    counters.withLock { $0.timedOut += 1 }
                    // No handshake yet: nothing can be said to it.
                    if c.ssl != nil && !c.handshaken {
                        drop(i)
                        i -= 1
                        continue
                    }
                    respond(
                        i,
                        HTTPResponse(
                            status: 408, text: "the request was not complete within \(limits.requestDeadlineMicros / 1_000_000) s\n"),
                        keepAlive: false, now: now)
                } else if c.output.isEmpty, c.requestStarted == nil, now - c.idleSince > limits.idleMicros {
                    counters.withLock { $0.idleClosed += 1 }
                    drop(i)
                }
                i -= 1
            }
        }

        mutating func drop(_ i: Int) {
            let c = connections[i]
            close(c.fd)
            if let ssl = c.ssl { SSL_free(ssl) }
            if let n = perSource[c.source] { perSource[c.source] = n > 1 ? n - 1 : nil }
            connections.remove(at: i)
        }

        mutating func closeAll() {
            while !connections.isEmpty { drop(connections.count - 1) }
        }
    }
}
