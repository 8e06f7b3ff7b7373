import Testing
import RTPCore

/// Parses hex with spaces, newlines and `//` comments (annotated golden vectors).
func hex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    for line in text.split(separator: "\n") {
        let code = line.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        var nibble: UInt8?
        for c in code where c.isHexDigit {
            let v = UInt8(c.hexDigitValue!)
            if let n = nibble { out.append(n << 4 | v); nibble = nil } else { nibble = v }
        }
    }
    return out
}

/// Mutates a valid input: flips bits, truncates, extends, overwrites bytes.
func mutate(_ base: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
    var b = base
    switch rng.next() % 5 {
    case 0: if !b.isEmpty { let i = Int(rng.next() % UInt64(b.count)); b[i] ^= UInt8(1 << (rng.next() % 8)) }
    case 1: b = Array(b.prefix(Int(rng.next() % UInt64(b.count + 1))))
    case 2: for _ in 0..<Int(rng.next() % 8) { b.append(UInt8(truncatingIfNeeded: rng.next())) }
    case 3:
        if !b.isEmpty {
            for _ in 0..<Int(1 + rng.next() % 4) { b[Int(rng.next() % UInt64(b.count))] = UInt8(truncatingIfNeeded: rng.next()) }
        }
    default: b = (0..<Int(rng.next() % 64)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }
    return b
}

/// Parse → write → parse: the packets pubbot interprets come back identical (the round trip the
/// seeded fuzz tests assert for every input that parses).
/// Expects the round trip of `parsed` (from `input`) to hold; true when it did.
func expectRTCPRoundTrip(_ parsed: [RTCPPacket], input: [UInt8]) -> Bool {
    do {
        let (written, reparsed) = try rtcpRoundTrip(parsed)
        #expect(written == reparsed, "\(input)")
        return written == reparsed
    } catch {
        Issue.record("a parsed compound did not write back: \(error) \(input)")
        return false
    }
}

func rtcpRoundTrip(_ parsed: [RTCPPacket]) throws -> (written: [RTCPPacket], reparsed: [RTCPPacket]) {
    let known = parsed.filter { !$0.isUnknown }
    let bytes = try [UInt8].writing(capacity: 65_536) { w throws(RTPWriteError) in
        for p in known { try p.write(to: &w) }
    }
    var it = RTCPCompoundIterator()
    var again: [RTCPPacket] = []
    while let p = try it.next(in: bytes.span) { again.append(p) }
    // A NACK's meaning is the set of packets it asks for: the writer packs them in order, once.
    func normalized(_ p: RTCPPacket) -> RTCPPacket {
        guard case var .nack(n) = p else { return p }
        n.lost = Array(Set(n.lost)).sorted()
        return .nack(n)
    }
    return (known.map(normalized), again.map(normalized))
}
