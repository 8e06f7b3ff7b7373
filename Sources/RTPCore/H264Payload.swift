/// H.264 in RTP (RFC 6184), packetization mode 1 (non-interleaved): single NAL unit packets,
/// STAP-A aggregates (§5.7.1) and FU-A fragments (§5.8). Frames travel inside pubbot as Annex B
/// byte streams (ITU-T H.264 Annex B: a start code before every NAL unit), as openh264 writes
/// and reads them.
public enum H264NAL {
    /// NAL unit types pubbot looks at (ITU-T H.264 Table 7-1; RFC 6184 §5.2 for 24–29).
    public static let slice: UInt8 = 1, idr: UInt8 = 5, sei: UInt8 = 6, sps: UInt8 = 7, pps: UInt8 = 8, aud: UInt8 = 9
    public static let stapA: UInt8 = 24, fuA: UInt8 = 28

    /// The next NAL unit of an Annex B stream at or after `from`: its range without the start
    /// code (trailing zero bytes before the next start code excluded), or nil when none is left.
    public static func next(in b: Span<UInt8>, from: Int) -> Range<Int>? {
        b.withUnsafeBufferPointer { p in next(in: p, from: from) }
    }

    /// The scan over raw bytes (the span's bounds were checked by taking its buffer).
    static func next(in b: UnsafeBufferPointer<UInt8>, from: Int) -> Range<Int>? {
        guard let base = b.baseAddress else { return nil }
        let count = b.count
        var from = max(0, from)
        // Indices stay below `count` (an Int of a real buffer), so `&+` cannot overflow: without
        // Swift's overflow checks this loop — the packetizer's largest cost, every byte of the
        // frame — runs as the C loop does (`pubbot-bench packetize`, H.264).
        let limit = count &- 2
        while true {
            // The start code at or after `from`.
            var i = from
            while i < limit && !(base[i] == 0 && base[i &+ 1] == 0 && base[i &+ 2] == 1) { i &+= 1 }
            guard i < limit else { return nil }
            let start = i &+ 3
            var end = count
            i = start
            while i < limit {
                let c = base[i &+ 2]
                if c > 1 {
                    i &+= 3 // no start code can begin at i, i + 1 or i + 2
                } else if c == 1 && base[i &+ 1] == 0 && base[i] == 0 {
                    end = i
                    break
                } else {
                    i &+= 1
                }
            }
            var last = end
            while last > start && base[last - 1] == 0 { last -= 1 }
            if start < last { return start..<last }
            from = end // an empty unit: look on
        }
    }
}

/// Splits one H.264 access unit (Annex B) into RTP payloads (RFC 6184 mode 1), as a pull
/// iterator writing into caller storage: no allocation. NAL units that fit go whole — several
/// small ones (SPS, PPS) together in one STAP-A — and one too large for a packet is cut into
/// FU-A fragments of about equal size (libwebrtc `rtp_format_h264.cc` does the same).
public struct H264Packetizer {
    public let packetCount: Int
    public var index: Int { _index }
    var _index = 0
    var planner: Planner

    /// Where the next NAL unit is looked for, and the FU-A in progress. The units' ranges are
    /// found once, in `init`, and kept (up to 16: a picture of one slice has 1–3); a frame of
    /// more units is scanned again as it goes.
    struct Planner {
        let room: Int
        var cursor = 0
        var fu: Fragmenting?
        var starts = InlineArray<16, Int>(repeating: 0)
        var ends = InlineArray<16, Int>(repeating: 0)
        var cached = 0
        var overflow = false

        /// The unit that begins at or after `position`.
        func unit(after position: Int, _ frame: Span<UInt8>) -> Range<Int>? {
            if !overflow {
                for i in 0..<cached where starts[i] >= position { return starts[i]..<ends[i] }
                return nil
            }
            // Its start code ends at `position` at the latest (a unit never ends in a zero byte).
            return H264NAL.next(in: frame, from: max(0, position - 3))
        }

        struct Fragmenting {
            var nal: Range<Int>
            var index: Int
            var split: PayloadSplit
            var offset: Int
        }

