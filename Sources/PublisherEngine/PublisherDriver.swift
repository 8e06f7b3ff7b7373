public import Transport
import Stats
import Platform
public import PublisherCore

/// The socket side of one publisher session, for its drivers (the publisher's network thread,
/// a fleet loop): reads arrived datagrams into a batch and hands them to the session, and sends
/// what the session queued. The session itself never touches a socket or a clock.
public final class SessionSocket {
    public let socket: UDPSocket
    /// TURN over TCP: what goes to this stream's server is written to it, what it delivers is
    /// handed to the session as from the server.
    public let tcp: (any TURNStream)?
    let rx = PacketBatch(capacity: 16)
    var scratch = [UInt8](repeating: 0, count: PacketBatch.slotSize)
    var ready = [UInt8](repeating: 0, count: 3)

    /// `--impair` toward a real server: what is sent goes through the emulated uplink first.
    public let uplink: UplinkEmulator?

    public init(_ socket: UDPSocket, tcp: (any TURNStream)? = nil, uplink: UplinkEmulator? = nil) {
        self.socket = socket
        self.tcp = tcp
        self.uplink = uplink
    }

    /// When a datagram held by the emulated uplink is due (nil: none held, or no emulator).
    public var nextDue: Int64? { uplink?.nextDue }

    /// Waits for the UDP socket, the TCP stream (if any) or `wake`, at most `timeoutMicros`.
    public func wait(timeoutMicros: Int64, wake: EventSignal?) -> Int {
        guard let tcp else { return socket.wait(timeoutMicros: timeoutMicros, wake: wake) }
        _ = waitReadable([socket.fd, wake?.fd ?? -1, tcp.fd], ready: &ready, timeoutMicros: timeoutMicros)
        return (ready[0] != 0 || ready[2] != 0 ? 1 : 0) | (ready[1] != 0 ? 2 : 0)
    }

    /// Hands the session everything waiting on the socket (up to 8 batches), stamped `now` — or,
    /// on a socket with arrival timestamps on, each at its kernel arrival time kept within
    /// `notBefore` (when the session was last stepped) … `now`, in order.
    public func read(into session: PublisherSession, now: Int64, notBefore: Int64? = nil) {
        if let tcp {
            tcp.flush()
            tcp.read { m in
                guard m.count <= scratch.count else { return }
                m.withUnsafeBytes { src in
                    scratch.withUnsafeMutableBytes { b in
                        b.copyMemory(from: src)
                        session.handleDatagram(b.baseAddress!, length: m.count, from: tcp.remote, now: now)
                    }
                }
            }
        }
        // (Through a TCP relay everything is handed `now`: its stream was read first.)
        let floor = tcp == nil ? notBefore : nil
        var at = floor ?? now
        for _ in 0..<8 {
            let n: Int
            do { n = try socket.receive(into: rx) } catch {
                session.handleSocketError(error)
                if error.isConnectionRefused { continue } // an earlier datagram's ICMP: the queue may still hold data
                return
            }
            if n == 0 { return }
            for i in 0..<n {
                at = floor == nil ? now : min(now, max(at, rx.arrival(i) ?? now))
                session.handleDatagram(rx.slot(i).baseAddress!, length: Int(rx.lengths[i]), from: rx.source(i), to: rx.local(i), now: at)
            }
            // A short batch emptied the queue (the readiness is level-triggered: a later arrival
            // wakes the loop again): no second call just to hear EAGAIN — half of a 100-bot
            // fleet's recvmmsg calls were that (strace -c).
            if n < rx.capacity { return }
        }
    }

    /// Sends the session's outbox (batched `sendmmsg`, GSO where the kernel takes it).
    /// With an emulated uplink, the outbox goes into it and what it has due goes to the socket.
    public func flush(_ session: PublisherSession) {
        if let uplink {
            if session.outCount > 0 {
                let now = Clock.monotonicMicros()
                session.pollTransmit { pointers, lengths, count, destination, source throws(SocketError) in
                    uplink.admit(pointers: pointers, lengths: lengths, count: count, to: destination, from: source, now: now)
                    return count
                }
            }
            releaseHeld(session, now: Clock.monotonicMicros())
            return
        }
        guard session.outCount > 0 else { return }
        let socket = self.socket, tcp = self.tcp
        session.pollTransmit { pointers, lengths, count, destination, source throws(SocketError) in
            if let tcp, destination == tcp.remote {
                for i in 0..<count { tcp.write(UnsafeRawBufferPointer(start: pointers[i], count: Int(lengths[i]))) }
                return count
            }
            return try socket.send(pointers: pointers, lengths: lengths, count: count, to: destination, from: source)
        }
    }

