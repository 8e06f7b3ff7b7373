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

/// A receiver's feedback goes to many publishers from one socket in one batch: each datagram to
/// its own destination, and one destination the kernel refuses does not take the others with it.
@Suite struct SendEachTests {
    @Test func eachDatagramReachesItsOwnDestinationPastARefusedOne() throws {
        let loopback = try SocketAddress(host: "127.0.0.1", port: 0)
        let sender = try UDPSocket(bind: loopback)
        let a = try UDPSocket(bind: loopback), b = try UDPSocket(bind: loopback)
        // Broadcast without SO_BROADCAST: the kernel refuses it (EACCES), at once.
        let refused = try SocketAddress(host: "255.255.255.255", port: 9)
        // 70 datagrams (more than one sendmmsg's 64), sizes 10…79, the fifth to the refused address.
        var bytes: [UInt8] = []
        var packets: [(end: Int, destination: SocketAddress, source: SocketAddress?)] = []
        for i in 0..<70 {
            bytes += [UInt8](repeating: UInt8(i), count: 10 + i)
            packets.append((bytes.count, i == 4 ? refused : i % 2 == 0 ? a.localAddress : b.localAddress, nil))
        }
        let error = bytes.withUnsafeBytes { sender.send(laidOut: $0, packets) }
        #expect(error?.errno == 13, "the refusal is reported: \(String(describing: error))")
        Clock.sleep(micros: 20_000)
        let rx = PacketBatch(capacity: 64)
        for (socket, parity) in [(a, 0), (b, 1)] {
            var got: [(UInt8, Int)] = []
            while case let n = try socket.receive(into: rx), n > 0 {
                for k in 0..<n { got.append((rx.packet(k)[0], Int(rx.lengths[k]))) }
            }
            let expected = (0..<70).filter { $0 % 2 == parity && $0 != 4 }
            #expect(got.map(\.0) == expected.map { UInt8($0) }, "in order, each at its own destination")
            #expect(got.map(\.1) == expected.map { 10 + $0 }, "each its own length")
        }
    }
}
