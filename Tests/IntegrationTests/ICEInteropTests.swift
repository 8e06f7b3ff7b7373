import Foundation
import Testing
import ICE
import RTPCore
import Transport
import Platform
import Crypto

/// pubbot's ICE agent against a full agent it did not write: aioice (aiortc's ICE, Python, in
/// the venv `scripts/setup` creates), over real UDP on 127.0.0.1. pubbot controls and
/// nominates; aioice checks too, so both directions' MESSAGE-INTEGRITY and FINGERPRINT are
/// checked by the other implementation; then a datagram goes over the selected pair and comes
/// back echoed.
@Suite(.serialized) struct ICEInteropTests {
    static let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/peers-venv/bin/python").path

    @Test func connectsToAioice() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            Issue.record("no test-peer venv at \(Self.python): run scripts/setup")
            return
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers/ice_peer.py").path
        let peer = try PeerProcess(Self.python, [script])
        defer { peer.stop() }
        let deadline = Clock.monotonicMicros() + 10_000_000
        peer.wait(for: "\n", micros: 10_000_000)
        let first = try #require(peer.text.split(separator: "\n").first, "aioice said nothing: \(peer.text)")
        let remote = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any], "\(first)")
        let ufrag = try #require(remote["ufrag"] as? String), pwd = try #require(remote["pwd"] as? String)
        let candidates = try (remote["candidates"] as? [String] ?? []).map { try ICECandidate.parse(Substring("candidate:" + $0)) }
        #expect(!candidates.isEmpty)

        let socket = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0))
        let local = STUNAddress(ip: [127, 0, 0, 1], port: UInt16(socket.localAddress.port))
        let agent = ICEAgent(
            role: .controlling, local: .init(ufrag: "pbt1", password: "pubbot-ice-password-0123"),
            remote: .init(ufrag: ufrag, password: pwd), tieBreaker: 0x0123_4567_89AB_CDEF, seed: 42,
            hmacSHA1: { Crypto.hmacSHA1(key: $0, data: $1) })
        agent.addLocal(.host(local))
        for c in candidates { agent.addRemote(c) }
        let ours: [String: Any] = [
            "ufrag": "pbt1", "pwd": "pubbot-ice-password-0123",
            "candidates": [String(ICECandidate.host(local).description.dropFirst("candidate:".count))]
        ]
        peer.send(String(decoding: try JSONSerialization.data(withJSONObject: ours), as: UTF8.self))

        let batch = PacketBatch(capacity: 16)
        var echoed: String?
        var sentPayload = false
        while echoed == nil && agent.state != .failed && Clock.monotonicMicros() < deadline {
            let now = Clock.monotonicMicros()
            _ = agent.step(now: now)
            while let t = agent.pollTransmit() {
                let to = try SocketAddress(host: t.to.ipText, port: Int(t.to.port))
                try t.bytes.withUnsafeBytes { try socket.send($0, to: to) }
            }
            if agent.state == .connected && !sentPayload, let pair = agent.selectedPair {
                let to = try SocketAddress(host: pair.remote.address.ipText, port: Int(pair.remote.address.port))
                try Array("hello from pubbot".utf8).withUnsafeBytes { try socket.send($0, to: to) }
                sentPayload = true
            }
            var ready = [UInt8](repeating: 0, count: 1)
            guard waitReadable([socket.fd], ready: &ready, timeoutMicros: 20_000) > 0, ready[0] != 0 else { continue }
            let n = try socket.receive(into: batch)
            for i in 0..<n {
                let bytes = Array(UnsafeRawBufferPointer(start: batch.slot(i).baseAddress!, count: Int(batch.lengths[i])))
                let src = try #require(batch.source(i))
                let from = STUNAddress(ip: STUNAddress.parseIP(Substring(src.host)) ?? [0, 0, 0, 0], port: UInt16(src.port))
                if !agent.handle(bytes, from: from, to: local, now: Clock.monotonicMicros()) {
                    echoed = String(decoding: bytes, as: UTF8.self) // not STUN: the echo
                }
            }
            while let e = agent.pollEvent() { if case let .failed(r) = e { Issue.record("pubbot's agent failed: \(r)") } }
        }
        #expect(agent.state == .connected, "aioice said: \(peer.text.suffix(600))")
        #expect(agent.selectedPair?.remote.address == candidates.first?.address)
        #expect(echoed == "echo:hello from pubbot", "aioice said: \(peer.text.suffix(600))")
        // aioice prints CONNECTED from its own event loop: it may come a moment after the echo.
        #expect(peer.wait(for: "CONNECTED", micros: 3_000_000), "\(peer.text.suffix(600))")
        #expect(agent.counters.requestsAnswered > 0) // aioice's own checks passed our integrity and we answered
    }
}
