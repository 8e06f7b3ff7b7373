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
        // Not zero-filled: a slot is written before it is read, and the free list is LIFO, so
        // the pages of slots never used are never touched (an arena of a fleet bot that keeps a
        // dozen packets in flight costs the kernel a few pages, not 850 KB of resident memory).
        storage = .allocate(byteCount: capacity * Self.slotSize, alignment: 64)
        free = (0..<Int32(capacity)).reversed()
        lengths = .allocate(capacity: capacity)
        lengths.initialize(repeating: 0, count: capacity)
    }

    deinit {
        storage.deallocate()
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
