// libFuzzer harness (scripts/fuzz): the SDP parser (what `receive --sdp` and `preflight --sdp` read).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let sd = try? SessionDescription.parse(text) { _ = try? SessionDescription.parse(sd.render()) }
    return 0
}
