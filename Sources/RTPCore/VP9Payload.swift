/// The VP9 payload descriptor (RFC 9628 §4.2, draft-ietf-payload-vp9):
///
///     |I|P|L|F|B|E|V|Z|   I: picture ID present, P: inter-picture predicted, L: layer indices,
///     |M| PICTURE ID  |   F: flexible mode, B/E: start/end of a layer frame, V: scalability
///     | EXTENDED PID  |   structure present, Z: not a reference for the next spatial layer
///     |TID|U| SID |D|     (L)  and in non-flexible mode then TL0PICIDX
///     | P_DIFF    |N|     (P and F) up to 3 times
///     | SS …          |   (V)
public struct VP9PayloadDescriptor: Sendable, Equatable {
    public var pictureID: UInt16?
    public var interPicturePredicted = false
    public var flexible = false
    public var beginningOfFrame = false
    public var endOfFrame = false
    public var notUsedForInterLayerPrediction = false
    /// Layer indices (L): temporal ID, switching-up point, spatial ID, inter-layer dependency.
    public var temporalID: UInt8?
    public var switchingUp = false
    public var spatialID: UInt8 = 0
    public var interLayerDependency = false
    /// Non-flexible mode with L: the base temporal layer's picture index.
    public var tl0PicIdx: UInt8?
    /// Flexible mode: the reference pictures as picture ID differences (1–3 of them).
    public var pDiffs: [UInt8] = []
    /// The scalability structure (V): each spatial layer's size, when given.
    public var scalability: Scalability?

    public struct Scalability: Sendable, Equatable {
        /// Width and height of each spatial layer, lowest first (empty when Y = 0).
        public var sizes: [(width: Int, height: Int)]
        public var spatialLayers: Int

        public init(sizes: [(width: Int, height: Int)]) {
            self.sizes = sizes
            spatialLayers = max(1, sizes.count)
        }

        public static func == (a: Scalability, b: Scalability) -> Bool {
            a.spatialLayers == b.spatialLayers && a.sizes.elementsEqual(b.sizes) { $0.width == $1.width && $0.height == $1.height }
        }
    }

    public init() {}

    /// Reads a descriptor; returns it and its size. Total: throws on anything short or malformed.
    public static func parse(_ b: Span<UInt8>) throws(RTPParseError) -> (VP9PayloadDescriptor, Int) {
        guard b.count >= 1 else { throw .truncated }
        var d = VP9PayloadDescriptor()
        let f = b[0]
        d.interPicturePredicted = f & 0x40 != 0
        d.flexible = f & 0x10 != 0
        d.beginningOfFrame = f & 0x08 != 0
        d.endOfFrame = f & 0x04 != 0
        d.notUsedForInterLayerPrediction = f & 0x01 != 0
        var i = 1
        func byte() throws(RTPParseError) -> UInt8 {
            guard i < b.count else { throw .truncated }
            defer { i += 1 }
            return b[i]
        }
        if f & 0x80 != 0 {
            let m = try byte()
            d.pictureID = m & 0x80 != 0 ? UInt16(m & 0x7F) << 8 | UInt16(try byte()) : UInt16(m)
        }
        if f & 0x20 != 0 {
            let l = try byte()
            d.temporalID = l >> 5
            d.switchingUp = l & 0x10 != 0
            d.spatialID = (l >> 1) & 0x07
            d.interLayerDependency = l & 0x01 != 0
            if !d.flexible { d.tl0PicIdx = try byte() }
        }
        if d.flexible && d.interPicturePredicted {
            while true {
                let p = try byte()
                d.pDiffs.append(p >> 1)
                if p & 1 == 0 { break }
                guard d.pDiffs.count < 3 else { throw .badPayload }
            }
        }
        if f & 0x02 != 0 {
            let s = try byte()
            let layers = Int(s >> 5) + 1
            var sizes: [(width: Int, height: Int)] = []
            if s & 0x10 != 0 {
                for _ in 0..<layers {
                    let w = Int(try byte()) << 8 | Int(try byte())
                    let h = Int(try byte()) << 8 | Int(try byte())
                    sizes.append((w, h))
                }
            }
            if s & 0x08 != 0 {
                let groups = Int(try byte())
                for _ in 0..<groups {
                    let g = try byte()
                    for _ in 0..<Int((g >> 2) & 0x03) { _ = try byte() }
                }
            }
            var ss = Scalability(sizes: sizes)
            ss.spatialLayers = layers
            d.scalability = ss
        }
        return (d, i)
    }
}

