import Foundation
import Testing
import ICE
import RTPCore
import Transport
import Platform

/// pubbot's server-reflexive gathering against a STUN server it did not write: coturn 4.6
/// (`turnserver`, STUN only, no auth) on 127.0.0.1 over real UDP. The server must report the
/// socket's own address (no NAT on loopback: the candidate is redundant, the path works).
@Suite(.serialized) struct STUNInteropTests {
    @Test func coturnReportsTheMappedAddress() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/turnserver") else {
            Issue.record("coturn is not installed (Debian package coturn; scripts/setup installs it)")
            return
        }
        let port = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0)).localAddress.port // a free port, released
        let server = try PeerProcess(
            "/usr/bin/turnserver",
            [
                "-n", "--no-auth", "-L", "127.0.0.1", "-p", "\(port)", "--no-tcp", "--no-tls", "--no-dtls",
                "--no-cli", "--log-file=stdout"
            ])
        defer { server.stop(grace: 0) }
        #expect(server.wait(for: "IO method", micros: 5_000_000), "turnserver did not start: \(server.text.suffix(400))")

        let socket = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let base = STUNAddress(ip: [127, 0, 0, 1], port: UInt16(socket.localAddress.port))
        let stunServer = STUNAddress(ip: [127, 0, 0, 1], port: UInt16(port))
        let g = ICEGatherer(hosts: [.host(base)], servers: [stunServer], seed: 3)
        let batch = PacketBatch(capacity: 8)
        var result: ICEGatherer.Result?
        let deadline = Clock.monotonicMicros() + 6_000_000
        while result == nil && Clock.monotonicMicros() < deadline {
            _ = g.step(now: Clock.monotonicMicros())
            while let t = g.pollTransmit() {
                try t.bytes.withUnsafeBytes { try socket.send($0, to: SocketAddress(host: t.to.ipText, port: Int(t.to.port))) }
            }
            var ready = [UInt8](repeating: 0, count: 1)
            if waitReadable([socket.fd], ready: &ready, timeoutMicros: 20_000) > 0 && ready[0] != 0 {
                // Until coturn's listener is up the kernel answers port unreachable: retry.
                var n = 0
                do throws(SocketError) { n = try socket.receive(into: batch) } catch { if !error.isConnectionRefused { throw error } }
                for i in 0..<n {
                    let bytes = Array(UnsafeRawBufferPointer(start: batch.slot(i).baseAddress!, count: Int(batch.lengths[i])))
                    g.handle(bytes, from: stunServer, to: base, now: Clock.monotonicMicros())
                }
            }
            result = g.pollResult()
        }
        guard
            case let .reflexive(candidate, b, s, redundant, rtt) = try #require(result, "no answer from coturn: \(server.text.suffix(400))")
        else {
            Issue.record("coturn's answer was refused: \(String(describing: result))")
            return
        }
        #expect(candidate.address == base && b == base && s == stunServer && redundant)
        #expect(rtt > 0 && rtt < 1_000_000, "round trip \(rtt) µs")
    }
}
