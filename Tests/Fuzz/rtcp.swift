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
        // Round trip: a packet pubbot interprets writes back to the same packet (a NACK to the
        // same set of lost packets).
        guard !p.isUnknown else { continue }
        var buffer = [UInt8](repeating: 0, count: 1 << 18)
        let written: Int = buffer.withUnsafeMutableBytes { raw in
            var w = ByteWriter(raw)
            do { try p.write(to: &w) } catch { preconditionFailure("a parsed packet does not write back: \(error) \(p)") }
            return w.count
        }
        var again = RTCPCompoundIterator()
        let q = try? again.next(in: buffer.span.extracting(0..<written))
        if case let .nack(a) = p, case let .nack(b)? = q { precondition(Set(a.lost) == Set(b.lost), "NACK round trip \(a) \(b)"); continue }
        precondition(q == p, "round trip \(p) → \(String(describing: q))")
    }
    return 0
}
