public import LoopbackReceiver
public import DTLS
public import ICE
import HTTPServer
import Signalling
import RTPCore
import Platform

/// `pubbot receive --whip-listen`: a WHIP endpoint (RFC 9725) in front of the receiver. `POST
/// /whip` with an SDP offer creates a session (201, `Location: /whip/<id>`, the answer:
/// ICE-lite, DTLS client, the offer's payload types and extension IDs, simulcast as offered);
/// `DELETE /whip/<id>` ends it. A bearer token, when set, is required (401 otherwise). Trickle
/// ICE (PATCH) is not offered (405, RFC 9725 §4.3.1 allows it).
public final class WHIPEndpoint: @unchecked Sendable {
    let server: HTTPServer
    public var port: Int { server.port }
    /// Sessions by resource id (the HTTP thread's own bookkeeping).
    let sessions = Locked<Set<String>>([])

    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// - Parameters:
    ///   - candidates: the media socket's host candidates, as the answer names them.
    ///   - maxSessions: beyond this, 503 with Retry-After.
    public init(receiver: LoopbackReceiver, host: String, port: Int, token: String?, certificate: DTLSCertificate,
                candidates: [ICECandidate], maxSessions: Int) throws(StartError) {
        let sessions = self.sessions
        let fingerprint = certificate.sdpFingerprint
        do {
            server = try HTTPServer(host: host, port: port, name: "pubbot-whip") { r in
                if let token, r.header("authorization") != "Bearer " + token {
                    return HTTPResponse(status: 401, headers: [("WWW-Authenticate", "Bearer"), ("Content-Type", "text/plain")],
                                        body: Array("a valid bearer token is required\n".utf8))
                }
                let parts = r.path.split(separator: "/")
                switch (r.method, parts.count) {
                case ("POST", 1) where parts[0] == "whip":
                    return Self.create(r, receiver: receiver, sessions: sessions, fingerprint: fingerprint, candidates: candidates, maxSessions: maxSessions)
                case ("DELETE", 2) where parts[0] == "whip":
                    let id = String(parts[1])
                    guard sessions.withLock({ $0.remove(id) }) != nil else { return HTTPResponse(status: 404, text: "no such WHIP session\n") }
                    receiver.removePublisher(resource: id)
                    return HTTPResponse(status: 200)
                case ("PATCH", 2) where parts[0] == "whip":
                    return HTTPResponse(status: 405, headers: [("Allow", "DELETE")], body: Array("trickle ICE is not supported: send every candidate in the offer\n".utf8))
                case ("OPTIONS", _):
                    return HTTPResponse(status: 204, headers: [("Allow", "POST, DELETE, OPTIONS"), ("Accept-Post", "application/sdp")])
                default:
                    return HTTPResponse(status: parts.first == "whip" ? 405 : 404, text: "POST an SDP offer to /whip\n")
                }
            }
        } catch {
            throw StartError(description: "--whip-listen: \(error.description)")
        }
    }

    static func create(_ r: HTTPRequest, receiver: LoopbackReceiver, sessions: Locked<Set<String>>, fingerprint: String,
                       candidates: [ICECandidate], maxSessions: Int) -> HTTPResponse {
        guard r.header("content-type")?.lowercased().hasPrefix("application/sdp") == true else {
            return HTTPResponse(status: 415, text: "the offer must be Content-Type: application/sdp\n")
        }
        guard sessions.value.count < maxSessions else {
            return HTTPResponse(status: 503, headers: [("Retry-After", "5"), ("Content-Type", "text/plain")], body: Array("the receiver serves \(maxSessions) publishers already\n".utf8))
        }
        let id = hex(SecureRandom.bytes(8))
        let credentials = ICEAgent.Credentials(random: SecureRandom.bytes(32))
        let ufrag = credentials.ufrag, password = credentials.password
        let answer: WHIPAnswer
        do {
            answer = try WHIPAnswer.answer(offer: String(decoding: r.body, as: UTF8.self), iceUfrag: ufrag, icePassword: password,
                                           fingerprint: fingerprint, candidates: candidates, sessionID: UInt64(SecureRandom.uint32()) | 1)
        } catch {
            return HTTPResponse(status: 400, text: error.description + "\n")
        }
        guard let remoteFingerprint = DTLSCertificate.parseFingerprint(answer.remoteFingerprint) else {
            return HTTPResponse(status: 400, text: "the offer's a=fingerprint is malformed\n")
        }
        var ext: [String: Int] = [:]
        for s in answer.streams { ext.merge(s.extensions) { a, _ in a } }
        let audio = answer.streams.filter { $0.kind == "audio" }, video = answer.streams.filter { $0.kind == "video" }
        receiver.addPublisher(WebRTCPublisherSpec(resource: id, localUfrag: ufrag, localPassword: password, remoteUfrag: answer.remoteUfrag,
                                                  remotePassword: answer.remotePassword, remoteFingerprint: remoteFingerprint,
                                                  audioPayloadTypes: Set(audio.map(\.payloadType)), videoPayloadTypes: Set(video.map(\.payloadType)),
                                                  rtxPayloadTypes: Set(video.compactMap(\.rtxPayloadType)), extensions: RTPExtensionIDs(negotiated: ext)))
        sessions.withLock { _ = $0.insert(id) }
        return HTTPResponse(status: 201, headers: [("Content-Type", "application/sdp"), ("Location", "/whip/\(id)"), ("ETag", "\"\(id)\"")],
                            body: Array(answer.sdp.utf8))
    }

    static func hex(_ b: [UInt8]) -> String {
        let d = Array("0123456789abcdef")
        return String(b.flatMap { [d[Int($0 >> 4)], d[Int($0 & 15)]] })
    }


    public func stop() { server.stop() }
}
