/// One packet of an RTCP compound, as an enum with payloads (no existentials per packet).
public enum RTCPPacket: Equatable, Sendable {
    case senderReport(SenderReport)
    case receiverReport(ReceiverReport)
    case sourceDescription(SourceDescription)
    case goodbye(Goodbye)
    case nack(GenericNACK)
    case pictureLossIndication(PictureLossIndication)
    case fullIntraRequest(FullIntraRequest)
    case remb(ReceiverEstimatedMaxBitrate)
    case transportFeedback(TransportFeedback)
    case application(ApplicationDefined)
    /// A packet type pubbot does not interpret yet (feedback, APP, …): type, count/FMT, size.
    case unknown(packetType: UInt8, count: UInt8, size: Int)
}

/// Walks the packets of an RTCP compound (RFC 3550 §6.1) without building an array; the
/// iterator keeps only an offset, the bytes are passed to each call.
public struct RTCPCompoundIterator: Sendable {
    var offset = 0
    public init() {}

    /// The next packet, or nil at the end. A malformed packet throws and ends the walk.
    public mutating func next(in b: Span<UInt8>) throws(RTPParseError) -> RTCPPacket? {
        guard offset < b.count else { return nil }
        let h = try RTCPHeader.parse(b, at: offset)
        let o = offset
        offset = b.count // a throw below ends the walk
        let packet: RTCPPacket
        switch h.packetType {
        case RTCPPacketType.senderReport: packet = .senderReport(try SenderReport.parse(b, header: h, at: o))
        case RTCPPacketType.receiverReport: packet = .receiverReport(try ReceiverReport.parse(b, header: h, at: o))
        case RTCPPacketType.sourceDescription: packet = .sourceDescription(try SourceDescription.parse(b, header: h, at: o))
        case RTCPPacketType.goodbye: packet = .goodbye(try Goodbye.parse(b, header: h, at: o))
        case RTCPPacketType.application:
            packet = .application(try ApplicationDefined.parse(b, header: h, at: o))
        case RTCPPacketType.transportFeedback where h.count == GenericNACK.fmt:
            packet = .nack(try GenericNACK.parse(b, header: h, at: o))
        case RTCPPacketType.transportFeedback where h.count == TransportFeedback.fmt:
            packet = .transportFeedback(try TransportFeedback.parse(b, header: h, at: o))
        case RTCPPacketType.payloadFeedback where h.count == PictureLossIndication.fmt:
            guard h.packetSize >= 12 else { throw .badLength }
            packet = .pictureLossIndication(PictureLossIndication(senderSSRC: b.be32(o + 4), mediaSSRC: b.be32(o + 8)))
        case RTCPPacketType.payloadFeedback where h.count == FullIntraRequest.fmt:
            packet = .fullIntraRequest(try FullIntraRequest.parse(b, header: h, at: o))
        case RTCPPacketType.payloadFeedback where h.count == 15:
            if let r = try ReceiverEstimatedMaxBitrate.parse(b, header: h, at: o) {
                packet = .remb(r)
            } else {
                packet = .unknown(packetType: h.packetType, count: h.count, size: h.packetSize)
            }
        default: packet = .unknown(packetType: h.packetType, count: h.count, size: h.packetSize)
        }
        offset = o + h.packetSize
        return packet
    }
}

extension RTCPPacket {
    /// Writes the packet back to the wire (a packet type pubbot does not interpret cannot be:
    /// `.unknown` keeps only its header's figures).
    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        switch self {
        case let .senderReport(p): try p.write(to: &w)
        case let .receiverReport(p): try p.write(to: &w)
        case let .sourceDescription(p): try p.write(to: &w)
        case let .goodbye(p): try p.write(to: &w)
        case let .nack(p): try p.write(to: &w)
        case let .pictureLossIndication(p): try p.write(to: &w)
        case let .fullIntraRequest(p): try p.write(to: &w)
        case let .remb(p): try p.write(to: &w)
        case let .transportFeedback(p): try p.write(to: &w)
        case let .application(p): try p.write(to: &w)
        case .unknown: throw .unsupported
        }
    }

    public var isUnknown: Bool { if case .unknown = self { true } else { false } }
}
