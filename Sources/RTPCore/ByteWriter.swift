/// A cursor over caller-owned storage: the one audited place where wire bytes are written.
///
/// Serializers compute their size, check it against `remaining` and throw
/// `RTPWriteError.bufferTooSmall` before writing; the individual writes then only assert.
public struct ByteWriter {
    public let base: UnsafeMutableRawPointer
    public let capacity: Int
    @usableFromInline var _count: Int = 0
    @inlinable public var count: Int { _count }

    @inlinable
    public init(_ buffer: UnsafeMutableRawBufferPointer) {
        base = buffer.baseAddress ?? UnsafeMutableRawPointer(bitPattern: 0x10)!
        capacity = buffer.count
    }

    /// `count` never passes `capacity` (every write is checked or asserted first), and both are
    /// sizes of real memory: their difference cannot overflow, so it is taken without the check.
    @inlinable public var remaining: Int { capacity &- _count }

    /// Throws unless `n` more bytes fit.
    @inlinable
    public func require(_ n: Int) throws(RTPWriteError) {
        if n > capacity &- _count { throw .bufferTooSmall(needed: count &+ n, available: capacity) }
    }

    @inlinable @inline(__always)
    public mutating func u8(_ v: UInt8) {
        assert(count < capacity)
        base.storeBytes(of: v, toByteOffset: count, as: UInt8.self)
        _count &+= 1
    }

    @inlinable @inline(__always)
    public mutating func u16(_ v: UInt16) {
        assert(count + 2 <= capacity)
        base.storeBytes(of: v.bigEndian, toByteOffset: count, as: UInt16.self)
        _count &+= 2
    }

    @inlinable @inline(__always)
    mutating func u24(_ v: UInt32) {
        u8(UInt8(truncatingIfNeeded: v >> 16)); u8(UInt8(truncatingIfNeeded: v >> 8)); u8(UInt8(truncatingIfNeeded: v))
    }

    @inlinable @inline(__always)
    public mutating func u32(_ v: UInt32) {
        assert(count + 4 <= capacity)
        base.storeBytes(of: v.bigEndian, toByteOffset: count, as: UInt32.self)
        _count &+= 4
    }

    @inlinable @inline(__always)
    mutating func u64(_ v: UInt64) { u32(UInt32(truncatingIfNeeded: v >> 32)); u32(UInt32(truncatingIfNeeded: v)) }

    /// Writes the first `count` (≤ 8) bytes of `v` as laid out in memory (little-endian):
    /// one 8-byte store when there is room, else byte by byte.
    @inlinable @inline(__always)
    public mutating func packed(_ v: UInt64, count n: Int) {
        assert(n <= 8 && count + n <= capacity)
        if capacity &- _count >= 8 {
            base.storeBytes(of: v.littleEndian, toByteOffset: count, as: UInt64.self)
        } else {
            for i in 0..<n { base.storeBytes(of: UInt8(truncatingIfNeeded: v >> (8 * UInt64(i))), toByteOffset: count + i, as: UInt8.self) }
        }
        _count &+= n
    }

    /// Writes 32 bytes from four words (as laid out in memory) and advances by `count` (≤ 32);
    /// the caller guarantees 32 bytes of room.
    @inlinable @inline(__always)
    public mutating func words(_ v: (UInt64, UInt64, UInt64, UInt64), count n: Int) {
        assert(n <= 32 && capacity - count >= 32)
        let p = base + count
        p.storeBytes(of: v.0, as: UInt64.self)
        p.storeBytes(of: v.1, toByteOffset: 8, as: UInt64.self)
        p.storeBytes(of: v.2, toByteOffset: 16, as: UInt64.self)
        p.storeBytes(of: v.3, toByteOffset: 24, as: UInt64.self)
        _count &+= n
    }

    /// Copies `span[range]` in (one memcpy).
    @inlinable @inline(__always)
    public mutating func copy(_ span: Span<UInt8>, _ range: Range<Int>) {
        assert(count + range.count <= capacity)
        let dst = base + count
        span.withUnsafeBufferPointer { src in
            dst.copyMemory(from: src.baseAddress! + range.lowerBound, byteCount: range.count)
        }
        _count &+= range.count
    }

    /// Copies `count` bytes of `span` from `offset` in (one memcpy); the caller keeps them
    /// inside the span.
    @inlinable @inline(__always)
    public mutating func copy(_ span: Span<UInt8>, from offset: Int, count n: Int) {
        assert(count + n <= capacity && offset >= 0 && n >= 0 && offset + n <= span.count)
        let dst = base + count
        span.withUnsafeBufferPointer { src in dst.copyMemory(from: src.baseAddress! + offset, byteCount: n) }
        _count &+= n
    }

    /// Copies raw bytes in.
    @inlinable @inline(__always)
    public mutating func copy(_ bytes: UnsafeRawBufferPointer) {
        assert(count + bytes.count <= capacity)
        if let src = bytes.baseAddress { (base + count).copyMemory(from: src, byteCount: bytes.count) }
        _count &+= bytes.count
    }

    @inlinable
    public mutating func zeros(_ n: Int) {
        assert(count + n <= capacity)
        (base + count).initializeMemory(as: UInt8.self, repeating: 0, count: n)
        _count &+= n
    }

    /// Overwrites a big-endian 16-bit value at an absolute offset already written.
    @inlinable @inline(__always)
    func patch16(at offset: Int, _ v: UInt16) {
        base.storeBytes(of: v.bigEndian, toByteOffset: offset, as: UInt16.self)
    }

    @inlinable @inline(__always)
    func patch8(at offset: Int, _ v: UInt8) { base.storeBytes(of: v, toByteOffset: offset, as: UInt8.self) }

    /// Sets `bits` in the byte at an absolute offset already written (a flag known only later:
    /// a marker, a descriptor's end of frame).
    @inlinable @inline(__always)
    public func setBits(at offset: Int, _ bits: UInt8) {
        base.storeBytes(of: base.load(fromByteOffset: offset, as: UInt8.self) | bits, toByteOffset: offset, as: UInt8.self)
    }
}

extension Array where Element == UInt8 {
    /// Runs `body` with a writer over a fresh buffer of `capacity` bytes and returns the bytes written.
    /// For tests and cold paths (RTCP, SDP); the send path writes into arena slots instead.
    public static func writing(capacity: Int, _ body: (inout ByteWriter) throws(RTPWriteError) -> Void) throws(RTPWriteError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: capacity)
        var written = 0
        var failure: RTPWriteError?
        out.withUnsafeMutableBytes { raw in
            var w = ByteWriter(raw)
            do throws(RTPWriteError) { try body(&w) } catch { failure = error }
            written = w.count
        }
        if let failure { throw failure }
        out.removeSubrange(written...)
        return out
    }
}
