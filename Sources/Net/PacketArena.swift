#if canImport(Glibc)
    import Glibc
#endif

/// A fixed pool of packet slots allocated once (each holds one datagram plus SRTP trailer room),
/// handed out and returned by index: packets wait in the pacer as slot numbers, not copies.
public final class PacketArena {
    public static let slotSize = PacketBatch.slotSize
    public let capacity: Int
    @usableFromInline let storage: UnsafeMutableRawPointer
    var free: [Int32]
    /// Length of the packet in each slot (plain storage: no copy-on-write check per write).
    public let lengths: UnsafeMutablePointer<Int32>

    public init(capacity: Int) {
        self.capacity = capacity
        // Zeroed by calloc, which takes fresh pages from the kernel already zero instead of
        // writing them: with the LIFO free list the pages of slots never used are never touched
        // (a fleet bot's arena, a dozen packets in flight, costs a few pages, not the 850 KB that
        // zero-filling it made resident).
        storage = calloc(capacity, Self.slotSize)!
        free = (0..<Int32(capacity)).reversed()
        lengths = .allocate(capacity: capacity)
        lengths.initialize(repeating: 0, count: capacity)
    }

    deinit {
        Glibc.free(storage)
        lengths.deallocate()
    }

    public var available: Int { free.count }

    /// A free slot, or nil when all are in use.
    @inline(__always)
    public func allocate() -> Int? {
        guard let i = free.popLast() else { return nil }
        return Int(i)
    }

    @inline(__always)
    public func release(_ i: Int) { free.append(Int32(i)) }

    @inlinable @inline(__always)
    public func pointer(_ i: Int) -> UnsafeMutableRawPointer { storage + i * Self.slotSize }
}
