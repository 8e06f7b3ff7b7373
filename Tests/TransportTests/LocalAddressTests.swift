import Testing
@testable import Transport
import Platform

/// One socket on the wildcard address serves a host candidate per interface (RFC 8445
/// §5.1.1.1): each datagram reports the local address it was sent to (IP_PKTINFO /
/// IPV6_PKTINFO) and a send leaves from the source it names — what a peer sees as the sender.
@Suite struct LocalAddressTests {
    func receiveOne(_ socket: UDPSocket, _ batch: PacketBatch) throws -> Int {
        for _ in 0..<100 {
            let n = try socket.receive(into: batch)
            if n > 0 { return n }
            Clock.sleep(micros: 2_000)
        }
        return 0
    }

    @Test(arguments: ["0.0.0.0", "::"])
    func eachDatagramSaysWhichLocalAddressItReachedAndRepliesLeaveFromIt(_ wildcard: String) throws {
        let server = try UDPSocket(bind: try SocketAddress(host: wildcard, port: 0))
        try server.enableLocalAddresses()
        #expect(server.isWildcard && server.reportsLocalAddresses)
        let port = server.localAddress.port
        let rx = PacketBatch(capacity: 8)
        let hello: [UInt8] = Array("hello".utf8)
        // 127.0.0.2 is a loopback address like 127.0.0.1 (the whole /8 is on lo): two "interfaces".
        var targets = ["127.0.0.1", "127.0.0.2"]
        if wildcard == "::" { targets.append("::1") }
        for target in targets {
            let peer = try UDPSocket(bind: try SocketAddress(host: target.contains(":") ? "::1" : "127.0.0.1", port: 0))
            let to = try SocketAddress(host: target, port: port)
            try hello.withUnsafeBytes { try peer.send($0, to: to) }
            #expect(try receiveOne(server, rx) == 1)
            #expect(rx.local(0) == to, "sent to \(to), reported \(String(describing: rx.local(0)))")
            // The reply names that address as its source: the peer hears it from there.
            let from = rx.local(0)!
            try hello.withUnsafeBytes { try server.send($0, to: rx.sources[0], from: from) }
            let back = PacketBatch(capacity: 8)
            #expect(try receiveOne(peer, back) == 1)
            #expect(back.sources[0] == to, "the reply came from \(back.sources[0]), not \(to)")
        }
        // A batch (GSO runs) from a named source.
        let peer = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0))
        let batch = PacketBatch(capacity: 4)
        for i in 0..<4 {
            batch.slot(i).initializeMemory(as: UInt8.self, repeating: UInt8(i))
            batch.lengths[i] = 600
        }
        let source = try SocketAddress(host: "127.0.0.2", port: port)
        let sent = try batch.pointers.withUnsafeBufferPointer { p in
            try batch.lengths.withUnsafeBufferPointer { l in
                try server.send(pointers: p.baseAddress!, lengths: l.baseAddress!, count: 4, to: peer.localAddress, from: source)
            }
        }
        #expect(sent == 4)
        var heard: [SocketAddress] = []
        for _ in 0..<100 where heard.count < 4 {
            let n = try peer.receive(into: rx)
            heard += rx.sources.prefix(n)
            if n == 0 { Clock.sleep(micros: 2_000) }
        }
        #expect(heard == [SocketAddress](repeating: source, count: 4), "\(heard)")
    }
}

/// A batch goes out as UDP GSO runs (equal sizes, then at most one shorter datagram: Linux
/// udp(7), UDP_SEGMENT) and arrives as the datagrams it was: every length, byte and the order.
@Suite struct GSORunTests {
    @Test func aBatchOfRunsArrivesAsItsDatagrams() throws {
        let receiver = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0))
        let sender = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0))
        // A frame of two (the second shorter), one of three, a lone audio packet, a longer one
        // after a shorter (a new run), an empty datagram and a single.
        let sizes = [1139, 1138, 858, 858, 857, 129, 50, 60, 0, 0, 700]
        let batch = PacketBatch(capacity: sizes.count)
        for (i, n) in sizes.enumerated() {
            let slot = batch.slot(i)
            for k in 0..<n { slot.baseAddress!.storeBytes(of: UInt8(truncatingIfNeeded: i &* 31 &+ k), toByteOffset: k, as: UInt8.self) }
            batch.lengths[i] = UInt32(n)
        }
        let sent = try batch.pointers.withUnsafeBufferPointer { p in
            try batch.lengths.withUnsafeBufferPointer { l in
                try sender.send(pointers: p.baseAddress!, lengths: l.baseAddress!, count: sizes.count, to: receiver.localAddress)
            }
        }
        #expect(sent == sizes.count)
        let rx = PacketBatch(capacity: 16)
        var heard: [[UInt8]] = []
        for _ in 0..<100 where heard.count < sizes.count {
            let n = try receiver.receive(into: rx)
            for i in 0..<n { heard.append(Array(UnsafeRawBufferPointer(start: rx.slot(i).baseAddress, count: Int(rx.lengths[i])))) }
            if n == 0 { Clock.sleep(micros: 2_000) }
        }
        #expect(heard.map(\.count) == sizes, "\(heard.map(\.count))")
        for (i, d) in heard.enumerated() where i < sizes.count {
            #expect(d.enumerated().allSatisfy { k, b in b == UInt8(truncatingIfNeeded: i &* 31 &+ k) }, "datagram \(i)")
        }
    }
}
