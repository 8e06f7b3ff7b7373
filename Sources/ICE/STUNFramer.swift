/// Splits a TURN TCP stream into messages (RFC 8656 §12.5): a STUN message is 20 bytes + its
/// length field; ChannelData is 4 bytes + its length, padded to 4 over TCP.
public struct STUNFramer: Sendable {
    var buffer: [UInt8] = []
    public init() {}

    public mutating func append(_ bytes: some Collection<UInt8>) { buffer += bytes }

    /// The next complete message, nil until one has arrived; a stream that is neither STUN nor
    /// ChannelData is discarded (nothing later could be framed).
    public mutating func next() -> [UInt8]? {
        guard buffer.count >= 4 else { return nil }
        let length = Int(buffer[2]) << 8 | Int(buffer[3])
        let total: Int
        switch buffer[0] >> 6 {
        case 0: total = 20 + length
        case 1: total = 4 + (length + 3) & ~3
        default: buffer = []; return nil
        }
        guard buffer.count >= total else { return nil }
        let m = Array(buffer[0..<total])
        buffer.removeFirst(total)
        return m
    }
}
