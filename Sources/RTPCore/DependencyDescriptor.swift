/// The Dependency Descriptor RTP header extension (the AOM "RTP Payload Format for AV1",
/// Appendix A; URI `https://aomediacodec.github.io/av1-rtp-spec/#dependency-descriptor-rtp-header-extension`):
/// what an SFU reads to forward a subset of an AV1 stream's layers without parsing the codec.
/// Every packet carries the mandatory fields (start/end of frame, the frame's template, a frame
/// number); a key frame's first packet also carries the structure — the templates (layer, decode
/// target indications, frame diffs, chain diffs) every later frame names by ID.

/// One decode target's indication for a frame (Appendix A.8.3, table A.1).
public enum DecodeTargetIndication: UInt8, Sendable, Equatable {
    /// `-`: the frame is not part of the decode target.
    case notPresent = 0
    /// `D`: part of it, no later frame of it depends on this one.
    case discardable = 1
    /// `S`: part of it, and a receiver may start decoding it here.
    case `switch` = 2
    /// `R`: part of it, and later frames depend on it.
    case required = 3
}

/// The template dependency structure: the frames' shapes that descriptors refer to by ID.
public struct FrameDependencyStructure: Sendable, Equatable {
    public struct Template: Sendable, Equatable {
        public var spatialID: Int
        public var temporalID: Int
        /// One indication per decode target.
        public var dtis: [DecodeTargetIndication]
        /// How many frames back each frame this one references is (1–16 in a template).
        public var frameDiffs: [Int]
        /// Per chain, the frames back to the previous frame of that chain (0–15).
        public var chainDiffs: [Int]

        public init(spatialID: Int = 0, temporalID: Int, dtis: [DecodeTargetIndication], frameDiffs: [Int], chainDiffs: [Int]) {
            self.spatialID = spatialID
            self.temporalID = temporalID
            self.dtis = dtis
            self.frameDiffs = frameDiffs
            self.chainDiffs = chainDiffs
        }
    }

    /// The first template's ID (template_id_offset, 0–63); template i is (offset + i) % 64.
    public var templateIDOffset: Int
    public var decodeTargets: Int
    public var chains: Int
    /// For each decode target, the chain that protects it.
    public var decodeTargetProtectedBy: [Int]
    public var templates: [Template]
    /// Render size per spatial layer (optional).
    public var resolutions: [(width: Int, height: Int)]

    public init(
        templateIDOffset: Int = 0, decodeTargets: Int, chains: Int, decodeTargetProtectedBy: [Int], templates: [Template],
        resolutions: [(width: Int, height: Int)] = []
    ) {
        self.templateIDOffset = templateIDOffset
        self.decodeTargets = decodeTargets
        self.chains = chains
        self.decodeTargetProtectedBy = decodeTargetProtectedBy
        self.templates = templates
        self.resolutions = resolutions
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.templateIDOffset == b.templateIDOffset && a.decodeTargets == b.decodeTargets && a.chains == b.chains
            && a.decodeTargetProtectedBy == b.decodeTargetProtectedBy && a.templates == b.templates
            && a.resolutions.elementsEqual(b.resolutions) { $0.width == $1.width && $0.height == $1.height }
    }

