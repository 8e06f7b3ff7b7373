/// Splits one VP8 frame into RTP payloads of about equal size (as libwebrtc's
/// `SplitAboutEqually` does), as a pull iterator writing into caller storage: no allocation.
///
/// Every packet but the last carries the same payload and the last at most `packetCount - 1`
/// bytes less (libwebrtc makes its last packets one byte larger instead): a frame's packets are
/// then one run for UDP GSO, whose segments must all have one size but the last, which may be
/// shorter (Linux `udp(7)`, UDP_SEGMENT) — one message a frame, not one per size.
///
/// Usage: create per frame, then call `next(frame:into:)` until it returns nil; each call writes
/// the descriptor and the payload slice and returns whether this is the frame's last packet
/// (the RTP marker bit).
public struct VP8Packetizer {
    public let packetCount: Int
    @usableFromInline var _index = 0
    @inlinable public var index: Int { _index }
    /// The descriptor's bytes, encoded once per frame (little-endian, up to 6 bytes), with S
    /// clear; the first packet's copy has S set.
    @usableFromInline let descriptorBytes: UInt64
    @usableFromInline let descriptorSize: Int
    @usableFromInline let frameSize: Int
    @usableFromInline let baseSize: Int
    @usableFromInline let largerUntil: Int
    @usableFromInline let lastSize: Int
    @usableFromInline var offset = 0

    /// - Parameters:
    ///   - frameSize: encoded frame bytes.
    ///   - maxPayloadSize: room for descriptor + payload in one packet (MTU minus RTP header and SRTP tag).
    ///   - descriptor: the frame's descriptor; S is set on the first packet only.
    @inlinable
    public init(frameSize: Int, maxPayloadSize: Int, descriptor: VP8PayloadDescriptor) throws(RTPWriteError) {
        var d = descriptor
        d.startOfPartition = false
        let (packed, size) = d.packed
        let room = maxPayloadSize - size
        guard room > 0 else { throw .bufferTooSmall(needed: size + 1, available: maxPayloadSize) }
        self.frameSize = frameSize
        descriptorBytes = packed
        descriptorSize = size
        let n = max(1, (frameSize + room - 1) / room)
        packetCount = n
        (baseSize, largerUntil, lastSize) = splitForGSO(frameSize, into: n)
    }

    /// Payload bytes (after the descriptor) of packet `i`.
    @inlinable
    func payloadSize(of i: Int) -> Int { i == packetCount &- 1 ? lastSize : baseSize &+ (i < largerUntil ? 1 : 0) }

    /// Writes the next packet's descriptor and payload. Returns its marker bit, or nil when done.
    @inlinable @inline(__always)
    public mutating func next(frame: Span<UInt8>, into w: inout ByteWriter) throws(RTPWriteError) -> Bool? {
        guard _index < packetCount else { return nil }
        // Sizes and offsets are bounded by the frame's size, an Int of real memory: the wrapping
        // operators only drop overflow checks that cannot fire.
        let size = payloadSize(of: _index)
        try w.require(descriptorSize &+ size)
        // S (0x10 in the first byte) on the frame's first packet only.
        w.packed(_index == 0 ? descriptorBytes | 0x10 : descriptorBytes, count: descriptorSize)
        w.copy(frame, from: offset, count: size)
        offset &+= size
        _index &+= 1
        return _index == packetCount
    }
}

/// `total` bytes in `n` parts of about equal size, as (base, largerUntil, last): part `i < n - 1`
/// has `base + 1` bytes when `i < largerUntil` (else `base`), the last part `last`. Every part but
/// the last is `ceil(total / n)` and the last takes the rest (a UDP GSO run, see
/// `VP8Packetizer`); where that would leave the last part empty (a room of a few bytes), the
/// first `total % n` parts carry one byte more, the last `base`.
@inlinable
public func splitForGSO(_ total: Int, into n: Int) -> (base: Int, largerUntil: Int, last: Int) {
    guard n > 1 else { return (total, 0, total) }
    let full = (total + n - 1) / n
    let last = total - (n - 1) * full
    if last >= 1 { return (full - 1, n - 1, last) }
    return (total / n, total % n, total / n)
}
