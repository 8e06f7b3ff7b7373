import Testing
import HTTPSignaling
import ICE
import Signalling
import WebRTCClient

/// `pubbot check`'s judging against scripted servers (no sockets): a server that does all of RFC
/// 9725 right meets every requirement; each departure is named with its section and keyword;
/// what a server does not offer is "not supported", what could not be tried "not exercised";
/// nothing a server says carries a secret into the findings.
@Suite struct ConformanceCheckTests {
    static let endpoint = "http://198.51.100.7:8080/whip"

    static func material() -> ConformanceCheck.Material {
        var offer = WHIPOffer(
            iceUfrag: "pUfr", icePassword: "publisher-ice-password-1",
            fingerprint: "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":"),
            candidates: [.host(STUNAddress(ip: [192, 0, 2, 1], port: 40_000))])
        offer.rids = []
        offer.audioSSRC = 1111
        offer.videoSSRC = (2222, 3333)
        return .init(
            offer: offer, restartUfrag: "rUfr", restartPassword: "restart-ice-password-22",
            candidate: .host(STUNAddress(ip: [192, 0, 2, 1], port: 40_000)))
    }

    /// An answer to `material()`'s offer, as a server gives it (ufrag `ufrag`).
    static func answer(ufrag: String = "sUfr", direction: String = "recvonly") -> String {
        let fp = "a=fingerprint:sha-256 " + Array(repeating: "CD", count: 32).joined(separator: ":")
        return [
            "v=0", "o=- 1 1 IN IP4 198.51.100.7", "s=-", "t=0 0", "a=group:BUNDLE 0 1", "a=ice-lite",
            "m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=mid:0", "a=ice-ufrag:\(ufrag)", "a=ice-pwd:server-ice-password-0001",
            fp,
            "a=setup:passive", "a=\(direction)", "a=rtcp-mux", "a=rtpmap:111 opus/48000/2",
            "a=candidate:1 1 udp 2130706431 198.51.100.7 40000 typ host",
            "m=video 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 0.0.0.0", "a=mid:1", "a=ice-ufrag:\(ufrag)", "a=ice-pwd:server-ice-password-0001",
            fp,
            "a=setup:passive", "a=\(direction)", "a=rtcp-mux", "a=rtpmap:96 VP8/90000", "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli"
        ].joined(separator: "\r\n") + "\r\n"
    }

    /// A WHIP server in a few rules, each switchable.
    struct Server {
        var post201 = true
        var location = true
        var sdpType = true
        var getOK = true
        var cors = true
        var trickle = true
        var restart = true
        var etags = true
        var preconditions = true
        var link: [String] = []
        var requireToken = false
        var restartKeepsUfrag = false
        var echo = ""
        var sessions: Set<String> = []
        var etag = "\"e1\""
        var log: [String] = []

        mutating func handle(_ method: String, _ url: String, _ body: String?, _ headers: [String], _ withToken: Bool)
            -> SignalingClient.Reply
        {
            log.append("\(method) \(url)")
            func header(_ name: String) -> String? {
                headers.first { $0.lowercased().hasPrefix(name.lowercased() + ":") }.map { String($0.dropFirst(name.count + 1)).trimmed }
            }
            if requireToken && !withToken && method != "OPTIONS" { return .init(status: 401, body: echo) }
            if url == ConformanceCheckTests.endpoint {
                switch method {
                case "OPTIONS":
                    return .init(
                        status: 204, headerFields: cors ? [("access-control-allow-origin", "*"), ("accept-post", "application/sdp")] : [])
                case "GET": return .init(status: getOK ? 204 : 405)
                case "POST":
                    guard header("Content-Type") == "application/sdp" else { return .init(status: 415) }
                    guard body?.contains("m=audio") == true else { return .init(status: 400, body: echo) }
                    let id = "s\(sessions.count + 1)"
                    sessions.insert(id)
                    var h: [(name: String, value: String)] = [("content-type", sdpType ? "application/sdp" : "text/plain")]
                    if location { h.append(("location", "/whip/\(id)")) }
                    if etags { h.append(("etag", etag)) }
                    h += link.map { ("link", $0) }
                    return .init(status: post201 ? 201 : 200, headerFields: h, body: ConformanceCheckTests.answer(), effectiveURL: url)
                default: return .init(status: 405)
                }
            }
            let id = String(url.split(separator: "/").last ?? "")
            guard sessions.contains(id) else { return .init(status: 404) }
            switch method {
            case "DELETE":
                sessions.remove(id)
                return .init(status: 200)
            case "PATCH":
                guard trickle || restart else { return .init(status: 405) }
                guard header("Content-Type") == "application/trickle-ice-sdpfrag" else { return .init(status: 415) }
                let ifMatch = header("If-Match")
                let isRestart = body?.contains("a=ice-ufrag:rUfr") == true && !(ifMatch.map { $0 != "\"*\"" } ?? false)
                if preconditions {
                    guard let ifMatch else { return .init(status: 428) }
                    if ifMatch != "\"*\"" && ifMatch != etag && !(ifMatch == "*" && !etags) { return .init(status: 412) }
                }
                if isRestart {
                    guard restart else { return .init(status: 422) }
                    etag = "\"e\(Int(etag.dropFirst(2).dropLast())! + 1)\""
                    let frag = "a=ice-ufrag:\(restartKeepsUfrag ? "sUfr" : "nUfr")\r\na=ice-pwd:new-server-ice-password-01\r\n"
                    return .init(
                        status: 200, headerFields: [("content-type", "application/trickle-ice-sdpfrag"), ("etag", etag)], body: frag)
                }
                guard trickle else { return .init(status: 422) }
                return .init(status: 204)
            default: return .init(status: 405)
            }
        }
    }

