internal import CLinuxNet

/// A non-blocking UDP socket with batched send (`sendmmsg`, UDP GSO when the kernel has it) and
/// batched receive (`recvmmsg`). Owned by one thread.
public final class UDPSocket {
    public let fd: Int32
    public let localAddress: SocketAddress
    var rawSources = [clinux_addr](repeating: clinux_addr(), count: 64)
    var rawLocals: [clinux_addr] = []
    /// Batches go out with UDP GSO (runs of equal-size datagrams as one message) while the
    /// kernel accepts it; the first refusal switches the socket to plain `sendmmsg` for good.
    public private(set) var usesGSO: Bool
    /// ICMP refusals of earlier datagrams that sends went past (`clinux_take_refusals`): the
    /// next receives report them, one each, as the kernel would have.
    var refusals = 0

    /// Opens a socket bound to `bind` (port 0 picks a free port).
    public init(bind: SocketAddress, receiveBuffer: Int = 4 << 20, sendBuffer: Int = 4 << 20) throws(SocketError) {
        let family = bind.isIPv6 ? Int32(10) : Int32(2)
        let fd = clinux_udp_open(family, Int32(receiveBuffer), Int32(sendBuffer))
        guard fd >= 0 else { throw SocketError("socket", errno: -fd) }
        var addr = bind.raw
        let rc = clinux_bind(fd, &addr)
        guard rc == 0 else { _ = clinux_close(fd); throw SocketError("bind \(bind)", errno: -rc) }
        var local = clinux_addr()
        _ = clinux_local_addr(fd, &local)
        self.fd = fd
        localAddress = SocketAddress(raw: local)
        dualStack = bind.isIPv6 && bind.isWildcard
        usesGSO = clinux_gso_supported(fd) != 0
    }

    /// Bound to `[::]`: reaches and hears IPv4 peers too (RFC 3493 §5.3). Their addresses stay
    /// plain IPv4 above this type: mapped (::ffff:a.b.c.d) only on their way to the kernel.
    public let dualStack: Bool

    /// The kernel's form of `destination` for this socket.
    @inline(__always)
    func raw(_ destination: SocketAddress) -> clinux_addr {
        guard dualStack else { return destination.raw }
        var mapped = clinux_addr()
        withUnsafePointer(to: destination.raw) { _ = clinux_addr_v4_mapped($0, &mapped) }
        return mapped
    }

    /// Whether receives report the kernel's arrival time of each datagram (`PacketBatch.arrivals`).
    public private(set) var timestampsArrivals = false

    /// Has the kernel stamp each datagram's arrival (SO_TIMESTAMPNS), so a driver that reads late
    /// still hands its session when the datagram arrived — as libwebrtc's
    /// `rtc_base/physical_socket_server.cc` does with SO_TIMESTAMP.
    public func enableArrivalTimestamps() throws(SocketError) {
        let rc = clinux_enable_rx_timestamps(fd)
        guard rc == 0 else { throw SocketError("SO_TIMESTAMPNS", errno: -rc) }
        timestampsArrivals = true
    }

    /// Whether receives report each datagram's local (destination) address (`PacketBatch.local`).
    public private(set) var reportsLocalAddresses = false

    /// Has receives report the address each datagram was sent to (IP_PKTINFO / IPV6_RECVPKTINFO):
    /// a socket on the wildcard address then serves a host candidate per interface (RFC 8445
    /// §5.1.1.1), each datagram handed to ICE with the local candidate it reached, and sends name
    /// their source (`from:`) — what a socket per address gives libwebrtc
    /// (`p2p/client/basic_port_allocator.cc`), on one socket.
    public func enableLocalAddresses() throws(SocketError) {
        let rc = clinux_enable_pktinfo(fd)
        guard rc == 0 else { throw SocketError("IP_PKTINFO", errno: -rc) }
        rawLocals = [clinux_addr](repeating: clinux_addr(), count: 64)
        reportsLocalAddresses = true
    }

    /// The kernel's form of a datagram's source address, or nil (the kernel's choice).
    @inline(__always)
    func withSource<R>(_ source: SocketAddress?, _ body: (UnsafePointer<clinux_addr>?) -> R) -> R {
        guard let source else { return body(nil) }
        return withUnsafePointer(to: source.raw) { body($0) }
    }

    /// Whether this socket is bound to the wildcard address (0.0.0.0 or [::]).
    public var isWildcard: Bool { localAddress.isWildcard }

    /// Turns GSO off (benchmarks compare both ways; a refusal turns it off by itself).
    public func disableGSO() { usesGSO = false }

