/// AV1 over RTP: the AOM "RTP Payload Format for AV1" (v1.0.0, §4.4–§5).
///
/// A payload is one aggregation header byte, then OBU elements:
///
///     +-+-+-+-+-+-+-+-+
///     |Z|Y| W |N|-|-|-|   Z: the first element continues an OBU of the previous packet
///     +-+-+-+-+-+-+-+-+   Y: the last element continues in the next packet
///                         W: elements in the packet (0: each has a length; 1–3: all but the last)
///                         N: the first packet of a coded video sequence (a key frame)
///
/// Each element is an OBU (or a fragment of one) without its temporal delimiter, with
/// `obu_has_size_field` cleared and its `obu_size` removed (§5: "SHOULD be set to zero"), each
/// behind its LEB128 length (pubbot always writes W = 0, as the format allows).
public enum AV1OBU {
    /// OBU types (AV1 bitstream §6.2.2).
    public static let sequenceHeader: UInt8 = 1, temporalDelimiter: UInt8 = 2, frameHeader: UInt8 = 3
    public static let frame: UInt8 = 6, tileList: UInt8 = 8, padding: UInt8 = 15

    /// One OBU of a low-overhead bitstream: where its header starts, how long the header is
    /// (1, or 2 with the extension byte) and its payload's range.
    public struct Unit: Sendable, Equatable {
        public var header: Int
        public var headerSize: Int
        public var payload: Range<Int>
        @inlinable public var end: Int { payload.upperBound }

        @usableFromInline init(header: Int, headerSize: Int, payload: Range<Int>) {
            self.header = header
            self.headerSize = headerSize
            self.payload = payload
        }
        /// The header byte's obu_type.
        @inlinable
        public func type(_ b: Span<UInt8>) -> UInt8 { (b[header] >> 3) & 0x0F }
    }

    /// Reads an unsigned LEB128 (AV1 §4.10.5: at most 8 bytes, the value below 2^32).
    /// Returns the value and its byte count, or nil when truncated or too long.
    @inlinable
    public static func leb128(_ b: Span<UInt8>, at offset: Int) -> (value: Int, size: Int)? {
        var value = 0
        var i = 0
        while i < 8 {
            guard offset + i < b.count else { return nil }
            let byte = b[offset + i]
            value |= Int(byte & 0x7F) << (7 * i)
            i += 1
            if byte & 0x80 == 0 { return value <= Int(UInt32.max) ? (value, i) : nil }
        }
        return nil
    }

    /// The bytes `value` takes as LEB128: 7 bits a byte (at least one).
    @inlinable @inline(__always)
    public static func leb128Size(_ value: Int) -> Int {
        // Compares for the sizes a packet's lengths take (a division by 7 was most of the
        // packetizer's arithmetic by perf); the general count beyond.
        value < 0x80 ? 1 : value < 0x4000 ? 2 : (Int.bitWidth - value.leadingZeroBitCount + 6) / 7
    }

    /// Each byte of `value` as LEB128, low 7 bits first, the continuation bit on all but the last.
    @inlinable @inline(__always)
    static func leb128Bytes(_ value: Int, _ body: (UInt8) -> Void) {
        var v = value
        repeat {
            let low = UInt8(v & 0x7F)
            v >>= 7
            body(v > 0 ? low | 0x80 : low)
        } while v > 0
    }

    /// Writes `value` as LEB128 (one or two bytes, an element's length in a packet, without a loop).
    @inlinable @inline(__always)
    static func writeLEB128(_ value: Int, into w: inout ByteWriter) {
        if value < 0x80 {
            w.u8(UInt8(truncatingIfNeeded: value))
        } else if value < 0x4000 {
            w.u16(UInt16(truncatingIfNeeded: value & 0x7F | 0x80) << 8 | UInt16(truncatingIfNeeded: value >> 7))
        } else {
            leb128Bytes(value) { w.u8($0) }
        }
    }

    static func appendLEB128(_ value: Int, to out: inout [UInt8]) { leb128Bytes(value) { out.append($0) } }

