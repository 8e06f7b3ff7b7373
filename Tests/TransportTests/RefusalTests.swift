import Testing
@testable import Transport
import Platform

/// A datagram to a closed port draws an ICMP port unreachable, which Linux reports (IP_RECVERR)
/// on the socket's next call. That next call may be a send to a live peer: the send must go out
/// anyway (it once threw, and a Chromium answer's loopback candidate, checked first, took every
/// retransmitted check to the live candidate with it), and the refusal is still reported — by
/// the next receive.
@Suite struct RefusalTests {
    @Test func aRefusalDoesNotTakeTheNextSendWithIt() throws {
        let loopback = try SocketAddress(host: "127.0.0.1", port: 0)
        let a = try UDPSocket(bind: loopback)
        let live = try UDPSocket(bind: loopback)
        // A port nobody listens on: bound, noted, closed.
        let deadPort: SocketAddress
        do { deadPort = try UDPSocket(bind: loopback).localAddress }
        let bytes: [UInt8] = Array(repeating: 0x42, count: 64)
        var delivered = 0
        let rx = PacketBatch(capacity: 8)
        for _ in 0..<5 {
            try bytes.withUnsafeBytes { try a.send($0, to: deadPort) } // ICMP back at once (loopback)
            try bytes.withUnsafeBytes { try a.send($0, to: live.localAddress) }
        }
        Clock.sleep(micros: 20_000)
        while case let n = try live.receive(into: rx), n > 0 { delivered += n }
        #expect(delivered == 5, "\(delivered) of 5 datagrams to the live port went out")
        // The refusals are reported by receives, one each, and then the socket is quiet.
        var refused = 0
        for _ in 0..<20 {
            do { if try a.receive(into: rx) == 0 { break } } catch { if error.isConnectionRefused { refused += 1 } }
        }
        #expect(refused >= 4 && refused <= 5, "\(refused) refusals reported")
    }
}
