import Synchronization
internal import CCurl

/// An ICE server a WHIP endpoint offers in a `Link: <…>; rel="ice-server"` header (RFC 9725 §4.6).
public struct ICEServerLink: Sendable, Equatable {
    public var url: String
    public var username: String?
    public var credential: String?

    public init(url: String, username: String? = nil, credential: String? = nil) {
        self.url = url
        self.username = username
        self.credential = credential
    }
}

/// A WHIP session as the endpoint created it (RFC 9725 §4.2).
public struct WHIPSession: Sendable {
    /// The SDP answer.
    public var answer: String
    /// The session URL (`Location`, made absolute): DELETE it to end the session. Without a
    /// Location (`hasLocation` false) the endpoint's URL, for messages only.
    public var resourceURL: String
    public var etag: String?
    public var iceServers: [ICEServerLink]
    /// The server gave the session's URL; without it the session cannot be ended or patched.
    public var hasLocation = true
    /// Where the answer departed from RFC 9725 §4.2 and was taken all the same (a 200 or 202
    /// for the 201, no Location, another Content-Type), one sentence each naming the section.
    public var deviations: [String] = []
    /// WHEP's 406 (draft-ietf-wish-whep-04): the server did not take the subscriber's offer and
    /// sent its own in `answer`; the subscriber answers it by PATCH (`answerCounterOffer`).
    public var counterOffer = false

    public init(
        answer: String, resourceURL: String, etag: String? = nil, iceServers: [ICEServerLink] = [], hasLocation: Bool = true,
        deviations: [String] = []
    ) {
        self.answer = answer
        self.resourceURL = resourceURL
        self.etag = etag
        self.iceServers = iceServers
        self.hasLocation = hasLocation
        self.deviations = deviations
    }
}

/// Why a WHIP exchange failed: one message a person can act on (the token never appears in it).
public struct WHIPError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case unreachable, timeout, tls, unauthorized, notFound, rejected, busy, server, protocolViolation
    }
    public var kind: Kind
    public var status: Int?
    public var message: String
    public var description: String { message }
    public init(kind: Kind, status: Int?, message: String) {
        self.kind = kind
        self.status = status
        self.message = message
    }
}

/// Which exchange the client runs: the same HTTP shape (POST an offer, DELETE the resource)
/// serves WHIP (RFC 9725) and WHEP (draft-ietf-wish-whep); errors name the one the user asked for.
public enum SignalingExchange: Sendable {
    case whip, whep

    /// "WHIP" or "WHEP", as errors name the endpoint.
    public var name: String { self == .whip ? "WHIP" : "WHEP" }
    /// How the user passes this endpoint's token.
    var tokenHint: String { self == .whip ? "pass --token or set PUBBOT_WHIP_TOKEN" : "pass --whep-token or set PUBBOT_WHEP_TOKEN" }
}

/// The WHIP client side (RFC 9725) — and WHEP's, the same exchange: POST the offer, read the
/// answer and headers, DELETE at the end. HTTP(S) through libcurl: redirects (307/308 keep the
/// POST), TLS, timeouts.
public enum SignalingClient {
    /// `--ca-file`: the CA certificates (PEM) every https exchange of this process verifies the
    /// server with (a private CA); nil: the system's store.
    static let caFileSetting = Mutex<String?>(nil)
    public static var caFile: String? {
        get { caFileSetting.withLock { $0 } }
        set { caFileSetting.withLock { $0 = newValue } }
    }

    /// `--no-ipv6`: every exchange of this process resolves and connects over IPv4 only (as the
    /// media socket then does: `SocketAddress.ipv4Only`).
    static let ipv4OnlySetting = Mutex(false)
    public static var ipv4Only: Bool {
        get { ipv4OnlySetting.withLock { $0 } }
        set { ipv4OnlySetting.withLock { $0 = newValue } }
    }

