/// Opus RTP payload (RFC 7587): one Opus packet per RTP packet, timestamp at 48 kHz whatever
/// the coded bandwidth, payload copied verbatim.
public enum OpusPayload {
    public static let clockRate: UInt32 = 48_000
    /// RTP timestamp increment for a frame of `ms` milliseconds.
    static func timestampIncrement(frameMillis ms: Int) -> UInt32 { UInt32(ms * 48) }

    /// Writes one Opus packet as an RTP payload.
    @inlinable
    public static func write(_ packet: Span<UInt8>, into w: inout ByteWriter) throws(RTPWriteError) {
        try w.require(packet.count)
        w.copy(packet, 0..<packet.count)
    }

    /// Validates an Opus payload's TOC byte (RFC 6716 §3.1) and returns its frame duration in 48 kHz samples.
    public static func parse(_ b: Span<UInt8>) throws(RTPParseError) -> Int {
        guard b.count >= 1 else { throw .badPayload }
        let toc = b[0]
        let config = Int(toc >> 3)
        let frameSamples: Int
        switch config {
        case 0...11: frameSamples = [480, 960, 1920, 2880][config % 4]
        case 12...15: frameSamples = [480, 960][config % 2]
        default: frameSamples = [120, 240, 480, 960][config % 4]
        }
        switch toc & 0x03 {
        case 0: return frameSamples
        case 1, 2: guard b.count >= 2 || toc & 0x03 == 1 else { throw .badPayload }; return 2 * frameSamples
        default:
            guard b.count >= 2 else { throw .badPayload }
            let count = Int(b[1] & 0x3F)
            guard count > 0, count * frameSamples <= 5760 else { throw .badPayload }
            return count * frameSamples
        }
    }
}
