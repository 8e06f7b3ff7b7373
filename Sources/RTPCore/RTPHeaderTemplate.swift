/// A stream's RTP header prebuilt once (fixed header + MID/RID + slots for the transport-wide
/// sequence number and abs-send-time), so sending a packet is one copy plus a few patched bytes.
///
/// The one-byte extension form is used when every id ≤ 14 and every value ≤ 16 bytes, otherwise
/// the two-byte form (RFC 8285 §4.3).
public struct RTPHeaderTemplate: Sendable {
    public let payloadType: UInt8
    public let ssrc: UInt32
    /// The prebuilt header bytes (sequence number, timestamp and marker are placeholders).
    public let bytes: [UInt8]
    /// Offset of the 2-byte transport-wide sequence number inside `bytes`, if present.
    public let transportSequenceOffset: Int?
    /// Offset of the 3-byte abs-send-time inside `bytes`, if present.
    public let absSendTimeOffset: Int?
    /// Two-byte extension form (RFC 8285 §4.3): elements of up to 255 bytes may be appended per
    /// packet (`appendElement`), as the Dependency Descriptor's structure needs.
    public let twoByte: Bool
    /// Offset of the extension block's length (in 32-bit words) inside `bytes`, if it has one.
    public let extensionLengthOffset: Int?

    public var size: Int { bytes.count }
    /// The first 32 bytes again as four words, so a header that fits is written with four
    /// stores instead of a memcpy call (most do: 12 + MID/RID/transport-cc/abs-send-time ≤ 32).
    @usableFromInline let words: (UInt64, UInt64, UInt64, UInt64)
    @usableFromInline let headerSize: Int

    /// - Parameters:
    ///   - strings: string-valued extensions (MID, RID, repaired RID) as (id, value).
    ///   - transportSequence/absSendTime: whether to reserve those slots.
    ///   - transportSequenceID/absSendTimeID: their IDs (what the answer negotiated; RFC 8285 §5).
    ///   - twoByte: the two-byte form and an extension block whatever the elements (for
    ///     elements appended per packet; needs `a=extmap-allow-mixed`, RFC 8285 §6).
    public init(
        payloadType: UInt8, ssrc: UInt32, strings: [(UInt8, String)] = [],
        transportSequence: Bool = false, absSendTime: Bool = false,
        transportSequenceID: UInt8 = RTPExtension.transportSequenceNumber.id, absSendTimeID: UInt8 = RTPExtension.absSendTime.id,
        twoByte: Bool = false
    ) {
        self.payloadType = payloadType
        self.ssrc = ssrc
        var elements: [(UInt8, [UInt8])] = []
        // Slots first: elements 0 and 1 are abs-send-time and transport-cc when present.
        if absSendTime { elements.append((absSendTimeID, [0, 0, 0])) }
        if transportSequence { elements.append((transportSequenceID, [0, 0])) }
        for (id, s) in strings { elements.append((id, Array(s.utf8))) }
        let oneByte = !twoByte && elements.allSatisfy { $0.0 >= 1 && $0.0 <= 14 && !$0.1.isEmpty && $0.1.count <= 16 }
        let block = twoByte || !elements.isEmpty
        var out: [UInt8] = [block ? 0x90 : 0x80, payloadType & 0x7F, 0, 0, 0, 0, 0, 0]
        out += [
            UInt8(ssrc >> 24), UInt8(truncatingIfNeeded: ssrc >> 16), UInt8(truncatingIfNeeded: ssrc >> 8), UInt8(truncatingIfNeeded: ssrc)
        ]
        var tw: Int?, abs: Int?, lengthOffset: Int?
        if block {
            let profile: UInt16 = oneByte ? 0xBEDE : 0x1000
            out += [UInt8(profile >> 8), UInt8(profile & 0xFF), 0, 0]
            let blockStart = out.count
            lengthOffset = blockStart - 2
            for (k, (id, value)) in elements.enumerated() {
                if oneByte { out.append(id << 4 | UInt8(value.count - 1)) } else { out += [id, UInt8(value.count)] }
                if absSendTime && k == 0 { abs = out.count }
                if transportSequence && k == (absSendTime ? 1 : 0) { tw = out.count }
                out += value
            }
            while (out.count - blockStart) % 4 != 0 { out.append(0) }
            let words = (out.count - blockStart) / 4
            out[blockStart - 2] = UInt8(words >> 8)
            out[blockStart - 1] = UInt8(words & 0xFF)
        }
        bytes = out
        headerSize = out.count
        var padded = out + [UInt8](repeating: 0, count: max(0, 32 - out.count))
        var w: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &w) { dst in
            padded.withUnsafeMutableBytes { dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(32))) }
        }
        words = w
        transportSequenceOffset = tw
        absSendTimeOffset = abs
        self.twoByte = !oneByte && block
        extensionLengthOffset = lengthOffset
    }

    /// Appends one two-byte-form element (`id`, then `head` and `tail` as its value) to the
    /// extension block of the header just written at `start`, pads the block to a word and
    /// updates its length. Nothing is written unless the template is two-byte and the value is
    /// 1–255 bytes.
    public func appendElement(
        id: UInt8, head: Span<UInt8>, tail: Span<UInt8>, to w: inout ByteWriter, headerStart start: Int
    ) throws(RTPWriteError) {
        let n = head.count + tail.count
        guard twoByte, let lengthOffset = extensionLengthOffset, (1...255).contains(n) else { return }
        let size = (2 + n + 3) / 4 * 4
        try w.require(size)
        w.u8(id)
        w.u8(UInt8(n))
        w.copy(head, 0..<head.count)
        w.copy(tail, 0..<tail.count)
        w.zeros(size - 2 - n)
        appendedWords(size / 4, to: &w, headerStart: start, lengthOffset: lengthOffset)
    }

    /// Appends elements already in the two-byte form and padded to a word (what `appendElement`
    /// wrote into another packet: a retransmission carries its original's).
    public func appendRaw(_ elements: UnsafeRawBufferPointer, to w: inout ByteWriter, headerStart start: Int) throws(RTPWriteError) {
        guard twoByte, let lengthOffset = extensionLengthOffset, !elements.isEmpty, elements.count % 4 == 0 else { return }
        try w.require(elements.count)
        w.copy(elements)
        appendedWords(elements.count / 4, to: &w, headerStart: start, lengthOffset: lengthOffset)
    }

    func appendedWords(_ words: Int, to w: inout ByteWriter, headerStart start: Int, lengthOffset: Int) {
        let old =
            Int(w.base.load(fromByteOffset: start + lengthOffset, as: UInt8.self)) << 8
            | Int(w.base.load(fromByteOffset: start + lengthOffset + 1, as: UInt8.self))
        w.patch16(at: start + lengthOffset, UInt16(old + words))
    }

    /// Writes the header for one packet. Returns nothing; slot offsets are relative to the
    /// writer position where the header started (`start`).
    @inlinable
    public func write(to w: inout ByteWriter, sequenceNumber: UInt16, timestamp: UInt32, marker: Bool) throws(RTPWriteError) {
        try w.require(headerSize)
        let start = w.count
        if headerSize <= 32 && w.remaining >= 32 {
            w.words(words, count: headerSize)
        } else {
            bytes.withUnsafeBytes { w.copy($0) }
        }
        w.patch8(at: start + 1, marker ? (payloadType | 0x80) : payloadType)
        w.patch16(at: start + 2, sequenceNumber)
        w.patch16(at: start + 4, UInt16(truncatingIfNeeded: timestamp >> 16))
        w.patch16(at: start + 6, UInt16(truncatingIfNeeded: timestamp))
    }
}

