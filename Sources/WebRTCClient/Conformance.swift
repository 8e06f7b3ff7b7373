public import HTTPSignaling
public import Signalling
public import ICE

/// One requirement of RFC 9725 (WHIP) or draft-ietf-wish-whep (WHEP, which keeps WHIP's HTTP
/// rules) and what the server did about it.
public struct ConformanceFinding: Sendable, Equatable {
    /// The requirement's BCP 14 keyword; `none` where the RFC states the behaviour without one
    /// ("will be answered … with a 428"): reported, never a failure of the run.
    public enum Level: String, Sendable { case must = "MUST", should = "SHOULD", may = "MAY", none = "-" }
    public enum Outcome: String, Sendable {
        case met, broken
        /// The server does not offer the feature (trickle, restart, ICE servers): allowed.
        case notSupported = "not supported"
        /// An earlier step failed, so this one could not be tried.
        case notExercised = "not exercised"
    }
    public var id: String
    public var section: String
    public var level: Level
    public var requirement: String
    public var outcome: Outcome
    /// What was seen: a status, a header, the reason (never a token or a TURN credential).
    public var detail: String
}

/// What `ConformanceCheck.run` found at one endpoint.
public struct ConformanceReport: Sendable {
    public var exchange: SignalingExchange
    /// The endpoint, as it may be printed.
    public var endpoint: String
    public var findings: [ConformanceFinding]
    /// Why nothing could be judged (the endpoint unreachable), or nil.
    public var unreachable: String?

    /// The MUSTs the server broke.
    public var brokenMusts: [ConformanceFinding] { findings.filter { $0.level == .must && $0.outcome == .broken } }
    public func count(_ o: ConformanceFinding.Outcome) -> Int { findings.filter { $0.outcome == o }.count }
}

/// `pubbot check`: exercises a WHIP (RFC 9725) or WHEP endpoint the way the RFC's clients use it
/// and says, requirement by requirement, what the server did — POST and its answer, the
/// refusals it owes, GET, CORS, trickle and restart by PATCH with their entity-tag rules, the
/// ICE servers it announces, DELETE. The HTTP exchanges and the STUN/TURN probes are the
/// caller's (`http`, `probe`): the judging is plain code, tested against scripted servers.
public enum ConformanceCheck {
    /// One request: method, URL, body, header lines, and whether to send the token (the closure
    /// holds it: the check never sees it, so no finding can carry it).
    public typealias HTTP = (_ method: String, _ url: String, _ body: String?, _ headers: [String], _ withToken: Bool) ->
        SignalingClient.Reply
    /// Tries one announced ICE server (a STUN Binding, a TURN Allocate with its credentials):
    /// whether it answered, and what to say (an address, the failure).
    public typealias Probe = (ICEServerLink) -> (answered: Bool, detail: String)

    /// What the check sends: the offer (with its ICE credentials), fresh credentials for the
    /// restart, one local candidate to trickle.
    public struct Material: Sendable {
        public var offer: WHIPOffer
        public var restartUfrag: String
        public var restartPassword: String
        public var candidate: ICECandidate
        public init(offer: WHIPOffer, restartUfrag: String, restartPassword: String, candidate: ICECandidate) {
            self.offer = offer
            self.restartUfrag = restartUfrag
            self.restartPassword = restartPassword
            self.candidate = candidate
        }
    }

