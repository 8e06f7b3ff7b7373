import Testing
@testable import Receiver
import Net
import RTPCore

/// The receiver's per-packet helpers give what the sets and arrays they replaced gave.
@Suite struct ReceiverHotPathTests {
    @Test func theFrameIntervalWindowKeepsTheLastThirtyAndTheirMean() {
        var w = IntervalWindow()
        #expect(w.isEmpty)
        var all: [Int64] = []
        var rng = SplitMix64(seed: 7)
        for n in 1...100 {
            let v = Int64(rng.next() % 200_000)
            w.append(v)
            all.append(v)
            let last = all.suffix(30)
            #expect(w.count == min(n, 30))
            #expect(w.sum == last.reduce(0, +))
            #expect(abs(w.mean - Double(last.reduce(0, +)) / Double(last.count)) < 1e-9)
        }
    }

    @Test func payloadTypeMasksHoldExactlyTheirSets() {
        var rng = SplitMix64(seed: 11)
        for _ in 0..<200 {
            var set = Set<UInt8>()
            for _ in 0..<Int(rng.next() % 12) { set.insert(UInt8(truncatingIfNeeded: rng.next())) }
            let mask = PayloadKinds.Mask(set)
            for t in 0...255 {
                let t = UInt8(t)
                // A payload type is 7 bits (RFC 3550 §5.1): nothing above 127 is ever in a mask.
                #expect(mask.contains(t) == (t < 128 && set.contains(t)), "type \(t) of \(set.sorted())")
            }
        }
    }

    @Test func addressesHashAndCompareByTheirBytes() throws {
        let a = try SocketAddress(host: "127.0.0.1", port: 5000)
        let b = try SocketAddress(host: "127.0.0.1", port: 5000)
        let c = try SocketAddress(host: "127.0.0.1", port: 5001)
        let d = try SocketAddress(host: "::1", port: 5000)
        let e = try SocketAddress(host: "::1", port: 5000)
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(d == e && d.hashValue == e.hashValue)
        #expect(a != c && a != d)
        let table = [a: 1, c: 2, d: 3]
        #expect(table[b] == 1 && table[e] == 3 && table[c] == 2)
        #expect(d.description == "[::1]:5000" && a.description == "127.0.0.1:5000")
    }
}
