import Net
import SRTP

/// Packets held back by the link emulator until their delivery time: a FIFO ring of
/// preallocated slots (the emulator never reorders, so delivery times only grow).
final class DelayLine {
    static let slotSize = 1536
    let capacity: Int
    let storage: UnsafeMutableRawPointer
    var lengths: [Int]
    var due: [Int64]
    /// Where each packet came from (the publisher it belongs to).
    var sources: [SocketAddress?]
    var head = 0
    var count = 0
    /// Packets that did not fit (the emulated queue is longer than the ring).
    var overflows = 0

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(byteCount: capacity * Self.slotSize, alignment: 16)
        lengths = Array(repeating: 0, count: capacity)
        due = Array(repeating: 0, count: capacity)
        sources = Array(repeating: nil, count: capacity)
    }

    deinit { storage.deallocate() }

    func push(_ bytes: UnsafeRawPointer, length: Int, due time: Int64, from source: SocketAddress?) {
        guard count < capacity, length <= Self.slotSize else { overflows += 1; return }
        let i = (head + count) % capacity
        (storage + i * Self.slotSize).copyMemory(from: bytes, byteCount: length)
        lengths[i] = length
        due[i] = time
        sources[i] = source
        count += 1
    }

    var nextDue: Int64? { count > 0 ? due[head] : nil }

    /// The oldest packet if it is due, with its due time; its bytes stay valid until the next `push`.
    func popDue(now: Int64) -> (UnsafeMutableRawPointer, Int, SocketAddress?, Int64)? {
        guard count > 0, due[head] <= now else { return nil }
        let out = (storage + head * Self.slotSize, lengths[head], sources[head], due[head])
        head = (head + 1) % capacity
        count -= 1
        return out
    }
}