/// Splits one VP9 picture into RTP payloads (RFC 9628 §4): each spatial layer's frame into
/// packets of about equal size (libwebrtc `rtp_format_vp9.cc` splits about equally too), as a
/// pull iterator writing into caller storage: no allocation. Flexible mode, as libwebrtc sends
/// VP9: picture ID (15 bits), layer indices (TID, U, SID, D), an inter picture's references as
/// P_DIFFs (up to 3, the same spatial layer's earlier pictures), and on a key picture's first
/// packet the scalability structure with every spatial layer's size. With spatial layers (the
/// `_KEY` modes), a key picture's upper layers depend on the layer below (D = 1) and no layer is
/// inter-picture predicted there; on other pictures no layer serves inter-layer prediction
/// (Z = 1), as libwebrtc's `libvpx_vp9_encoder.cc` marks them. The RTP marker (the picture's last
/// packet) is the caller's.
public struct VP9Packetizer {
    public let packetCount: Int
    @inlinable public var index: Int { _index }
    @usableFromInline var _index = 0
    @usableFromInline let keyFrame: Bool
    @usableFromInline let layers: Int
    /// Each spatial layer's picture size, width << 16 | height (for the scalability structure).
    @usableFromInline var sizes: InlineArray<3, UInt32> = .init(repeating: 0)
    /// The descriptor's bytes up to its P_DIFFs, laid out once per picture (little-endian, at
    /// most 7 bytes): I, P, L and F, the picture ID, TID and U, the P_DIFFs.
    @usableFromInline let descriptor: UInt64
    @usableFromInline let headerSize: Int
    @usableFromInline let ssSize: Int
    /// Per spatial layer: its packets, and its bytes (with the scalability structure on the
    /// lowest) shared about equally among them.
    @usableFromInline var splits: InlineArray<3, PayloadSplit> = .init(repeating: PayloadSplit(0, into: 1))
    @usableFromInline var layer = 0
    /// The current layer's figures, so a packet reads no per-layer array: its packets, its
    /// packet sizes, and its descriptor (`descriptor` with the layer's SID, D and Z).
    @usableFromInline var layerSplit = PayloadSplit(0, into: 1)
    @usableFromInline var layerDescriptor: UInt64 = 0
    @usableFromInline var inLayer = 0
    @usableFromInline var offset = 0

    /// - Parameters:
    ///   - frameSize: encoded picture bytes (every spatial layer's frame in turn).
    ///   - maxPayloadSize: room for descriptor + payload in one packet.
    ///   - width, height: the picture's size (one spatial layer).
    ///   - temporalID, switchingUp: the picture's temporal layer and U bit.
    ///   - references: an inter picture's P_DIFFs (pictures back; the first 3 count, 1–127);
    ///     empty means the previous picture.
    ///   - spatialLayers: with spatial layers, each one's frame size and picture size, lowest
    ///     first (at most 3; the sizes add up to `frameSize`); empty: one layer.
    @inlinable @inline(__always)
    public init(
        frameSize: Int, maxPayloadSize: Int, pictureID: UInt16, keyFrame: Bool, width: Int, height: Int,
        temporalID: UInt8 = 0, switchingUp: Bool = false, references: [UInt8] = [],
        spatialLayers: [(size: Int, width: Int, height: Int)] = []
    ) throws(RTPWriteError) {
        // RFC 9628 §4.2, flexible mode: I (picture ID present), P on an inter picture, L (layer
        // indices present), F (flexible); the 15-bit picture ID (M set); TID and U.
        let pid = pictureID & 0x7FFF
        var d = UInt64(0x80 | 0x20 | 0x10 | (keyFrame ? 0 : 0x40))
        d |= UInt64(0x80 | UInt8(pid >> 8)) << 8 | UInt64(UInt8(truncatingIfNeeded: pid)) << 16
        d |= UInt64((temporalID & 7) << 5 | (switchingUp ? 0x10 : 0)) << 24
        // An inter picture's P_DIFFs (at most 3, each with N set when another follows).
        var count = 0
        if !keyFrame {
            for r in references where count < 3 && (1...127).contains(r) {
                d |= UInt64(r << 1) << (32 + 8 * count)
                count += 1
            }
            if count == 0 {
                d |= UInt64(1 << 1) << 32 // the previous picture
                count = 1
            }
            for i in 0..<(count - 1) { d |= 1 << (32 + 8 * i) }
        }
        descriptor = d
        headerSize = 1 + 2 + 1 + count
        // No array is made for one layer: the bench holds the packetizer to 0 allocations.
        layers = spatialLayers.isEmpty ? 1 : min(3, spatialLayers.count)
        ssSize = keyFrame ? 1 + 4 * layers : 0
        let room = maxPayloadSize - headerSize
        guard room > ssSize else { throw .bufferTooSmall(needed: headerSize + ssSize + 1, available: maxPayloadSize) }
        self.keyFrame = keyFrame
        if spatialLayers.isEmpty {
            sizes[0] = Self.size(width, height)
            let bytes = frameSize + ssSize
            var n = max(1, (bytes + room - 1) / room)
            // The first packet must hold the scalability structure and a byte of the frame.
            if ssSize > 0 { while bytes / n <= ssSize && n > 1 { n -= 1 } }
            splits[0] = PayloadSplit(bytes, into: n)
            packetCount = n
        } else {
            var sum = 0, total = 0
            for s in 0..<layers {
                let l = spatialLayers[s]
                sizes[s] = Self.size(l.width, l.height)
                sum += l.size
                let bytes = l.size + (s == 0 ? ssSize : 0)
                var n = max(1, (bytes + room - 1) / room)
                if s == 0 && ssSize > 0 { while bytes / n <= ssSize && n > 1 { n -= 1 } }
                splits[s] = PayloadSplit(bytes, into: n)
                total += n
            }
            guard sum == frameSize, spatialLayers.count <= 3 else { throw .valueOutOfRange }
            packetCount = total
        }
        enter(layer: 0)
    }

