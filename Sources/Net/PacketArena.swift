#if canImport(Glibc)
    import Glibc
#endif

/// A fixed pool of packet slots allocated once (each holds one datagram plus SRTP trailer room),
/// handed out and returned by index: packets wait in the pacer as slot numbers, not copies.
public final class PacketArena {
    public static let slotSize = PacketBatch.slotSize
    public let capacity: Int
    @usableFromInline let storage: UnsafeMutableRawPointer
    /// The free slots, a stack (plain storage: an array checked its uniqueness on every push and
    /// pop, two per packet — by perf ~1 % of a replay fleet's CPU).
    let free: UnsafeMutablePointer<Int32>
    var freeCount: Int
    /// Length of the packet in each slot (plain storage: no copy-on-write check per write).
    public let lengths: UnsafeMutablePointer<Int32>

    public init(capacity: Int) {
        self.capacity = capacity
        // Zeroed by calloc, which takes fresh pages from the kernel already zero instead of
        // writing them: with the LIFO free list the pages of slots never used are never touched
        // (a fleet bot's arena, a dozen packets in flight, costs a few pages, not the 850 KB that
        // zero-filling it made resident).
        storage = calloc(capacity, Self.slotSize)!
        free = .allocate(capacity: capacity)
        for k in 0..<capacity { (free + k).initialize(to: Int32(capacity - 1 - k)) }
        freeCount = capacity
        lengths = .allocate(capacity: capacity)
        lengths.initialize(repeating: 0, count: capacity)
    }

    deinit {
        Glibc.free(storage)
        lengths.deallocate()
        free.deallocate()
    }

    public var available: Int { freeCount }

    /// A free slot, or nil when all are in use.
    @inline(__always)
    public func allocate() -> Int? {
        guard freeCount > 0 else { return nil }
        freeCount -= 1
        return Int(free[freeCount])
    }

    /// Gives a slot back. A slot given back twice is a bug of the caller's: caught in debug
    /// builds; in release the stack never grows past the arena.
    @inline(__always)
    public func release(_ i: Int) {
        assert(freeCount < capacity, "a slot given back twice")
        guard freeCount < capacity else { return }
        free[freeCount] = Int32(i)
        freeCount += 1
    }

    @inlinable @inline(__always)
    public func pointer(_ i: Int) -> UnsafeMutableRawPointer { storage + i * Self.slotSize }
}