    /// POSTs `offer` to `endpoint`. A 409/429/503 with `Retry-After` is retried after waiting
    /// what it says (`sleep` is the caller's, in µs), up to 3 times and 15 s of waiting in all.
    /// RFC 9725 §4.1: a client "MUST be able to handle all applicable status codes gracefully":
    /// a 200 or 202 carrying an SDP answer, a 201 without Location and an SDP answer under
    /// another Content-Type are taken, each said in `deviations` — unless `strict`, where each
    /// is an error naming the section.
    public static func publish(
        endpoint: String, offer: String, token: String?, exchange: SignalingExchange = .whip, connectTimeoutMillis: Int = 5_000,
        timeoutMillis: Int = 10_000, strict: Bool = false, sleep: (Int64) -> Void
    ) throws(WHIPError) -> WHIPSession {
        let name = exchange.name
        var retries = 0
        var waitedMicros: Int64 = 0
        while true {
            let r = request(
                "POST", endpoint, body: offer, headers: ["Content-Type: application/sdp", "Accept: application/sdp"], token: token,
                connectTimeoutMillis: connectTimeoutMillis, timeoutMillis: timeoutMillis)
            try r.transportError(
                endpoint: endpoint, exchange: exchange, connectTimeoutMillis: connectTimeoutMillis, timeoutMillis: timeoutMillis)
            switch r.status {
            case 200, 201, 202:
                guard r.body.hasPrefix("v=0") else {
                    throw WHIPError(
                        kind: .protocolViolation, status: r.status,
                        message:
                            "the \(name) endpoint answered \(r.status) without an SDP answer (Content-Type \(r.header("content-type").map { sanitized($0, secrets: []) } ?? "none"))"
                    )
                }
                var deviations: [String] = []
                if r.status != 201 {
                    deviations.append("the \(name) endpoint answered HTTP \(r.status), not 201 Created (RFC 9725 §4.2)")
                }
                if r.header("content-type")?.lowercased().hasPrefix("application/sdp") != true {
                    deviations.append(
                        "the \(name) endpoint's answer came as \(r.header("content-type").map { "Content-Type \(sanitized($0, secrets: []))" } ?? "no Content-Type"), not application/sdp (RFC 9725 §4.2)"
                    )
                }
                let location = r.header("location")
                if location == nil {
                    deviations.append(
                        "the \(name) endpoint answered without a Location header: the session cannot be ended or patched (RFC 9725 §4.2)")
                }
                let base = r.effectiveURL ?? endpoint
                let session = WHIPSession(
                    answer: r.body, resourceURL: location.map { resolve($0, against: base) } ?? base, etag: r.header("etag"),
                    iceServers: r.headers("link").flatMap(parseLink), hasLocation: location != nil, deviations: deviations)
                if strict, let first = deviations.first {
                    // The server holds a session all the same: ended where it can be (RFC 9725 §4.3).
                    if session.hasLocation { _ = try? delete(session, token: token, exchange: exchange) }
                    throw WHIPError(kind: .protocolViolation, status: r.status, message: first + " (--strict)")
                }
                return session
            case 406 where exchange == .whep && r.body.hasPrefix("v=0"):
                // draft-ietf-wish-whep-04: 406 Not Acceptable with the server's own offer; the
                // client answers it by PATCH on the session's URL.
                guard let location = r.header("location") else {
                    throw WHIPError(
                        kind: .protocolViolation, status: 406,
                        message:
                            "the WHEP endpoint answered 406 with a counter-offer but no Location to PATCH the answer to (draft-ietf-wish-whep-04)"
                    )
                }
                // Said as the 200/202 leniencies are: the client's offer was not answered, which
                // is outside RFC 9725 §4.2's exchange; `strict` (that exchange only) refuses it.
                var session = WHIPSession(
                    answer: r.body, resourceURL: resolve(location, against: r.effectiveURL ?? endpoint), etag: r.header("etag"),
                    iceServers: r.headers("link").flatMap(parseLink),
                    deviations: [
                        "the WHEP endpoint answered 406 Not Acceptable with its own offer, not an answer to pubbot's (RFC 9725 §4.2); answered by PATCH (draft-ietf-wish-whep-04)"
                    ])
                session.counterOffer = true
                if strict {
                    _ = try? delete(session, token: token, exchange: exchange)
                    throw WHIPError(kind: .protocolViolation, status: 406, message: session.deviations[0] + " (--strict)")
                }
                return session
            case 409, 429, 503:
                // Retry-After: delay-seconds (RFC 9110 §10.2.3), a server's number: 0…10 s a time here.
                if retries < 3, let wait = r.header("retry-after").flatMap({ Int64($0.trimmingCharacters) }),
                    waitedMicros + max(0, min(wait, 10)) * 1_000_000 <= 15_000_000
                {
                    retries += 1
                    let micros = max(0, min(wait, 10)) * 1_000_000
                    waitedMicros += micros
                    sleep(micros)
                    continue
                }
                if r.status == 409 { throw r.httpError(endpoint: endpoint, token: token, exchange: exchange) }
                throw WHIPError(
                    kind: .busy, status: r.status,
                    message:
                        "the \(name) endpoint is busy (HTTP \(r.status))\(r.header("retry-after").map { ", Retry-After \($0)" } ?? ""): try again later"
                )
            default:
                throw r.httpError(endpoint: endpoint, token: token, exchange: exchange)
            }
        }
    }