    /// Sends what the emulated uplink has due by `now`; a full socket buffer keeps the rest
    /// for the next call, an error is the session's (as a direct send's would be).
    public func releaseHeld(_ session: PublisherSession, now: Int64) {
        guard let uplink else { return }
        let socket = self.socket, tcp = self.tcp
        uplink.release(now: now) { bytes, destination, source in
            if let tcp, destination == tcp.remote {
                tcp.write(bytes)
                return true
            }
            var ptr: UnsafeMutableRawPointer? = UnsafeMutableRawPointer(mutating: bytes.baseAddress)
            var len = UInt32(bytes.count)
            do throws(SocketError) {
                return try socket.send(pointers: &ptr, lengths: &len, count: 1, to: destination, from: source) == 1
            } catch {
                session.handleSocketError(error)
                return true
            }
        }
    }
}

extension PublisherSession {
    /// Passes what the session asks for to the media side across threads, and a stop asked for
    /// from outside into the session.
    public func exchange(with control: PublisherControl) {
        if control.stopRequested && !stopRequested { stop() }
        while let e = pollEvent() {
            switch e {
            case let .keyFrameRequest(layer): control.requestKeyFrame(layer: layer)
            case let .layerTarget(layer, bitrate): control.setTargetBitrate(layer: layer, bps: bitrate)
            }
        }
    }
}

/// The publisher's network thread around one sans-IO `PublisherSession`: the session takes
/// time, frames and datagrams in and gives datagrams, events and its next deadline out; this
/// loop owns the clock, the socket and the wait (the session's module cannot reach either).
enum PublisherNetworkLoop {
    /// Frames from the media thread's mailbox and datagrams from the socket go into the session,
    /// its outbox goes out, its requests go to the media thread, its figures into `published`
    /// every `publishIntervalMicros`, and it sleeps until the session's next timer, a datagram
    /// or a frame.
    static func run(
        _ session: PublisherSession, socket: SessionSocket, mailbox: FrameMailbox, control: PublisherControl,
        published: Locked<([OutboundStreamStats], NetworkCounters)>
    ) {
        session.drive(socket: socket, mailbox: mailbox, control: control, published: published)
    }
}

extension PublisherSession {
    fileprivate func drive(
        socket: SessionSocket, mailbox: FrameMailbox, control: PublisherControl,
        published: Locked<([OutboundStreamStats], NetworkCounters)>
    ) {
        var items: [FrameMailbox.Item] = []
        items.reserveCapacity(64)
        begin(now: Clock.monotonicMicros())
        exchange(with: control)
        socket.flush(self)
        var nextPublish = Clock.monotonicMicros()
        while true {
            let now = Clock.monotonicMicros()
            mailbox.drain(into: &items)
            for item in items { handle(item) }
            socket.read(into: self, now: now)
            if let r = control.takeICERestart() {
                restartICE(
                    local: r.local, remote: r.remote, remoteCandidates: r.remoteCandidates, localCandidates: r.localCandidates, now: now)
            }
            exchange(with: control)
            let wake = step(now: now)
            exchange(with: control)
            socket.flush(self)
            if now >= nextPublish {
                published.withLock {
                    $0 = statistics; $0.1.uplink = socket.uplink?.counters
                }
                nextPublish = now + config.publishIntervalMicros
            }
            guard let wake else { break }
            // Datagrams the socket refused (a full buffer or qdisc) are tried again within 1 ms.
            // So are those the emulated uplink holds, when due.
            let due = socket.nextDue.map { max($0, now + 200) } ?? .max
            let until = min(wake, nextPublish, hasDeferredTransmit ? now + 1_000 : .max, due) - Clock.monotonicMicros()
            let ready = socket.wait(timeoutMicros: max(0, until), wake: mailbox.signal)
            if ready & 2 != 0 { mailbox.signal.drain() }
        }
        finish(now: Clock.monotonicMicros())
        socket.flush(self)
        // The last datagrams (RTCP BYE, DTLS close_notify) leave the emulated uplink at once.
        socket.releaseHeld(self, now: .max)
        published.withLock {
            $0 = statistics; $0.1.uplink = socket.uplink?.counters
        }
        // The session may have ended by itself (its transport failed): the media side stops too.
        control.requestStop()
    }
}
