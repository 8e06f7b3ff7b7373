public import ReceiverEngine
public import DTLS
public import ICE
public import HTTPServer
import Signalling
import RTPCore
import Platform

/// `pubbot receive --whip-listen`: a WHIP endpoint (RFC 9725) in front of the receiver. `POST
/// /whip` with an SDP offer creates a session (201, `Location: /whip/<id>`, the answer:
/// ICE-lite, DTLS client, the offer's payload types and extension IDs, simulcast as offered);
/// `DELETE /whip/<id>` ends it. A bearer token, when set, is required (401 otherwise), compared
/// byte for byte in constant time. `PATCH /whip/<id>` takes trickle ICE (204) and ICE restarts
/// (200 with the endpoint's new credentials and a new ETag) as RFC 9725 §4.3 says. CORS (RFC 9725 §4.2, Fetch): `OPTIONS` is answered without a token, and every
/// answer names the origin and exposes Location, Link, ETag and Accept-Patch, so a page on
/// another origin can publish. Sessions the receiver ended (ICE never connected, DTLS failed,
/// consent lost) free their slots: the cap counts live sessions.
public final class WHIPEndpoint: @unchecked Sendable {
    let server: HTTPServer
    public var port: Int { server.port }
    /// Live sessions by resource id (the HTTP thread's own bookkeeping).
    let sessions = Locked<Set<String>>([])
    /// Each session's ICE as PATCHes change it (RFC 9725 §4.3): the client's current ufrag, the
    /// strong entity-tag of the ICE session, the restarts so far, the offerer-tagged m-line.
    struct ICESession: Sendable {
        var remoteUfrag: String
        var etag: String
        var restarts = 0
        var mline: String
        var mid: String
    }
    let iceSessions = Locked<[String: ICESession]>([:])

    /// What PATCHes did (RFC 9725 §4.3): trickles taken (204) and the candidates they carried,
    /// ICE restarts answered (200).
    public struct Patches: Sendable, Equatable {
        public var trickles = 0
        public var trickledCandidates = 0
        public var restarts = 0
    }
    let patchCounts = Locked(Patches())
    public var patches: Patches { patchCounts.value }

    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The server's connection limits (what a slowloris client meets).
    public var httpStats: HTTPServer.Counters { server.stats }
    /// Sessions answered (201) so far, and live now.
    let answered = Locked(0)
    /// Sessions the receiver ended (the publisher's BYE or DTLS close, ICE or consent lost) whose
    /// resource the client has not DELETEd yet: their slot is free, but the resource still
    /// answers its DELETE with 200 (RFC 9725 §4.2: the client ends the session; the last 256).
    let ended = Locked<[String]>([])
    public var sessionsAnswered: Int { answered.value }
    public var sessionsLive: Int {
        let gone = receiver.takeEndedResources()
        return sessions.withLock { s in
            for g in gone { s.remove(g) }; return s.count
        }
    }
    let receiver: ReceiverEngine

