import Transport
import ICE
import WebRTC
import Platform

/// The one loop of the set-up drivers: a sans-IO state machine (a TURN allocation, a STUN
/// gatherer, a WebRTC transport checking one path) driven over the media socket — and, for TURN
/// over TCP or TLS, the server's stream — until it is done or its time is up. The machine says
/// when it next needs the clock (`step`); in between the loop waits for the socket and the
/// stream, never longer than that nor past the deadline. Blocking, so it runs before a session
/// starts (the sessions themselves are driven by their own threads and loops).
struct SetUpLoop {
    let socket: UDPSocket
    /// TURN over TCP/TLS: the server's stream, waited on beside the socket.
    var stream: (any TURNStream)?
    let batch = PacketBatch(capacity: 8)

    /// Runs until `done()` or `micros` have passed.
    /// - `step`: advance the machine to `now`; its next deadline (nil: `idle` from now).
    /// - `flush`: send what the machine queued (after each step and each receive).
    /// - `datagram`: one UDP datagram as it arrived, with its source and (on a wildcard socket)
    ///   the local address it reached.
    /// - `message`: one framed message from the stream.
    func run(
        for micros: Int64, idle: Int64, done: () -> Bool, step: (Int64) -> Int64?, flush: () -> Void,
        datagram: ([UInt8], SocketAddress, SocketAddress?, Int64) -> Void, message: ([UInt8], Int64) -> Void = { _, _ in }
    ) {
        let deadline = Clock.monotonicMicros() + micros
        var ready = [UInt8](repeating: 0, count: 2)
        while !done() && Clock.monotonicMicros() < deadline {
            let now = Clock.monotonicMicros()
            let wake = step(now) ?? now + idle
            flush()
            if done() { break }
            let left = max(0, min(wake, deadline) - Clock.monotonicMicros())
            if let stream {
                _ = waitReadable([socket.fd, stream.fd], ready: &ready, timeoutMicros: left)
                stream.read { message($0, Clock.monotonicMicros()) }
            } else {
                _ = socket.wait(timeoutMicros: left)
            }
            if let n = try? socket.receive(into: batch) {
                for i in 0..<n {
                    guard let from = batch.source(i) else { continue }
                    datagram([UInt8](UnsafeRawBufferPointer(batch.packet(i))), from, batch.local(i), Clock.monotonicMicros())
                }
            }
            flush()
        }
    }
}

extension UDPSocket {
    /// Sends a sans-IO machine's datagram: from its `from` when this socket is on the wildcard
    /// address (a host candidate per interface), else from the socket's own address. Errors are
    /// the machine's retransmissions' business.
    func send(_ t: Transmit) {
        guard let to = SocketAddress(t.to) else { return }
        let from = isWildcard ? SocketAddress(t.from) : nil
        t.bytes.withUnsafeBytes { try? send($0, to: to, from: from) }
    }
}
