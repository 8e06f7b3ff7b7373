internal import COpenSSL
import ICE
#if canImport(Glibc)
    import Glibc
#endif

/// Why a TLS connection (TURN over TLS) could not be made: OpenSSL's reason or the verdict on
/// the server's certificate.
public struct TLSError: Error, CustomStringConvertible, Equatable, Sendable {
    public var description: String
    public init(description: String) { self.description = description }
}

/// TURN over TLS (`turns:`, RFC 8656 §3.1): TLS through OpenSSL over memory BIOs on a TCP
/// connection — the server's certificate verified against `caFile` (or the system's CA store)
/// and its name (or IP address) — with the same message framing as TURN over TCP.
public final class TLSStream: TURNStream {
    let tcp: TCPStream
    let ssl: OpaquePointer
    var framer = STUNFramer()
    /// Plaintext read into on every turn (allocated once).
    var buffer = [UInt8](repeating: 0, count: 16_384)
    public var fd: Int32 { tcp.fd }
    public var remote: SocketAddress { tcp.remote }
    public private(set) var closed = false

    /// Connects TLS over `tcp` (blocking, at most `timeoutMillis`).
    public init(tcp: TCPStream, host: String, caFile: String?, timeoutMillis: Int = 5_000) throws(TLSError) {
        self.tcp = tcp
        var reason = [CChar](repeating: 0, count: 256)
        guard let s = copenssl_tls_client(host, caFile, &reason, reason.count) else {
            throw TLSError(description: String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        ssl = s
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let end = Int64(deadline.tv_sec) * 1000 + Int64(deadline.tv_nsec) / 1_000_000 + Int64(timeoutMillis)
        while true {
            reason = [CChar](repeating: 0, count: 256)
            let rc = copenssl_handshake(ssl, &reason, reason.count)
            pushOut()
            if rc == 1 { break }
            if rc < 0 {
                let v = copenssl_verify_result(ssl)
                let why =
                    v != 0
                    ? "its certificate was refused: " + String(cString: copenssl_verify_string(v))
                    : String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw TLSError(description: "the TLS handshake with the TURN server \(tcp.remote) failed: \(why)")
            }
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let left = end - (Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000)
            if left <= 0 || tcp.closed {
                throw TLSError(description: "the TLS handshake with the TURN server \(tcp.remote) did not finish")
            }
            var ready = [UInt8](repeating: 0, count: 1)
            _ = waitReadable([tcp.fd], ready: &ready, timeoutMicros: left * 1000)
            tcp.readRaw { chunk in chunk.withUnsafeBytes { _ = copenssl_feed(ssl, $0.baseAddress, Int32($0.count)) } }
        }
    }

    deinit { SSL_free(ssl) }

    /// Encrypts `bytes` and queues the records on the TCP connection.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard !closed else { return }
        if copenssl_tls_write(ssl, bytes.baseAddress, Int32(bytes.count)) < 0 { closed = true; return }
        pushOut()
    }

    public func flush() { tcp.flush() }

    /// Decrypts what arrived and hands each complete STUN message or ChannelData to `body`.
    public func read(_ body: ([UInt8]) -> Void) {
        tcp.readRaw { chunk in chunk.withUnsafeBytes { _ = copenssl_feed(ssl, $0.baseAddress, Int32($0.count)) } }
        while true {
            let n = buffer.withUnsafeMutableBytes { copenssl_tls_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n < 0 { closed = true; break }
            if n == 0 { break }
            framer.append(buffer[0..<Int(n)])
            while let m = framer.next() { body(m) }
        }
        if tcp.closed { closed = true }
        pushOut()
    }

    /// What OpenSSL wrote (records, alerts) onto the TCP connection.
    func pushOut() {
        let n = Int(copenssl_pending_out(ssl))
        guard n > 0 else { return }
        var out = [UInt8](repeating: 0, count: n)
        let got = Int(out.withUnsafeMutableBufferPointer { copenssl_take_out(ssl, $0.baseAddress, Int32(n)) })
        if got > 0 { out.withUnsafeBytes { tcp.write(UnsafeRawBufferPointer(rebasing: $0.prefix(got))) } }
    }
}