        enum Packet {
            case single(Range<Int>)
            /// The NAL units from the one at `first` up to the scan position `end`.
            case stapA(first: Int, end: Int)
            case fragment(nal: Range<Int>, part: Range<Int>, first: Bool, last: Bool)
        }

        /// The next packet's shape, advancing the cursor.
        mutating func plan(_ frame: Span<UInt8>) -> Packet? {
            if var f = fu {
                let size = f.split.size(of: f.index)
                let part = f.offset..<(f.offset + size)
                f.offset += size
                f.index += 1
                let last = f.index == f.split.count
                fu = last ? nil : f
                if last { cursor = f.nal.upperBound }
                return .fragment(nal: f.nal, part: part, first: f.index == 1, last: last)
            }
            guard let nal = unit(after: cursor, frame) else { return nil }
            if nal.count > room {
                // FU-A: the unit's header byte goes into the FU indicator and header (RFC 6184 §5.8).
                let payload = nal.count - 1
                let per = room - 2
                let count = (payload + per - 1) / per
                fu = Fragmenting(nal: nal, index: 0, split: PayloadSplit(payload, into: count), offset: nal.lowerBound + 1)
                return plan(frame)
            }
            // STAP-A: one header byte, then each unit behind its 16-bit size (RFC 6184 §5.7.1).
            var used = 1 + 2 + nal.count
            var end = nal.upperBound
            var units = 1
            while let more = unit(after: end, frame), used + 2 + more.count <= room {
                used += 2 + more.count
                end = more.upperBound
                units += 1
            }
            cursor = end
            return units == 1 ? .single(nal) : .stapA(first: nal.lowerBound, end: end)
        }
    }

    /// - Parameters:
    ///   - frame: the access unit, Annex B.
    ///   - maxPayloadSize: room for one RTP payload (MTU minus RTP header and SRTP tag).
    public init(frame: Span<UInt8>, maxPayloadSize: Int) throws(RTPWriteError) {
        // An FU-A needs its two header bytes and at least one byte of the unit.
        guard maxPayloadSize >= 3 else { throw .bufferTooSmall(needed: 3, available: maxPayloadSize) }
        var planner = Planner(room: maxPayloadSize)
        frame.withUnsafeBufferPointer { b in
            var at = 0
            while let r = H264NAL.next(in: b, from: at) {
                guard planner.cached < 16 else { planner.overflow = true; break }
                planner.starts[planner.cached] = r.lowerBound
                planner.ends[planner.cached] = r.upperBound
                planner.cached += 1
                at = r.upperBound
            }
        }
        self.planner = planner
        var counter = planner
        var n = 0
        while counter.plan(frame) != nil { n += 1 }
        packetCount = n
    }

    /// Writes the next payload. Returns its marker bit (the access unit's last packet), or nil when done.
    public mutating func next(frame: Span<UInt8>, into w: inout ByteWriter) throws(RTPWriteError) -> Bool? {
        guard _index < packetCount, let packet = planner.plan(frame) else { return nil }
        switch packet {
        case .single(let nal):
            try w.require(nal.count)
            w.copy(frame, nal)
        case .stapA(let first, let end):
            var size = 1
            var nri: UInt8 = 0
            var at = first
            while let nal = planner.unit(after: at, frame), nal.upperBound <= end {
                size += 2 + nal.count
                nri = max(nri, frame[nal.lowerBound] & 0x60)
                at = nal.upperBound
            }
            try w.require(size)
            // F = 0; NRI the largest of the aggregated units' (RFC 6184 §5.7).
            w.u8(nri | H264NAL.stapA)
            at = first
            while let nal = planner.unit(after: at, frame), nal.upperBound <= end {
                w.u16(UInt16(nal.count))
                w.copy(frame, nal)
                at = nal.upperBound
            }
        case .fragment(let nal, let part, let first, let last):
            try w.require(2 + part.count)
            let header = frame[nal.lowerBound]
            w.u8((header & 0xE0) | H264NAL.fuA)
            w.u8((first ? 0x80 : 0) | (last ? 0x40 : 0) | (header & 0x1F))
            w.copy(frame, part)
        }
        _index += 1
        return _index == packetCount
    }
}