    /// Ends the session (DELETE on its URL, RFC 9725 §4.3).
    public static func delete(
        _ session: WHIPSession, token: String?, exchange: SignalingExchange = .whip, timeoutMillis: Int = 5_000
    ) throws(WHIPError) {
        guard session.hasLocation else {
            throw WHIPError(
                kind: .protocolViolation, status: nil,
                message: "the \(exchange.name) endpoint gave no Location for the session: nothing to DELETE (RFC 9725 §4.2)")
        }
        let r = request(
            "DELETE", session.resourceURL, body: nil, headers: [], token: token, connectTimeoutMillis: timeoutMillis,
            timeoutMillis: timeoutMillis)
        try r.transportError(
            endpoint: session.resourceURL, exchange: exchange, connectTimeoutMillis: timeoutMillis, timeoutMillis: timeoutMillis)
        guard (200..<300).contains(r.status) else { throw r.httpError(endpoint: session.resourceURL, token: token, exchange: exchange) }
    }

    /// Answers a WHEP server's counter-offer (the 406 of draft-ietf-wish-whep-04): PATCH on the
    /// session's URL with the SDP answer (`application/sdp`), `If-Match` the 406's entity-tag
    /// when it gave one; a 2xx takes it (204 expected). The new entity-tag, if any, is returned.
    public static func answerCounterOffer(
        _ session: WHIPSession, answer: String, token: String?, timeoutMillis: Int = 10_000
    ) throws(WHIPError) -> String? {
        var headers = ["Content-Type: application/sdp"]
        if let etag = session.etag { headers.append("If-Match: \(etag)") }
        let connect = min(5_000, timeoutMillis)
        let r = request(
            "PATCH", session.resourceURL, body: answer, headers: headers, token: token, connectTimeoutMillis: connect,
            timeoutMillis: timeoutMillis)
        try r.transportError(endpoint: session.resourceURL, exchange: .whep, connectTimeoutMillis: connect, timeoutMillis: timeoutMillis)
        guard (200..<300).contains(r.status) else {
            let e = r.httpError(endpoint: session.resourceURL, token: token, exchange: .whep)
            throw WHIPError(kind: e.kind, status: e.status, message: "the answer to the WHEP counter-offer was refused: " + e.message)
        }
        return r.header("etag") ?? session.etag
    }

    /// One HTTP exchange as it happened, for a caller that judges the server's answer itself
    /// (`pubbot check`): the status, the last response's header fields (names lower-cased), the
    /// body; or the transport failure as one message (`error`, status 0).
    public struct Reply: Sendable {
        public var status: Int
        public var headerFields: [(name: String, value: String)]
        public var body: String
        /// Where the request ended after redirects (a relative Location resolves against it).
        public var effectiveURL: String?
        public var error: WHIPError?

        public init(
            status: Int, headerFields: [(name: String, value: String)] = [], body: String = "", effectiveURL: String? = nil,
            error: WHIPError? = nil
        ) {
            self.status = status
            self.headerFields = headerFields
            self.body = body
            self.effectiveURL = effectiveURL
            self.error = error
        }