    static func check(_ server: inout Server, token: Bool = false, probe: ConformanceCheck.Probe = { _ in (true, "answered") })
        -> ConformanceReport
    {
        var s = server
        defer { server = s }
        return ConformanceCheck.run(
            exchange: .whip, endpoint: endpoint, tokenGiven: token, material: material(),
            http: { s.handle($0, $1, $2, $3, $4) }, probe: probe)
    }

    @Test func theAnswerIsOneAClientTakes() throws {
        let n = try NegotiatedSession.from(answer: Self.answer(), offer: Self.material().offer)
        #expect(n.audio != nil && n.video != nil && n.candidates.count == 1)
    }

    @Test func aServerDoingAllOfItMeetsEveryRequirement() {
        var server = Server(link: ["<stun:198.51.100.7:3478>; rel=\"ice-server\""])
        let r = Self.check(&server)
        // The one row left untried: the 422 owed by a server that supports only one of the two.
        let notMet = r.findings.filter { $0.outcome != .met }
        #expect(notMet.map(\.id) == ["patch-422"], "\(notMet.map { "\($0.id): \($0.outcome.rawValue) \($0.detail)" })")
        #expect(notMet.first?.detail == "both supported")
        #expect(r.brokenMusts.isEmpty && r.unreachable == nil)
        for id in [
            "options-cors", "post-201", "answer-valid", "answer-direction", "trickle-204", "restart-200", "etag", "patch-428", "patch-412",
            "delete-gone"
        ] {
            #expect(r.findings.contains { $0.id == id }, "\(id) judged")
        }
        // Every session made was ended.
        #expect(server.sessions.isEmpty)
    }

    @Test func eachDepartureIsNamedWithItsSection() {
        var server = Server(post201: false, location: false, sdpType: false, getOK: false, cors: false)
        let r = Self.check(&server)
        func outcome(_ id: String) -> ConformanceFinding.Outcome? { r.findings.first { $0.id == id }?.outcome }
        #expect(outcome("post-201") == .broken && outcome("post-content-type") == .broken && outcome("post-location") == .broken)
        #expect(outcome("get-endpoint") == .broken && outcome("options-cors") == .broken)
        #expect(r.findings.first { $0.id == "post-201" }?.detail.contains("HTTP 200") == true)
        #expect(r.findings.first { $0.id == "post-201" }?.section == "RFC 9725 §4.2")
        // Without a Location nothing can be patched or deleted: said, not judged.
        #expect(outcome("trickle") == .notExercised && outcome("delete") == .notExercised)
        #expect(Set(r.brokenMusts.map(\.id)) == ["post-201", "post-content-type", "post-location", "get-endpoint", "options-cors"])
    }

    @Test func optionalFeaturesAbsentAreNotFailures() {
        var server = Server(trickle: false, restart: false, etags: false)
        let r = Self.check(&server)
        func outcome(_ id: String) -> ConformanceFinding.Outcome? { r.findings.first { $0.id == id }?.outcome }
        #expect(outcome("trickle") == .notSupported && outcome("restart") == .notSupported)
        #expect(outcome("link-ice-servers") == .notSupported)
        #expect(outcome("patch-428") == .notExercised && outcome("etag") == .notExercised)
        #expect(r.brokenMusts.isEmpty)
    }