extension RTPHeaderTemplate {
    /// A header of at most 32 bytes as plain values: what a loop keeps that must not retain the
    /// template's array per use.
    public struct Words: Sendable {
        @usableFromInline let words: (UInt64, UInt64, UInt64, UInt64)
        @usableFromInline let size: Int
        @usableFromInline let payloadType: UInt8

        /// Writes the header for one packet, as `RTPHeaderTemplate.write`.
        @inlinable @inline(__always)
        public func write(to w: inout ByteWriter, sequenceNumber: UInt16, timestamp: UInt32, marker: Bool) throws(RTPWriteError) {
            try w.require(32)
            let start = w.count
            w.words(words, count: size)
            w.patch8(at: start + 1, marker ? (payloadType | 0x80) : payloadType)
            w.patch16(at: start + 2, sequenceNumber)
            w.patch16(at: start + 4, UInt16(truncatingIfNeeded: timestamp >> 16))
            w.patch16(at: start + 6, UInt16(truncatingIfNeeded: timestamp))
        }
    }

    /// The header as `Words`, or nil when it is longer than 32 bytes.
    public var plainWords: Words? { headerSize <= 32 ? Words(words: words, size: headerSize, payloadType: payloadType) : nil }
}

/// Patching send-time fields into an already-written packet (done by the sender at send time).
public enum RTPHeaderPatch {
    @inlinable
    public static func setTransportSequence(_ packet: UnsafeMutableRawPointer, offset: Int, _ v: UInt16) {
        packet.storeBytes(of: v.bigEndian, toByteOffset: offset, as: UInt16.self)
    }

    @inlinable
    public static func setAbsSendTime(_ packet: UnsafeMutableRawPointer, offset: Int, _ v: UInt32) {
        packet.storeBytes(of: UInt8(truncatingIfNeeded: v >> 16), toByteOffset: offset, as: UInt8.self)
        packet.storeBytes(of: UInt8(truncatingIfNeeded: v >> 8), toByteOffset: offset + 1, as: UInt8.self)
        packet.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: offset + 2, as: UInt8.self)
    }
}
