/// VP8 payload descriptor (RFC 7741 §4.2).
///
/// ```
///       0 1 2 3 4 5 6 7
///      +-+-+-+-+-+-+-+-+
///      |X|R|N|S|R| PID | (REQUIRED)
///      +-+-+-+-+-+-+-+-+
/// X:   |I|L|T|K| RSV   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// I:   |M| PictureID   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
///      |   PictureID   | (second byte when M = 1: 15-bit PictureID)
///      +-+-+-+-+-+-+-+-+
/// L:   |   TL0PICIDX   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// T/K: |TID|Y| KEYIDX  | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// ```
public struct VP8PayloadDescriptor: Equatable, Sendable {
    /// N: the frame is not used as a reference and may be dropped.
    public var nonReference: Bool
    /// S: the packet starts a VP8 partition (always set on a frame's first packet).
    public var startOfPartition: Bool
    /// PID: partition index (pubbot always writes 0, like libwebrtc).
    public var partitionID: UInt8
    /// PictureID; written as 15 bits (M = 1). A parsed 7-bit id sets `shortPictureID`.
    public var pictureID: UInt16?
    public var shortPictureID: Bool
    public var tl0PicIdx: UInt8?
    /// TID (0–3), present when temporal layering is on.
    public var temporalID: UInt8?
    /// Y: layer sync, meaningful with `temporalID`.
    public var layerSync: Bool
    public var keyIndex: UInt8?

    public init(
        nonReference: Bool = false, startOfPartition: Bool = false, partitionID: UInt8 = 0,
        pictureID: UInt16? = nil, tl0PicIdx: UInt8? = nil, temporalID: UInt8? = nil,
        layerSync: Bool = false, keyIndex: UInt8? = nil
    ) {
        self.nonReference = nonReference
        self.startOfPartition = startOfPartition
        self.partitionID = partitionID
        self.pictureID = pictureID
        shortPictureID = false
        self.tl0PicIdx = tl0PicIdx
        self.temporalID = temporalID
        self.layerSync = layerSync
        self.keyIndex = keyIndex
    }

    @usableFromInline var hasExtension: Bool { pictureID != nil || tl0PicIdx != nil || temporalID != nil || keyIndex != nil }

    /// Bytes this descriptor occupies on the wire.
    public var size: Int {
        guard hasExtension else { return 1 }
        var n = 2
        if pictureID != nil { n += shortPictureID ? 1 : 2 }
        if tl0PicIdx != nil { n += 1 }
        if temporalID != nil || keyIndex != nil { n += 1 }
        return n
    }

    @inlinable
    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        try w.require(size)
        let ext = hasExtension
        w.u8((ext ? 0x80 : 0) | (nonReference ? 0x20 : 0) | (startOfPartition ? 0x10 : 0) | (partitionID & 0x0F))
        guard ext else { return }
        w.u8((pictureID != nil ? 0x80 : 0) | (tl0PicIdx != nil ? 0x40 : 0) | (temporalID != nil ? 0x20 : 0) | (keyIndex != nil ? 0x10 : 0))
        if let pictureID {
            if shortPictureID { w.u8(UInt8(pictureID & 0x7F)) } else { w.u16(0x8000 | (pictureID & 0x7FFF)) }
        }
        if let tl0PicIdx { w.u8(tl0PicIdx) }
        if temporalID != nil || keyIndex != nil {
            w.u8(((temporalID ?? 0) & 0x03) << 6 | (layerSync ? 0x20 : 0) | ((keyIndex ?? 0) & 0x1F))
        }
    }

    /// The descriptor's bytes as `write` lays them out, little-endian in a word (at most 6), and
    /// their count: built with shifts, for a packetizer that lays it out once per frame.
    @inlinable
    public var packed: (bytes: UInt64, count: Int) {
        let ext = hasExtension
        var v = UInt64((ext ? 0x80 : 0) | (nonReference ? 0x20 : 0) | (startOfPartition ? 0x10 : 0) | (partitionID & 0x0F))
        guard ext else { return (v, 1) }
        let present =
            (pictureID != nil ? 0x80 : 0) | (tl0PicIdx != nil ? 0x40 : 0) | (temporalID != nil ? 0x20 : 0)
            | (keyIndex != nil ? 0x10 : 0)
        v |= UInt64(present) << 8
        var n = 2
        if let pictureID {
            if shortPictureID {
                v |= UInt64(pictureID & 0x7F) << 16
                n = 3
            } else {
                let id = 0x8000 | (pictureID & 0x7FFF)
                v |= UInt64(id >> 8) << 16 | UInt64(id & 0xFF) << 24
                n = 4
            }
        }
        if let tl0PicIdx {
            v |= UInt64(tl0PicIdx) << (8 * UInt64(n))
            n += 1
        }
        if temporalID != nil || keyIndex != nil {
            v |= UInt64(((temporalID ?? 0) & 0x03) << 6 | (layerSync ? 0x20 : 0) | ((keyIndex ?? 0) & 0x1F)) << (8 * UInt64(n))
            n += 1
        }
        return (v, n)
    }

    /// Parses a descriptor at the start of a VP8 RTP payload; returns it and its size.
    public static func parse(_ b: Span<UInt8>) throws(RTPParseError) -> (VP8PayloadDescriptor, Int) {
        guard b.count >= 1 else { throw .truncated }
        let b0 = b[0]
        var d = VP8PayloadDescriptor(nonReference: b0 & 0x20 != 0, startOfPartition: b0 & 0x10 != 0, partitionID: b0 & 0x0F)
        var i = 1
        guard b0 & 0x80 != 0 else { return (d, i) }
        guard b.count > i else { throw .truncated }
        let x = b[i]; i += 1
        if x & 0x80 != 0 {
            guard b.count > i else { throw .truncated }
            if b[i] & 0x80 != 0 {
                guard b.count > i + 1 else { throw .truncated }
                d.pictureID = b.be16(i) & 0x7FFF; i += 2
            } else {
                d.pictureID = UInt16(b[i]); d.shortPictureID = true; i += 1
            }
        }
        if x & 0x40 != 0 {
            guard b.count > i else { throw .truncated }
            d.tl0PicIdx = b[i]; i += 1
        }
        if x & 0x30 != 0 {
            guard b.count > i else { throw .truncated }
            let tk = b[i]; i += 1
            if x & 0x20 != 0 { d.temporalID = tk >> 6; d.layerSync = tk & 0x20 != 0 }
            if x & 0x10 != 0 { d.keyIndex = tk & 0x1F }
        }
        return (d, i)
    }
}

/// The first bytes of a VP8 frame (RFC 7741 §4.3 / RFC 6386 §9.1): key-frame flag and, for key
/// frames, the picture size.
public struct VP8FrameHeader: Equatable, Sendable {
    public var isKeyFrame: Bool
    public var showFrame: Bool
    public var width: Int?
    public var height: Int?

    public static func parse(_ b: Span<UInt8>) throws(RTPParseError) -> VP8FrameHeader {
        guard b.count >= 3 else { throw .badPayload }
        let key = b[0] & 0x01 == 0
        var h = VP8FrameHeader(isKeyFrame: key, showFrame: b[0] & 0x10 != 0)
        if key {
            guard b.count >= 10, b[3] == 0x9D, b[4] == 0x01, b[5] == 0x2A else { throw .badPayload }
            h.width = Int(UInt16(b[7] & 0x3F) << 8 | UInt16(b[6]))
            h.height = Int(UInt16(b[9] & 0x3F) << 8 | UInt16(b[8]))
        }
        return h
    }
}
