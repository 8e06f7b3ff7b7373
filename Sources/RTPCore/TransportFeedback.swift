/// Transport-wide congestion control feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01
/// §3.1), RTPFB FMT 15: which transport sequence numbers arrived and when.
///
/// ```
/// |V=2|P|  FMT=15 |    PT=205     |           length              |
/// |                     SSRC of packet sender                     |
/// |                      SSRC of media source                     |
/// |      base sequence number     |      packet status count      |
/// |                 reference time                | fb pkt. count |
/// |          packet chunk         |         packet chunk          |
/// :     recv delta    |  recv delta   | ... (zero padding to 32 bits)
/// ```
/// Chunks: run length `0 S(2) L(13)`; status vector `1 0 14×1-bit` or `1 1 7×2-bit`. Symbols:
/// 0 not received, 1 received with a 1-byte delta (0–63.75 ms), 2 received with a 2-byte signed
/// delta; deltas in 250 µs ticks, reference time in 64 ms units. (The draft's prose inverts the
/// 1-bit meaning; libwebrtc and pion read 1 = received, as here.)
public struct TransportFeedback: Equatable, Sendable {
    public static let fmt: UInt8 = 15
    public static let deltaTickMicros: Int64 = 250
    public static let referenceTickMicros: Int64 = 64_000

    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    public var baseSequence: UInt16
    /// Reference time in 64 ms ticks (signed 24-bit on the wire).
    public var referenceTime: Int32
    public var feedbackCount: UInt8
    /// One entry per packet from `baseSequence` on: arrival time in µs relative to
    /// `referenceTime · 64 ms` (quantized to 250 µs), or nil when not received.
    public var arrivals: [Int64?]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32, baseSequence: UInt16, referenceTime: Int32, feedbackCount: UInt8, arrivals: [Int64?])
    {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.baseSequence = baseSequence
        self.referenceTime = referenceTime
        self.feedbackCount = feedbackCount
        self.arrivals = arrivals
    }

    /// Arrival of each reported packet: (sequence number, absolute arrival µs in the receiver's
    /// clock modulo the 24-bit reference wrap, or nil).
    public var packets: [(sequenceNumber: UInt16, arrivalMicros: Int64?)] {
        let base = Int64(referenceTime) * Self.referenceTickMicros
        return arrivals.enumerated().map { (baseSequence &+ UInt16(truncatingIfNeeded: $0.offset), $0.element.map { base + $0 }) }
    }

    /// Status symbols and delta ticks, validating that deltas fit (each within ±8191.75 ms of the previous).
    func encodedSymbols() throws(RTPWriteError) -> ([UInt8], [Int64]) {
        var symbols: [UInt8] = [], deltas: [Int64] = []
        var previous: Int64 = 0
        for a in arrivals {
            guard let a else { symbols.append(0); continue }
            let ticks = a / Self.deltaTickMicros
            let d = ticks - previous
            previous = ticks
            if d >= 0 && d <= 255 {
                symbols.append(1)
            } else if d >= -32768 && d <= 32767 {
                symbols.append(2)
            } else {
                throw .valueOutOfRange
            }
            deltas.append(d)
        }
        return (symbols, deltas)
    }

    static func chunks(_ symbols: [UInt8]) -> [UInt16] {
        var out: [UInt16] = []
        var i = 0
        while i < symbols.count {
            var run = 1
            while i + run < symbols.count && symbols[i + run] == symbols[i] && run < 0x1FFF { run += 1 }
            if run >= 7 {
                out.append(UInt16(symbols[i]) << 13 | UInt16(run))
                i += run
                continue
            }
            let window = symbols[i..<min(symbols.count, i + 14)]
            if window.count == 14 && window.allSatisfy({ $0 <= 1 }) {
                var c: UInt16 = 0x8000
                for (k, s) in window.enumerated() { c |= UInt16(s) << UInt16(13 - k) }
                out.append(c)
                i += 14
            } else {
                var c: UInt16 = 0xC000
                for (k, s) in symbols[i..<min(symbols.count, i + 7)].enumerated() { c |= UInt16(s) << UInt16(12 - 2 * k) }
                out.append(c)
                i += 7
            }
        }
        return out
    }

    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        guard !arrivals.isEmpty, arrivals.count <= 0xFFFF, referenceTime >= -0x80_0000, referenceTime <= 0x7F_FFFF else {
            throw .valueOutOfRange
        }
        let (symbols, deltas) = try encodedSymbols()
        let chunks = Self.chunks(symbols)
        var deltaBytes = 0
        for s in symbols where s > 0 { deltaBytes += Int(s) }
        let unpadded = 20 + 2 * chunks.count + deltaBytes
        let size = (unpadded + 3) / 4 * 4
        try w.require(size)
        let start = w.count
        RTCPHeader(count: Self.fmt, packetType: RTCPPacketType.transportFeedback, packetSize: size).write(to: &w)
        w.u32(senderSSRC); w.u32(mediaSSRC)
        w.u16(baseSequence); w.u16(UInt16(arrivals.count))
        w.u24(UInt32(bitPattern: referenceTime) & 0xFF_FFFF); w.u8(feedbackCount)
        for c in chunks { w.u16(c) }
        var di = 0
        for s in symbols where s > 0 {
            let d = deltas[di]; di += 1
            if s == 1 { w.u8(UInt8(d)) } else { w.u16(UInt16(bitPattern: Int16(d))) }
        }
        w.zeros(start + size - w.count)
    }

    static func parse(_ b: Span<UInt8>, header h: RTCPHeader, at o: Int) throws(RTPParseError) -> TransportFeedback {
        guard h.packetSize >= 20 else { throw .badLength }
        let end = o + h.packetSize - (h.padding ? Int(b[o + h.packetSize - 1]) : 0)
        guard end >= o + 20 else { throw .badPadding }
        let count = Int(b.be16(o + 14))
        // An empty feedback carries nothing (libwebrtc's TransportFeedback::Parse refuses it too).
        guard count > 0 else { throw .badLength }
        let ref24 = b.be24(o + 16)
        let ref = ref24 & 0x80_0000 != 0 ? Int32(bitPattern: ref24 | 0xFF00_0000) : Int32(ref24)
        var fb = TransportFeedback(
            senderSSRC: b.be32(o + 4), mediaSSRC: b.be32(o + 8), baseSequence: b.be16(o + 12),
            referenceTime: ref, feedbackCount: b[o + 19], arrivals: [])
        var symbols: [UInt8] = []
        symbols.reserveCapacity(min(count, 4096))
        var i = o + 20
        while symbols.count < count {
            guard i + 2 <= end else { throw .truncated }
            let c = b.be16(i); i += 2
            if c & 0x8000 == 0 {
                let s = UInt8((c >> 13) & 3), run = Int(c & 0x1FFF)
                guard s != 3 else { throw .badPayload }
                for _ in 0..<min(run, count - symbols.count) { symbols.append(s) }
            } else if c & 0x4000 == 0 {
                for k in 0..<14 where symbols.count < count { symbols.append(UInt8((c >> UInt16(13 - k)) & 1)) }
            } else {
                for k in 0..<7 where symbols.count < count {
                    let s = UInt8((c >> UInt16(12 - 2 * k)) & 3)
                    guard s != 3 else { throw .badPayload }
                    symbols.append(s)
                }
            }
        }
        var t: Int64 = 0
        fb.arrivals.reserveCapacity(symbols.count)
        for s in symbols {
            switch s {
            case 1:
                guard i + 1 <= end else { throw .truncated }
                t += Int64(b[i]); i += 1
                fb.arrivals.append(t * deltaTickMicros)
            case 2:
                guard i + 2 <= end else { throw .truncated }
                t += Int64(Int16(bitPattern: b.be16(i))); i += 2
                fb.arrivals.append(t * deltaTickMicros)
            default:
                fb.arrivals.append(nil)
            }
        }
        return fb
    }
}
