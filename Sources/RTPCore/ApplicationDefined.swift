/// Application-defined RTCP (RFC 3550 §6.7), PT 204.
///
/// ```
/// |V=2|P| subtype |   PT=APP=204  |             length            |
/// |                           SSRC/CSRC                           |
/// |                          name (ASCII)                         |
/// |                   application-dependent data                ...
/// ```
public struct ApplicationDefined: Equatable, Sendable {
    public var subtype: UInt8
    public var ssrc: UInt32
    /// Four ASCII characters.
    public var name: UInt32
    public var data: [UInt8]

    public init(subtype: UInt8, ssrc: UInt32, name: String, data: [UInt8]) {
        self.subtype = subtype
        self.ssrc = ssrc
        self.name = Self.fourCC(name)
        self.data = data
    }

    static func fourCC(_ s: String) -> UInt32 {
        var v: UInt32 = 0
        for b in Array(s.utf8).prefix(4) { v = v << 8 | UInt32(b) }
        return v << (8 * UInt32(4 - min(4, s.utf8.count)))
    }

    public var size: Int { 12 + (data.count + 3) / 4 * 4 }

    public func write(to w: inout ByteWriter) throws(RTPWriteError) {
        guard subtype < 32 else { throw .valueOutOfRange }
        try w.require(size)
        let start = w.count
        RTCPHeader(count: subtype, packetType: RTCPPacketType.application, packetSize: size).write(to: &w)
        w.u32(ssrc)
        w.u32(name)
        data.withUnsafeBytes { w.copy($0) }
        w.zeros(start + size - w.count)
    }

    static func parse(_ b: Span<UInt8>, header h: RTCPHeader, at o: Int) throws(RTPParseError) -> ApplicationDefined {
        guard h.packetSize >= 12 else { throw .badLength }
        var a = ApplicationDefined(subtype: h.count, ssrc: b.be32(o + 4), name: "", data: b.copyBytes((o + 12)..<(o + h.packetSize)))
        a.name = b.be32(o + 8)
        return a
    }
}

/// The sender-side stats track (`--sender-stats`, the Commands article): the publisher's transport figures, carried in-band as
/// RTCP APP packets named `SSTS`, subtype 0, versioned. Receivers that do not know the name
/// skip the packet. Layout (version 1, 12 bytes):
///
/// ```
/// | version=1 | condition (0–5) | reason | reserved |
/// |          connectionMaxAllocatedBitrate (bps)          |
/// |          connectionEstimatedBandwidth (bps)           |
/// ```
/// Reason: 0 none, 1 unknown, 2 bandwidth, 3 packetLoss. A later version may append fields;
/// readers take the fields they know.
public struct SenderSideStats: Equatable, Sendable {
    public static let name = "SSTS"
    public static let version: UInt8 = 1

    public var connectionMaxAllocatedBitrate: UInt32
    public var connectionEstimatedBandwidth: UInt32
    /// Network condition 0 (unknown) … 5 (excellent), as the stats stream's `networkConditionValue`.
    public var networkCondition: UInt8
    public var networkConditionReason: UInt8

    public init(
        connectionMaxAllocatedBitrate: UInt32, connectionEstimatedBandwidth: UInt32, networkCondition: UInt8, networkConditionReason: UInt8
    ) {
        self.connectionMaxAllocatedBitrate = connectionMaxAllocatedBitrate
        self.connectionEstimatedBandwidth = connectionEstimatedBandwidth
        self.networkCondition = networkCondition
        self.networkConditionReason = networkConditionReason
    }

    public func packet(ssrc: UInt32) -> ApplicationDefined {
        var d: [UInt8] = [Self.version, networkCondition, networkConditionReason, 0]
        for v in [connectionMaxAllocatedBitrate, connectionEstimatedBandwidth] {
            d += [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
        }
        return ApplicationDefined(subtype: 0, ssrc: ssrc, name: Self.name, data: d)
    }

    /// Reads an APP packet; nil when it is not SSTS or a version this reader does not know.
    public init?(_ app: ApplicationDefined) {
        guard app.name == ApplicationDefined.fourCC(Self.name), app.data.count >= 12, app.data[0] >= 1 else { return nil }
        func u32(_ i: Int) -> UInt32 {
            UInt32(app.data[i]) << 24 | UInt32(app.data[i + 1]) << 16 | UInt32(app.data[i + 2]) << 8 | UInt32(app.data[i + 3])
        }
        self.init(
            connectionMaxAllocatedBitrate: u32(4), connectionEstimatedBandwidth: u32(8),
            networkCondition: min(app.data[1], 5), networkConditionReason: min(app.data[2], 3))
    }
}
