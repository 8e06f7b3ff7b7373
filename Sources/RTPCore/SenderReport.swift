/// Sender report (RFC 3550 §6.4.1), PT 200.
///
/// ```
/// |V=2|P|    RC   |   PT=SR=200   |             length            |
/// |                         SSRC of sender                        |
/// |              NTP timestamp, most significant word             |
/// |             NTP timestamp, least significant word             |
/// |                         RTP timestamp                         |
/// |                     sender's packet count                     |
/// |                      sender's octet count                     |
/// |                 report blocks (RC × 24 bytes)                 |
/// ```
public struct SenderReport: Equatable, Sendable {
    public var ssrc: UInt32
    public var ntpTime: UInt64
    public var rtpTimestamp: UInt32
    public var packetCount: UInt32
    /// Payload octets only (no headers, no padding).
    public var octetCount: UInt32
    public var reports: [ReportBlock]

    public init(ssrc: UInt32, ntpTime: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32, reports: [ReportBlock] = []) {
        self.ssrc = ssrc
        self.ntpTime = ntpTime
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reports = reports
    }

    public var size: Int { 28 + ReportBlock.size * reports.count }

    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        guard reports.count <= 31 else { throw .valueOutOfRange }
        try w.require(size)
        RTCPHeader(count: UInt8(reports.count), packetType: RTCPPacketType.senderReport, packetSize: size).write(to: &w)
        w.u32(ssrc); w.u64(ntpTime); w.u32(rtpTimestamp); w.u32(packetCount); w.u32(octetCount)
        for r in reports { r.write(to: &w) }
    }

    static func parse(_ b: Span<UInt8>, header h: RTCPHeader, at o: Int) throws(RTPParseError) -> SenderReport {
        guard h.packetSize >= 28 + ReportBlock.size * Int(h.count) else { throw .badLength }
        var sr = SenderReport(
            ssrc: b.be32(o + 4), ntpTime: b.be64(o + 8), rtpTimestamp: b.be32(o + 16),
            packetCount: b.be32(o + 20), octetCount: b.be32(o + 24))
        for i in 0..<Int(h.count) { sr.reports.append(ReportBlock.parse(b, at: o + 28 + i * ReportBlock.size)) }
        return sr
    }
}

/// Receiver report (RFC 3550 §6.4.2), PT 201: sender SSRC then report blocks.
public struct ReceiverReport: Equatable, Sendable {
    public var ssrc: UInt32
    public var reports: [ReportBlock]

    public init(ssrc: UInt32, reports: [ReportBlock] = []) {
        self.ssrc = ssrc
        self.reports = reports
    }

    public var size: Int { 8 + ReportBlock.size * reports.count }

    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        guard reports.count <= 31 else { throw .valueOutOfRange }
        try w.require(size)
        RTCPHeader(count: UInt8(reports.count), packetType: RTCPPacketType.receiverReport, packetSize: size).write(to: &w)
        w.u32(ssrc)
        for r in reports { r.write(to: &w) }
    }

    static func parse(_ b: Span<UInt8>, header h: RTCPHeader, at o: Int) throws(RTPParseError) -> ReceiverReport {
        guard h.packetSize >= 8 + ReportBlock.size * Int(h.count) else { throw .badLength }
        var rr = ReceiverReport(ssrc: b.be32(o + 4))
        for i in 0..<Int(h.count) { rr.reports.append(ReportBlock.parse(b, at: o + 8 + i * ReportBlock.size)) }
        return rr
    }
}