        /// The first field of that name (give it lower-case).
        public func header(_ name: String) -> String? { headerFields.first { $0.name == name }?.value }
        public func headers(_ name: String) -> [String] { headerFields.filter { $0.name == name }.map(\.value) }
    }

    /// Sends one request (`headers` as `Name: value` lines; the token as `Authorization: Bearer`)
    /// and gives back what came, redirects followed as for the POST.
    public static func send(
        _ method: String, _ url: String, body: String?, headers: [String], token: String?, exchange: SignalingExchange = .whip,
        timeoutMillis: Int = 10_000
    ) -> Reply {
        let connect = min(5_000, timeoutMillis)
        let r = request(
            method, url, body: body, headers: headers, token: token, connectTimeoutMillis: connect, timeoutMillis: timeoutMillis)
        do throws(WHIPError) {
            try r.transportError(endpoint: url, exchange: exchange, connectTimeoutMillis: connect, timeoutMillis: timeoutMillis)
        } catch {
            return Reply(status: 0, error: error)
        }
        return Reply(
            status: r.status, headerFields: r.headerLines.map { (name: $0.0, value: $0.1) }, body: r.body, effectiveURL: r.effectiveURL)
    }

    /// A server's text as it may be printed: control characters out, credentials and tokens in
    /// it masked, 200 characters at most (what every error message here does with a body).
    public static func sanitizedText(_ text: String) -> String { sanitized(text, secrets: []) }

    /// `parseLink` for a caller holding a reply's `Link` fields.
    public static func iceServers(inLinks values: [String]) -> [ICEServerLink] { values.flatMap(parseLink) }

    /// A Location resolved against the URL the request ended at (RFC 3986 §5.2).
    public static func resolved(_ location: String, against base: String) -> String { resolve(location, against: base) }

    struct Response {
        var curlCode: Int32
        var curlMessage: String
        var status: Int
        var body: String
        /// Header lines of the last response.
        var headerLines: [(String, String)]
        var effectiveURL: String?
        var connected = false

        func header(_ name: String) -> String? { headerLines.first { $0.0 == name }?.1 }
        func headers(_ name: String) -> [String] { headerLines.filter { $0.0 == name }.map(\.1) }

        func transportError(endpoint: String, exchange: SignalingExchange, connectTimeoutMillis: Int, timeoutMillis: Int) throws(WHIPError)
        {
            guard curlCode != 0 else { return }
            let name = exchange.name
            let where_ = SignalingClient.redacted(endpoint)
            if ccurl_is_timeout(curlCode) != 0 {
                // Which timer fired: the connection's (nothing answered) or the whole request's.
                throw WHIPError(
                    kind: .timeout, status: nil,
                    message: connected
                        ? "the \(name) endpoint \(where_) did not answer within \(seconds(timeoutMillis))"
                        : "cannot connect to the \(name) endpoint \(where_) within \(seconds(connectTimeoutMillis))")
            }
            if ccurl_is_unsupported_protocol(curlCode) != 0 {
                throw WHIPError(
                    kind: .protocolViolation, status: nil,
                    message: "the \(name) endpoint \(where_) redirected to a URL that is not http or https (not followed)")
            }
            let said = SignalingClient.sanitized(curlMessage, secrets: [])
            if ccurl_is_unreachable(curlCode) != 0 {
                throw WHIPError(
                    kind: .unreachable, status: nil,
                    message:
                        "cannot reach the \(name) endpoint \(where_)\(SignalingClient.ipv4Only ? " over IPv4 (--no-ipv6)" : ""): \(said)")
            }
            if ccurl_is_tls(curlCode) != 0 {
                let hint = SignalingClient.caFile == nil ? " (a server with a private CA: --ca-file FILE)" : ""
                throw WHIPError(kind: .tls, status: nil, message: "TLS with the \(name) endpoint \(where_) failed: \(said)\(hint)")
            }
            throw WHIPError(kind: .unreachable, status: nil, message: "the \(name) request to \(where_) failed: \(said)")
        }

