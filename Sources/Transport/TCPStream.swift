internal import CLinuxNet
import ICE

/// A stream to a TURN server (over TCP, or TLS on TCP): whole messages out, whole messages in.
public protocol TURNStream: AnyObject {
    var fd: Int32 { get }
    var remote: SocketAddress { get }
    var closed: Bool { get }
    func write(_ bytes: UnsafeRawBufferPointer)
    func flush()
    func read(_ body: ([UInt8]) -> Void)
}

/// A TCP connection for TURN over TCP (RFC 8656 §3.1): connected once (bounded wait), then
/// non-blocking; what cannot be written yet waits in a bounded buffer, what arrives is framed
/// into messages by `STUNFramer`. Owned by one thread (its driver).
public final class TCPStream: TURNStream {
    public let fd: Int32
    public let remote: SocketAddress
    public let localAddress: SocketAddress
    var pending: [UInt8] = []
    var framer = STUNFramer()
    /// Read into on every turn (allocated once).
    var buffer = [UInt8](repeating: 0, count: 65_536)
    public private(set) var closed = false
    /// Bytes dropped because the peer was not reading (the pending buffer is capped at 1 MiB).
    public private(set) var droppedBytes = 0

    public init(connectingTo remote: SocketAddress, timeoutMillis: Int = 5_000) throws(SocketError) {
        var dst = remote.raw
        let fd = clinux_tcp_connect(&dst, Int32(timeoutMillis))
        guard fd >= 0 else { throw SocketError("connect \(remote) (TCP)", errno: -fd) }
        self.fd = fd
        self.remote = remote
        var local = clinux_addr()
        _ = clinux_local_addr(fd, &local)
        localAddress = SocketAddress(raw: local)
    }

    deinit { _ = clinux_close(fd) }

    /// Queues `bytes` (a whole message) and writes what the socket takes now.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard !closed else { return }
        if pending.isEmpty {
            let n = clinux_tcp_write(fd, bytes.baseAddress, bytes.count)
            if n < 0 { closed = true; return }
            if n == bytes.count { return }
            pending += bytes[Int(n)...]
        } else if pending.count + bytes.count <= 1 << 20 {
            pending += bytes
        } else {
            droppedBytes += bytes.count
        }
        flush()
    }

    /// Writes what waits; call when the socket may have room again (each turn).
    public func flush() {
        while !pending.isEmpty && !closed {
            let n = pending.withUnsafeBytes { clinux_tcp_write(fd, $0.baseAddress, $0.count) }
            if n < 0 { closed = true; return }
            if n == 0 { return }
            pending.removeFirst(Int(n))
        }
    }

    /// Reads what arrived and hands each complete message (a STUN message or ChannelData) to `body`.
    public func read(_ body: ([UInt8]) -> Void) {
        readRaw { chunk in
            framer.append(chunk)
            while let m = framer.next() { body(m) }
        }
    }

    /// Reads what arrived, as it arrived (for a TLS layer on top).
    func readRaw(_ body: (ArraySlice<UInt8>) -> Void) {
        while !closed {
            let n = buffer.withUnsafeMutableBytes { clinux_tcp_read(fd, $0.baseAddress, $0.count) }
            if n == -Int(EAGAIN_VALUE) { break }
            if n <= 0 { closed = true; break }
            body(buffer[0..<Int(n)])
        }
    }

    /// The connection failed or was closed by the peer.
    func markClosed() { closed = true }
}

let EAGAIN_VALUE: Int32 = 11
