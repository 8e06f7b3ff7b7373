// libFuzzer harness (scripts/fuzz): the SDP parser (what `receive --sdp` and `preflight --sdp` read).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    // Round trip: what parses renders to an SDP that parses to the same description.
    if let sd = try? SessionDescription.parse(text) {
        let again = try? SessionDescription.parse(sd.render())
        precondition(again == sd, "SDP round trip: \(sd) → \(String(describing: again))")
    }
    return 0
}