/// What one RTP payload of H.264 held (receive side).
public struct H264PacketInfo: Sendable, Equatable {
    /// The payload begins an access unit for certain: it starts with an SPS, PPS, AUD or SEI
    /// (which come before a picture's slices, ITU-T H.264 §7.4.1.2.3).
    public var beginsAccessUnit = false
    public var hasIDR = false
    public var sps: H264SPS?
    /// An FU-A fragment, and whether it starts or ends its unit.
    public var isFragment = false
    public var fragmentStart = false
    public var fragmentEnd = false

    public init() {}
}

/// Turns RTP payloads of H.264 (RFC 6184 mode 1, and mode 0's single units) back into Annex B.
public enum H264Depacketizer {
    static let startCode: [UInt8] = [0, 0, 0, 1]

    /// Appends one payload's NAL units (or FU-A fragment) to `out` as Annex B and says what it
    /// held. Throws on a malformed payload or a type mode 1 does not allow (STAP-B, MTAP, FU-B).
    public static func append(_ p: Span<UInt8>, to out: inout [UInt8]) throws(RTPParseError) -> H264PacketInfo {
        guard p.count >= 1 else { throw .truncated }
        var info = H264PacketInfo()
        let type = p[0] & 0x1F
        func unit(_ range: Range<Int>, first: Bool) throws(RTPParseError) {
            guard !range.isEmpty, p[range.lowerBound] & 0x80 == 0 else { throw .badPayload } // F must be 0
            let t = p[range.lowerBound] & 0x1F
            guard t >= 1 && t <= 23 else { throw .badPayload }
            note(t, range, first: first)
            out += startCode
            for i in range { out.append(p[i]) }
        }
        func note(_ t: UInt8, _ range: Range<Int>, first: Bool) {
            if t == H264NAL.idr { info.hasIDR = true }
            if first && (t == H264NAL.sps || t == H264NAL.pps || t == H264NAL.aud || t == H264NAL.sei) { info.beginsAccessUnit = true }
            if t == H264NAL.sps, info.sps == nil { info.sps = H264SPS.parse(p.extracting(range)) }
        }
        switch type {
        case 1...23:
            try unit(0..<p.count, first: true)
        case H264NAL.stapA:
            var i = 1
            var first = true
            guard p.count > 3 else { throw .truncated }
            while i < p.count {
                guard i + 2 <= p.count else { throw .truncated }
                let size = Int(p.be16(i))
                guard size > 0, i + 2 + size <= p.count else { throw .badLength }
                try unit((i + 2)..<(i + 2 + size), first: first)
                first = false
                i += 2 + size
            }
        case H264NAL.fuA:
            guard p.count >= 3 else { throw .truncated }
            let header = p[1]
            let start = header & 0x80 != 0, end = header & 0x40 != 0
            let t = header & 0x1F
            guard !(start && end), t >= 1 && t <= 23 else { throw .badPayload }
            info.isFragment = true
            info.fragmentStart = start
            info.fragmentEnd = end
            if start {
                note(t, 2..<p.count, first: true)
                out += startCode
                out.append((p[0] & 0xE0) | t)
            }
            for i in 2..<p.count { out.append(p[i]) }
        default:
            throw .badPayload
        }
        return info
    }
}

/// The picture size a sequence parameter set describes (ITU-T H.264 §7.3.2.1.1, frame cropping
/// applied), read from a NAL unit (its header byte included).
public struct H264SPS: Sendable, Equatable {
    public var profileIDC: UInt8
    public var levelIDC: UInt8
    public var width: Int
    public var height: Int

