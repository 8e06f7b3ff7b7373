// libFuzzer harness (scripts/fuzz): the trickle/restart fragment of a PATCH or of its 200
// (SDPFragment: what `receive --whip-listen` reads from every PATCH and the clients from a
// restart's answer). Total on any bytes; what it keeps of a candidate renders to a line that
// parses back to the same candidate. Seeds: the sdp target's, and PATCH bodies.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let f = SDPFragment.parse(text)
    _ = f.credentialsValid
    for c in f.candidates {
        let again = try? ICECandidate.parse(Substring(c.description))
        precondition(again == c, "candidate round trip: \(c.description) → \(String(describing: again))")
    }
    return 0
}
