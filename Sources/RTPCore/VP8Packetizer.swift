/// Splits one VP8 frame into RTP payloads of about equal size (`PayloadSplit`: one UDP GSO run a
/// frame), as a pull iterator writing into caller storage: no allocation.
///
/// Usage: create per frame, then call `next(frame:into:)` until it returns nil; each call writes
/// the descriptor and the payload slice and returns whether this is the frame's last packet
/// (the RTP marker bit).
public struct VP8Packetizer {
    @usableFromInline let split: PayloadSplit
    @inlinable public var packetCount: Int { split.count }
    @usableFromInline var _index = 0
    @inlinable public var index: Int { _index }
    /// The descriptor's bytes, encoded once per frame (little-endian, up to 6 bytes), with S
    /// clear; the first packet's copy has S set.
    @usableFromInline let descriptorBytes: UInt64
    @usableFromInline let descriptorSize: Int
    @usableFromInline let frameSize: Int
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
        split = PayloadSplit(frameSize, into: max(1, (frameSize + room - 1) / room))
    }

    /// Writes the next packet's descriptor and payload. Returns its marker bit, or nil when done.
    @inlinable @inline(__always)
    public mutating func next(frame: Span<UInt8>, into w: inout ByteWriter) throws(RTPWriteError) -> Bool? {
        guard _index < packetCount else { return nil }
        // Sizes and offsets are bounded by the frame's size, an Int of real memory: the wrapping
        // operators only drop overflow checks that cannot fire.
        let size = split.size(of: _index)
        try w.require(descriptorSize &+ size)
        // S (0x10 in the first byte) on the frame's first packet only.
        w.packed(_index == 0 ? descriptorBytes | 0x10 : descriptorBytes, count: descriptorSize)
        w.copy(frame, from: offset, count: size)
        offset &+= size
        _index &+= 1
        return _index == packetCount
    }
}