    /// nil when the unit is not an SPS pubbot can read (truncated, or values out of range).
    public static func parse(_ nal: Span<UInt8>) -> H264SPS? {
        guard nal.count >= 4, nal[0] & 0x1F == H264NAL.sps else { return nil }
        // An SPS is small (tens of bytes); a copy keeps the reader simple.
        var r = BitReader(nal.copyBytes(0..<min(nal.count, 256)), from: 1)
        guard let profile = r.bits(8), r.bits(8) != nil, let level = r.bits(8), r.ue() != nil else { return nil }
        var chroma = 1
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profile) {
            guard let c = r.ue(), c <= 3 else { return nil }
            chroma = c
            if c == 3 { guard r.bits(1) != nil else { return nil } }
            guard r.ue() != nil, r.ue() != nil, r.bits(1) != nil, let scaling = r.bits(1) else { return nil }
            if scaling == 1 {
                for i in 0..<(c == 3 ? 12 : 8) where r.bits(1) == 1 {
                    var last = 8, next = 8
                    for _ in 0..<(i < 6 ? 16 : 64) where next != 0 {
                        guard let delta = r.se() else { return nil }
                        next = (last + delta + 256) % 256
                        last = next == 0 ? last : next
                    }
                }
            }
        }
        guard r.ue() != nil, let pocType = r.ue() else { return nil }
        if pocType == 0 {
            guard r.ue() != nil else { return nil }
        } else if pocType == 1 {
            guard r.bits(1) != nil, r.se() != nil, r.se() != nil, let cycle = r.ue(), cycle <= 255 else { return nil }
            for _ in 0..<cycle { guard r.se() != nil else { return nil } }
        }
        guard r.ue() != nil, r.bits(1) != nil, let wMbs = r.ue(), let hMaps = r.ue(), let frameMbsOnly = r.bits(1) else { return nil }
        guard wMbs < 1024, hMaps < 1024 else { return nil }
        if frameMbsOnly == 0 { guard r.bits(1) != nil else { return nil } }
        guard r.bits(1) != nil, let cropping = r.bits(1) else { return nil }
        var width = (wMbs + 1) * 16
        var height = (2 - frameMbsOnly) * (hMaps + 1) * 16
        if cropping == 1 {
            guard let l = r.ue(), let rr = r.ue(), let t = r.ue(), let b = r.ue() else { return nil }
            let cropX = chroma == 0 || chroma == 3 ? 1 : 2
            let cropY = (chroma == 1 ? 2 : 1) * (2 - frameMbsOnly)
            width -= (l + rr) * cropX
            height -= (t + b) * cropY
        }
        guard width > 0, height > 0 else { return nil }
        return H264SPS(profileIDC: UInt8(profile), levelIDC: UInt8(level), width: width, height: height)
    }
}

/// Reads bits MSB first from an RBSP, skipping emulation-prevention bytes (`00 00 03`, ITU-T
/// H.264 §7.4.1); Exp-Golomb codes (§9.1). Every read returns nil past the end.
struct BitReader {
    let b: [UInt8]
    var byte: Int
    var bit = 0
    var zeros = 0

    init(_ b: [UInt8], from: Int) {
        self.b = b
        byte = from
    }

    mutating func bits(_ n: Int) -> Int? {
        var v = 0
        for _ in 0..<n {
            if bit == 0 {
                guard byte < b.count else { return nil }
                if zeros >= 2 && b[byte] == 3 {
                    byte += 1
                    zeros = 0
                    guard byte < b.count else { return nil }
                }
                zeros = b[byte] == 0 ? zeros + 1 : 0
            }
            v = v << 1 | Int((b[byte] >> (7 - bit)) & 1)
            bit += 1
            if bit == 8 { bit = 0; byte += 1 }
        }
        return v
    }

    /// ue(v): an unsigned Exp-Golomb code (at most 31 leading zeros).
    mutating func ue() -> Int? {
        var leading = 0
        while true {
            guard let b = bits(1) else { return nil }
            if b == 1 { break }
            leading += 1
            if leading > 31 { return nil }
        }
        guard let rest = bits(leading) else { return nil }
        return (1 << leading) - 1 + rest
    }

    /// se(v): a signed Exp-Golomb code.
    mutating func se() -> Int? {
        guard let k = ue() else { return nil }
        return k & 1 == 1 ? (k + 1) / 2 : -(k / 2)
    }
}