    /// The OBU at `offset` of a low-overhead bitstream (an OBU without a size field runs to the
    /// end). nil at the end; throws when the OBU is malformed (forbidden bit, a size past the end).
    @inlinable @inline(__always)
    public static func unit(at offset: Int, in b: Span<UInt8>) throws(RTPParseError) -> Unit? {
        guard offset < b.count else { return nil }
        let h = b[offset]
        guard h & 0x80 == 0 else { throw .badPayload }
        let headerSize = h & 0x04 != 0 ? 2 : 1
        guard offset + headerSize <= b.count else { throw .truncated }
        let start = offset + headerSize
        guard h & 0x02 != 0 else { return Unit(header: offset, headerSize: headerSize, payload: start..<b.count) }
        // A size of one or two bytes (below 16 KiB) read in line: an encoder's OBUs in a packet's
        // worth of frame nearly always are; the general reader out of line for the rest.
        let size: Int, n: Int
        if start + 1 < b.count, b[start] < 0x80 {
            (size, n) = (Int(b[start]), 1)
        } else if start + 2 < b.count, b[start + 1] < 0x80 {
            (size, n) = (Int(b[start] & 0x7F) | Int(b[start + 1]) << 7, 2)
        } else {
            guard let (v, k) = leb128(b, at: start) else { throw .badLength }
            (size, n) = (v, k)
        }
        guard size <= b.count - start - n else { throw .badLength }
        return Unit(header: offset, headerSize: headerSize, payload: (start + n)..<(start + n + size))
    }

    /// Whether a temporal unit (OBUs with size fields) holds a key frame.
    public static func isKeyFrame(_ b: Span<UInt8>) -> Bool {
        var at = 0
        var key = false
        var reducedStill = false
        while let u = try? unit(at: at, in: b) {
            note(u, b, key: &key, reducedStill: &reducedStill)
            at = u.end
        }
        return key
    }

    /// Notes what one OBU says of its temporal unit: a key frame is a frame header with
    /// frame_type KEY_FRAME (AV1 §5.9.2) or any frame of a reduced still-picture sequence.
    static func note(_ u: Unit, _ b: Span<UInt8>, key: inout Bool, reducedStill: inout Bool) {
        guard !u.payload.isEmpty else { return }
        let type = u.type(b)
        let first = b[u.payload.lowerBound]
        if type == sequenceHeader {
            // seq_profile (3), still_picture (1), reduced_still_picture_header (1) (AV1 §5.5.1).
            reducedStill = first & 0x08 != 0
            if reducedStill { key = true }
        }
        // show_existing_frame (1), frame_type (2): KEY_FRAME = 0 (AV1 §5.9.2).
        if type == frameHeader || type == frame, !reducedStill, first & 0x80 == 0, (first >> 5) & 0x03 == 0 { key = true }
    }

    /// Whether an OBU travels in RTP: temporal delimiters, tile lists and padding do not (§5).
    @inlinable
    static func isSent(_ type: UInt8) -> Bool { type != temporalDelimiter && type != tileList && type != padding }

    /// The first OBU at or after `offset` that travels in RTP.
    @inlinable @inline(__always)
    static func sentUnit(from offset: Int, in b: Span<UInt8>) throws(RTPParseError) -> Unit? {
        var at = offset
        while let u = try unit(at: at, in: b) {
            if isSent(u.type(b)) { return u }
            at = u.end
        }
        return nil
    }
}

/// Splits one temporal unit (libaom's output: OBUs with size fields) into RTP payloads of at most
/// `maxPayloadSize` bytes: whole OBUs aggregated while they fit, a larger one fragmented across
/// packets (Z/Y). The layout is computed as `next` writes, once, as a C packetizer loop does; the
/// marker comes with the last packet. `packetCount(frame:maxPayloadSize:)` gives the count
/// beforehand, for a caller that needs it before writing (each spatial layer's Dependency
/// Descriptors). No allocation.
public struct AV1Packetizer {
    @inlinable public var index: Int { _index }
    @usableFromInline var _index = 0
    @usableFromInline var cursor: Cursor
    @usableFromInline let keyFrame: Bool

    /// The element being written and how much of it went into earlier packets.
    @usableFromInline struct Cursor {
        @usableFromInline let room: Int
        /// The element being written, until `done`. (Not an optional: storing `nil` into one,
        /// once per picture, was a store-forwarding stall that perf put at a quarter of `pack`.)
        @usableFromInline var unit: AV1OBU.Unit
        @usableFromInline var done = false
        @usableFromInline var consumed = 0

        @usableFromInline init(room: Int, unit: AV1OBU.Unit) {
            self.room = room
            self.unit = unit
        }

