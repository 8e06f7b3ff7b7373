/// Big-endian reads over a byte span; callers check bounds first (every parser does, once).
extension Span where Element == UInt8 {
    @inlinable @inline(__always)
    package func be16(_ i: Int) -> UInt16 { UInt16(self[i]) &<< 8 | UInt16(self[i + 1]) }

    @inlinable @inline(__always)
    package func be24(_ i: Int) -> UInt32 { UInt32(self[i]) &<< 16 | UInt32(self[i + 1]) &<< 8 | UInt32(self[i + 2]) }

    @inlinable @inline(__always)
    package func be32(_ i: Int) -> UInt32 {
        UInt32(self[i]) &<< 24 | UInt32(self[i + 1]) &<< 16 | UInt32(self[i + 2]) &<< 8 | UInt32(self[i + 3])
    }

    @inlinable @inline(__always)
    package func be64(_ i: Int) -> UInt64 { UInt64(be32(i)) &<< 32 | UInt64(be32(i + 4)) }

    /// Copies a sub-range out as an array (receive side only, never on the send path).
    /// One bounds check and one memcpy (appending byte by byte was the receiver's second
    /// largest cost at 500 publishers).
    package func copyBytes(_ range: Range<Int>) -> [UInt8] {
        precondition(range.lowerBound >= 0 && range.upperBound <= count)
        return withUnsafeBufferPointer { Array(UnsafeBufferPointer(rebasing: $0[range])) }
    }
}
