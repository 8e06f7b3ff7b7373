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