        /// Lays out and writes the next packet. Returns (Z, Y), nil when done.
        @inlinable @inline(__always)
        mutating func pack(_ frame: Span<UInt8>, into w: inout ByteWriter) throws(RTPParseError) -> (z: Bool, y: Bool)? {
            guard !done else { return nil }
            var u = unit
            let z = consumed > 0
            var left = room
            while true {
                let size = u.headerSize + u.payload.count
                let rest = size - consumed
                let whole = AV1OBU.leb128Size(rest) + rest
                if whole <= left {
                    Self.write(u, from: consumed, count: rest, frame, into: &w)
                    left -= whole
                    consumed = 0
                    guard let n = try AV1OBU.sentUnit(from: u.end, in: frame) else {
                        done = true
                        return (z, false)
                    }
                    u = n
                    unit = n
                    continue
                }
                // A fragment: the largest part whose length and bytes fit (at least one byte).
                var part = left - 1
                if part > 0, AV1OBU.leb128Size(part) > 1 { part = left - AV1OBU.leb128Size(part) }
                guard part >= 1, left == room || part >= 64 else { return (z, false) } // next packet
                Self.write(u, from: consumed, count: part, frame, into: &w)
                consumed += part
                return (z, true)
            }
        }

        /// Writes bytes `from..<from+count` of the element (its header with the size flag cleared,
        /// then its payload) behind their LEB128 length.
        @inlinable
        static func write(_ u: AV1OBU.Unit, from: Int, count: Int, _ frame: Span<UInt8>, into w: inout ByteWriter) {
            AV1OBU.writeLEB128(count, into: &w)
            var i = from
            let end = from + count
            while i < end && i < u.headerSize {
                w.u8(i == 0 ? frame[u.header] & ~0x02 : frame[u.header + 1])
                i += 1
            }
            if i < end {
                let p = u.payload.lowerBound + (i - u.headerSize)
                w.copy(frame, p..<(p + end - i))
            }
        }
    }

    /// - Parameters:
    ///   - frame: one temporal unit as libaom writes it (every OBU with its size field).
    ///   - maxPayloadSize: room for one RTP payload (MTU minus RTP header and SRTP tag).
    ///   - keyFrame: the unit starts a coded video sequence (N on its first packet).
    @inlinable @inline(__always)
    public init(frame: Span<UInt8>, maxPayloadSize: Int, keyFrame: Bool) throws(RTPWriteError) {
        // The aggregation header, a length byte and one byte of an OBU.
        guard maxPayloadSize >= 3 else { throw .bufferTooSmall(needed: 3, available: maxPayloadSize) }
        let first: AV1OBU.Unit?
        do { first = try AV1OBU.sentUnit(from: 0, in: frame) } catch { throw .valueOutOfRange }
        guard let first else { throw .valueOutOfRange } // nothing to send
        cursor = Cursor(room: maxPayloadSize - 1, unit: first)
        self.keyFrame = keyFrame
    }

    /// The packets `next` writes `frame` in, counted without writing them.
    public static func packetCount(frame: Span<UInt8>, maxPayloadSize: Int) throws(RTPWriteError) -> Int {
        guard maxPayloadSize >= 3 else { throw .bufferTooSmall(needed: 3, available: maxPayloadSize) }
        do {
            guard let first = try AV1OBU.sentUnit(from: 0, in: frame) else { throw RTPWriteError.valueOutOfRange }
            return try count(frame, first: first, room: maxPayloadSize - 1)
        } catch { throw .valueOutOfRange }
    }

    /// The packets `Cursor.pack` lays the unit out in, counted with the same rules but nothing
    /// written, and the run of full packets through the middle of a large OBU worked out at
    /// once instead of packet by packet (laying the frame out twice was the AV1 packetizer's
    /// largest cost beside the copies: `pubbot-bench packetize`).
    @usableFromInline
    static func count(_ frame: Span<UInt8>, first: AV1OBU.Unit, room: Int) throws(RTPParseError) -> Int {
        // What one full fragment carries: a packet of `room` less the fragment's length field.
        var full = room - 1
        if full > 0, AV1OBU.leb128Size(full) > 1 { full = room - AV1OBU.leb128Size(full) }
        var n = 0
        var left = room
        var unit: AV1OBU.Unit? = first
        while let u = unit {
            var rest = u.headerSize + u.payload.count
            if AV1OBU.leb128Size(rest) + rest > left && left < room {
                // Behind other elements: a fragment if one of at least 64 bytes fits; the packet ends.
                var part = left - 1
                if part > 0, AV1OBU.leb128Size(part) > 1 { part = left - AV1OBU.leb128Size(part) }
                if part >= 64 { rest -= part }
                n += 1
                left = room
            }
            if AV1OBU.leb128Size(rest) + rest > left {
                // A packet to itself per full fragment until the rest fits in one: at least
                // `k` of them (a length field takes at least a byte), then one more while not.
                var k = max(0, (rest + 1 - room + full - 1) / full)
                while AV1OBU.leb128Size(rest - k * full) + rest - k * full > room { k += 1 }
                n += k
                rest -= k * full
            }
            left -= AV1OBU.leb128Size(rest) + rest
            unit = try AV1OBU.sentUnit(from: u.end, in: frame)
        }
        return left < room ? n + 1 : n
    }

