import Testing
import Glibc
import HTTPServer
import Platform
import TestSupport

/// The server no client can hold (real sockets on loopback, port 0; every wait bounded): slow,
/// silent and unread clients delay nobody; whole-request deadlines; limits per source and in all.
@Suite(.serialized) struct HTTPServerHostileTests {
    func server(_ limits: HTTPServer.Limits = HTTPServer.Limits()) throws -> HTTPServer {
        try HTTPServer(host: "127.0.0.1", port: 0, limits: limits) { r in
            HTTPResponse(status: 200, text: "ok \(r.method) \(r.path)\n")
        }
    }

    /// 200 slowloris connections (a request started, never finished) from four addresses and 20
    /// that send nothing: three legitimate requests are each answered at once, not after them.
    @Test func slowAndSilentClientsDelayNobody() throws {
        let s = try server()
        defer { s.stop() }
        var held: [RawClient] = []
        defer { held.forEach { $0.close() } }
        for i in 0..<200 {
            let c = try #require(RawClient(port: s.port, from: "127.0.0.\(2 + i % 4)"))
            c.send("POST /whip HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\n")
            held.append(c)
        }
        for _ in 0..<20 { held.append(try #require(RawClient(port: s.port, from: "127.0.0.6"))) }
        for k in 0..<3 {
            let t0 = Clock.monotonicMicros()
            let c = try #require(RawClient(port: s.port))
            c.send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let r = c.read()
            c.close()
            let ms = Double(Clock.monotonicMicros() - t0) / 1000
            #expect(httpStatus(r) == 200 && ms < 500, "legitimate request \(k): \(ms) ms, \(r.prefix(40))")
            // A slow client keeps trickling meanwhile: one more byte from some of the held ones.
            for c in held.prefix(50) { c.send("X") }
        }
        #expect(s.stats.accepted >= 223 && s.stats.overCapacity == 0, "\(s.stats)")
    }

    /// A request not whole within the deadline — headers trickling, or a body cut short — gets
    /// 408 and is closed; a bare-LF request is answered 400 at once; an idle keep-alive connection
    /// is closed.
    @Test func deadlinesAnswerAndClose() throws {
        var limits = HTTPServer.Limits()
        limits.requestDeadlineMicros = 800_000
        limits.idleMicros = 400_000
        let s = try server(limits)
        defer { s.stop() }
        let trickle = try #require(RawClient(port: s.port))
        let truncated = try #require(RawClient(port: s.port))
        truncated.send("POST /whip HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nv=0")
        let t0 = Clock.monotonicMicros()
        for b in "GET /" { trickle.send(String(b)); Clock.sleep(micros: 150_000) } // a byte every 150 ms: each read is "on time"
        let r1 = trickle.read(), r2 = truncated.read()
        #expect(httpStatus(r1) == 408 && httpStatus(r2) == 408, "\(r1.prefix(30)) / \(r2.prefix(30))")
        #expect(Clock.monotonicMicros() - t0 < 2_500_000)
        let bare = try #require(RawClient(port: s.port))
        bare.send("GET /metrics HTTP/1.1\nHost: x\n\n")
        let t1 = Clock.monotonicMicros()
        #expect(httpStatus(bare.read()) == 400 && Clock.monotonicMicros() - t1 < 500_000)
        // Keep-alive: two requests on one connection, then the idle connection is closed.
        let kept = try #require(RawClient(port: s.port))
        kept.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(kept.read().contains("ok GET /a"))
        kept.send("GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(kept.read().contains("ok GET /b"))
        let t2 = Clock.monotonicMicros()
        #expect(kept.read(micros: 2_000_000) == "" && Clock.monotonicMicros() - t2 < 1_500_000, "closed when idle")
        [trickle, truncated, bare, kept].forEach { $0.close() }
        #expect(s.stats.timedOut == 2 && s.stats.idleClosed == 1, "\(s.stats)")
    }

    /// Beyond the per-source limit a client gets 503 with Retry-After at once; another source is
    /// still served; beyond the total, everyone new gets 503 until a connection closes.
    @Test func connectionLimitsPerSourceAndInAll() throws {
        var limits = HTTPServer.Limits()
        limits.maxConnectionsPerSource = 4
        limits.maxConnections = 8
        let s = try server(limits)
        defer { s.stop() }
        var held = (0..<4).compactMap { _ in RawClient(port: s.port, from: "127.0.0.2") }
        Clock.sleep(micros: 100_000)
        let fifth = try #require(RawClient(port: s.port, from: "127.0.0.2"))
        let refused = fifth.read()
        #expect(httpStatus(refused) == 503 && refused.contains("Retry-After: 5"), "\(refused)")
        let other = try #require(RawClient(port: s.port, from: "127.0.0.1"))
        other.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(httpStatus(other.read()) == 200)
        held += (0..<4).compactMap { _ in RawClient(port: s.port, from: "127.0.0.3") } // 4 + 1 + 3 = 8 in all
        Clock.sleep(micros: 100_000)
        let over = try #require(RawClient(port: s.port, from: "127.0.0.4"))
        #expect(httpStatus(over.read()) == 503)
        held.removeFirst().close()
        Clock.sleep(micros: 200_000)
        let again = try #require(RawClient(port: s.port, from: "127.0.0.4"))
        again.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(httpStatus(again.read()) == 200, "a slot freed by a closed connection is used again")
        ([fifth, other, over, again] + held).forEach { $0.close() }
    }

    /// On `::` the server is dual-stack (RFC 3493 §5.3): IPv4 and IPv6 clients are both served,
    /// and an IPv4 client is one source whichever family carried it (its limit holds). A
    /// bracketed IPv6 host is taken; a name is refused with the reason.
    @Test func servesBothFamiliesOnTheIPv6Wildcard() throws {
        var limits = HTTPServer.Limits()
        limits.maxConnectionsPerSource = 2
        let s = try HTTPServer(host: "::", port: 0, limits: limits) { r in HTTPResponse(status: 200, text: "ok \(r.path)\n") }
        defer { s.stop() }
        for (source, host) in [("127.0.0.1", "127.0.0.1"), ("::1", "::1")] {
            let c = try #require(RawClient(port: s.port, from: source, to: host), "\(host)")
            c.send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let r = c.read()
            c.close()
            #expect(httpStatus(r) == 200 && r.contains("ok /metrics"), "over \(host): \(r.prefix(60))")
        }
        let held = (0..<2).compactMap { _ in RawClient(port: s.port, from: "127.0.0.2") }
        defer { held.forEach { $0.close() } }
        Clock.sleep(micros: 100_000)
        let third = try #require(RawClient(port: s.port, from: "127.0.0.2"))
        #expect(httpStatus(third.read()) == 503, "the per-source limit holds for an IPv4 client of a dual-stack server")
        third.close()
        let bracketed = try HTTPServer(host: "[::1]", port: 0) { _ in HTTPResponse(status: 204, text: "") }
        defer { bracketed.stop() }
        let c = try #require(RawClient(port: bracketed.port, from: "::1", to: "::1"))
        c.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(httpStatus(c.read()) == 204)
        c.close()
        #expect(throws: HTTPServer.StartError.self) {
            try HTTPServer(host: "localhost", port: 0) { _ in HTTPResponse(status: 200, text: "") }
        }
    }

    /// A client that never reads its answer (a large one) is dropped after the write deadline
    /// and meanwhile delays no one.
    @Test func unreadAnswersDelayNobody() throws {
        var limits = HTTPServer.Limits()
        limits.writeDeadlineMicros = 600_000
        let big = try HTTPServer(host: "127.0.0.1", port: 0, limits: limits) { _ in
            HTTPResponse(status: 200, body: [UInt8](repeating: 65, count: 8 << 20))
        }
        defer { big.stop() }
        let lazy = try #require(RawClient(port: big.port))
        lazy.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        Clock.sleep(micros: 100_000)
        let t0 = Clock.monotonicMicros()
        let c = try #require(RawClient(port: big.port))
        c.send("GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let got = c.read(micros: 5_000_000)
        #expect(got.utf8.count > 8 << 20 && Clock.monotonicMicros() - t0 < 3_000_000, "\(got.utf8.count) bytes")
        c.close()
        lazy.close()
    }
}
