import Testing
import Glibc
import HTTPServer
import Platform

/// A TCP client on loopback, from a chosen source address (127.0.0.0/8: every address is ours),
/// so per-source limits can be tried without touching anything beyond this machine.
struct Client {
    let fd: Int32

    init?(port: Int, from source: String = "127.0.0.1") {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { return nil }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &to.sin_addr)
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let connected = withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, connected == 0 else { _ = Glibc.close(s); return nil }
        fd = s
    }

    func send(_ text: String) { _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }

    /// What the server sent until it closed or `micros` passed (or one whole response arrived when `one`).
    func read(micros: Int64 = 3_000_000, one: Bool = false) -> String {
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        let end = Clock.monotonicMicros() + micros
        while Clock.monotonicMicros() < end {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 50) > 0 else { continue }
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            got += buf[0..<n]
            if one, let text = String(validating: got, as: UTF8.self), let h = text.firstRange(of: "\r\n\r\n"),
               let l = text[..<h.lowerBound].split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
               let n = Int(l.dropFirst("content-length:".count).trimmingPrefix(" ")), text.utf8.count >= text.utf8.distance(from: text.startIndex, to: h.upperBound) + n {
                break
            }
        }
        return String(decoding: got, as: UTF8.self)
    }

    func close() { _ = Glibc.close(fd) }
}

func status(_ response: String) -> Int? { response.hasPrefix("HTTP/1.1 ") ? Int(response.dropFirst(9).prefix(3)) : nil }

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
        var held: [Client] = []
        defer { held.forEach { $0.close() } }
        for i in 0..<200 {
            let c = try #require(Client(port: s.port, from: "127.0.0.\(2 + i % 4)"))
            c.send("POST /whip HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\n")
            held.append(c)
        }
        for _ in 0..<20 { held.append(try #require(Client(port: s.port, from: "127.0.0.6"))) }
        for k in 0..<3 {
            let t0 = Clock.monotonicMicros()
            let c = try #require(Client(port: s.port))
            c.send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let r = c.read()
            c.close()
            let ms = Double(Clock.monotonicMicros() - t0) / 1000
            #expect(status(r) == 200 && ms < 500, "legitimate request \(k): \(ms) ms, \(r.prefix(40))")
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
        let trickle = try #require(Client(port: s.port))
        let truncated = try #require(Client(port: s.port))
        truncated.send("POST /whip HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nv=0")
        let t0 = Clock.monotonicMicros()
        for b in "GET /" { trickle.send(String(b)); Clock.sleep(micros: 150_000) } // a byte every 150 ms: each read is "on time"
        let r1 = trickle.read(), r2 = truncated.read()
        #expect(status(r1) == 408 && status(r2) == 408, "\(r1.prefix(30)) / \(r2.prefix(30))")
        #expect(Clock.monotonicMicros() - t0 < 2_500_000)
        let bare = try #require(Client(port: s.port))
        bare.send("GET /metrics HTTP/1.1\nHost: x\n\n")
        let t1 = Clock.monotonicMicros()
        #expect(status(bare.read()) == 400 && Clock.monotonicMicros() - t1 < 500_000)
        // Keep-alive: two requests on one connection, then the idle connection is closed.
        let kept = try #require(Client(port: s.port))
        kept.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(kept.read(one: true).contains("ok GET /a"))
        kept.send("GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(kept.read(one: true).contains("ok GET /b"))
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
        var held = (0..<4).compactMap { _ in Client(port: s.port, from: "127.0.0.2") }
        Clock.sleep(micros: 100_000)
        let fifth = try #require(Client(port: s.port, from: "127.0.0.2"))
        let refused = fifth.read()
        #expect(status(refused) == 503 && refused.contains("Retry-After: 5"), "\(refused)")
        let other = try #require(Client(port: s.port, from: "127.0.0.1"))
        other.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(status(other.read(one: true)) == 200)
        held += (0..<4).compactMap { _ in Client(port: s.port, from: "127.0.0.3") } // 4 + 1 + 3 = 8 in all
        Clock.sleep(micros: 100_000)
        let over = try #require(Client(port: s.port, from: "127.0.0.4"))
        #expect(status(over.read()) == 503)
        held.removeFirst().close()
        Clock.sleep(micros: 200_000)
        let again = try #require(Client(port: s.port, from: "127.0.0.4"))
        again.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(status(again.read(one: true)) == 200, "a slot freed by a closed connection is used again")
        ([fifth, other, over, again] + held).forEach { $0.close() }
    }

    /// A client that never reads its answer (a large one) is dropped after the write deadline
    /// and meanwhile delays no one.
    @Test func unreadAnswersDelayNobody() throws {
        var limits = HTTPServer.Limits()
        limits.writeDeadlineMicros = 600_000
        let big = try HTTPServer(host: "127.0.0.1", port: 0, limits: limits) { _ in HTTPResponse(status: 200, body: [UInt8](repeating: 65, count: 8 << 20)) }
        defer { big.stop() }
        let lazy = try #require(Client(port: big.port))
        lazy.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        Clock.sleep(micros: 100_000)
        let t0 = Clock.monotonicMicros()
        let c = try #require(Client(port: big.port))
        c.send("GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let got = c.read(micros: 5_000_000)
        #expect(got.utf8.count > 8 << 20 && Clock.monotonicMicros() - t0 < 3_000_000, "\(got.utf8.count) bytes")
        c.close()
        lazy.close()
    }
}
