/// A fixed set of packet slots allocated once: each slot holds one datagram plus room for the
/// SRTP trailer (144 bytes), so protecting in place never reallocates. Used for both sending
/// (fill slots, then one `sendmmsg`) and receiving (`recvmmsg` fills them).
public final class PacketBatch {
    /// Largest datagram a slot carries before SRTP.
    public static let maxPacketSize = 1500
    /// Room reserved after each packet for the SRTP/SRTCP trailer (SRTP_MAX_TRAILER_LEN + 4).
    static let trailerRoom = 148
    public static let slotSize = (maxPacketSize + trailerRoom + 63) / 64 * 64 // 1664

    public let capacity: Int
    let storage: UnsafeMutableRawPointer
    /// Slot start pointers, built once (what sendmmsg/recvmmsg read).
    package var pointers: [UnsafeMutableRawPointer?]
    /// Length of the datagram in each slot.
    public var lengths: [UInt32]
    /// Sender of each received datagram.
    package var sources: [SocketAddress]
    /// The local address each received datagram was sent to, on a socket that reports them
    /// (`UDPSocket.enableLocalAddresses`: one socket on the wildcard address, a host candidate
    /// per interface); empty otherwise.
    package var locals: [SocketAddress]
    /// When the kernel took each received datagram in (monotonic µs), on a socket with arrival
    /// timestamps on; 0 where none was given.
    public var arrivals: [Int64]
    /// Number of slots in use.
    public var count = 0

    public init(capacity: Int) {
        precondition(capacity > 0 && capacity <= 64, "a batch holds 1…64 packets")
        self.capacity = capacity
        let base = UnsafeMutableRawPointer.allocate(byteCount: capacity * Self.slotSize, alignment: 64)
        base.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * Self.slotSize)
        storage = base
        pointers = (0..<capacity).map { base + $0 * Self.slotSize }
        lengths = [UInt32](repeating: 0, count: capacity)
        sources = []
        locals = []
        arrivals = [Int64](repeating: 0, count: capacity)
    }

    deinit { storage.deallocate() }

    /// The whole slot `i` (packet + trailer room).
    @inlinable
    public func slot(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: pointer(i), count: Self.slotSize)
    }

    @usableFromInline
    func pointer(_ i: Int) -> UnsafeMutableRawPointer { storage + i * Self.slotSize }

    /// The datagram in slot `i`, as written or received.
    public func packet(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: pointer(i), count: Int(lengths[i]))
    }

    /// When the kernel took slot `i`'s datagram in (monotonic µs), or nil when it did not say.
    public func arrival(_ i: Int) -> Int64? { i < arrivals.count && arrivals[i] != 0 ? arrivals[i] : nil }

    /// Where slot `i`'s datagram came from (receive batches only).
    public func source(_ i: Int) -> SocketAddress? { i < sources.count ? sources[i] : nil }

    /// The local address (with the socket's port) slot `i`'s datagram was sent to, on a socket
    /// that reports them; nil otherwise.
    public func local(_ i: Int) -> SocketAddress? { i < locals.count ? locals[i] : nil }

    public func reset() { count = 0 }
}