    /// A socket bound to an ephemeral port on the wildcard address of `peer`'s family.
    public convenience init(for peer: SocketAddress, sendBuffer: Int = 4 << 20) throws(SocketError) {
        try self.init(bind: try SocketAddress(host: peer.isIPv6 ? "::" : "0.0.0.0", port: 0), sendBuffer: sendBuffer)
    }

    deinit { _ = clinux_close(fd) }

    /// Sends datagrams `range` of `batch` to `destination`. Returns how many left (fewer on a full
    /// socket buffer, which is not an error).
    @discardableResult
    public func send(
        _ batch: PacketBatch, _ range: Range<Int>, to destination: SocketAddress, from source: SocketAddress? = nil
    ) throws(SocketError) -> Int {
        guard !range.isEmpty else { return 0 }
        var dst = raw(destination)
        let rc = withSource(source) { src in
            batch.pointers.withUnsafeBufferPointer { ptrs in
                batch.lengths.withUnsafeBufferPointer { lens in
                    clinux_sendmmsg(
                        fd, &dst, src, ptrs.baseAddress! + range.lowerBound, lens.baseAddress! + range.lowerBound, Int32(range.count))
                }
            }
        }
        refusals &+= Int(clinux_take_refusals())
        if rc < 0 {
            if rc == -11 || rc == -105 { return 0 } // EAGAIN: the socket buffer is full; ENOBUFS: the qdisc is
            throw SocketError("sendmmsg to \(destination)", errno: -rc)
        }
        return Int(rc)
    }

    func sendRaw(
        pointers: UnsafePointer<UnsafeMutableRawPointer?>, lengths: UnsafePointer<UInt32>, count: Int,
        to destination: SocketAddress, from source: SocketAddress?
    ) throws(SocketError) -> Int {
        guard count > 0 else { return 0 }
        var dst = raw(destination)
        if usesGSO {
            let rc = withSource(source) { clinux_sendmmsg_gso(fd, &dst, $0, pointers, lengths, Int32(count)) }
            refusals &+= Int(clinux_take_refusals())
            if rc >= 0 { return Int(rc) }
            if rc == -11 || rc == -105 { return 0 } // a full socket buffer or qdisc (ENOBUFS): back-pressure
            // EIO, EINVAL, EOPNOTSUPP: this path cannot segment; other errors are the peer's.
            guard [-5, -22, -95].contains(rc) else { throw SocketError("sendmmsg to \(destination)", errno: -rc) }
            usesGSO = false
        }
        let rc = withSource(source) { clinux_sendmmsg(fd, &dst, $0, pointers, lengths, Int32(count)) }
        refusals &+= Int(clinux_take_refusals())
        if rc < 0 {
            if rc == -11 || rc == -105 { return 0 }
            throw SocketError("sendmmsg to \(destination)", errno: -rc)
        }
        return Int(rc)
    }

    /// Sends one datagram.
    public func send(_ bytes: UnsafeRawBufferPointer, to destination: SocketAddress, from source: SocketAddress? = nil) throws(SocketError)
    {
        var dst = raw(destination)
        var ptr: UnsafeMutableRawPointer? = UnsafeMutableRawPointer(mutating: bytes.baseAddress)
        var len = UInt32(bytes.count)
        let rc = withSource(source) { clinux_sendmmsg(fd, &dst, $0, &ptr, &len, 1) }
        refusals &+= Int(clinux_take_refusals())
        if rc < 0 && rc != -11 { throw SocketError("send to \(destination)", errno: -rc) }
    }

    /// Receives into `batch` without blocking; returns the count (0 when nothing is waiting).
    /// Datagrams longer than a slot are reported with a length > `PacketBatch.maxPacketSize`.
    public func receive(into batch: PacketBatch) throws(SocketError) -> Int {
        if refusals > 0 {
            refusals -= 1
            batch.count = 0
            throw SocketError("recvmmsg", errno: 111) // ECONNREFUSED
        }
        let n = min(batch.capacity, 64)
        let rc = batch.pointers.withUnsafeBufferPointer { ptrs in
            batch.lengths.withUnsafeMutableBufferPointer { lens in
                rawSources.withUnsafeMutableBufferPointer { froms in
                    rawLocals.withUnsafeMutableBufferPointer { locals in
                        batch.arrivals.withUnsafeMutableBufferPointer { arrivals in
                            clinux_recvmmsg(
                                fd, ptrs.baseAddress!, UInt32(PacketBatch.maxPacketSize), lens.baseAddress!, froms.baseAddress!,
                                reportsLocalAddresses ? locals.baseAddress : nil, timestampsArrivals ? arrivals.baseAddress : nil, Int32(n))
                        }
                    }
                }
            }
        }
        guard rc >= 0 else {
            batch.count = 0
            // ECONNREFUSED: an earlier send hit a closed port (ICMP); report, don't spin.
            throw SocketError("recvmmsg", errno: -rc)
        }
        batch.count = Int(rc)
        if batch.sources.count < batch.capacity {
            batch.sources = [SocketAddress](repeating: SocketAddress(raw: clinux_addr()), count: batch.capacity)
        }
        for i in 0..<Int(rc) { batch.sources[i] = SocketAddress(raw: rawSources[i]) }
        if reportsLocalAddresses {
            if batch.locals.count < batch.capacity { batch.locals = [SocketAddress](repeating: localAddress, count: batch.capacity) }
            let port = localAddress.port
            for i in 0..<Int(rc) {
                batch.locals[i] = rawLocals[i].length == 0 ? localAddress : SocketAddress(raw: rawLocals[i]).withPort(port)
            }
        }
        return Int(rc)
    }