        func seconds(_ millis: Int) -> String { millis % 1000 == 0 ? "\(millis / 1000) s" : "\(millis) ms" }

        /// An error status as one message; the server's body is shown sanitized (`sanitized`):
        /// a server that echoes the request must not print the token.
        func httpError(endpoint: String, token: String?, exchange: SignalingExchange) -> WHIPError {
            let name = exchange.name
            let text = SignalingClient.sanitized(body, secrets: [token].compactMap { $0 } + SignalingClient.secrets(in: endpoint))
            let said = text.isEmpty ? "" : ": \(text)"
            switch status {
            case 401, 403:
                return WHIPError(
                    kind: .unauthorized, status: status,
                    message: token != nil
                        ? "the \(name) endpoint refused the token (HTTP \(status))\(said)"
                        : "the \(name) endpoint wants a token (HTTP \(status)): \(exchange.tokenHint)")
            case 404:
                return WHIPError(
                    kind: .notFound, status: status, message: "no \(name) endpoint at \(SignalingClient.redacted(endpoint)) (HTTP 404)")
            case 400..<500:
                return WHIPError(kind: .rejected, status: status, message: "the \(name) endpoint refused the offer (HTTP \(status))\(said)")
            default:
                return WHIPError(kind: .server, status: status, message: "the \(name) endpoint failed (HTTP \(status))\(said)")
            }
        }
    }

    static func request(
        _ method: String, _ url: String, body: String?, headers: [String], token: String?, connectTimeoutMillis: Int, timeoutMillis: Int
    ) -> Response {
        var lines = headers
        if let token { lines.append("Authorization: Bearer \(token)") }
        var r = ccurl_result()
        let cStrings = lines.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        cStrings.map { UnsafePointer($0) }.withUnsafeBufferPointer { h in
            let v4: Int32 = ipv4Only ? 1 : 0
            if let ca = caFile {
                ccurl_request(method, url, body, h.baseAddress, Int32(h.count), connectTimeoutMillis, timeoutMillis, ca, v4, &r)
            } else {
                ccurl_request(method, url, body, h.baseAddress, Int32(h.count), connectTimeoutMillis, timeoutMillis, nil, v4, &r)
            }
        }
        defer { ccurl_result_free(&r) }
        let bodyText = r.body.data.map { String(cString: $0) } ?? ""
        let headerText = r.headers.data.map { String(cString: $0) } ?? ""
        // The last response's block: from its status line on.
        var block: [(String, String)] = []
        // ("\r\n" is one Character in Swift: split on both forms.)
        for line in headerText.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            if line.hasPrefix("HTTP/") { block = []; continue }
            guard let colon = line.firstIndex(of: ":") else { continue }
            block.append((line[..<colon].lowercased(), String(line[line.index(after: colon)...]).trimmingCharacters))
        }
        let message = withUnsafeBytes(of: r.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return Response(
            curlCode: r.curl_code, curlMessage: message.isEmpty ? "error \(r.curl_code)" : message, status: Int(r.status),
            body: bodyText, headerLines: block, effectiveURL: r.effective_url.map { String(cString: $0) }, connected: r.connected != 0)
    }

