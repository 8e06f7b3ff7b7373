public import HTTPSignaling
import Signalling
public import ICE
import Crypto
import Platform
public import PublisherEngine

/// What a WHIP (or WHEP) session does with PATCH after its answer (RFC 9725 §4.3, §4.6): the
/// endpoint's announced STUN/TURN servers, trickling what they give, and ICE restarts.
extension WHIPConnection {
    /// The servers of the 201's `Link` headers pubbot can use (stun:, turn:, turns:; a TURN
    /// server with its credentials), where the user gave none of the kind.
    public static func serverICEServers(
        _ links: [ICEServerLink], options: WHIPOptions
    ) -> [(url: ICEServerURL, username: String, credential: String)] {
        let turnGiven = options.iceServers.contains { $0.isTURN }
        return links.compactMap { l in
            guard let u = try? ICEServerURL.parse(l.url) else { return nil }
            if u.isTURN {
                guard !turnGiven, let user = l.username, let credential = l.credential else { return nil }
                return (u, user, credential)
            }
            return (u, "", "")
        }
    }

    /// Trickles candidates gathered after the answer (RFC 9725 §4.3.2: one aggregated PATCH of
    /// the offerer-tagged m-line, with the session's entity-tag); says what the server did.
    static func trickle(
        _ fresh: [ICECandidate], resource: WHIPSession, offer: WHIPOffer, n: NegotiatedSession, token: String?,
        exchange: SignalingExchange = .whip
    ) -> (text: String, taken: Bool) {
        let kinds = fresh.map(\.kind.rawValue).joined(separator: ", ")
        guard resource.hasLocation else {
            return ("\(kinds) gathered, not trickled: no session URL (Location) to PATCH; the session runs on the offer's", false)
        }
        let body = sdpFragment(ufrag: offer.iceUfrag, password: offer.icePassword, candidates: fresh, negotiated: n)
        let r = SignalingClient.send(
            "PATCH", resource.resourceURL, body: body,
            headers: ["Content-Type: application/trickle-ice-sdpfrag", "If-Match: \(resource.etag ?? "\"*\"")"], token: token,
            exchange: exchange, timeoutMillis: 5_000)
        if let e = r.error {
            return ("\(kinds) gathered; the PATCH failed (\(e.message)): the session runs on the offer's candidates", false)
        }
        return (200..<300).contains(r.status)
            ? ("\(kinds) trickled in one PATCH (HTTP \(r.status))", true)
            : ("\(kinds) gathered; the server refused the PATCH (HTTP \(r.status)): the session runs on the offer's candidates", false)
    }

    /// The body of a PATCH (RFC 9725 §4.3.2, §4.3.3; RFC 8840): only the offerer-tagged m-line
    /// of the bundle (the offer's first), the ICE credentials, the candidates, end-of-candidates.
    static func sdpFragment(ufrag: String, password: String, candidates: [ICECandidate], negotiated n: NegotiatedSession) -> String {
        let first = n.audio.map { ("audio", $0) } ?? n.video.map { ("video", $0) }
        var body = "m=\(first?.0 ?? "audio") 9 UDP/TLS/RTP/SAVPF \(first?.1.payloadType ?? 0)\r\na=mid:\(first?.1.mid ?? "0")\r\n"
        body += "a=ice-ufrag:\(ufrag)\r\na=ice-pwd:\(password)\r\n"
        for c in candidates { body += "a=\(c.description)\r\n" }
        return body + "a=end-of-candidates\r\n"
    }

    /// Asks the server for an ICE restart (RFC 9725 §4.3.3): new credentials and the offer's
    /// candidates in an `application/trickle-ice-sdpfrag` PATCH with `If-Match: "*"`; the 200's
    /// fragment gives the server's new credentials and candidates (the publisher applies them:
    /// `Publisher.restartICE`) and its ETag is kept. Blocks for the HTTP exchange; a refusal is
    /// an error and the session goes on (§4.3.3: a failed restart does not end it).
    public func requestICERestart(timeoutMillis: Int = 5_000) -> Result<PublisherControl.ICERestart, WHIPConnectError> {
        Self.requestICERestart(
            resource: resource, localCandidates: hosts.offered, negotiated: negotiated, token: ending.token, exchange: .whip,
            families: hosts.families ?? [local.ip.count], timeoutMillis: timeoutMillis)
    }

    /// The restart exchange for a WHIP or WHEP session (WHEP keeps WHIP's PATCH rules): new
    /// credentials and `localCandidates` in the offerer-tagged m-line, `If-Match: "*"`; the
    /// server's new credentials and its candidates of `family` (4 or 16 address bytes) back.
    static func requestICERestart(
        resource: WHIPSession, localCandidates: [ICECandidate], negotiated: NegotiatedSession, token: String?,
        exchange: SignalingExchange, families: Set<Int>, timeoutMillis: Int
    ) -> Result<PublisherControl.ICERestart, WHIPConnectError> {
        guard resource.hasLocation else { return .failure(WHIPConnectError("the server gave no session URL (Location): nothing to PATCH")) }
        let credentials = ICEAgent.Credentials(random: SecureRandom.bytes(32))
        let body = sdpFragment(
            ufrag: credentials.ufrag, password: credentials.password, candidates: localCandidates, negotiated: negotiated)
        let r = SignalingClient.send(
            "PATCH", resource.resourceURL, body: body, headers: ["Content-Type: application/trickle-ice-sdpfrag", "If-Match: \"*\""],
            token: token, exchange: exchange, timeoutMillis: timeoutMillis)
        if let e = r.error { return .failure(WHIPConnectError("ICE restart: \(e.message)")) }
        guard r.status == 200 else {
            let said = r.body.isEmpty ? "" : ": \(SignalingClient.sanitizedText(r.body))"
            return .failure(WHIPConnectError("the server refused the ICE restart (HTTP \(r.status))\(said)"))
        }
        let fragment = SDPFragment.parse(r.body)
        guard let ufrag = fragment.ufrag, let pwd = fragment.password, !ufrag.isEmpty, !pwd.isEmpty else {
            return .failure(WHIPConnectError("the server's ICE restart answer has no a=ice-ufrag/a=ice-pwd"))
        }
        let remotes = fragment.candidates.filter { families.contains($0.address.ip.count) }
        guard !remotes.isEmpty else {
            return .failure(WHIPConnectError("the server's ICE restart answer has no candidate pubbot can reach"))
        }
        return .success(.init(local: credentials, remote: .init(ufrag: ufrag, password: pwd), remoteCandidates: remotes))
    }
}