    /// pubbot's layering as a structure: `spatial` spatial layers (1–3, each predicted from the
    /// one below on key pictures only, the `_KEY` modes) of `temporal` temporal layers (1–3) in
    /// the 0-2-1-2 pattern of libwebrtc's L1T3 — T0 references the previous T0, a T2 the picture
    /// before, T1 the T0 two back, the second T2 also the T0 three back (pubbot's encoders
    /// reference LAST and GOLDEN there). As libwebrtc's scalability structures describe theirs: a
    /// decode target per (spatial, temporal) layer, spatial first; a chain per spatial layer over
    /// its T0 frames (on a key picture over the key frames of it and the layers below). Every
    /// spatial layer's frame of a picture is a frame of its own, lowest first. Templates by
    /// layer: per spatial layer the key-picture frame, T0, then the pattern's other steps by
    /// temporal ID (`template(spatial:…)` picks one). `sizes`: each spatial layer's, lowest first.
    public static func svc(spatial: Int, temporal: Int, sizes: [(width: Int, height: Int)]) -> FrameDependencyStructure {
        let S = max(1, min(3, spatial)), T = max(1, min(3, temporal))
        let period = [1, 2, 4][T - 1]
        let sw = DecodeTargetIndication.switch, d = DecodeTargetIndication.discardable, n = DecodeTargetIndication.notPresent
        // The pattern's steps after T0, by temporal ID: (pictures after the T0 picture, tid,
        // references in pictures, this spatial layer's dtis).
        let steps: [(k: Int, tid: Int, refs: [Int], dtis: [DecodeTargetIndication])] =
            switch T {
            case 2: [(1, 1, [1], [n, d])]
            case 3: [(2, 1, [2], [n, d, sw]), (1, 2, [1], [n, n, d]), (3, 2, [1, 3], [n, n, d])]
            default: []
            }
        var templates: [Template] = []
        for s in 0..<S {
            func dtis(_ own: [DecodeTargetIndication], above: DecodeTargetIndication) -> [DecodeTargetIndication] {
                (0..<S).flatMap { l in l == s ? own : [DecodeTargetIndication](repeating: l > s ? above : n, count: T) }
            }
            // The key picture's frame: every decode target of this layer and those above needs it.
            templates.append(
                Template(
                    spatialID: s, temporalID: 0, dtis: dtis([DecodeTargetIndication](repeating: sw, count: T), above: sw),
                    frameDiffs: s == 0 ? [] : [1], chainDiffs: (0..<S).map { c in c < s ? s - c : s == 0 ? 0 : 1 }))
            templates.append(
                Template(
                    spatialID: s, temporalID: 0, dtis: dtis([DecodeTargetIndication](repeating: sw, count: T), above: n),
                    frameDiffs: [period * S], chainDiffs: (0..<S).map { c in c < s ? s - c : period * S + s - c }))
            for st in steps {
                templates.append(
                    Template(
                        spatialID: s, temporalID: st.tid, dtis: dtis(st.dtis, above: n), frameDiffs: st.refs.map { $0 * S },
                        chainDiffs: (0..<S).map { c in st.k * S + s - c }))
            }
        }
        return FrameDependencyStructure(
            decodeTargets: S * T, chains: S, decodeTargetProtectedBy: (0..<S * T).map { $0 / T }, templates: templates,
            resolutions: Array(sizes.prefix(S)))
    }

    /// One spatial layer of `layers` temporal layers: `svc(spatial: 1, …)`.
    public static func temporal(layers: Int, width: Int, height: Int) -> FrameDependencyStructure {
        svc(spatial: 1, temporal: layers, sizes: [(width, height)])
    }

    /// The template index in `svc(spatial:temporal:…)` of spatial layer `spatial`'s frame: on a key
    /// picture, or of temporal layer `temporalID` (a T2 with two references is the pattern's
    /// second T2).
    public static func template(spatial: Int, temporalLayers: Int, keyPicture: Bool, temporalID: Int, references: Int) -> Int {
        let T = max(1, min(3, temporalLayers))
        let base = spatial * (T + (T == 3 ? 2 : 1))
        if keyPicture { return base }
        switch T {
        case 3: return base + [1, 2, references >= 2 ? 4 : 3][min(max(temporalID, 0), 2)]
        case 2: return base + 1 + min(max(temporalID, 0), 1)
        default: return base + 1
        }
    }
}

/// One packet's dependency descriptor.
public struct DependencyDescriptor: Sendable, Equatable {
    public var startOfFrame: Bool
    public var endOfFrame: Bool
    /// The template ID (0–63): (structure's offset + template index) % 64.
    public var templateID: Int
    /// The frame number, counting frames modulo 2^16.
    public var frameNumber: UInt16
    /// The structure, attached (a key frame's first packet).
    public var structure: FrameDependencyStructure?
    /// The frame's references when they are not its template's (a frame the encoder dropped
    /// moved them), frames back; written as custom fdiffs (A.8.4). nil: the template's.
    public var customFrameDiffs: [Int]?
    /// Likewise its chain diffs (frames back to each chain's previous frame, 0–255).
    public var customChainDiffs: [Int]?
    /// After parsing: the frame's template as read (custom fields applied).
    public var frame: FrameDependencyStructure.Template?

    public init(startOfFrame: Bool, endOfFrame: Bool, templateID: Int, frameNumber: UInt16, structure: FrameDependencyStructure? = nil) {
        self.startOfFrame = startOfFrame
        self.endOfFrame = endOfFrame
        self.templateID = templateID & 63
        self.frameNumber = frameNumber
        self.structure = structure
    }

    /// The largest descriptor pubbot writes for `structure` (with it attached), in bytes.
    public static func maxSize(_ structure: FrameDependencyStructure) -> Int {
        var d = DependencyDescriptor(startOfFrame: true, endOfFrame: true, templateID: 0, frameNumber: 0, structure: structure)
        var bits = BitWriter()
        d.frame = nil
        d.encode(&bits)
        return bits.byteCount
    }

