// libFuzzer harness (scripts/fuzz): the WHIP endpoint's offer → answer path
// (`receive --whip-listen`, WHIPAnswer.answer), the whole of what a POST body reaches before a
// session exists. Seeds: real offers from Chromium 156 (simulcast and one encoding), aiortc
// 1.16 and pubbot, and the extmap lines that once crashed the endpoint. An offer is refused with
// a typed error or answered with an SDP that parses again, whose streams pubbot can receive.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let host = ICECandidate.host(STUNAddress(ip: [127, 0, 0, 1], port: 40_000))
    guard
        let a = try? WHIPAnswer.answer(
            offer: text, iceUfrag: "lUfr", icePassword: "local-ice-password-0123",
            fingerprint: "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":"),
            candidates: [host], sessionID: 1)
    else { return 0 }
    precondition(!a.streams.isEmpty, "an answer without streams")
    for s in a.streams {
        precondition(s.payloadType < 128 && s.rtxPayloadType.map { $0 < 128 } != false, "payload type out of range")
        precondition(s.extensions.values.allSatisfy { (1...14).contains($0) }, "extension ID out of range: \(s.extensions)")
    }
    guard let doc = try? SDPDocument.parse(a.sdp) else { preconditionFailure("the answer does not parse: \(a.sdp)") }
    precondition(doc.media.count == (try? SDPDocument.parse(text))?.media.count, "the answer has another number of sections")
    return 0
}