    public static func run(
        exchange: SignalingExchange, endpoint: String, tokenGiven: Bool, material m: Material, http: HTTP, probe: Probe
    ) -> ConformanceReport {
        var report = ConformanceReport(exchange: exchange, endpoint: SignalingClient.redacted(endpoint), findings: [])
        func section(_ s: String) -> String { exchange == .whip ? "RFC 9725 \(s)" : "WHEP (RFC 9725 \(s))" }
        func add(
            _ id: String, _ s: String, _ level: ConformanceFinding.Level, _ requirement: String, _ outcome: ConformanceFinding.Outcome,
            _ detail: String
        ) {
            report.findings.append(
                ConformanceFinding(id: id, section: section(s), level: level, requirement: requirement, outcome: outcome, detail: detail))
        }
        func status(_ r: SignalingClient.Reply) -> String { r.error?.message ?? "HTTP \(r.status)" }
        let offer = m.offer.sdp

        // §4.2: CORS for a browser's page — a preflight carries no token (RFC 9725 §4.7.1).
        let origin = "https://pubbot.invalid"
        let options = http(
            "OPTIONS", endpoint, nil,
            ["Origin: \(origin)", "Access-Control-Request-Method: POST", "Access-Control-Request-Headers: authorization, content-type"],
            false)
        if let e = options.error {
            report.unreachable = e.message
            return report
        }
        let allowOrigin = options.header("access-control-allow-origin")
        if (200..<300).contains(options.status), let allowOrigin, allowOrigin == "*" || allowOrigin == origin {
            add(
                "options-cors", "§4.2", .must, "OPTIONS answered for a CORS preflight (Fetch)", .met,
                "HTTP \(options.status), Access-Control-Allow-Origin \(allowOrigin)")
        } else if (200..<300).contains(options.status) {
            add(
                "options-cors", "§4.2", .must, "OPTIONS answered for a CORS preflight (Fetch)", .broken,
                "HTTP \(options.status) without Access-Control-Allow-Origin for \(origin): a page on another origin cannot POST")
        } else {
            add("options-cors", "§4.2", .must, "OPTIONS answered for a CORS preflight (Fetch)", .broken, status(options))
        }
        let plainOptions = http("OPTIONS", endpoint, nil, [], true)
        if plainOptions.status == 200 || plainOptions.status == 204 {
            let acceptPost = plainOptions.header("accept-post")
            add(
                "options-accept-post", "§4.2", .should, "OPTIONS's 200 carries Accept-Post: application/sdp",
                acceptPost?.lowercased().contains("application/sdp") == true ? .met : .broken,
                acceptPost.map { "Accept-Post: \(SignalingClient.sanitizedText($0))" } ?? "HTTP \(plainOptions.status) without Accept-Post")
        }

        // §4.1: the resources have no representation: GET is a 2xx with no content.
        let get = http("GET", endpoint, nil, [], true)
        add(
            "get-endpoint", "§4.1", .must, "GET on the endpoint answered 2xx with no content",
            (200..<300).contains(get.status) && get.body.isEmpty ? .met : .broken,
            (200..<300).contains(get.status) && !get.body.isEmpty ? "HTTP \(get.status) with \(get.body.utf8.count) bytes" : status(get))

        // §4.2: what is not an SDP offer is refused with a 4xx.
        for (id, type, body, what) in [
            ("post-not-sdp", "text/plain", "hello", "a POST that is not application/sdp refused with a 4xx"),
            ("post-malformed-sdp", "application/sdp", "v=0\r\nthis is not SDP\r\n", "a malformed SDP offer refused with a 4xx")
        ] {
            let r = http("POST", endpoint, body, ["Content-Type: \(type)"], true)
            if (400..<500).contains(r.status) {
                add(id, "§4.2", .must, what, .met, "HTTP \(r.status)")
            } else {
                add(id, "§4.2", .must, what, .broken, (200..<300).contains(r.status) ? "HTTP \(r.status): taken" : status(r))
                if (200..<300).contains(r.status), let location = r.header("location") {
                    _ = http("DELETE", SignalingClient.resolved(location, against: r.effectiveURL ?? endpoint), nil, [], true)
                }
            }
        }

        // §4.7.1: a token given means the server wants one: an offer without it is refused.
        if tokenGiven {
            let r = http("POST", endpoint, offer, ["Content-Type: application/sdp"], false)
            if r.status == 401 || r.status == 403 {
                add("auth-required", "§4.7.1", .none, "an offer without the bearer token refused (401)", .met, "HTTP \(r.status)")
            } else if (200..<300).contains(r.status) {
                add(
                    "auth-required", "§4.7.1", .none, "an offer without the bearer token refused (401)", .notSupported,
                    "HTTP \(r.status): the endpoint takes offers without a token")
                if let location = r.header("location") {
                    _ = http("DELETE", SignalingClient.resolved(location, against: r.effectiveURL ?? endpoint), nil, [], false)
                }
            } else {
                add("auth-required", "§4.7.1", .none, "an offer without the bearer token refused (401)", .broken, status(r))
            }
        }

        // §4.2: the offer, answered 201 + application/sdp + Location, an answer by JSEP's rules.
        let post = http("POST", endpoint, offer, ["Content-Type: application/sdp", "Accept: application/sdp"], true)
        if let e = post.error {
            report.unreachable = e.message
            return report
        }
        if exchange == .whep && post.status == 409 {
            // WHEP: 409 (with Retry-After) while nobody publishes there — nothing to judge yet.
            report.unreachable =
                "nobody publishes at this WHEP endpoint yet (HTTP 409\(post.header("retry-after").map { ", Retry-After \(SignalingClient.sanitizedText($0))" } ?? "")): start a publisher, then check"
            return report
        }
        let answered = (200..<300).contains(post.status) && post.body.hasPrefix("v=0")
        add(
            "post-201", "§4.2", .must, "the offer answered 201 Created", post.status == 201 ? .met : .broken,
            post.status == 201
                ? "HTTP 201"
                : answered
                    ? "HTTP \(post.status) with an SDP answer (lenient clients take it)"
                    : status(post)
                        + (post.body.isEmpty ? "" : ": \(SignalingClient.sanitizedText(String(post.body.prefix(120))))"))
        let rest = [
            "post-content-type", "post-location", "answer-valid", "answer-direction", "answer-candidates", "link-ice-servers", "trickle",
            "trickle-204", "restart", "restart-200", "etag", "patch-422", "patch-not-sdpfrag", "patch-428", "patch-412", "delete",
            "delete-gone"
        ]
        guard answered else {
            for id in rest { add(id, "§4", .none, "needs a session", .notExercised, "the offer was not answered") }
            return report
        }
        let type = post.header("content-type")
        add(
            "post-content-type", "§4.2", .must, "the answer's Content-Type is application/sdp",
            type?.lowercased().hasPrefix("application/sdp") == true ? .met : .broken,
            type.map { "Content-Type \(SignalingClient.sanitizedText($0))" } ?? "no Content-Type")
        let location = post.header("location")
        let sessionURL = location.map { SignalingClient.resolved($0, against: post.effectiveURL ?? endpoint) }
        add(
            "post-location", "§4.2", .must, "the 201 has a Location (the session's URL)", sessionURL != nil ? .met : .broken,
            sessionURL.map { "Location \(SignalingClient.redacted($0))" } ?? "no Location: the session cannot be patched or ended")

        // The answer, read as the clients read it (RFC 9429 §5.3.1's initial answer).
        var answer: NegotiatedSession?
        do {
            let n = try NegotiatedSession.from(answer: post.body, offer: m.offer)
            answer = n
            let media = [n.audio.map { "audio \($0.payloadType)" }, n.video.map { "video \($0.codec?.sdpName ?? "?")/\($0.payloadType)" }]
                .compactMap { $0 }.joined(separator: ", ")
            add(
                "answer-valid", "§4.2", .must, "the answer answers the offer (JSEP initial answer)",
                n.audio != nil || n.video != nil ? .met : .broken,
                (media.isEmpty ? "no media accepted" : media) + (n.dtlsServer ? ", setup:active" : ", setup:passive")
                    + (n.iceLite ? ", ice-lite" : ""))
        } catch {
            add("answer-valid", "§4.2", .must, "the answer answers the offer (JSEP initial answer)", .broken, error.description)
        }
        if let n = answer {
            // WHIP's answer receives (§4.2: recvonly); WHEP's sends.
            let want: SDPDirection = exchange == .whip ? .recvonly : .sendonly
            let sections = [n.audio, n.video].compactMap { $0 }
            let wrong = sections.filter { $0.direction != want }
            add(
                "answer-direction", "§4.2", .must, "the answer's media sections are \(want.rawValue)", wrong.isEmpty ? .met : .broken,
                wrong.isEmpty
                    ? "\(sections.count) section(s) \(want.rawValue)"
                    : wrong.map { "mid \($0.mid) \($0.direction.rawValue)" }.joined(separator: ", "))
            let candidates = unique(n.candidates.map { "\($0.kind.rawValue) \($0.address.ipText):\($0.address.port)" })
            add(
                "answer-candidates", "§4.3.2", .none,
                "the answer carries the server's ICE candidates (a client that does not trickle needs them)",
                candidates.isEmpty ? .broken : .met,
                candidates.isEmpty ? "no a=candidate" : "\(candidates.count): " + candidates.prefix(3).joined(separator: ", "))
        } else {
            add(
                "answer-direction", "§4.2", .must, "the answer's media sections have the right direction", .notExercised, "no usable answer"
            )
            add("answer-candidates", "§4.3.2", .none, "the answer carries the server's ICE candidates", .notExercised, "no usable answer")
        }

        // §4.6: the ICE servers it announces, each tried.
        let servers = SignalingClient.iceServers(inLinks: post.headers("link"))
        if servers.isEmpty {
            add(
                "link-ice-servers", "§4.6", .may, "STUN/TURN servers announced in Link headers, and usable", .notSupported, "none announced"
            )
        } else {
            var said: [String] = []
            var allAnswered = true
            for s in servers {
                guard let u = try? ICEServerURL.parse(s.url) else {
                    allAnswered = false
                    said.append("'\(SignalingClient.sanitizedText(s.url))' is not a stun:/turn:/turns: URL")
                    continue
                }
                if u.isTURN && (s.username == nil || s.credential == nil) {
                    allAnswered = false
                    said.append("\(u) has no username/credential")
                    continue
                }
                let (ok, detail) = probe(s)
                allAnswered = allAnswered && ok
                said.append("\(u)\(u.isTURN ? " (with credentials)" : ""): \(detail)")
            }
            add(
                "link-ice-servers", "§4.6", .may, "STUN/TURN servers announced in Link headers, and usable", allAnswered ? .met : .broken,
                said.joined(separator: "; "))
        }

        guard let session = sessionURL else {
            for id in rest.drop(while: { $0 != "trickle" }) {
                add(id, "§4.3", .none, "needs the session's URL", .notExercised, "no Location")
            }
            return report
        }
        let etag = post.header("etag")

        // §4.3.2 trickle: one aggregated PATCH of the offerer-tagged m-line's candidates.
        let (kind, mid) = firstSection(offer)
        let fragment = { (ufrag: String, password: String) -> String in
            "a=ice-ufrag:\(ufrag)\r\na=ice-pwd:\(password)\r\nm=\(kind) 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:\(mid)\r\na=\(m.candidate.description)\r\na=end-of-candidates\r\n"
        }
        let trickleBody = fragment(m.offer.iceUfrag, m.offer.icePassword)
        let sdpfrag = "Content-Type: application/trickle-ice-sdpfrag"
        let trickle = http("PATCH", session, trickleBody, [sdpfrag, "If-Match: \(etag ?? "\"*\"")"], true)
        let trickleSupported = (200..<300).contains(trickle.status)
        let trickleRefused = [405, 422, 501].contains(trickle.status)
        add(
            "trickle", "§4.3", .should, "trickle ICE by PATCH (RECOMMENDED)",
            trickleSupported ? .met : trickleRefused ? .notSupported : .broken,
            status(trickle) + (etag == nil ? " (If-Match \"*\": the 201 had no ETag)" : ""))
        if trickleSupported {
            let clean = trickle.status == 204 && trickle.body.isEmpty && trickle.header("etag") == nil
            add(
                "trickle-204", "§4.3.2", .must, "a trickle PATCH answered 204 No Content, no body, no ETag", clean ? .met : .broken,
                clean
                    ? "HTTP 204"
                    : "HTTP \(trickle.status)\(trickle.body.isEmpty ? "" : " with a body")\(trickle.header("etag") != nil ? " with an ETag" : "")"
            )
        } else {
            add(
                "trickle-204", "§4.3.2", .must, "a trickle PATCH answered 204 No Content, no body, no ETag", .notExercised,
                "trickle not supported")
        }

        // §4.3.3 restart: new credentials, If-Match "*", a 200 with the server's and a new ETag.
        let restart = http("PATCH", session, fragment(m.restartUfrag, m.restartPassword), [sdpfrag, "If-Match: \"*\""], true)
        let restartSupported = (200..<300).contains(restart.status)
        let restartRefused = [405, 422, 501].contains(restart.status)
        add(
            "restart", "§4.3", .should, "ICE restart by PATCH (RECOMMENDED)",
            restartSupported ? .met : restartRefused ? .notSupported : .broken,
            status(restart))
        var newETag: String?
        if restartSupported {
            let body = restart.body
            let ufrag = attribute("ice-ufrag", in: body), password = attribute("ice-pwd", in: body)
            let typed = restart.header("content-type")?.lowercased().hasPrefix("application/trickle-ice-sdpfrag") == true
            let fresh = ufrag != nil && password != nil && ufrag != answer?.iceUfrag
            var why: [String] = []
            if restart.status != 200 { why.append("HTTP \(restart.status)") }
            if !typed { why.append("Content-Type \(restart.header("content-type").map { SignalingClient.sanitizedText($0) } ?? "none")") }
            if ufrag == nil || password == nil {
                why.append("no a=ice-ufrag/a=ice-pwd in the body")
            } else if !fresh {
                why.append("the server's ufrag did not change")
            }
            add(
                "restart-200", "§4.3.3", .must, "a restart answered 200 with an sdpfrag of new credentials", why.isEmpty ? .met : .broken,
                why.isEmpty ? "HTTP 200, new ufrag" : why.joined(separator: ", "))
            newETag = restart.header("etag")
            let strong = { (t: String?) in t.map { !$0.hasPrefix("W/") } ?? false }
            var etagWhy: [String] = []
            if !strong(etag) { etagWhy.append(etag == nil ? "no ETag in the 201" : "the 201's ETag is weak") }
            if !strong(newETag) { etagWhy.append(newETag == nil ? "no ETag in the restart's 200" : "the 200's ETag is weak") }
            if let a = etag, let b = newETag, a == b { etagWhy.append("the restart's ETag is the 201's") }
            add(
                "etag", "§4.3.1", .must, "with restarts, a strong ETag in the 201 and a new one per restart",
                etagWhy.isEmpty ? .met : .broken,
                etagWhy.isEmpty
                    ? "ETag \(SignalingClient.sanitizedText(etag ?? "")) then \(SignalingClient.sanitizedText(newETag ?? ""))"
                    : etagWhy.joined(separator: "; "))
        } else {
            add(
                "restart-200", "§4.3.3", .must, "a restart answered 200 with an sdpfrag of new credentials", .notExercised,
                "restart not supported")
            add(
                "etag", "§4.3.1", .must, "with restarts, a strong ETag in the 201 and a new one per restart", .notExercised,
                "restart not supported")
        }
        // §4.3.1: one of the two only → the other is a 422.
        if trickleSupported != restartSupported {
            let other = trickleSupported ? restart : trickle
            add(
                "patch-422", "§4.3.1", .must, "supporting one of trickle and restart, the other answered 422",
                other.status == 422 ? .met : .broken,
                "\(trickleSupported ? "restart" : "trickle"): \(status(other))")
        } else {
            add(
                "patch-422", "§4.3.1", .must, "supporting one of trickle and restart, the other answered 422", .notExercised,
                trickleSupported ? "both supported" : "neither supported")
        }
        if trickleSupported || restartSupported {
            // The ICE session now: the restart's ETag where there was one.
            let current = newETag ?? etag
            let wrongType = http("PATCH", session, trickleBody, ["Content-Type: text/plain", "If-Match: \(current ?? "\"*\"")"], true)
            add(
                "patch-not-sdpfrag", "§4.3.1", .must, "a PATCH that is not application/trickle-ice-sdpfrag refused with a 4xx",
                (400..<500).contains(wrongType.status) ? .met : .broken, status(wrongType))
            let credentials = restartSupported ? (m.restartUfrag, m.restartPassword) : (m.offer.iceUfrag, m.offer.icePassword)
            let body = fragment(credentials.0, credentials.1)
            let bare = http("PATCH", session, body, [sdpfrag], true)
            add(
                "patch-428", "§4.3.1", .none, "a PATCH without If-Match answered 428 Precondition Required",
                bare.status == 428 ? .met : .broken,
                status(bare))
            let stale = http("PATCH", session, body, [sdpfrag, "If-Match: \"pubbot-stale-etag\""], true)
            add(
                "patch-412", "§4.3.1", .none, "a PATCH with a stale If-Match answered 412 Precondition Failed",
                stale.status == 412 ? .met : .broken,
                status(stale))
        } else {
            for (id, what) in [
                ("patch-not-sdpfrag", "a PATCH that is not application/trickle-ice-sdpfrag refused with a 4xx"),
                ("patch-428", "a PATCH without If-Match answered 428 Precondition Required"),
                ("patch-412", "a PATCH with a stale If-Match answered 412 Precondition Failed")
            ] {
                add(id, "§4.3.1", id == "patch-not-sdpfrag" ? .must : .none, what, .notExercised, "PATCH not supported")
            }
        }

        // §4.2: DELETE ends the session; it is gone after.
        let delete = http("DELETE", session, nil, [], true)
        add(
            "delete", "§4.2", .none, "DELETE on the session's URL ends it (200 OK)", (200..<300).contains(delete.status) ? .met : .broken,
            status(delete))
        if (200..<300).contains(delete.status) {
            let again = http("DELETE", session, nil, [], true)
            add(
                "delete-gone", "§4.2", .none, "the session is gone after its DELETE (404)",
                (400..<500).contains(again.status) ? .met : .broken,
                (200..<300).contains(again.status) ? "HTTP \(again.status): still there" : status(again))
        } else {
            add("delete-gone", "§4.2", .none, "the session is gone after its DELETE (404)", .notExercised, "the DELETE failed")
        }
        return report
    }

    /// The first m-line's media and its mid (the offerer-tagged section of the bundle, the one a
    /// PATCH's fragment names: RFC 9725 §4.3.2).
    static func firstSection(_ sdp: String) -> (kind: String, mid: String) {
        var kind: String?, mid: String?
        for line in sdp.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            if kind == nil, line.hasPrefix("m=") { kind = String(line.dropFirst(2).prefix { $0 != " " }) }
            if kind != nil, mid == nil, line.hasPrefix("a=mid:") { mid = String(line.dropFirst(6)) }
        }
        return (kind ?? "audio", mid ?? "0")
    }

    /// The strings in order, each once.
    static func unique(_ items: [String]) -> [String] {
        var seen = Set<String>()
        return items.filter { seen.insert($0).inserted }
    }

    /// `a=NAME:value` in an SDP fragment.
    static func attribute(_ name: String, in text: String) -> String? {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) where line.hasPrefix("a=\(name):") {
            return String(line.dropFirst(name.count + 3).filter { !$0.isWhitespace })
        }
        return nil
    }
}