    /// The descriptor's bytes (Appendix A.2: mandatory fields, then — with a structure — the
    /// extended fields; zero bits up to the byte).
    public func bytes() -> [UInt8] {
        var bits = BitWriter()
        encode(&bits)
        return bits.bytes
    }

    func encode(_ w: inout BitWriter) {
        w.put(startOfFrame ? 1 : 0, 1)
        w.put(endOfFrame ? 1 : 0, 1)
        w.put(UInt64(templateID & 63), 6)
        w.put(UInt64(frameNumber), 16)
        let fdiffs = customFrameDiffs, chains = customChainDiffs
        guard structure != nil || fdiffs != nil || chains != nil else { return }
        // template_dependency_structure_present, no active decode targets (all active), no custom
        // dtis, custom fdiffs, custom chains
        w.put(structure != nil ? 1 : 0, 1)
        w.put(0, 2)
        w.put(fdiffs != nil ? 1 : 0, 1)
        w.put(chains != nil ? 1 : 0, 1)
        if let s = structure { Self.encode(s, &w) }
        if let fdiffs {
            for f in fdiffs where f >= 1 {
                let size = f - 1 < 16 ? 1 : f - 1 < 256 ? 2 : 3
                w.put(UInt64(size), 2)
                w.put(UInt64(min(f - 1, 4095)), 4 * size)
            }
            w.put(0, 2)
        }
        if let chains { for c in chains { w.put(UInt64(max(0, min(255, c))), 8) } }
    }

    static func encode(_ s: FrameDependencyStructure, _ w: inout BitWriter) {
        w.put(UInt64(s.templateIDOffset & 63), 6)
        w.put(UInt64(s.decodeTargets - 1), 5)
        // template_layers: next_layer_idc after each template (A.8.2).
        for (i, t) in s.templates.enumerated() {
            guard i + 1 < s.templates.count else { w.put(3, 2); break }
            let n = s.templates[i + 1]
            w.put(n.spatialID > t.spatialID ? 2 : n.temporalID > t.temporalID ? 1 : 0, 2)
        }
        for t in s.templates { for d in t.dtis { w.put(UInt64(d.rawValue), 2) } }
        for t in s.templates {
            for f in t.frameDiffs {
                w.put(1, 1)
                w.put(UInt64(f - 1), 4)
            }
            w.put(0, 1)
        }
        w.nonSymmetric(s.chains, count: s.decodeTargets + 1)
        if s.chains > 0 {
            for p in s.decodeTargetProtectedBy { w.nonSymmetric(p, count: s.chains) }
            for t in s.templates { for c in t.chainDiffs { w.put(UInt64(c), 4) } }
        }
        w.put(s.resolutions.isEmpty ? 0 : 1, 1)
        for r in s.resolutions {
            w.put(UInt64(r.width - 1), 16)
            w.put(UInt64(r.height - 1), 16)
        }
    }

    /// Reads a descriptor (Appendix A.2). `known`: the structure last attached on the stream,
    /// for a descriptor that does not attach one. Total: anything short, inconsistent or naming
    /// a template that does not exist throws.
    public static func parse(_ b: Span<UInt8>, known: FrameDependencyStructure?) throws(RTPParseError) -> DependencyDescriptor {
        guard b.count >= 3 else { throw .truncated }
        var r = DescriptorBitReader(b.copyBytes(0..<b.count))
        var d = DependencyDescriptor(
            startOfFrame: try r.bit(), endOfFrame: try r.bit(), templateID: Int(try r.bits(6)), frameNumber: UInt16(try r.bits(16)))
        var activePresent = false, customDTIs = false, customFdiffs = false, customChains = false
        if b.count > 3 {
            let structurePresent = try r.bit()
            activePresent = try r.bit()
            customDTIs = try r.bit()
            customFdiffs = try r.bit()
            customChains = try r.bit()
            if structurePresent { d.structure = try readStructure(&r) }
        }
        guard let s = d.structure ?? known else { throw .badPayload }
        if activePresent { _ = try r.bits(s.decodeTargets) }
        let index = (d.templateID + 64 - s.templateIDOffset) % 64
        guard index < s.templates.count else { throw .badPayload }
        var f = s.templates[index]
        if customDTIs {
            for i in f.dtis.indices { f.dtis[i] = DecodeTargetIndication(rawValue: UInt8(try r.bits(2)))! }
        }
        if customFdiffs {
            f.frameDiffs = []
            while true {
                let size = Int(try r.bits(2))
                if size == 0 { break }
                guard f.frameDiffs.count < 32 else { throw .badPayload }
                f.frameDiffs.append(Int(try r.bits(4 * size)) + 1)
            }
        }
        if customChains {
            for i in f.chainDiffs.indices { f.chainDiffs[i] = Int(try r.bits(8)) }
        }
        d.frame = f
        return d
    }