    @inlinable
    static func size(_ width: Int, _ height: Int) -> UInt32 {
        UInt32(UInt16(clamping: width)) << 16 | UInt32(UInt16(clamping: height))
    }

    /// Makes spatial layer `s` the current one.
    @inlinable
    mutating func enter(layer s: Int) {
        layer = s
        inLayer = 0
        guard s < layers else { return }
        layerSplit = splits[s]
        // Z where no layer above predicts from this one; SID, and D on a key picture's upper
        // layers.
        let z: UInt64 = !keyFrame || s + 1 == layers ? 0x01 : 0
        let sid = UInt64(s) << 1 | (keyFrame && s > 0 ? 1 : 0)
        layerDescriptor = descriptor | z | sid << 24
    }

    /// Writes the next packet's descriptor and payload. Returns whether it is the picture's last
    /// packet (its RTP marker), or nil when done.
    @inlinable @inline(__always)
    public mutating func next(frame: Span<UInt8>, into w: inout ByteWriter) throws(RTPWriteError) -> Bool? {
        guard _index < packetCount else { return nil }
        // Sizes and offsets are bounded by the picture's size, an Int of real memory: the
        // wrapping operators only drop overflow checks that cannot fire.
        let first = inLayer == 0, last = inLayer &+ 1 == layerSplit.count
        let share = layerSplit.size(of: inLayer)
        // B on a layer frame's first packet, E on its last.
        var flags: UInt64 = first ? 0x08 : 0
        if last { flags |= 0x04 }
        let bytes: Int
        if _index == 0 && ssSize > 0 {
            // V: the scalability structure, on the key picture's first packet.
            bytes = share &- ssSize
            try w.require(headerSize &+ share)
            w.packed(layerDescriptor | flags | 0x02, count: headerSize)
            w.u8(UInt8(layers - 1) << 5 | 0x10) // N_S, Y 1, G 0
            for l in 0..<layers {
                w.u16(UInt16(truncatingIfNeeded: sizes[l] >> 16))
                w.u16(UInt16(truncatingIfNeeded: sizes[l]))
            }
        } else {
            bytes = share
            try w.require(headerSize &+ share)
            w.packed(layerDescriptor | flags, count: headerSize)
        }
        w.copy(frame, from: offset, count: bytes)
        offset &+= bytes
        _index &+= 1
        if last {
            enter(layer: layer &+ 1)
        } else {
            inLayer &+= 1
        }
        return _index == packetCount
    }
}

extension VP9PayloadDescriptor {
    /// Whether a VP9 frame (the uncompressed header, VP9 bitstream §6.2) is a key frame:
    /// frame_marker 2, profile, show_existing_frame 0, frame_type 0.
    public static func isKeyFrame(_ frame: Span<UInt8>) -> Bool {
        guard frame.count >= 1, frame[0] >> 6 == 2 else { return false }
        let profile = (frame[0] >> 5) & 1 | ((frame[0] >> 4) & 1) << 1
        // Profile 3 has a reserved zero bit before show_existing_frame.
        let shift: UInt8 = profile == 3 ? 2 : 3
        let showExisting = (frame[0] >> shift) & 1
        let frameType = (frame[0] >> (shift - 1)) & 1
        return showExisting == 0 && frameType == 0
    }
}
