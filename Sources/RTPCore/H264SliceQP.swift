/// The quantizer of an H.264 access unit's slices, read from their headers as libwebrtc reads it
/// for its quality scaler (`common_video/h264/h264_bitstream_parser.cc`: the SPS and PPS fields
/// a slice header depends on are kept; QP = 26 + pic_init_qp_minus26 + slice_qp_delta, ITU-T
/// H.264 §7.4.3). openh264 reports no per-frame QP of its own, so this is how pubbot's H.264
/// encoder gives one (`H264Encoder.lastQP`).
///
/// Total over any bytes: a unit that cannot be read (truncated, an unknown parameter set,
/// values out of range) is skipped, never trapped on; every loop is bounded.
public struct H264SliceQP: Sendable {
    /// What a slice header needs of its sequence parameter set (§7.3.2.1.1).
    struct SPS: Sendable {
        var separateColourPlane = false
        var chromaArrayType = 1
        var log2MaxFrameNum = 4
        var pocType = 0
        var log2MaxPocLsb = 4
        var deltaPicOrderAlwaysZero = false
        var frameMbsOnly = true
    }

    /// …and of its picture parameter set (§7.3.2.2).
    struct PPS: Sendable {
        var spsID: Int
        var entropyCodingMode = false
        var bottomFieldPicOrderPresent = false
        var numRefIdxL0Default = 1
        var numRefIdxL1Default = 1
        var weightedPred = false
        var weightedBipredIDC = 0
        var picInitQP = 26
        var redundantPicCntPresent = false
    }

    var sps: [Int: SPS] = [:]
    var pps: [Int: PPS] = [:]
    /// The last slice's QP read (0…51), nil before any.
    public private(set) var lastSliceQP: Int?

    public init() {}

    /// Reads every NAL unit of an Annex B access unit; returns the last slice's QP in it, if any.
    @discardableResult
    public mutating func parse(_ accessUnit: Span<UInt8>) -> Int? {
        var at = 0, found: Int?
        var units = 0
        while let r = H264NAL.next(in: accessUnit, from: at), units < 4096 {
            at = r.upperBound
            units += 1
            guard r.count >= 2 else { continue }
            // Parameter sets and slice headers are short: a bounded copy keeps the reader simple.
            let bytes = accessUnit.copyBytes(r.lowerBound..<min(r.upperBound, r.lowerBound + 512))
            switch bytes[0] & 0x1F {
            case H264NAL.sps: if let (id, s) = Self.readSPS(bytes) { sps[id] = s }
            case H264NAL.pps: if let (id, p) = Self.readPPS(bytes) { pps[id] = p }
            case H264NAL.slice, H264NAL.idr:
                if let qp = readSliceQP(bytes) {
                    found = qp
                    lastSliceQP = qp
                }
            default: break
            }
        }
        return found
    }

