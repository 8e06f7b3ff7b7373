/// RFC 8285 header extensions: element iteration for both forms, and the extension ids pubbot uses.
///
/// One-byte form (profile 0xBEDE), element header `ID(4) L(4)` with length L+1 (1–16), ids 1–14,
/// id 15 stops parsing. Two-byte form (profile 0x100X), element header `ID(8) L(8)`, length 0–255.
/// In both forms a zero byte between elements is padding.
public struct HeaderExtensionElement: Equatable, Sendable {
    public var id: UInt8
    /// Byte range of the element's data inside the packet.
    public var range: Range<Int>
}

public struct HeaderExtensionIterator: Sendable {
    static let oneByteProfile: UInt16 = 0xBEDE
    static let twoByteProfileMask: UInt16 = 0xFFF0
    static let twoByteProfile: UInt16 = 0x1000

    let oneByte: Bool
    let known: Bool
    var offset: Int
    let end: Int

    init(profile: UInt16, range: Range<Int>) {
        oneByte = profile == Self.oneByteProfile
        known = oneByte || profile & Self.twoByteProfileMask == Self.twoByteProfile
        offset = range.lowerBound
        end = range.upperBound
    }

    /// The next element, or nil at the end (or for an unknown profile, whose block is opaque).
    public mutating func next(in b: Span<UInt8>) throws(RTPParseError) -> HeaderExtensionElement? {
        guard known, end <= b.count else { return nil }
        while offset < end {
            let first = b[offset]
            if first == 0 { offset += 1; continue } // padding
            if oneByte {
                let id = first >> 4
                if id == 15 { offset = end; return nil }
                let len = Int(first & 0x0F) + 1
                let start = offset + 1
                guard start + len <= end else { throw .badExtension }
                offset = start + len
                return HeaderExtensionElement(id: id, range: start..<(start + len))
            } else {
                guard offset + 2 <= end else { throw .badExtension }
                let len = Int(b[offset + 1])
                let start = offset + 2
                guard start + len <= end else { throw .badExtension }
                offset = start + len
                return HeaderExtensionElement(id: first, range: start..<(start + len))
            }
        }
        return nil
    }
}

/// The header extensions pubbot negotiates, with their SDP URIs and the ids it uses.
public enum RTPExtension: UInt8, CaseIterable, Sendable {
    case absSendTime = 2
    case transportSequenceNumber = 3
    case mid = 4
    case rid = 10
    case repairedRid = 11
    /// The AV1 RTP format's Dependency Descriptor (`DependencyDescriptor`).
    case dependencyDescriptor = 12

    public var id: UInt8 { rawValue }

    public var uri: String {
        switch self {
        case .absSendTime: "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
        case .transportSequenceNumber: "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
        case .mid: "urn:ietf:params:rtp-hdrext:sdes:mid"
        case .rid: "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"
        case .repairedRid: "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"
        case .dependencyDescriptor: "https://aomediacodec.github.io/av1-rtp-spec/#dependency-descriptor-rtp-header-extension"
        }
    }
}

/// The IDs a stream's header uses for each extension (RFC 8285 §5: the answer decides them);
/// nil leaves the extension out (not negotiated).
public struct RTPExtensionIDs: Sendable, Equatable {
    public var mid: UInt8?
    public var rid: UInt8?
    public var repairedRid: UInt8?
    public var absSendTime: UInt8?
    public var transportSequence: UInt8?
    /// The Dependency Descriptor's ID, when negotiated and sent (AV1 only; it needs the two-byte
    /// form for its structure, so also `a=extmap-allow-mixed`, RFC 8285 §6). Not in `standard`.
    public var dependencyDescriptor: UInt8?

    public init(
        mid: UInt8? = RTPExtension.mid.id, rid: UInt8? = RTPExtension.rid.id, repairedRid: UInt8? = RTPExtension.repairedRid.id,
        absSendTime: UInt8? = RTPExtension.absSendTime.id, transportSequence: UInt8? = RTPExtension.transportSequenceNumber.id
    ) {
        self.mid = mid
        self.rid = rid
        self.repairedRid = repairedRid
        self.absSendTime = absSendTime
        self.transportSequence = transportSequence
    }

    /// pubbot's own numbering (what its SDES SDP and its receiver use).
    public static let standard = RTPExtensionIDs()

    /// From an answer's `a=extmap` (URI → ID); what it left out is not sent.
    public init(negotiated: [String: Int]) {
        func id(_ e: RTPExtension) -> UInt8? { negotiated[e.uri].flatMap { (1...255).contains($0) ? UInt8($0) : nil } }
        self.init(
            mid: id(.mid), rid: id(.rid), repairedRid: id(.repairedRid), absSendTime: id(.absSendTime),
            transportSequence: id(.transportSequenceNumber))
        dependencyDescriptor = id(.dependencyDescriptor)
    }
}

/// Values of the extensions pubbot understands, read from one packet (receive side).
public struct RTPExtensionValues: Equatable, Sendable {
    public var transportSequenceNumber: UInt16?
    public var absSendTime: UInt32?
    public var mid: String?
    public var rid: String?
    public var repairedRid: String?
    /// Where the Dependency Descriptor's bytes are in the packet (parsed by the receiver, which
    /// keeps the structure it needs).
    public var dependencyDescriptor: Range<Int>?

    public init() {}

    /// - Parameter ids: the IDs this sender negotiated (a WebRTC answer echoes the offer's);
    ///   nil: pubbot's own numbering.
    public static func parse(_ b: Span<UInt8>, header: RTPHeader, ids: RTPExtensionIDs? = nil) throws(RTPParseError) -> RTPExtensionValues {
        var v = RTPExtensionValues()
        var it = header.extensions()
        while let e = try it.next(in: b) {
            let kind: RTPExtension?
            if let ids {
                kind =
                    e.id == ids.transportSequence
                    ? .transportSequenceNumber
                    : e.id == ids.absSendTime
                        ? .absSendTime
                        : e.id == ids.mid
                            ? .mid
                            : e.id == ids.rid
                                ? .rid
                                : e.id == ids.repairedRid ? .repairedRid : e.id == ids.dependencyDescriptor ? .dependencyDescriptor : nil
            } else {
                kind = RTPExtension(rawValue: e.id)
            }
            switch kind {
            case .transportSequenceNumber:
                guard e.range.count == 2 else { throw .badExtension }
                v.transportSequenceNumber = b.be16(e.range.lowerBound)
            case .absSendTime:
                guard e.range.count == 3 else { throw .badExtension }
                v.absSendTime = b.be24(e.range.lowerBound)
            case .mid: v.mid = ascii(b, e.range)
            case .rid: v.rid = ascii(b, e.range)
            case .repairedRid: v.repairedRid = ascii(b, e.range)
            case .dependencyDescriptor: v.dependencyDescriptor = e.range
            case nil: break
            }
        }
        return v
    }

    static func ascii(_ b: Span<UInt8>, _ r: Range<Int>) -> String {
        var s = ""
        for i in r where b[i] >= 0x20 && b[i] < 0x7F { s.unicodeScalars.append(Unicode.Scalar(b[i])) }
        return s
    }
}