    /// Waits until this socket (bit 1) or `wake` (bit 2) is readable, or the timeout passes.
    public func wait(timeoutMicros: Int64, wake: EventSignal? = nil) -> Int {
        Int(clinux_wait_readable(fd, wake?.fd ?? -1, timeoutMicros))
    }

    /// Whether the kernel supports UDP GSO on this socket.
    var supportsGSO: Bool { clinux_gso_supported(fd) != 0 }
}

/// A cross-thread wake-up (Linux eventfd) that a poll loop can wait on next to its socket.
public final class EventSignal: Sendable {
    public let fd: Int32

    public init() throws(SocketError) {
        let fd = clinux_eventfd_open()
        guard fd >= 0 else { throw SocketError("eventfd", errno: -fd) }
        self.fd = fd
    }

    deinit { _ = clinux_close(fd) }

    public func signal() { _ = clinux_eventfd_signal(fd) }
    public func drain() { _ = clinux_eventfd_drain(fd) }
}

/// Waits until any of `fds` is readable or `timeoutMicros` pass; marks the ready ones (a fleet
/// loop polls all its bots' sockets at once).
public func waitReadable(_ fds: [Int32], ready: inout [UInt8], timeoutMicros: Int64) -> Int {
    if ready.count < fds.count { ready = [UInt8](repeating: 0, count: fds.count) }
    return Int(
        fds.withUnsafeBufferPointer { f in
            ready.withUnsafeMutableBufferPointer { r in clinux_wait_many(f.baseAddress, r.baseAddress, Int32(f.count), timeoutMicros) }
        })
}

/// An epoll set (fleet loops): sockets registered once with a tag, waits return only the ready.
public final class ReadinessSet {
    let fd: Int32
    var tags = [UInt64](repeating: 0, count: 256)

    public init() throws(SocketError) {
        let e = clinux_epoll_create()
        guard e >= 0 else { throw SocketError("epoll_create1", errno: -e) }
        fd = e
    }

    deinit { _ = clinux_close(fd) }

    public func add(_ socket: UDPSocket, tag: Int) { _ = clinux_epoll_ctl(fd, socket.fd, UInt64(tag), 1) }
    public func remove(_ socket: UDPSocket) { _ = clinux_epoll_ctl(fd, socket.fd, 0, 0) }
    /// Any other descriptor (a TURN server's TCP stream) under a tag.
    public func add(fd other: Int32, tag: Int) { _ = clinux_epoll_ctl(fd, other, UInt64(tag), 1) }
    public func remove(fd other: Int32) { _ = clinux_epoll_ctl(fd, other, 0, 0) }

    /// Waits up to `timeoutMicros`; calls `ready` with the tag of each readable socket.
    public func wait(timeoutMicros: Int64, _ ready: (Int) -> Void) {
        let n = tags.withUnsafeMutableBufferPointer { clinux_epoll_wait(fd, $0.baseAddress, Int32($0.count), timeoutMicros) }
        if n > 0 { for i in 0..<Int(n) { ready(Int(tags[i])) } }
    }
}

extension UDPSocket {
    /// Sends up to 64 datagrams given as pointers and lengths (arena slots) in one `sendmmsg`.
    public func send(
        pointers: UnsafePointer<UnsafeMutableRawPointer?>, lengths: UnsafePointer<UInt32>, count: Int,
        to destination: SocketAddress, from source: SocketAddress? = nil
    ) throws(SocketError) -> Int {
        try sendRaw(pointers: pointers, lengths: lengths, count: count, to: destination, from: source)
    }
}
