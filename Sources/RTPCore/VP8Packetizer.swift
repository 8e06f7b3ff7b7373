/// Splits one VP8 frame into RTP payloads of about equal size (like libwebrtc's
/// `SplitAboutEqually`), as a pull iterator writing into caller storage: no allocation.
///
/// Usage: create per frame, then call `next(frame:into:)` until it returns nil; each call writes
/// the descriptor and the payload slice and returns whether this is the frame's last packet
/// (the RTP marker bit).
public struct VP8Packetizer {
    public let packetCount: Int
    @usableFromInline var _index = 0
    @inlinable public var index: Int { _index }
    @usableFromInline var descriptor: VP8PayloadDescriptor
    @usableFromInline let frameSize: Int
    @usableFromInline let baseSize: Int
    @usableFromInline let largerFrom: Int
    @usableFromInline var offset = 0

    /// - Parameters:
    ///   - frameSize: encoded frame bytes.
    ///   - maxPayloadSize: room for descriptor + payload in one packet (MTU minus RTP header and SRTP tag).
    ///   - descriptor: the frame's descriptor; S is set on the first packet only.
    public init(frameSize: Int, maxPayloadSize: Int, descriptor: VP8PayloadDescriptor) throws(RTPWriteError) {
        let room = maxPayloadSize - descriptor.size
        guard room > 0 else { throw .bufferTooSmall(needed: descriptor.size + 1, available: maxPayloadSize) }
        self.frameSize = frameSize
        self.descriptor = descriptor
        let n = max(1, (frameSize + room - 1) / room)
        packetCount = n
        baseSize = frameSize / n
        // The last `frameSize % n` packets carry one byte more.
        largerFrom = n - frameSize % n
    }

    /// Payload bytes (after the descriptor) of packet `i`.
    @inlinable
    public func payloadSize(of i: Int) -> Int { baseSize + (i >= largerFrom ? 1 : 0) }

    /// Writes the next packet's descriptor and payload. Returns its marker bit, or nil when done.
    @inlinable
    public mutating func next(frame: Span<UInt8>, into w: inout ByteWriter) throws(RTPWriteError) -> Bool? {
        guard _index < packetCount else { return nil }
        let size = payloadSize(of: _index)
        descriptor.startOfPartition = _index == 0
        try w.require(descriptor.size + size)
        try descriptor.write(to: &w)
        w.copy(frame, offset..<(offset + size))
        offset += size
        _index += 1
        return _index == packetCount
    }
}