    /// - Parameters:
    ///   - candidates: the media socket's host candidates, as the answer names them.
    ///   - maxSessions: live sessions at once; beyond this, 503 with Retry-After.
    public init(
        receiver: ReceiverEngine, host: String, port: Int, token: String?, certificate: DTLSCertificate,
        candidates: [ICECandidate], maxSessions: Int, limits: HTTPServer.Limits = HTTPServer.Limits(),
        iceServers: [(url: String, username: String?, credential: String?)] = [], tls: TLSServerContext? = nil
    ) throws(StartError) {
        self.receiver = receiver
        let sessions = self.sessions, answered = self.answered, ended = self.ended, iceSessions = self.iceSessions
        let patchCounts = self.patchCounts
        @Sendable func release(_ gone: [String]) {
            guard !gone.isEmpty else { return }
            sessions.withLock { s in for g in gone { s.remove(g) } }
            ended.withLock { e in
                e += gone
                if e.count > 256 { e.removeFirst(e.count - 256) }
            }
        }
        let fingerprint = certificate.sdpFingerprint
        let expected = token.map { Array($0.utf8) }
        // RFC 9725 §4.6: one Link header per STUN/TURN server, credentials as target attributes.
        let links = iceServers.map { s -> (String, String) in
            var v = "<\(s.url)>; rel=\"ice-server\""
            if let u = s.username, let c = s.credential { v += "; username=\"\(u)\"; credential=\"\(c)\"; credential-type=\"password\"" }
            return ("Link", v)
        }
        do {
            server = try HTTPServer(host: host, port: port, name: "pubbot-whip", limits: limits, tls: tls) { r in
                var response = Self.route(r, expected: expected) { r in
                    // Slots of sessions the receiver ended are free before this request counts them.
                    release(receiver.takeEndedResources())
                    var response = Self.create(
                        r, receiver: receiver, sessions: sessions, iceSessions: iceSessions, fingerprint: fingerprint,
                        candidates: candidates, maxSessions: maxSessions)
                    if response.status == 201 { response.headers += links }
                    if response.status == 201 { answered.withLock { $0 += 1 } }
                    return response
                } delete: { id in
                    release(receiver.takeEndedResources())
                    if sessions.withLock({ $0.remove(id) }) != nil {
                        iceSessions.withLock { $0[id] = nil }
                        receiver.removePublisher(resource: id)
                        return true
                    }
                    return ended.withLock { e in e.firstIndex(of: id).map { e.remove(at: $0) } != nil }
                } exists: { id in
                    sessions.withLock { $0.contains(id) } || ended.withLock { $0.contains(id) }
                } patch: { id, r in
                    guard sessions.withLock({ $0.contains(id) }) else {
                        return HTTPResponse(status: 404, text: "the WHIP session has ended\n")
                    }
                    return Self.patch(
                        r, id: id, iceSessions: iceSessions, receiver: receiver, candidates: candidates, counts: patchCounts)
                }
                response.headers += Self.corsHeaders(r)
                return response
            }
        } catch {
            throw StartError(description: "--whip-listen: \(error.description)")
        }
    }

    /// RFC 9725 §4 routes: `/whip` (POST, OPTIONS, GET → 204) and `/whip/<id>` (DELETE, PATCH →
    /// 405, OPTIONS, GET → 204); 404 for any other path or an unknown session, 405 only for a known resource
    /// with a method it does not take.
    static func route(
        _ r: HTTPRequest, expected: [UInt8]?, create: (HTTPRequest) -> HTTPResponse, delete: (String) -> Bool,
        exists: (String) -> Bool,
        patch: (String, HTTPRequest) -> HTTPResponse = { _, _ in HTTPResponse(status: 405, headers: [("Allow", "DELETE, OPTIONS")]) }
    ) -> HTTPResponse {
        let parts = r.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let collection = parts.count == 1 && parts.first == "whip"
        let resource = parts.count == 2 && parts.first == "whip" && !(parts.last ?? "").isEmpty ? parts.last.map(String.init) : nil
        if r.method == "OPTIONS" && (collection || resource != nil) {
            // The CORS preflight carries no credentials (Fetch §4.8): answered without a token.
            return HTTPResponse(
                status: 204,
                headers: [
                    ("Allow", collection ? "POST, OPTIONS" : "DELETE, PATCH, OPTIONS"), ("Accept-Post", "application/sdp"),
                    ("Accept-Patch", "application/trickle-ice-sdpfrag")
                ])
        }
        if let expected, let refusal = authorize(r, expected: expected) { return refusal }
        // RFC 9725 §4.1: the resources have no representation; a GET is a 2xx with no content.
        if r.method == "GET" && (collection || resource.map(exists) == true) { return HTTPResponse(status: 204) }
        if collection {
            guard r.method == "POST" else {
                return HTTPResponse(status: 405, headers: [("Allow", "POST, OPTIONS")], body: Array("POST an SDP offer to /whip\n".utf8))
            }
            return create(r)
        }
        guard let id = resource, exists(id) else {
            return HTTPResponse(status: 404, text: "no such WHIP resource (POST an SDP offer to /whip)\n")
        }
        switch r.method {
        case "DELETE":
            return delete(id) ? HTTPResponse(status: 200) : HTTPResponse(status: 404, text: "no such WHIP session\n")
        case "PATCH":
            return patch(id, r)
        default:
            return HTTPResponse(
                status: 405, headers: [("Allow", "DELETE, PATCH, OPTIONS")], body: Array("a WHIP session takes DELETE\n".utf8))
        }
    }

