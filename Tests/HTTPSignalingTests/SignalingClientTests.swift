import Testing
import Foundation
import HTTPSignaling
import Platform

/// The WHIP client against a scripted endpoint (`whip_mock.py`, Python's standard library) on
/// 127.0.0.1: success with relative Location, ETag and ICE servers, redirects, tokens, 503 with
/// Retry-After, 404/400, a missing Location, a stalled server, an unreachable one, DELETE.
@Suite(.serialized) final class SignalingClientTests {
    let server: Process
    let output: Locked<String>
    let port: Int
    let offer = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"

    init() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
            "Peers/whip_mock.py"
        ).path
        server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        server.arguments = [script]
        let out = Pipe()
        server.standardOutput = out
        server.standardError = FileHandle.nullDevice
        let text = Locked("")
        output = text
        out.fileHandleForReading.readabilityHandler = { h in
            let d = h.availableData
            text.withLock { $0 += String(decoding: d, as: UTF8.self) }
        }
        try server.run()
        let deadline = Clock.monotonicMicros() + 5_000_000
        while !text.value.contains("\n") && Clock.monotonicMicros() < deadline { Clock.sleep(micros: 10_000) }
        port = Int(text.value.split(separator: "\n").first ?? "") ?? 0
    }

    deinit {
        // SIGKILL and a bounded wait (Foundation's terminate() + waitUntilExit() can hang here).
        kill(server.processIdentifier, SIGKILL)
        let end = Clock.monotonicMicros() + 2_000_000
        while server.isRunning && Clock.monotonicMicros() < end { Clock.sleep(micros: 10_000) }
    }

    var base: String { "http://127.0.0.1:\(port)" }
    func noSleep(_: Int64) {}

    @Test func createsASessionAndEndsIt() throws {
        #expect(port > 0)
        let s = try SignalingClient.publish(endpoint: base + "/whip", offer: offer, token: nil, sleep: noSleep)
        #expect(s.answer.hasPrefix("v=0"))
        #expect(s.resourceURL.hasPrefix(base + "/session/"), "\(s.resourceURL)") // the relative Location made absolute
        #expect(s.etag?.hasPrefix("\"e") == true)
        #expect(
            s.iceServers == [
                ICEServerLink(url: "stun:stun.example.net:3478", username: nil, credential: nil),
                ICEServerLink(url: "turn:turn.example.net:3478?transport=udp", username: "u1", credential: "c1")
            ])
        try SignalingClient.delete(s, token: nil)

        let path = s.resourceURL.dropFirst(base.count)
        let deadline = Clock.monotonicMicros() + 2_000_000
        while !output.value.contains("DELETE \(path)") && Clock.monotonicMicros() < deadline { Clock.sleep(micros: 10_000) }
        #expect(output.value.contains("DELETE \(path)"))
    }

    @Test func followsA307AndKeepsThePOST() throws {
        let s = try SignalingClient.publish(endpoint: base + "/redirect", offer: offer, token: nil, sleep: noSleep)
        #expect(s.resourceURL.hasPrefix(base + "/session/"))
    }

    @Test func tokens() throws {
        let s = try SignalingClient.publish(endpoint: base + "/auth", offer: offer, token: "s3cret", sleep: noSleep)
        #expect(s.answer.hasPrefix("v=0"))
        let refused = #expect(throws: WHIPError.self) {
            try SignalingClient.publish(endpoint: self.base + "/auth", offer: self.offer, token: "wrong-token-123", sleep: self.noSleep)
        }
        #expect(refused?.kind == .unauthorized && refused?.status == 401 && refused?.message.contains("refused the token") == true)
        #expect(refused?.message.contains("wrong-token-123") == false) // a secret never appears
        let missing = #expect(throws: WHIPError.self) {
            try SignalingClient.publish(endpoint: self.base + "/auth", offer: self.offer, token: nil, sleep: self.noSleep)
        }
        #expect(missing?.message.contains("PUBBOT_WHIP_TOKEN") == true)
    }

    @Test func busyIsRetriedOnceAfterRetryAfter() throws {
        var waited: [Int64] = []
        let s = try SignalingClient.publish(endpoint: base + "/busy", offer: offer, token: nil, sleep: { waited.append($0) })
        #expect(waited == [1_000_000] && s.answer.hasPrefix("v=0"))
    }

    /// A 503 twice and a 409 ("nobody publishes yet", WHEP-04) are waited out as their
    /// Retry-After says, a bounded number of times.
    @Test func retryAfterIsWaitedOutUpToThreeTimes() throws {
        var waited: [Int64] = []
        let s = try SignalingClient.publish(endpoint: base + "/busy2", offer: offer, token: nil, sleep: { waited.append($0) })
        #expect(waited == [1_000_000, 1_000_000] && s.deviations.isEmpty)
        waited = []
        let c = try SignalingClient.publish(endpoint: base + "/conflict", offer: offer, token: nil, sleep: { waited.append($0) })
        #expect(waited == [1_000_000] && c.answer.hasPrefix("v=0"))
    }

    /// RFC 9725 §4.1: "MUST be able to handle all applicable status codes gracefully". A 200 or
    /// 202 with the answer, a 201 without Location and an answer as text/plain are taken, each
    /// said once naming §4.2; with `strict` each is an error. A session without Location has
    /// nothing to DELETE, and says so.
    @Test func lenientAnswersAreTakenAndSaid() throws {
        let cases: [(String, String)] = [
            ("/ok200", "answered HTTP 200, not 201 Created (RFC 9725 §4.2)"),
            ("/ok202", "answered HTTP 202, not 201 Created (RFC 9725 §4.2)"),
            ("/noloc", "without a Location header: the session cannot be ended or patched (RFC 9725 §4.2)"),
            ("/textplain", "Content-Type text/plain, not application/sdp (RFC 9725 §4.2)")
        ]
        for (path, said) in cases {
            let s = try SignalingClient.publish(endpoint: base + path, offer: offer, token: nil, sleep: noSleep)
            #expect(s.answer.hasPrefix("v=0") && s.deviations.count == 1 && s.deviations[0].contains(said), "\(path): \(s.deviations)")
            #expect(s.hasLocation == (path != "/noloc"), "\(path)")
            let strict = #expect(throws: WHIPError.self) {
                try SignalingClient.publish(endpoint: self.base + path, offer: self.offer, token: nil, strict: true, sleep: self.noSleep)
            }
            #expect(strict?.kind == .protocolViolation && strict?.message.contains(said) == true, "\(path): \(String(describing: strict))")
            #expect(strict?.message.hasSuffix("(--strict)") == true)
        }
        let noLocation = try SignalingClient.publish(endpoint: base + "/noloc", offer: offer, token: nil, sleep: noSleep)
        let delete = #expect(throws: WHIPError.self) { try SignalingClient.delete(noLocation, token: nil) }
        #expect(delete?.message.contains("nothing to DELETE") == true)
    }

    /// draft-ietf-wish-whep-04: a WHEP server's 406 carries its own offer; the session is
    /// returned as a counter-offer and its answer PATCHed as application/sdp with If-Match the
    /// 406's entity-tag. A 406 without Location is one clear error; to a WHIP client a 406 is
    /// a refusal; a refused answer says so.
    @Test func aWHEPCounterOfferIsAnsweredByPatch() throws {
        let s = try SignalingClient.publish(endpoint: base + "/counter", offer: offer, token: nil, exchange: .whep, sleep: noSleep)
        #expect(s.counterOffer && s.answer.contains("a=setup:actpass") && s.etag?.hasPrefix("\"e") == true, "\(s)")
        #expect(s.deviations.count == 1 && s.deviations[0].contains("406 Not Acceptable with its own offer"), "\(s.deviations)")
        let etag = try SignalingClient.answerCounterOffer(s, answer: "v=0\r\no=- 9 2 IN IP4 127.0.0.1\r\n", token: nil)
        #expect(etag == s.etag)
        let path = String(s.resourceURL.dropFirst(base.count))
        let deadline = Clock.monotonicMicros() + 3_000_000
        while !output.value.contains("PATCH \(path) ") && Clock.monotonicMicros() < deadline { Clock.sleep(micros: 10_000) }
        #expect(output.value.contains("PATCH \(path) \(s.etag ?? "-") v=0|o=- 9 2 IN IP4 127.0.0.1"), "\(output.value)")
        let noLocation = #expect(throws: WHIPError.self) {
            try SignalingClient.publish(
                endpoint: self.base + "/counter-noloc", offer: self.offer, token: nil, exchange: .whep, sleep: self.noSleep)
        }
        #expect(noLocation?.message.contains("406 with a counter-offer but no Location") == true, "\(String(describing: noLocation))")
        let asWHIP = #expect(throws: WHIPError.self) {
            try SignalingClient.publish(endpoint: self.base + "/counter", offer: self.offer, token: nil, sleep: self.noSleep)
        }
        #expect(asWHIP?.status == 406, "\(String(describing: asWHIP))")
        let strict = #expect(throws: WHIPError.self) {
            try SignalingClient.publish(
                endpoint: self.base + "/counter", offer: self.offer, token: nil, exchange: .whep, strict: true, sleep: self.noSleep)
        }
        #expect(
            strict?.status == 406 && strict?.message.contains("draft-ietf-wish-whep-04") == true
                && strict?.message.hasSuffix("(--strict)") == true, "\(String(describing: strict))")
        let refused = try SignalingClient.publish(
            endpoint: base + "/counter-refused", offer: offer, token: nil, exchange: .whep, sleep: noSleep)
        let e = #expect(throws: WHIPError.self) { try SignalingClient.answerCounterOffer(refused, answer: "v=0\r\n", token: nil) }
        #expect(
            e?.status == 400 && e?.message.contains("the answer to the WHEP counter-offer was refused") == true, "\(String(describing: e))")
    }

    @Test func errorsSayWhatHappened() throws {
        let cases: [(String, WHIPError.Kind, String)] = [
            ("/missing", .notFound, "no WHIP endpoint"), ("/bad", .rejected, "simulcast refused: too many layers")
        ]
        for (path, kind, text) in cases {
            let e = #expect(throws: WHIPError.self) {
                try SignalingClient.publish(endpoint: self.base + path, offer: self.offer, token: nil, sleep: self.noSleep)
            }
            #expect(e?.kind == kind && e?.message.contains(text) == true, "\(path): \(String(describing: e))")
        }
    }

    /// The same exchange as a WHEP subscriber: errors name the WHEP endpoint and its own token
    /// option (they were made by replacing "WHIP endpoint" in the text, which left "no WHIP
    /// endpoint" and the WHIP token's hint).
    @Test func whepErrorsNameWHEP() throws {
        let missing = #expect(throws: WHIPError.self) {
            try SignalingClient.publish(
                endpoint: self.base + "/missing", offer: self.offer, token: nil, exchange: .whep, sleep: self.noSleep)
        }
        #expect(missing?.message.contains("no WHEP endpoint") == true, "\(String(describing: missing))")
        let token = #expect(throws: WHIPError.self) {
            try SignalingClient.publish(endpoint: self.base + "/auth", offer: self.offer, token: nil, exchange: .whep, sleep: self.noSleep)
        }
        #expect(
            token?.message.contains("WHEP endpoint wants a token") == true && token?.message.contains("PUBBOT_WHEP_TOKEN") == true
                && token?.message.contains("WHIP") == false, "\(String(describing: token))")
    }

    /// A server that never answers, and one that is not there: bounded time, clear message.
    @Test func stalledAndUnreachableServers() throws {
        let t0 = Clock.monotonicMicros()
        let stalled = #expect(throws: WHIPError.self) {
            try SignalingClient.publish(
                endpoint: self.base + "/stall", offer: self.offer, token: nil, timeoutMillis: 1_000, sleep: self.noSleep)
        }
        #expect(stalled?.kind == .timeout && (1_000_000...3_000_000).contains(Clock.monotonicMicros() - t0))
        let closed = try closedPort()
        let t1 = Clock.monotonicMicros()
        let unreachable = #expect(throws: WHIPError.self) {
            try SignalingClient.publish(endpoint: "http://127.0.0.1:\(closed)/whip", offer: self.offer, token: nil, sleep: self.noSleep)
        }
        #expect(unreachable?.kind == .unreachable && unreachable?.message.contains("cannot reach") == true)
        #expect(Clock.monotonicMicros() - t1 < 5_000_000)
    }

    /// A TCP port nobody listens on (bound, then released).
    func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: a.sin_port))
    }
}