    /// RFC 3986 §5.2 for the forms servers send: absolute, absolute-path, or relative.
    static func resolve(_ location: String, against base: String) -> String {
        if location.contains("://") { return location }
        guard let schemeEnd = base.firstRange(of: "://") else { return location }
        let afterScheme = base[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        let origin = String(base[..<authorityEnd])
        if location.hasPrefix("/") { return origin + location }
        let path = base[authorityEnd...].prefix { $0 != "?" }
        let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? "/"
        return origin + directory + location
    }

    /// `<turn:host:3478?transport=udp>; rel="ice-server"; username="u"; credential="c"`, maybe
    /// several per header (RFC 9725 §4.6, RFC 8288).
    static func parseLink(_ value: String) -> [ICEServerLink] {
        var out: [ICEServerLink] = []
        for part in value.split(separator: ",") where part.contains("<") {
            let fields = part.split(separator: ";").map { $0.trimmingCharacters }
            guard let first = fields.first, first.hasPrefix("<"), first.hasSuffix(">") else { continue }
            var params: [String: String] = [:]
            for f in fields.dropFirst() {
                let kv = f.split(separator: "=", maxSplits: 1)
                guard kv.count == 2 else { continue }
                var v = String(kv[1])
                if v.hasPrefix("\"") && v.hasSuffix("\"") && v.count >= 2 { v = String(v.dropFirst().dropLast()) }
                params[kv[0].lowercased().trimmingCharacters] = v
            }
            guard params["rel"] == "ice-server" else { continue }
            out.append(
                ICEServerLink(url: String(first.dropFirst().dropLast()), username: params["username"], credential: params["credential"]))
        }
        return out
    }

    /// The URL as it may be printed: userinfo (`user:pass@`) replaced by `***@`, every query
    /// value by `***` (tokens ride in them: `?token=…`), no fragment. Every message, log line
    /// and JSON document that names a WHIP/WHEP URL goes through this.
    public static func redacted(_ url: String) -> String {
        var u = Substring(url.prefix { $0 != "#" })
        var query: Substring?
        if let q = u.firstIndex(of: "?") { query = u[u.index(after: q)...]; u = u[..<q] }
        if let schemeEnd = u.firstRange(of: "://") {
            let authorityEnd = u[schemeEnd.upperBound...].firstIndex(of: "/") ?? u.endIndex
            if let at = u[schemeEnd.upperBound..<authorityEnd].lastIndex(of: "@") {
                u = u[..<schemeEnd.upperBound] + "***" + u[at...]
            }
        }
        guard let query else { return String(u) }
        let fields = query.split(separator: "&", omittingEmptySubsequences: false).map { f -> String in
            guard let eq = f.firstIndex(of: "=") else { return f.isEmpty ? "" : "***" }
            return f[...eq] + "***"
        }
        return String(u) + "?" + fields.joined(separator: "&")
    }

    /// The secrets a URL carries (userinfo, its parts, query values), to scrub from a server's text.
    public static func secrets(in url: String) -> [String] {
        var out: [String] = []
        let u = url.prefix { $0 != "#" }
        if let schemeEnd = u.firstRange(of: "://") {
            let rest = u[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@") {
                let info = rest[..<at]
                out.append(String(info))
                out += info.split(separator: ":").map(String.init)
            }
        }
        if let q = u.firstIndex(of: "?") {
            for f in u[u.index(after: q)...].split(separator: "&") {
                if let eq = f.firstIndex(of: "=") { out.append(String(f[f.index(after: eq)...])) }
            }
        }
        // Short values ("1", "a") would blank out ordinary words; a secret is longer.
        return out.filter { $0.count >= 4 }
    }

    /// A server's text as it may be printed: control characters (terminal escapes) removed,
    /// whitespace runs folded, at most 200 characters, each known secret and any bearer
    /// credential (`Bearer …`, `token=…`) replaced by `***`.
    static func sanitized(_ text: String, secrets: [String]) -> String {
        var s = String(
            String.UnicodeScalarView(
                text.unicodeScalars.prefix(4096).map { scalar -> Unicode.Scalar in
                    scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format ? " " : scalar
                }))
        for secret in secrets where !secret.isEmpty { s = s.replacing(secret, with: "***") }
        var chars = Array(s)
        for scheme in ["bearer ", "basic ", "token=", "access_token=", "password=", "credential="].map(Array.init) {
            var out: [Character] = []
            var i = 0
            while i < chars.count {
                if i + scheme.count <= chars.count, zip(chars[i..<(i + scheme.count)], scheme).allSatisfy({ $0.lowercased() == String($1) })
                {
                    out += chars[i..<(i + scheme.count)]
                    out += Array("***")
                    i += scheme.count
                    while i < chars.count, !chars[i].isWhitespace, !"\",;&".contains(chars[i]) { i += 1 }
                    continue
                }
                out.append(chars[i])
                i += 1
            }
            chars = out
        }
        s = String(chars)
        s = s.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return s.count > 200 ? String(s.prefix(200)) + "…" : s
    }
}

extension StringProtocol {
    var trimmingCharacters: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
