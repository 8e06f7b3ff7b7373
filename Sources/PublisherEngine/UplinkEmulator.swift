public import Impairment
import Net
import Transport

/// The emulated uplink of a publisher that sends to a real server (`--impair` with `--whip`):
/// every datagram the session hands the socket goes through a `LinkEmulator` first — lost, or
/// held until the emulated link would deliver it — after the pacer and before the socket, as a
/// tbf qdisc on the sending host would. What it dropped is counted here, apart from what the
/// network lost after it (the server's feedback counts both).
public final class UplinkEmulator {
    var link: LinkEmulator
    /// Datagrams held until `due`, in order (the emulator never reorders). Their buffers are
    /// reused: `held` grows to the deepest queue once, then nothing is allocated per packet.
    var held: [Held] = []
    var head = 0
    var spare: [[UInt8]] = []

    struct Held {
        var bytes: [UInt8]
        var count: Int
        var destination: SocketAddress
        var source: SocketAddress?
        var due: Int64
    }

    public init(schedule: ImpairmentSchedule, seed: UInt64, startMicros: Int64) {
        link = LinkEmulator(schedule: schedule, seed: seed, startMicros: startMicros)
    }

    public var counters: LinkEmulator.Counters { link.counters }

    /// When the next held datagram is due (nil: none held).
    public var nextDue: Int64? { head < held.count ? held[head].due : nil }

    /// Offers `count` datagrams to the emulated link at `now`: each is dropped (counted) or held.
    func admit(
        pointers: UnsafePointer<UnsafeMutableRawPointer?>, lengths: UnsafePointer<UInt32>, count: Int, to destination: SocketAddress,
        from source: SocketAddress? = nil, now: Int64
    ) {
        for i in 0..<count {
            let n = Int(lengths[i])
            guard let due = link.admit(size: n, now: now), let p = pointers[i] else { continue }
            var bytes = spare.popLast() ?? []
            if bytes.count < n { bytes = [UInt8](repeating: 0, count: max(n, 1500)) }
            bytes.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: p, byteCount: n) }
            held.append(Held(bytes: bytes, count: n, destination: destination, source: source, due: due))
        }
    }

    /// Hands every datagram due by `now` to `send`, oldest first; one `send` refuses (a full
    /// socket buffer) and the rest wait for the next call.
    func release(now: Int64, send: (UnsafeRawBufferPointer, SocketAddress, SocketAddress?) -> Bool) {
        while head < held.count, held[head].due <= now {
            let h = held[head]
            let sent = h.bytes.withUnsafeBytes { send(UnsafeRawBufferPointer(rebasing: $0[0..<h.count]), h.destination, h.source) }
            guard sent else { return }
            spare.append(h.bytes)
            held[head].bytes = []
            head += 1
        }
        if head == held.count {
            held.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 256 && head * 2 > held.count {
            held.removeFirst(head)
            head = 0
        }
    }
}