    static func readSPS(_ b: [UInt8]) -> (Int, SPS)? {
        var r = BitReader(b, from: 1)
        guard let profile = r.bits(8), r.bits(8) != nil, r.bits(8) != nil, let id = r.ue(), id <= 31 else { return nil }
        var s = SPS()
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profile) {
            guard let chroma = r.ue(), chroma <= 3 else { return nil }
            s.chromaArrayType = chroma
            if chroma == 3 {
                guard let separate = r.bits(1) else { return nil }
                s.separateColourPlane = separate == 1
                if s.separateColourPlane { s.chromaArrayType = 0 }
            }
            guard r.ue() != nil, r.ue() != nil, r.bits(1) != nil, let scaling = r.bits(1) else { return nil }
            if scaling == 1 {
                for i in 0..<(chroma == 3 ? 12 : 8) {
                    guard let present = r.bits(1) else { return nil }
                    guard present == 1 else { continue }
                    var last = 8, next = 8
                    for _ in 0..<(i < 6 ? 16 : 64) where next != 0 {
                        guard let delta = r.se() else { return nil }
                        next = (last + delta + 256) % 256
                        last = next == 0 ? last : next
                    }
                }
            }
        }
        guard let frameNum = r.ue(), frameNum <= 12, let poc = r.ue(), poc <= 2 else { return nil }
        s.log2MaxFrameNum = frameNum + 4
        s.pocType = poc
        if poc == 0 {
            guard let lsb = r.ue(), lsb <= 12 else { return nil }
            s.log2MaxPocLsb = lsb + 4
        } else if poc == 1 {
            guard let zero = r.bits(1), r.se() != nil, r.se() != nil, let cycle = r.ue(), cycle <= 255 else { return nil }
            s.deltaPicOrderAlwaysZero = zero == 1
            for _ in 0..<cycle { guard r.se() != nil else { return nil } }
        }
        guard r.ue() != nil, r.bits(1) != nil, r.ue() != nil, r.ue() != nil, let frameMbsOnly = r.bits(1) else { return nil }
        s.frameMbsOnly = frameMbsOnly == 1
        return (id, s)
    }

    static func readPPS(_ b: [UInt8]) -> (Int, PPS)? {
        var r = BitReader(b, from: 1)
        guard let id = r.ue(), id <= 255, let spsID = r.ue(), spsID <= 31, let cabac = r.bits(1), let bottom = r.bits(1),
            let groups = r.ue(), groups <= 7
        else { return nil }
        var p = PPS(spsID: spsID)
        p.entropyCodingMode = cabac == 1
        p.bottomFieldPicOrderPresent = bottom == 1
        if groups > 0 {
            // Slice groups (§7.3.2.2): read past the map, whatever its type.
            guard let mapType = r.ue(), mapType <= 6 else { return nil }
            switch mapType {
            case 0: for _ in 0...groups { guard r.ue() != nil else { return nil } }
            case 2: for _ in 0..<groups { guard r.ue() != nil, r.ue() != nil else { return nil } }
            case 3, 4, 5: guard r.bits(1) != nil, r.ue() != nil else { return nil }
            case 6:
                guard let units = r.ue(), units < 36_864 else { return nil } // a level 6.2 picture's macroblocks
                var bits = 0
                while (1 << bits) < groups + 1 { bits += 1 }
                for _ in 0...units { guard r.bits(bits) != nil else { return nil } }
            default: break
            }
        }
        guard let l0 = r.ue(), l0 <= 31, let l1 = r.ue(), l1 <= 31, let weighted = r.bits(1), let bipred = r.bits(2), bipred <= 2,
            let qp = r.se(), (-26...25).contains(qp), r.se() != nil, r.se() != nil, r.bits(1) != nil, r.bits(1) != nil,
            let redundant = r.bits(1)
        else { return nil }
        p.numRefIdxL0Default = l0 + 1
        p.numRefIdxL1Default = l1 + 1
        p.weightedPred = weighted == 1
        p.weightedBipredIDC = bipred
        p.picInitQP = 26 + qp
        p.redundantPicCntPresent = redundant == 1
        return (id, p)
    }

    /// The slice header up to slice_qp_delta (§7.3.3).
    func readSliceQP(_ b: [UInt8]) -> Int? {
        let nalType = b[0] & 0x1F, refIDC = (b[0] >> 5) & 3
        var r = BitReader(b, from: 1)
        guard r.ue() != nil, let rawType = r.ue(), rawType <= 9, let ppsID = r.ue(), let p = pps[ppsID], let s = sps[p.spsID] else {
            return nil
        }
        let type = rawType % 5 // 0 P, 1 B, 2 I, 3 SP, 4 SI
        let isB = type == 1, isP = type == 0 || type == 3, intra = type == 2 || type == 4
        if s.separateColourPlane { guard r.bits(2) != nil else { return nil } }
        guard r.bits(s.log2MaxFrameNum) != nil else { return nil }
        var field = false
        if !s.frameMbsOnly {
            guard let f = r.bits(1) else { return nil }
            field = f == 1
            if field { guard r.bits(1) != nil else { return nil } }
        }
        if nalType == H264NAL.idr { guard r.ue() != nil else { return nil } }
        if s.pocType == 0 {
            guard r.bits(s.log2MaxPocLsb) != nil else { return nil }
            if p.bottomFieldPicOrderPresent && !field { guard r.se() != nil else { return nil } }
        }
        if s.pocType == 1 && !s.deltaPicOrderAlwaysZero {
            guard r.se() != nil else { return nil }
            if p.bottomFieldPicOrderPresent && !field { guard r.se() != nil else { return nil } }
        }
        if p.redundantPicCntPresent { guard r.ue() != nil else { return nil } }
        if isB { guard r.bits(1) != nil else { return nil } }
        var l0 = p.numRefIdxL0Default, l1 = p.numRefIdxL1Default
        if isP || isB {
            guard let override = r.bits(1) else { return nil }
            if override == 1 {
                guard let n = r.ue(), n <= 31 else { return nil }
                l0 = n + 1
                if isB {
                    guard let m = r.ue(), m <= 31 else { return nil }
                    l1 = m + 1
                }
            }
        }
        // ref_pic_list_modification (§7.3.3.1): each list's operations until idc 3.
        func modifications() -> Bool {
            guard let flag = r.bits(1) else { return false }
            guard flag == 1 else { return true }
            for _ in 0..<66 {
                guard let idc = r.ue(), idc <= 5 else { return false }
                if idc == 3 { return true }
                guard r.ue() != nil else { return false }
            }
            return false
        }
        if !intra { guard modifications() else { return nil } }
        if isB { guard modifications() else { return nil } }
        // pred_weight_table (§7.3.3.2).
        if (p.weightedPred && isP) || (p.weightedBipredIDC == 1 && isB) {
            guard r.ue() != nil else { return nil }
            if s.chromaArrayType != 0 { guard r.ue() != nil else { return nil } }
            for count in isB ? [l0, l1] : [l0] {
                for _ in 0..<count {
                    guard let luma = r.bits(1) else { return nil }
                    if luma == 1 { guard r.se() != nil, r.se() != nil else { return nil } }
                    if s.chromaArrayType != 0 {
                        guard let chroma = r.bits(1) else { return nil }
                        if chroma == 1 { guard r.se() != nil, r.se() != nil, r.se() != nil, r.se() != nil else { return nil } }
                    }
                }
            }
        }
        // dec_ref_pic_marking (§7.3.3.3).
        if refIDC != 0 {
            if nalType == H264NAL.idr {
                guard r.bits(1) != nil, r.bits(1) != nil else { return nil }
            } else {
                guard let adaptive = r.bits(1) else { return nil }
                if adaptive == 1 {
                    var ended = false
                    for _ in 0..<66 {
                        guard let op = r.ue(), op <= 6 else { return nil }
                        if op == 0 {
                            ended = true
                            break
                        }
                        if op == 1 || op == 3 { guard r.ue() != nil else { return nil } }
                        if op == 2 { guard r.ue() != nil else { return nil } }
                        if op == 3 || op == 6 { guard r.ue() != nil else { return nil } }
                        if op == 4 { guard r.ue() != nil else { return nil } }
                    }
                    guard ended else { return nil }
                }
            }
        }
        if p.entropyCodingMode && !intra { guard let idc = r.ue(), idc <= 2 else { return nil } }
        guard let delta = r.se() else { return nil }
        let qp = p.picInitQP + delta
        return (0...51).contains(qp) ? qp : nil
    }
}