    static func readStructure(_ r: inout DescriptorBitReader) throws(RTPParseError) -> FrameDependencyStructure {
        let offset = Int(try r.bits(6))
        let targets = Int(try r.bits(5)) + 1
        var templates: [FrameDependencyStructure.Template] = []
        var sid = 0, tid = 0
        while true {
            // libwebrtc's reader stops at 64 templates (`DependencyDescriptor::kMaxTemplates`).
            guard templates.count < 64 else { throw .badPayload }
            templates.append(.init(spatialID: sid, temporalID: tid, dtis: [], frameDiffs: [], chainDiffs: []))
            let next = try r.bits(2)
            if next == 3 { break }
            if next == 1 { tid += 1 }
            if next == 2 { tid = 0; sid += 1 }
            guard tid <= 7, sid <= 3 else { throw .badPayload }
        }
        for i in templates.indices {
            for _ in 0..<targets { templates[i].dtis.append(DecodeTargetIndication(rawValue: UInt8(try r.bits(2)))!) }
        }
        for i in templates.indices {
            while try r.bit() {
                guard templates[i].frameDiffs.count < 16 else { throw .badPayload }
                templates[i].frameDiffs.append(Int(try r.bits(4)) + 1)
            }
        }
        let chains = try r.nonSymmetric(targets + 1)
        var protectedBy: [Int] = []
        if chains > 0 {
            for _ in 0..<targets { protectedBy.append(try r.nonSymmetric(chains)) }
            for i in templates.indices { for _ in 0..<chains { templates[i].chainDiffs.append(Int(try r.bits(4))) } }
        }
        var resolutions: [(width: Int, height: Int)] = []
        if try r.bit() {
            for _ in 0...templates.last!.spatialID { resolutions.append((Int(try r.bits(16)) + 1, Int(try r.bits(16)) + 1)) }
        }
        return FrameDependencyStructure(
            templateIDOffset: offset, decodeTargets: targets, chains: chains, decodeTargetProtectedBy: protectedBy, templates: templates,
            resolutions: resolutions)
    }
}

/// Bits, most significant first, into bytes.
struct BitWriter {
    var bytes: [UInt8] = []
    var used = 0 // bits used in the last byte (0: a new byte next)

    var byteCount: Int { bytes.count }

    mutating func put(_ value: UInt64, _ count: Int) {
        var n = count
        while n > 0 {
            if used == 0 { bytes.append(0) }
            let room = 8 - used
            let take = min(room, n)
            let chunk = UInt8(truncatingIfNeeded: (value >> UInt64(n - take)) & ((1 << UInt64(take)) - 1))
            bytes[bytes.count - 1] |= chunk << UInt8(room - take)
            used = (used + take) % 8
            n -= take
        }
    }

    /// ns(n) (Appendix A.3 / AV1 §4.10.7): `value` of `count` possible values.
    mutating func nonSymmetric(_ value: Int, count n: Int) {
        var w = 0
        var x = n
        while x != 0 { x >>= 1; w += 1 }
        let m = (1 << w) - n
        if value < m {
            put(UInt64(value), w - 1)
        } else {
            put(UInt64(value + m), w)
        }
    }
}

/// Bits, most significant first, from bytes; reading past the end throws.
struct DescriptorBitReader {
    let b: [UInt8]
    var position = 0

    init(_ b: [UInt8]) { self.b = b }

    mutating func bit() throws(RTPParseError) -> Bool { try bits(1) == 1 }

    mutating func bits(_ n: Int) throws(RTPParseError) -> UInt64 {
        guard n >= 0, n <= 64, position + n <= b.count * 8 else { throw .truncated }
        var v: UInt64 = 0
        for _ in 0..<n {
            let byte = b[position >> 3]
            v = v << 1 | UInt64((byte >> UInt8(7 - position & 7)) & 1)
            position += 1
        }
        return v
    }

    mutating func nonSymmetric(_ n: Int) throws(RTPParseError) -> Int {
        var w = 0
        var x = n
        while x != 0 { x >>= 1; w += 1 }
        let m = (1 << w) - n
        let v = Int(try bits(w - 1))
        if v < m { return v }
        return (v << 1) - m + Int(try bits(1))
    }
}
