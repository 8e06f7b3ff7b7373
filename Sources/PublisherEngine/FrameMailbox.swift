import Synchronization
import MediaCodecs
public import Transport
public import PublisherCore

/// Encoded media crossing from the media thread to the network thread: a bounded queue under a
/// Mutex plus an eventfd that wakes the network loop's poll.
public final class FrameMailbox: Sendable {
    public typealias Item = MediaFrame

    let queue = Mutex<[Item]>([])
    let dropped = Atomic<Int>(0)
    public let signal: EventSignal
    public let capacity: Int

    public init(capacity: Int = 256) throws(SocketError) {
        signal = try EventSignal()
        self.capacity = capacity
    }

    /// Frames dropped because the network loop fell behind by `capacity` items.
    public var droppedCount: Int { dropped.load(ordering: .relaxed) }

    public func push(_ item: Item) {
        let overflow = queue.withLock { q -> Bool in
            q.append(item)
            if q.count > capacity { q.removeFirst(); return true }
            return false
        }
        if overflow { dropped.add(1, ordering: .relaxed) }
        signal.signal()
    }

    /// Moves everything queued into `out` (which is emptied first).
    public func drain(into out: inout [Item]) {
        out.removeAll(keepingCapacity: true)
        queue.withLock { q in swap(&q, &out) }
    }
}
