/// A datagram a sans-IO machine wants sent: its bytes, the local address it leaves from (a
/// candidate's base) and where it goes. ICE checks, the gatherer's Binding requests, TURN's
/// requests and the WebRTC transport's datagrams all come out in this one shape (str0m's
/// `Transmit`); the driver owns the socket. (DTLS records have no address of their own: the
/// transport sends them over the selected pair. The sessions' media leaves in batches of
/// packet-arena slots instead, so the send path copies nothing.)
public struct Transmit: Sendable, Equatable {
    public var bytes: [UInt8]
    public var from: STUNAddress
    public var to: STUNAddress

    public init(bytes: [UInt8], from: STUNAddress, to: STUNAddress) {
        self.bytes = bytes
        self.from = from
        self.to = to
    }
}
