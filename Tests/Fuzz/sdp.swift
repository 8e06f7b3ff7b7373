// libFuzzer harness (scripts/fuzz): the one SDP parser (SDPDocument) and the SDES view on it
// (SessionDescription: what `receive --sdp` and `preflight --sdp` read). Seeds: pubbot's SDES
// description and the real offers and answers of the WHIP targets.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    // Round trips: what parses renders to an SDP that parses to the same document / description.
    guard let doc = try? SDPDocument.parse(text) else { return 0 }
    let docAgain = try? SDPDocument.parse(doc.render())
    precondition(docAgain == doc, "SDP document round trip: \(doc) → \(String(describing: docAgain))")
    if let sd = try? SessionDescription(doc) {
        let again = try? SessionDescription.parse(sd.render())
        precondition(again == sd, "SDP round trip: \(sd) → \(String(describing: again))")
    }
    return 0
}
