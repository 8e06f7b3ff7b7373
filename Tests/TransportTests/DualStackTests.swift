import Testing
@testable import Transport
import Platform

/// A socket bound to `[::]` serves both families (RFC 3493 §5.3): an IPv4 peer's datagrams
/// arrive from its plain IPv4 address (not ::ffff:a.b.c.d, so one peer is one address for ICE
/// and the sessions), and a reply to that IPv4 address reaches it.
@Suite struct DualStackTests {
    @Test func anIPv4PeerIsPlainIPv4OnADualStackSocket() throws {
        let server = try UDPSocket(bind: try SocketAddress(host: "::", port: 0))
        #expect(server.dualStack && server.localAddress.isIPv6)
        let v4 = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0))
        let v6 = try UDPSocket(bind: try SocketAddress(host: "::1", port: 0))
        #expect(!v4.dualStack && !v6.dualStack)
        let port = server.localAddress.port
        let hello: [UInt8] = Array("hello".utf8)
        try hello.withUnsafeBytes { try v4.send($0, to: try SocketAddress(host: "127.0.0.1", port: port)) }
        try hello.withUnsafeBytes { try v6.send($0, to: try SocketAddress(host: "::1", port: port)) }
        let rx = PacketBatch(capacity: 8)
        var sources: [SocketAddress] = []
        for _ in 0..<50 where sources.count < 2 {
            let n = try server.receive(into: rx)
            sources += rx.sources.prefix(n)
            if n == 0 { Clock.sleep(micros: 2_000) }
        }
        #expect(Set(sources) == [v4.localAddress, v6.localAddress], "\(sources)")
        #expect(sources.first { !$0.isIPv6 }?.ipBytes == [127, 0, 0, 1])
        // Replies to each, by the address it was heard from.
        for s in sources { try hello.withUnsafeBytes { try server.send($0, to: s) } }
        for peer in [v4, v6] {
            var got = 0
            for _ in 0..<50 where got == 0 {
                got = try peer.receive(into: rx)
                if got == 0 { Clock.sleep(micros: 2_000) }
            }
            #expect(got == 1 && rx.sources[0].port == port, "\(peer.localAddress) got \(got)")
        }
    }
}