    /// Writes the next payload. Returns its marker bit (the temporal unit's last packet), or nil when done.
    @inlinable @inline(__always)
    public mutating func next(frame: Span<UInt8>, into w: inout ByteWriter) throws(RTPWriteError) -> Bool? {
        guard !cursor.done else { return nil }
        try w.require(cursor.room + 1)
        let at = w.count
        w.u8(0)
        let packed: (z: Bool, y: Bool)?
        do { packed = try cursor.pack(frame, into: &w) } catch { throw .valueOutOfRange }
        guard let packed else { return nil }
        let n: UInt8 = _index == 0 && keyFrame ? 0x08 : 0
        w.patch8(at: at, (packed.z ? 0x80 : 0) | (packed.y ? 0x40 : 0) | n)
        _index += 1
        return cursor.done
    }
}

/// Reassembles a temporal unit from the payloads of its packets, in sequence order (receive
/// side): OBU fragments joined, each OBU given back its size field, a temporal delimiter first
/// (AV1 §7.5: a temporal unit begins with one) — what libaom's and dav1d's decoders take.
/// Total: malformed payloads throw, nothing traps.
public enum AV1Depacketizer {
    /// The aggregation header of one payload.
    public struct Header: Sendable, Equatable {
        public var continuesOBU: Bool
        public var OBUContinues: Bool
        public var elementCount: Int
        public var newCodedVideoSequence: Bool
    }

    public static func header(_ p: Span<UInt8>) throws(RTPParseError) -> Header {
        guard p.count >= 2 else { throw .truncated }
        let h = p[0]
        return Header(
            continuesOBU: h & 0x80 != 0, OBUContinues: h & 0x40 != 0, elementCount: Int((h >> 4) & 0x03),
            newCodedVideoSequence: h & 0x08 != 0)
    }

    /// The temporal unit and whether it holds a key frame (a frame header with frame_type
    /// KEY_FRAME, AV1 §5.9.2, or a reduced still-picture sequence).
    public static func assemble(_ payloads: [[UInt8]]) throws(RTPParseError) -> (bytes: [UInt8], isKeyFrame: Bool) {
        var out: [UInt8] = [0x12, 0x00] // temporal delimiter, obu_size 0
        var pending: [UInt8]? = nil
        var key = false
        var reducedStill = false
        for p in payloads {
            let s = p.span
            let h = try header(s)
            if h.continuesOBU != (pending != nil) { throw .badPayload }
            var at = 1
            var element = 0
            while at < s.count {
                let length: Int
                if h.elementCount != 0 && element == h.elementCount - 1 {
                    length = s.count - at
                } else {
                    guard let (n, size) = AV1OBU.leb128(s, at: at) else { throw .badLength }
                    at += size
                    guard n <= s.count - at else { throw .badLength }
                    length = n
                }
                guard length > 0 else { throw .badPayload }
                let last = at + length == s.count
                if element == 0 && h.continuesOBU {
                    pending! += p[at..<(at + length)]
                } else {
                    pending = Array(p[at..<(at + length)])
                }
                at += length
                element += 1
                if !(last && h.OBUContinues) {
                    try finish(pending!, into: &out, key: &key, reducedStill: &reducedStill)
                    pending = nil
                }
                if h.elementCount != 0 && element > h.elementCount { throw .badPayload }
            }
            if h.elementCount != 0 && element != h.elementCount { throw .badPayload }
            if element == 0 { throw .badPayload }
        }
        if pending != nil { throw .badPayload } // the last packet said its OBU continues
        return (out, key)
    }

    /// Appends one whole OBU with its size field; notes a key frame.
    static func finish(_ obu: [UInt8], into out: inout [UInt8], key: inout Bool, reducedStill: inout Bool) throws(RTPParseError) {
        let b = obu.span
        guard let u = try AV1OBU.unit(at: 0, in: b) else { throw .truncated }
        let type = u.type(b)
        guard AV1OBU.isSent(type) else { return } // ignored by receivers (§5)
        let payload = u.payload
        AV1OBU.note(u, b, key: &key, reducedStill: &reducedStill)
        out.append(obu[u.header] | 0x02)
        if u.headerSize == 2 { out.append(obu[u.header + 1]) }
        AV1OBU.appendLEB128(payload.count, to: &out)
        out += obu[payload]
    }
}
