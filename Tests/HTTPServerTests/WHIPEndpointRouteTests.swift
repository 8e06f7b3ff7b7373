import Testing
import HTTPServer
@testable import WHIPEndpoint

/// The WHIP endpoint's routes, auth and CORS (RFC 9725 §4, RFC 9110 §11, Fetch) on parsed
/// requests: what a client gets for each path, method and credential.
@Suite struct WHIPEndpointRouteTests {
    let token = Array("s3cret-token".utf8)

    func answer(_ method: String, _ path: String, auth: [String] = [], token: [UInt8]? = nil, known: Set<String> = ["abc"]) -> HTTPResponse
    {
        var r = HTTPRequest(method: method, path: path, headers: [("host", "x")] + auth.map { ("authorization", $0) })
        r.body = Array("v=0\r\n".utf8)
        var response = WHIPEndpoint.route(
            r, expected: token, create: { _ in HTTPResponse(status: 201) }, delete: { known.contains($0) },
            exists: { known.contains($0) })
        response.headers += WHIPEndpoint.corsHeaders(r)
        return response
    }

    @Test func notFoundAndMethodNotAllowedAreTold() {
        #expect(answer("POST", "/whip").status == 201)
        #expect(answer("POST", "/other").status == 404, "a POST to an unknown path is 404, not 405")
        #expect(answer("POST", "/whip/abc/x").status == 404)
        #expect(answer("PATCH", "/whip/nope").status == 404, "PATCH on an unknown session is 404")
        #expect(answer("DELETE", "/whip/nope").status == 404)
        #expect(answer("DELETE", "/whip/abc").status == 200)
        let patch = answer("PATCH", "/whip/abc")
        #expect(patch.status == 405 && patch.headers.contains { $0.0 == "Allow" && $0.1.contains("DELETE") })
        let put = answer("PUT", "/whip")
        #expect(put.status == 405 && put.headers.contains { $0 == ("Allow", "POST, OPTIONS") })
        #expect(answer("PUT", "/whip/abc").status == 405)
        // RFC 9725 §4.1: GET on the endpoint or a session is a 2xx with no content.
        for path in ["/whip", "/whip/abc"] {
            let get = answer("GET", path)
            #expect(get.status == 204 && get.body.isEmpty, "GET \(path)")
        }
        #expect(answer("GET", "/whip/nope").status == 404)
        #expect(answer("GET", "/whip", token: token).status == 401, "GET takes the token as every request but OPTIONS")
        #expect(answer("POST", "/whip/").status == 404)
    }

    @Test func bearerTokenIsCheckedByteForByte() {
        #expect(answer("POST", "/whip", token: token).status == 401)
        #expect(answer("POST", "/whip", auth: ["Bearer s3cret-token"], token: token).status == 201)
        // The scheme is case-insensitive (RFC 9110 §11.1).
        #expect(answer("POST", "/whip", auth: ["bearer s3cret-token"], token: token).status == 201)
        #expect(answer("POST", "/whip", auth: ["BEARER  s3cret-token"], token: token).status == 201)
        for wrong in [
            "Bearer s3cret-toke", "Bearer s3cret-token2", "Basic s3cret-token", "Bearers3cret-token", "Bearer ", "s3cret-token",
            "Bearer S3cret-token"
        ] {
            #expect(answer("POST", "/whip", auth: [wrong], token: token).status == 401, "\(wrong)")
        }
        // Unicode-equivalent is not equal: "é" precomposed vs e + combining acute (NFD).
        let nfc = Array("caf\u{e9}".utf8)
        #expect(answer("POST", "/whip", auth: ["Bearer caf\u{e9}"], token: nfc).status == 201)
        #expect(answer("POST", "/whip", auth: ["Bearer cafe\u{301}"], token: nfc).status == 401)
        #expect(answer("DELETE", "/whip/abc", token: token).status == 401, "a session is ended only with the token")
        #expect(answer("DELETE", "/whip/nope", token: token).status == 401, "without the token no session's existence is told")
        #expect(
            WHIPEndpoint.constantTimeEqual([1, 2, 3], [1, 2, 3]) && !WHIPEndpoint.constantTimeEqual([1, 2], [1, 2, 3])
                && !WHIPEndpoint.constantTimeEqual([1, 2, 3, 4], [1, 2, 3]) && !WHIPEndpoint.constantTimeEqual([], [0]))
    }

    /// A browser page on another origin: the preflight needs no token, and every answer exposes
    /// what a WHIP client reads (RFC 9725 §4.8).
    @Test func corsPreflightWithoutToken() {
        let preflight = answer("OPTIONS", "/whip", token: token)
        let h = Dictionary(preflight.headers, uniquingKeysWith: { a, _ in a })
        #expect(preflight.status == 204 && h["Access-Control-Allow-Origin"] == "*")
        #expect(
            h["Access-Control-Allow-Methods"]?.contains("POST") == true && h["Access-Control-Allow-Methods"]?.contains("DELETE") == true)
        #expect(h["Access-Control-Allow-Headers"] == "Authorization, Content-Type, If-Match")
        #expect(h["Access-Control-Expose-Headers"] == "Location, Link, ETag, Accept-Patch")
        #expect(answer("OPTIONS", "/whip/abc", token: token).status == 204)
        #expect(answer("OPTIONS", "/elsewhere", token: token).status == 401)
        let post = answer("POST", "/whip", auth: ["Bearer s3cret-token"], token: token)
        #expect(post.headers.contains { $0 == ("Access-Control-Expose-Headers", "Location, Link, ETag, Accept-Patch") })
        #expect(
            answer("POST", "/whip", token: token).headers.contains { $0.0 == "Access-Control-Allow-Origin" },
            "a 401 is readable by the page too")
    }
}
