import Testing
import HTTPServer

@Suite struct HTTPRequestTests {
    @Test func parsesAPostWithBody() {
        let raw = Array(
            "POST /whip?room=1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\nContent-Length: 5\r\nAuthorization:  Bearer t \r\n\r\nv=0\r\n"
                .utf8)
        guard case let .complete(r, consumed) = HTTPRequest.parse(raw) else { Issue.record("not parsed"); return }
        #expect(r.method == "POST" && r.path == "/whip" && r.query == "room=1" && r.body == Array("v=0\r\n".utf8))
        #expect(
            r.header("content-type") == "application/sdp" && r.header("authorization") == "Bearer t" && consumed == raw.count && r.keepAlive
        )
        // Every prefix is incomplete, never invalid.
        for n in 0..<raw.count { #expect(HTTPRequest.parse(Array(raw[0..<n])) == .needMore, "prefix \(n)") }
    }

    @Test func refusesWhatItWillNotServe() {
        func status(_ s: String) -> Int? { if case let .invalid(st, _) = HTTPRequest.parse(Array(s.utf8)) { st } else { nil } }
        #expect(status("GARBAGE\r\n\r\n") == 400)
        #expect(status("POST /whip HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n") == 411)
        #expect(status("POST /whip HTTP/1.1\r\nHost: x\r\nContent-Length: -3\r\n\r\n") == 400)
        #expect(status("POST /whip HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n") == 400)
        #expect(status("POST /whip HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n") == 413)
        #expect(status("POST /whip HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n") == 400)
        #expect(status("GET whip HTTP/1.1\r\n\r\n") == 400)
        #expect(
            HTTPRequest.parse(Array(repeating: UInt8(ascii: "a"), count: 20_000))
                == .invalid(status: 431, reason: "request header too large"))
        // RFC 9110 §8.6: Content-Length is 1*DIGIT — no sign, no spaces inside, no list.
        for bad in ["+1782", "1 2", "1,1", "0x10", "", "١٢"] {
            #expect(status("POST /whip HTTP/1.1\r\nHost: x\r\nContent-Length: \(bad)\r\n\r\n") == 400, "Content-Length: \(bad)")
        }
        // Two Authorization headers: refused, not "the first wins".
        #expect(status("POST /whip HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n") == 400)
        // A bare-LF request is answered (400) at once, not waited on until a timeout.
        #expect(status("POST /whip HTTP/1.1\nHost: x\nContent-Length: 0\n\n") == 400)
        #expect(status("GET /metrics HTTP/1.1\r\nHost: x\nX: y\r\n\r\n") == 400)
        // No Host in HTTP/1.1 (RFC 9112 §3.2), obsolete folding (§5.2), control characters, bad versions.
        #expect(status("GET /metrics HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET /metrics HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n") == 400)
        #expect(status("GET /metrics HTTP/1.1\r\nHost: x\u{1b}[2J\r\n\r\n") == 400)
        #expect(status("GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n") == 400)
        #expect(status("GET  /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == 400)
        if case let .complete(r, _) = HTTPRequest.parse(Array("GET /metrics HTTP/1.0\r\n\r\n".utf8)) {
            #expect(!r.keepAlive)
        } else {
            Issue.record("HTTP/1.0 without Host refused")
        }
        if case let .complete(r, _) = HTTPRequest.parse(Array("GET /m HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)) {
            #expect(!r.keepAlive)
        } else {
            Issue.record("not parsed")
        }
    }

    /// Random bytes and mutated requests: parsed, incomplete or refused — never a crash.
    @Test func hostileBytesNeverCrash() {
        var state: UInt64 = 7
        func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 11 }
        let base = Array("POST /whip HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\nContent-Length: 4\r\n\r\nv=0\n".utf8)
        for _ in 0..<5000 {
            var b = base
            for _ in 0..<(1 + Int(next() % 6)) {
                let i = Int(next() % UInt64(b.count))
                if next() % 2 == 0 { b[i] = UInt8(truncatingIfNeeded: next()) } else { b.insert(UInt8(truncatingIfNeeded: next()), at: i) }
            }
            _ = HTTPRequest.parse(b)
        }
    }
}