    /// `Authorization: Bearer <token>` (RFC 6750 §2.1; the scheme is case-insensitive, RFC 9110
    /// §11.1), the token compared byte for byte in constant time. nil: allowed.
    static func authorize(_ r: HTTPRequest, expected: [UInt8]) -> HTTPResponse? {
        let refused = HTTPResponse(
            status: 401, headers: [("WWW-Authenticate", "Bearer"), ("Content-Type", "text/plain")],
            body: Array("a valid bearer token is required\n".utf8))
        guard let value = r.header("authorization") else { return refused }
        let bytes = Array(value.utf8)
        guard bytes.count > 7, Array(bytes[0..<6]).map({ $0 | 0x20 }) == Array("bearer".utf8), bytes[6] == 32 else { return refused }
        var credentials = bytes[7...]
        while credentials.first == 32 { credentials = credentials.dropFirst() }
        return constantTimeEqual(Array(credentials), expected) ? nil : refused
    }

    /// Equal bytes, in a time that depends only on the expected length.
    static func constantTimeEqual(_ given: [UInt8], _ expected: [UInt8]) -> Bool {
        var diff: UInt8 = given.count == expected.count ? 0 : 1
        for i in expected.indices { diff |= expected[i] ^ (i < given.count ? given[i] : 0) }
        return diff == 0
    }

    /// CORS (Fetch standard §3.2): any origin may publish (the token, not the origin, is the
    /// guard; no cookies are used); the headers a WHIP client reads are exposed.
    static func corsHeaders(_ r: HTTPRequest) -> [(String, String)] {
        var h = [
            ("Access-Control-Allow-Origin", "*"),
            ("Access-Control-Expose-Headers", "Location, Link, ETag, Accept-Patch")
        ]
        if r.method == "OPTIONS" {
            h += [
                ("Access-Control-Allow-Methods", "POST, DELETE, PATCH, OPTIONS"),
                ("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match"),
                ("Access-Control-Max-Age", "600")
            ]
        }
        return h
    }

    static func create(
        _ r: HTTPRequest, receiver: ReceiverEngine, sessions: Locked<Set<String>>, iceSessions: Locked<[String: ICESession]>,
        fingerprint: String, candidates: [ICECandidate], maxSessions: Int
    ) -> HTTPResponse {
        guard r.header("content-type")?.lowercased().hasPrefix("application/sdp") == true else {
            return HTTPResponse(status: 415, text: "the offer must be Content-Type: application/sdp\n")
        }
        guard sessions.value.count < maxSessions else {
            return HTTPResponse(
                status: 503, headers: [("Retry-After", "5"), ("Content-Type", "text/plain")],
                body: Array("the receiver serves \(maxSessions) publishers already\n".utf8))
        }
        let id = hex(SecureRandom.bytes(8))
        let credentials = ICEAgent.Credentials(random: SecureRandom.bytes(32))
        let ufrag = credentials.ufrag, password = credentials.password
        let answer: WHIPAnswer
        do {
            answer = try WHIPAnswer.answer(
                offer: String(decoding: r.body, as: UTF8.self), iceUfrag: ufrag, icePassword: password,
                fingerprint: fingerprint, candidates: candidates, sessionID: UInt64(SecureRandom.uint32()) | 1)
        } catch {
            return HTTPResponse(status: 400, text: error.description + "\n")
        }
        guard let remoteFingerprint = DTLSCertificate.parseFingerprint(answer.remoteFingerprint) else {
            return HTTPResponse(status: 400, text: "the offer's a=fingerprint is malformed\n")
        }
        var ext: [String: Int] = [:]
        for s in answer.streams { ext.merge(s.extensions) { a, _ in a } }
        let audio = answer.streams.filter { $0.kind == .audio }, video = answer.streams.filter { $0.kind == .video }
        var spec = WebRTCPublisherSpec(
            resource: id, localUfrag: ufrag, localPassword: password, remoteUfrag: answer.remoteUfrag,
            remotePassword: answer.remotePassword, remoteFingerprint: remoteFingerprint,
            audioPayloadTypes: Set(audio.map(\.payloadType)), videoPayloadTypes: Set(video.map(\.payloadType)),
            rtxPayloadTypes: Set(video.compactMap(\.rtxPayloadType)), extensions: RTPExtensionIDs(negotiated: ext))
        for s in video {
            spec.rtxToMedia.merge(s.rtxToMedia) { a, _ in a }
            spec.videoCodecs[s.payloadType] = s.codec
        }
        receiver.addPublisher(spec)
        sessions.withLock { _ = $0.insert(id) }
        let (mline, mid) = firstSection(answer.sdp)
        let etag = "\"\(id)-0\""
        iceSessions.withLock { $0[id] = ICESession(remoteUfrag: answer.remoteUfrag, etag: etag, mline: mline, mid: mid) }
        return HTTPResponse(
            status: 201, headers: [("Content-Type", "application/sdp"), ("Location", "/whip/\(id)"), ("ETag", etag)],
            body: Array(answer.sdp.utf8))
    }

