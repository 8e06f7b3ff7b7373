/// The ICE module's random numbers (xorshift64, seeded by the caller so runs can be replayed):
/// transaction IDs (RFC 8489 §6: 96 bits, chosen at random) and timer jitter. Not for secrets.
struct ICERandom {
    var state: UInt64

    init(seed: UInt64) { state = seed | 1 }

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }

    /// 12 random bytes.
    mutating func transactionID() -> [UInt8] {
        let a = next(), b = next()
        return (0..<8).map { UInt8(truncatingIfNeeded: a >> (8 * $0)) } + (0..<4).map { UInt8(truncatingIfNeeded: b >> (8 * $0)) }
    }
}
