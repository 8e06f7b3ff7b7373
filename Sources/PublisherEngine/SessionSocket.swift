import Transport

/// The socket side of one publisher session, for its drivers (the publisher's network thread,
/// a fleet loop): reads arrived datagrams into a batch and hands them to the session, and sends
/// what the session queued. The session itself never touches a socket or a clock.
final class SessionSocket {
    let socket: UDPSocket
    let rx = PacketBatch(capacity: 16)

    init(_ socket: UDPSocket) { self.socket = socket }

    /// Hands the session everything waiting on the socket (up to 8 batches), stamped `now`.
    func read(into session: NetworkLoop, now: Int64) {
        for _ in 0..<8 {
            let n: Int
            do { n = try socket.receive(into: rx) } catch {
                session.handleSocketError(error)
                return
            }
            if n == 0 { return }
            for i in 0..<n { session.handleDatagram(rx.slot(i).baseAddress!, length: Int(rx.lengths[i]), now: now) }
        }
    }

    /// Sends the session's outbox (batched `sendmmsg`, GSO where the kernel takes it).
    func flush(_ session: NetworkLoop) {
        guard session.outCount > 0 else { return }
        let socket = self.socket
        session.pollTransmit { pointers, lengths, count, destination throws(SocketError) in
            try socket.send(pointers: pointers, lengths: lengths, count: count, to: destination)
        }
    }
}

extension NetworkLoop {
    /// The publisher's network thread: frames from the media thread's mailbox and datagrams from
    /// the socket go into the session, its outbox goes out, and it sleeps until the session's
    /// next timer, a datagram or a frame. The clock is read here, never in the session.
    func run(socket: SessionSocket, mailbox: FrameMailbox) {
        var items: [FrameMailbox.Item] = []
        items.reserveCapacity(64)
        begin(now: Clock.monotonicMicros())
        socket.flush(self)
        while true {
            let now = Clock.monotonicMicros()
            mailbox.drain(into: &items)
            for item in items { handle(item) }
            socket.read(into: self, now: now)
            guard let wake = step(now: now) else { break }
            socket.flush(self)
            let ready = socket.socket.wait(timeoutMicros: max(0, wake - Clock.monotonicMicros()), wake: mailbox.signal)
            if ready & 2 != 0 { mailbox.signal.drain() }
        }
        socket.flush(self)
        finish(now: Clock.monotonicMicros())
        socket.flush(self)
    }
}
