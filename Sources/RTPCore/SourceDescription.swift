/// Source description (RFC 3550 §6.5), PT 202: chunks of (SSRC, items), each chunk ended by a
/// zero byte and padded to 32 bits. pubbot writes and reads CNAME (item type 1).
public struct SourceDescription: Equatable, Sendable {
    public struct Chunk: Equatable, Sendable {
        public var ssrc: UInt32
        public var cname: String?
        public init(ssrc: UInt32, cname: String?) { self.ssrc = ssrc; self.cname = cname }

        var size: Int {
            let items = cname.map { 2 + min($0.utf8.count, 255) } ?? 0
            return 4 + (items + 1 + 3) / 4 * 4 // items + END, padded
        }
    }

    public var chunks: [Chunk]
    public init(chunks: [Chunk]) { self.chunks = chunks }

    public var size: Int { 4 + chunks.reduce(0) { $0 + $1.size } }

    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        guard chunks.count <= 31 else { throw .valueOutOfRange }
        try w.require(size)
        RTCPHeader(count: UInt8(chunks.count), packetType: RTCPPacketType.sourceDescription, packetSize: size).write(to: &w)
        for c in chunks {
            let start = w.count
            w.u32(c.ssrc)
            if let cname = c.cname {
                let bytes = Array(cname.utf8.prefix(255))
                w.u8(1); w.u8(UInt8(bytes.count))
                bytes.withUnsafeBytes { w.copy($0) }
            }
            w.zeros(start + c.size - w.count) // END item + padding
        }
    }

    static func parse(_ b: Span<UInt8>, header h: RTCPHeader, at o: Int) throws(RTPParseError) -> SourceDescription {
        var sd = SourceDescription(chunks: [])
        var i = o + 4
        let end = o + h.packetSize
        for _ in 0..<Int(h.count) {
            guard i + 4 <= end else { throw .badLength }
            var chunk = Chunk(ssrc: b.be32(i), cname: nil)
            i += 4
            while true {
                guard i < end else { throw .badLength }
                let type = b[i]
                if type == 0 { i = (i + 4) & ~3; break } // END, skip to the next 32-bit boundary
                guard i + 2 <= end else { throw .badLength }
                let len = Int(b[i + 1])
                guard i + 2 + len <= end else { throw .badLength }
                if type == 1 { chunk.cname = RTPExtensionValues.ascii(b, (i + 2)..<(i + 2 + len)) }
                i += 2 + len
            }
            sd.chunks.append(chunk)
        }
        return sd
    }
}

/// Goodbye (RFC 3550 §6.6), PT 203: the SSRCs leaving, and an optional reason.
public struct Goodbye: Equatable, Sendable {
    public var ssrcs: [UInt32]
    public var reason: String?

    public init(ssrcs: [UInt32], reason: String? = nil) { self.ssrcs = ssrcs; self.reason = reason }

    public var size: Int {
        let r = reason.map { (1 + min($0.utf8.count, 255) + 3) / 4 * 4 } ?? 0
        return 4 + 4 * ssrcs.count + r
    }

    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        guard ssrcs.count <= 31 else { throw .valueOutOfRange }
        try w.require(size)
        let start = w.count
        RTCPHeader(count: UInt8(ssrcs.count), packetType: RTCPPacketType.goodbye, packetSize: size).write(to: &w)
        for s in ssrcs { w.u32(s) }
        if let reason {
            let bytes = Array(reason.utf8.prefix(255))
            w.u8(UInt8(bytes.count))
            bytes.withUnsafeBytes { w.copy($0) }
            w.zeros(start + size - w.count)
        }
    }

    static func parse(_ b: Span<UInt8>, header h: RTCPHeader, at o: Int) throws(RTPParseError) -> Goodbye {
        let n = Int(h.count)
        guard 4 + 4 * n <= h.packetSize else { throw .badLength }
        var bye = Goodbye(ssrcs: (0..<n).map { b.be32(o + 4 + 4 * $0) })
        let r = o + 4 + 4 * n
        if r < o + h.packetSize {
            let len = Int(b[r])
            guard r + 1 + len <= o + h.packetSize else { throw .badLength }
            bye.reason = RTPExtensionValues.ascii(b, (r + 1)..<(r + 1 + len))
        }
        return bye
    }
}
