/// RTCP feedback messages (RFC 4585 §6, RFC 5104 §4.3): generic NACK, PLI, FIR, and REMB.
///
/// Common feedback header:
/// ```
/// |V=2|P|   FMT   |       PT      |          length               |
/// |                  SSRC of packet sender                        |
/// |                  SSRC of media source                         |
/// :            Feedback Control Information (FCI)                 :
/// ```

/// Generic NACK (RTPFB, FMT 1): FCI entries of PID(16) + BLP(16); bit i of BLP means PID+i+1 lost.
public struct GenericNACK: Equatable, Sendable {
    public static let fmt: UInt8 = 1
    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    /// Lost sequence numbers, in the order the FCI lists them.
    public var lost: [UInt16]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32, lost: [UInt16]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.lost = lost
    }

    /// FCI entries (PID, BLP) covering `lost` (which should be in send order).
    var entries: [(UInt16, UInt16)] {
        var out: [(UInt16, UInt16)] = []
        for seq in lost {
            if let last = out.last {
                let d = Int(seq &- last.0)
                if d >= 1 && d <= 16 { out[out.count - 1].1 |= 1 << UInt16(d - 1); continue }
                if d == 0 { continue }
            }
            out.append((seq, 0))
        }
        return out
    }

    public var size: Int { 12 + 4 * entries.count }

    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        let e = entries
        guard !e.isEmpty, e.count < 16000 else { throw .valueOutOfRange }
        try w.require(12 + 4 * e.count)
        RTCPHeader(count: Self.fmt, packetType: RTCPPacketType.transportFeedback, packetSize: 12 + 4 * e.count).write(to: &w)
        w.u32(senderSSRC); w.u32(mediaSSRC)
        for (pid, blp) in e { w.u16(pid); w.u16(blp) }
    }

    static func parse(_ b: Span<UInt8>, header h: RTCPHeader, at o: Int) throws(RTPParseError) -> GenericNACK {
        // RFC 4585 §6.2.1: the FCI holds at least one Generic NACK.
        guard h.packetSize >= 16 else { throw .badLength }
        var n = GenericNACK(senderSSRC: b.be32(o + 4), mediaSSRC: b.be32(o + 8), lost: [])
        var i = o + 12
        // Bounded by the packet: at most 17 sequence numbers per 4-byte entry.
        while i + 4 <= o + h.packetSize {
            let pid = b.be16(i), blp = b.be16(i + 2)
            n.lost.append(pid)
            for bit in 0..<16 where blp & (1 << UInt16(bit)) != 0 { n.lost.append(pid &+ UInt16(bit + 1)) }
            i += 4
        }
        return n
    }
}

/// Picture Loss Indication (PSFB, FMT 1): no FCI.
public struct PictureLossIndication: Equatable, Sendable {
    public static let fmt: UInt8 = 1
    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32

    public init(senderSSRC: UInt32, mediaSSRC: UInt32) { self.senderSSRC = senderSSRC; self.mediaSSRC = mediaSSRC }

    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        try w.require(12)
        RTCPHeader(count: Self.fmt, packetType: RTCPPacketType.payloadFeedback, packetSize: 12).write(to: &w)
        w.u32(senderSSRC); w.u32(mediaSSRC)
    }
}

/// Full Intra Request (PSFB, FMT 4): FCI entries of SSRC + seq nr(8) + reserved(24); media SSRC is 0.
public struct FullIntraRequest: Equatable, Sendable {
    public static let fmt: UInt8 = 4
    public var senderSSRC: UInt32
    public var entries: [(ssrc: UInt32, sequenceNumber: UInt8)]

    public init(senderSSRC: UInt32, entries: [(ssrc: UInt32, sequenceNumber: UInt8)]) {
        self.senderSSRC = senderSSRC
        self.entries = entries
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.senderSSRC == b.senderSSRC && a.entries.map(\.ssrc) == b.entries.map(\.ssrc)
            && a.entries.map(\.sequenceNumber) == b.entries.map(\.sequenceNumber)
    }

    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        let size = 12 + 8 * entries.count
        try w.require(size)
        RTCPHeader(count: Self.fmt, packetType: RTCPPacketType.payloadFeedback, packetSize: size).write(to: &w)
        w.u32(senderSSRC); w.u32(0)
        for e in entries { w.u32(e.ssrc); w.u8(e.sequenceNumber); w.u24(0) }
    }

    static func parse(_ b: Span<UInt8>, header h: RTCPHeader, at o: Int) throws(RTPParseError) -> FullIntraRequest {
        guard h.packetSize >= 12 else { throw .badLength }
        var f = FullIntraRequest(senderSSRC: b.be32(o + 4), entries: [])
        var i = o + 12
        while i + 8 <= o + h.packetSize {
            f.entries.append((b.be32(i), b[i + 4]))
            i += 8
        }
        return f
    }
}

/// Receiver Estimated Maximum Bitrate (PSFB FMT 15, "REMB"): num SSRC(8), exp(6), mantissa(18),
/// then the SSRCs. The bitrate is mantissa · 2^exp (can exceed 2⁶³ on hostile input: saturated).
public struct ReceiverEstimatedMaxBitrate: Equatable, Sendable {
    public var senderSSRC: UInt32
    public var bitrate: UInt64
    public var ssrcs: [UInt32]

    public init(senderSSRC: UInt32, bitrate: UInt64, ssrcs: [UInt32]) {
        self.senderSSRC = senderSSRC
        self.bitrate = bitrate
        self.ssrcs = ssrcs
    }

    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        guard ssrcs.count <= 255 else { throw .valueOutOfRange }
        let size = 20 + 4 * ssrcs.count
        try w.require(size)
        var exp: UInt64 = 0, mantissa = bitrate
        while mantissa >= 1 << 18 { mantissa >>= 1; exp += 1 }
        RTCPHeader(count: 15, packetType: RTCPPacketType.payloadFeedback, packetSize: size).write(to: &w)
        w.u32(senderSSRC); w.u32(0)
        w.u8(UInt8(ascii: "R")); w.u8(UInt8(ascii: "E")); w.u8(UInt8(ascii: "M")); w.u8(UInt8(ascii: "B"))
        w.u8(UInt8(ssrcs.count))
        w.u24(UInt32(exp) << 18 | UInt32(mantissa))
        for s in ssrcs { w.u32(s) }
    }

    /// Parses the AFB payload if it is a REMB; nil for other AFB messages.
    static func parse(_ b: Span<UInt8>, header h: RTCPHeader, at o: Int) throws(RTPParseError) -> ReceiverEstimatedMaxBitrate? {
        guard h.packetSize >= 20 else { return nil }
        guard b[o + 12] == UInt8(ascii: "R"), b[o + 13] == UInt8(ascii: "E"), b[o + 14] == UInt8(ascii: "M"), b[o + 15] == UInt8(ascii: "B")
        else { return nil }
        let n = Int(b[o + 16])
        guard 20 + 4 * n <= h.packetSize else { throw .badLength }
        let v = b.be24(o + 17)
        let exp = UInt64(v >> 18), mantissa = UInt64(v & 0x3FFFF)
        let bitrate = mantissa == 0 ? 0 : (UInt64(mantissa.leadingZeroBitCount) <= exp ? UInt64.max : mantissa << exp)
        return ReceiverEstimatedMaxBitrate(senderSSRC: b.be32(o + 4), bitrate: bitrate, ssrcs: (0..<n).map { b.be32(o + 20 + 4 * $0) })
    }
}
