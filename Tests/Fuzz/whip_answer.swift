// libFuzzer harness (scripts/fuzz): the WHIP/WHEP client's answer → negotiated-session path
// (`publish`/`preflight`/`load --whip`, `receive --whep`): NegotiatedSession.from for a
// publisher's and a subscriber's offer, then what the publisher builds from it (the negotiated
// extension IDs and the RTP header template with pubbot's MID/RID). Seeds: real answers from
// Chromium 156, aiortc 1.16, Janus 1.1.2 and pubbot, and the extmap line that once crashed the
// client.
let host = ICECandidate.host(STUNAddress(ip: [127, 0, 0, 1], port: 40_000))
let fingerprint = "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")
nonisolated(unsafe) var offers: [WHIPOffer] = {
    var send = WHIPOffer(iceUfrag: "pUfr", icePassword: "publisher-ice-password-1", fingerprint: fingerprint, candidates: [host])
    var receive = send
    receive.direction = .receive
    return [send, receive]
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    for offer in offers {
        guard let n = try? NegotiatedSession.from(answer: text, offer: offer) else { continue }
        for s in [n.audio, n.video].compactMap({ $0 }) {
            precondition(s.payloadType < 128 && s.mid.utf8.count <= 16, "payload type \(s.payloadType), mid \(s.mid)")
            let ids = RTPExtensionIDs(negotiated: s.extensions)
            var strings: [(UInt8, String)] = []
            if let id = ids.mid { strings.append((id, "1")) }
            if let id = ids.rid { strings.append((id, "f")) }
            let t = RTPHeaderTemplate(
                payloadType: s.payloadType, ssrc: 0x1234_5678, strings: strings, transportSequence: ids.transportSequence != nil,
                absSendTime: ids.absSendTime != nil, transportSequenceID: ids.transportSequence ?? 3, absSendTimeID: ids.absSendTime ?? 2)
            precondition(t.headerSize >= 12, "header size \(t.headerSize)")
        }
    }
    return 0
}