    /// A PATCH on a live session (RFC 9725 §4.3.1): an `application/trickle-ice-sdpfrag` (RFC
    /// 8840) or 415; `If-Match` required (428) and current or "*" (412). New credentials are an
    /// ICE restart (§4.3.3): the endpoint's new ufrag/pwd and its candidates in a 200 with a new
    /// ETag, the receive thread told; the same credentials are a trickle (§4.3.2): the
    /// candidates noted, 204 without body or ETag. A malformed fragment is a 400.
    static func patch(
        _ r: HTTPRequest, id: String, iceSessions: Locked<[String: ICESession]>, receiver: ReceiverEngine, candidates: [ICECandidate],
        counts: Locked<Patches>
    ) -> HTTPResponse {
        guard r.header("content-type")?.lowercased().hasPrefix("application/trickle-ice-sdpfrag") == true else {
            return HTTPResponse(status: 415, text: "a PATCH takes Content-Type: application/trickle-ice-sdpfrag\n")
        }
        guard let match = r.header("if-match")?.trimmingSpaces, !match.isEmpty else {
            return HTTPResponse(status: 428, text: "a PATCH needs If-Match (the session's ETag, or \"*\" for an ICE restart)\n")
        }
        // A candidate of another transport or an unresolvable address is skipped (§4.3.2).
        let fragment = SDPFragment.parse(String(decoding: r.body.prefix(16_384), as: UTF8.self))
        let (ufrag, password, remote) = (fragment.ufrag, fragment.password, fragment.candidates)
        return iceSessions.withLock { table -> HTTPResponse in
            guard var s = table[id] else { return HTTPResponse(status: 404, text: "the WHIP session has ended\n") }
            guard match == "*" || match == "\"*\"" || match == s.etag else {
                return HTTPResponse(status: 412, text: "the ICE session changed: If-Match \(s.etag) or \"*\"\n")
            }
            guard let u = ufrag, u != s.remoteUfrag else {
                receiver.addRemoteCandidates(resource: id, remote)
                counts.withLock {
                    $0.trickles += 1
                    $0.trickledCandidates += remote.count
                }
                return HTTPResponse(status: 204)
            }
            guard let pwd = password, fragment.credentialsValid else {
                return HTTPResponse(
                    status: 400, text: "an ICE restart needs a=ice-ufrag (4–256) and a=ice-pwd (22–256 ice-chars, RFC 8839 §5.4)\n")
            }
            let local = ICEAgent.Credentials(random: SecureRandom.bytes(32))
            receiver.restartPublisher(
                resource: id, local: local, remote: .init(ufrag: u, password: pwd), candidates: remote)
            s.remoteUfrag = u
            s.restarts += 1
            counts.withLock { $0.restarts += 1 }
            s.etag = "\"\(id)-\(s.restarts)\""
            table[id] = s
            // The same ice-lite and the offerer-tagged m-line as the answer (§4.3.3).
            var body = "a=ice-lite\r\n\(s.mline)\r\na=mid:\(s.mid)\r\na=ice-ufrag:\(local.ufrag)\r\na=ice-pwd:\(local.password)\r\n"
            for c in candidates { body += "a=\(c.description)\r\n" }
            body += "a=end-of-candidates\r\n"
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "application/trickle-ice-sdpfrag"), ("ETag", s.etag)], body: Array(body.utf8))
        }
    }

    /// The answer's first m-line and its mid (the offerer-tagged section of the bundle).
    static func firstSection(_ sdp: String) -> (mline: String, mid: String) {
        var mline: String?, mid: String?
        for line in sdp.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            if mline == nil, line.hasPrefix("m=") { mline = String(line) }
            if mline != nil, mid == nil, line.hasPrefix("a=mid:") { mid = String(line.dropFirst(6)) }
        }
        return (mline ?? "m=audio 9 UDP/TLS/RTP/SAVPF 0", mid ?? "0")
    }

    static func hex(_ b: [UInt8]) -> String {
        let d = Array("0123456789abcdef")
        return String(b.flatMap { [d[Int($0 >> 4)], d[Int($0 & 15)]] })
    }

    public func stop() { server.stop() }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return String(s)
    }
}
