import Testing
@testable import PublisherEngine
import Impairment
import Net

/// The emulated uplink in front of the socket (`--impair` toward a real server), in virtual time:
/// datagrams leave in order at the emulated link's pace, the bytes unchanged, what a full socket
/// refused stays for the next call, and the drops are counted.
@Suite struct UplinkEmulatorTests {
    /// Offers `sizes` at `now`, each datagram's bytes all its own index.
    func offer(_ u: UplinkEmulator, sizes: [Int], first: Int = 0, now: Int64, to: SocketAddress) {
        let block = UnsafeMutableRawPointer.allocate(byteCount: sizes.reduce(0, +) + 1, alignment: 8)
        defer { block.deallocate() }
        var pointers: [UnsafeMutableRawPointer?] = []
        var at = 0
        for (i, n) in sizes.enumerated() {
            block.advanced(by: at).initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: first + i), count: n)
            pointers.append(block.advanced(by: at))
            at += n
        }
        let lengths = sizes.map { UInt32($0) }
        pointers.withUnsafeBufferPointer { p in
            lengths.withUnsafeBufferPointer { l in
                u.admit(pointers: p.baseAddress!, lengths: l.baseAddress!, count: sizes.count, to: to, now: now)
            }
        }
    }

    @Test func aRateCapPacesDatagramsInOrderWithTheirBytes() throws {
        let to = try SocketAddress(host: "127.0.0.1", port: 9)
        // 1 Mbit/s: a 97-byte datagram (125 bytes with IP and UDP) takes 1 ms on the link.
        let u = UplinkEmulator(schedule: try ImpairmentSchedule.parse("rate=1mbit"), seed: 1, startMicros: 0)
        offer(u, sizes: Array(repeating: 97, count: 10), now: 0, to: to)
        #expect(u.nextDue == 1_000)
        var got: [(Int64, UInt8, Int)] = []
        var now: Int64 = 0
        while let due = u.nextDue, now < 100_000 {
            now = due
            u.release(now: now) { bytes, _, _ in
                #expect(bytes.allSatisfy { $0 == bytes[0] })
                got.append((now, bytes[0], bytes.count))
                return true
            }
        }
        #expect(got.map(\.1) == Array(0..<10))
        #expect(got.map(\.0) == (1...10).map { Int64($0) * 1_000 })
        #expect(got.allSatisfy { $0.2 == 97 })
        #expect(u.nextDue == nil && u.counters.delivered == 10 && u.counters.droppedByQueue == 0)
    }

    @Test func aRefusedSendKeepsTheRestForLater() throws {
        let to = try SocketAddress(host: "127.0.0.1", port: 9)
        let u = UplinkEmulator(schedule: try ImpairmentSchedule.parse("delay=10ms"), seed: 1, startMicros: 0)
        offer(u, sizes: [100, 200, 300], now: 0, to: to)
        var sent: [Int] = []
        u.release(now: 9_999) { b, _, _ in
            sent.append(b.count); return true
        }
        #expect(sent.isEmpty)
        // The socket takes one, then refuses: the other two wait, in order.
        u.release(now: 10_000) { b, _, _ in
            guard sent.isEmpty else { return false }
            sent.append(b.count)
            return true
        }
        #expect(sent == [100] && u.nextDue == 10_000)
        u.release(now: 11_000) { b, _, _ in
            sent.append(b.count); return true
        }
        #expect(sent == [100, 200, 300] && u.nextDue == nil)
    }

    @Test func lossAndAFullQueueAreCountedApart() throws {
        let to = try SocketAddress(host: "127.0.0.1", port: 9)
        let lossy = UplinkEmulator(schedule: try ImpairmentSchedule.parse("loss=10%"), seed: 7, startMicros: 0)
        for k in 0..<100 { offer(lossy, sizes: Array(repeating: 1000, count: 100), now: Int64(k) * 1_000, to: to) }
        let c = lossy.counters
        #expect(c.packets == 10_000 && c.delivered + c.droppedByLoss == 10_000 && c.droppedByQueue == 0)
        #expect((800...1200).contains(c.droppedByLoss), "\(c)")
        // 100 kbit/s with a 100 ms queue: of 100 kB offered at once, about 1.2 kB gets through.
        let narrow = UplinkEmulator(schedule: try ImpairmentSchedule.parse("rate=100kbit,queue=100ms"), seed: 7, startMicros: 0)
        offer(narrow, sizes: Array(repeating: 1000, count: 100), now: 0, to: to)
        #expect(narrow.counters.droppedByLoss == 0 && narrow.counters.delivered == 2 && narrow.counters.droppedByQueue == 98)
        #expect(narrow.counters.maxQueueMicros <= 100_000)
    }

    @Test func aScheduleChangesTheLinkInTime() throws {
        let to = try SocketAddress(host: "127.0.0.1", port: 9)
        // An outage from 1 s to 2 s (everything lost), a clean link around it.
        let u = UplinkEmulator(schedule: try ImpairmentSchedule.parse("1s:loss=100%;2s:loss=0%"), seed: 3, startMicros: 5_000_000)
        for ms in stride(from: 0, to: 3_000, by: 10) { offer(u, sizes: [500], now: 5_000_000 + Int64(ms) * 1_000, to: to) }
        #expect(u.counters.packets == 300 && u.counters.droppedByLoss == 100, "\(u.counters)")
    }
}
