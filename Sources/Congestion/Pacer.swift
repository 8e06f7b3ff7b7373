/// A leaky-bucket pacer (libwebrtc `pacing_controller.cc`): media leaves at the
/// pacing rate in short bursts (budget capped at 40 ms), audio first, then retransmissions, then
/// video; during a probe cluster it sends at the probe rate and pads when it has no media.
/// It queues packet ids (arena slot numbers in the engine); time passed in. Not generic, so the
/// send path runs specialized code with no allocation in any build.
public struct Pacer: Sendable {
    public typealias Packet = Int32

    public enum Priority: Int, Sendable { case audio = 0, retransmission = 1, video = 2 }

    public enum Decision: Sendable {
        /// Send this packet now (tag it with the probe cluster, if any).
        case send(Packet, probeCluster: Int?)
        /// Send padding of this many bytes now, for the probe cluster (nil: to hold the padding rate).
        case pad(bytes: Int, probeCluster: Int?)
        /// Nothing may leave before this time.
        case wait(until: Int64)
        /// Nothing to send.
        case idle
    }

    static var burstMicros: Int64 { 40_000 }
    /// Queued media older than this forces a faster drain (libwebrtc queue-time limit: 2 s).
    public static var maxQueueMicros: Int64 { 2_000_000 }
    /// Bytes of padding per padding packet (RTP padding is at most 255 bytes per packet).
    public var paddingPacketSize = 1_100

    /// One queue per priority, stored apart (in an array of rings each push and pop checked the
    /// array's and the ring's uniqueness: by perf ~1 % of a replay fleet's CPU).
    var audioQueue = Ring(), retransmissionQueue = Ring(), videoQueue = Ring()
    public private(set) var queuedBytes = 0
    /// Bits per second for media (normally 2.5 × the target).
    public var pacingRate: Int
    var budget = 0.0
    var last: Int64?
    var probe: ProbeCluster?
    var probeStart: Int64?
    /// When non-zero, the pacer fills the link up to this many bits per second with padding
    /// whenever it has no media to send (a network test measuring capacity, not an app-limited
    /// publisher). Every byte sent, media or padding, counts against it.
    public var paddingRate = 0
    var paddingBudget = 0.0

    public init(pacingRate: Int) { self.pacingRate = pacingRate }

    public private(set) var queuedPackets = 0
    public var isProbing: Bool { probe != nil }

    public mutating func enqueue(_ p: Packet, size: Int, priority: Priority) {
        switch priority {
        case .audio: audioQueue.append((p, size))
        case .retransmission: retransmissionQueue.append((p, size))
        case .video: videoQueue.append((p, size))
        }
        queuedBytes += size
        queuedPackets += 1
    }

    /// Starts a probe cluster (ignored while one is running).
    public mutating func startProbe(_ cluster: ProbeCluster) { if probe == nil { probe = cluster } }

    var effectiveRate: Double {
        let drain = Double(queuedBytes) * 8 * 1e6 / Double(Self.maxQueueMicros)
        return max(Double(probe?.bitrate ?? 0), Double(pacingRate), drain)
    }

    public mutating func next(now: Int64) -> Decision {
        let rate = effectiveRate
        if let l = last {
            budget = min(budget + rate / 8 * Double(now - l) / 1e6, rate / 8 * Double(Self.burstMicros) / 1e6)
            let pr = Double(paddingRate)
            // Debt from media above the padding rate is forgiven after 200 ms.
            paddingBudget = max(min(paddingBudget + pr / 8 * Double(now - l) / 1e6, pr / 8 * Double(Self.burstMicros) / 1e6), -pr / 8 * 0.2)
        }
        last = now
        // Audio is never held back by the budget (it is small and latency-critical).
        if let (p, size) = audioQueue.popFirst() {
            queuedBytes -= size; queuedPackets -= 1; budget -= Double(size); paddingBudget -= Double(size)
            return .send(p, probeCluster: nil)
        }
        // A probe cluster is paced at exactly its rate, so the receiver sees that rate.
        if let c = probe {
            let start = probeStart ?? now
            probeStart = start
            let due = start + Int64(Double(c.sentBytes) * 8e6 / Double(max(c.bitrate, 1)))
            if now < due { return .wait(until: due) }
            if let (p, size) = popMedia() {
                queuedBytes -= size
                queuedPackets -= 1
                paddingBudget -= Double(size)
                return .send(p, probeCluster: tagProbe(size))
            }
            _ = tagProbe(paddingPacketSize)
            paddingBudget -= Double(paddingPacketSize)
            return .pad(bytes: paddingPacketSize, probeCluster: c.id)
        }
        if budget <= 0 {
            guard queuedPackets > 0 else { return padding(now: now) }
            return .wait(until: now + max(1_000, Int64(-budget * 8 * 1e6 / max(rate, 1)) + 1))
        }
        if let (p, size) = popMedia() {
            queuedBytes -= size
            queuedPackets -= 1
            budget -= Double(size)
            paddingBudget -= Double(size)
            let id = tagProbe(size)
            return .send(p, probeCluster: id)
        }
        return padding(now: now)
    }

    /// The next retransmission, else the next video packet.
    mutating func popMedia() -> (Int32, Int)? {
        if let e = retransmissionQueue.popFirst() { return e }
        return videoQueue.popFirst()
    }

    /// Nothing queued: pad up to `paddingRate`, or say when padding is next due.
    mutating func padding(now: Int64) -> Decision {
        guard paddingRate > 0 else { return .idle }
        let size = Double(paddingPacketSize)
        if paddingBudget >= size {
            paddingBudget -= size
            return .pad(bytes: paddingPacketSize, probeCluster: nil)
        }
        return .wait(until: now + max(1_000, Int64((size - paddingBudget) * 8 * 1e6 / Double(paddingRate)) + 1))
    }

    mutating func tagProbe(_ size: Int) -> Int? {
        guard var c = probe else { return nil }
        c.sentPackets += 1
        c.sentBytes += size
        if c.isComplete { probe = nil; probeStart = nil; budget = 0 } else { probe = c }
        return c.id
    }
}

/// A growable FIFO of (packet id, size) without O(n) removal at the front.
struct Ring: Sendable {
    /// Each entry's packet id in the high half and its size in the low (one array: one
    /// uniqueness check per push and pop, not two).
    var entries: [UInt64] = []
    var head = 0
    var count: Int { entries.count - head }

    mutating func append(_ e: (Int32, Int)) {
        entries.append(UInt64(UInt32(bitPattern: e.0)) << 32 | UInt64(UInt32(truncatingIfNeeded: e.1)))
    }

    mutating func popFirst() -> (Int32, Int)? {
        guard head < entries.count else { return nil }
        let v = entries[head]
        let e = (Int32(bitPattern: UInt32(truncatingIfNeeded: v >> 32)), Int(UInt32(truncatingIfNeeded: v)))
        head += 1
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
        return e
    }
}