    @Test func supportingOneOfTheTwoTheOtherIs422() {
        var trickleOnly = Server(restart: false)
        let a = Self.check(&trickleOnly)
        #expect(a.findings.first { $0.id == "patch-422" }?.outcome == .met)
        #expect(a.findings.first { $0.id == "restart" }?.outcome == .notSupported)
        // A restart refused with 400 (as broadcast-box does): the 422 is broken, and so is the
        // restart itself (a 400 is not "not supported").
        var refusing = Server(restart: false)
        let b = ConformanceCheck.run(
            exchange: .whip, endpoint: Self.endpoint, tokenGiven: false, material: Self.material(),
            http: { m, u, body, h, t in
                if m == "PATCH", body?.contains("rUfr") == true, h.contains("If-Match: \"*\"") { return .init(status: 400) }
                return refusing.handle(m, u, body, h, t)
            }, probe: { _ in (true, "") })
        #expect(b.findings.first { $0.id == "patch-422" }?.outcome == .broken)
        #expect(b.findings.first { $0.id == "restart" }?.outcome == .broken)
    }

    @Test func restartRulesAreChecked() {
        var sameUfrag = Server(restartKeepsUfrag: true)
        #expect(Self.check(&sameUfrag).findings.first { $0.id == "restart-200" }?.outcome == .broken)
        var noPreconditions = Server(preconditions: false)
        let r = Self.check(&noPreconditions)
        #expect(r.findings.first { $0.id == "patch-428" }?.outcome == .broken)
        #expect(r.findings.first { $0.id == "patch-412" }?.outcome == .broken)
        // 428/412 are stated without a keyword: reported, not a broken MUST.
        #expect(r.brokenMusts.isEmpty)
    }

    @Test func aBadAnnouncedServerIsBrokenAndItsSecretsStayOut() {
        var server = Server(link: [
            "<turn:198.51.100.7:3478?transport=udp>; rel=\"ice-server\"; username=\"u1\"; credential=\"turn-sekrit-99\"",
            "<turn:198.51.100.8:3478>; rel=\"ice-server\"", "<http://nope>; rel=\"ice-server\""
        ])
        server.echo = "refused: Authorization: Bearer tok-sekrit-42"
        var probed: [String] = []
        let r = Self.check(
            &server,
            probe: { link in
                probed.append(link.url)
                return (false, "no allocation (401)")
            })
        let f = r.findings.first { $0.id == "link-ice-servers" }
        #expect(f?.outcome == .broken)
        #expect(f?.detail.contains("no username/credential") == true && f?.detail.contains("not a stun:/turn:/turns: URL") == true)
        #expect(probed == ["turn:198.51.100.7:3478?transport=udp"], "only a well-formed server with its credentials is tried")
        for finding in r.findings {
            #expect(
                !finding.detail.contains("turn-sekrit-99") && !finding.detail.contains("tok-sekrit-42"), "\(finding.id): \(finding.detail)")
        }
    }

    @Test func aTokenGivenIsCheckedAsRequired() {
        var server = Server(requireToken: true)
        server.echo = "missing Bearer tok-sekrit-42"
        let r = Self.check(&server, token: true)
        #expect(r.findings.first { $0.id == "auth-required" }?.outcome == .met)
        #expect(r.brokenMusts.isEmpty)
        // The preflight went without the token, every other request with it.
        var open = Server()
        #expect(Self.check(&open, token: true).findings.first { $0.id == "auth-required" }?.outcome == .notSupported)
        #expect(open.sessions.isEmpty, "the session made without a token was ended too")
    }

    @Test func anUnreachableEndpointIsSaidOnce() {
        let r = ConformanceCheck.run(
            exchange: .whip, endpoint: Self.endpoint, tokenGiven: false, material: Self.material(),
            http: { _, _, _, _, _ in .init(status: 0, error: WHIPError(kind: .unreachable, status: nil, message: "cannot reach it")) },
            probe: { _ in (true, "") })
        #expect(r.unreachable == "cannot reach it" && r.findings.isEmpty)
    }
}

extension String {
    fileprivate var trimmed: String { String(drop { $0 == " " }) }
}
