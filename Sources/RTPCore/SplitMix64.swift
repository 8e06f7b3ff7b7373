/// The one seeded generator (SplitMix64, Steele, Lea and Flood, "Fast splittable pseudorandom
/// number generators", OOPSLA 2014): small, fast, and the same sequence for the same seed on
/// every machine — what the synthetic media, the link emulator, the simulations and the fuzz
/// tests draw from.
/// Inlinable: the synthetic picture draws from it per pixel block, the link emulator per packet.
@frozen public struct SplitMix64: RandomNumberGenerator, Sendable {
    @usableFromInline var state: UInt64
    @inlinable public init(seed: UInt64) { state = seed }
    @inlinable public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// A uniform value in [0, 1) from the top 53 bits.
    @inlinable public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
