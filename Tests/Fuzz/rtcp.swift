// libFuzzer harness (scripts/fuzz): RTCP compound packets, every type the iterator parses (SR, RR,
// SDES, BYE, APP incl. the sender-side stats track, NACK, PLI, FIR, REMB, transport-cc).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let span = Span(_unsafeStart: data, count: size)
    var it = RTCPCompoundIterator()
    var n = 0
    while n < 1_000, let p = try? it.next(in: span) {
        n += 1
        if case let .application(app) = p { _ = SenderSideStats(app) }
        if case let .transportFeedback(fb) = p { precondition(fb.arrivals.count <= 65_536) }
    }
    return 0
}
