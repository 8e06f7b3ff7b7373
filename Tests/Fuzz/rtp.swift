// libFuzzer harness (scripts/fuzz): RTP header + RFC 8285 extensions. Built with RTPCore's sources.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let span = Span(_unsafeStart: data, count: size)
    guard let h = try? RTPHeader.parse(span) else { return 0 }
    precondition(h.payloadRange.upperBound <= size && h.extensionRange.upperBound <= h.payloadRange.lowerBound)
    _ = try? RTPExtensionValues.parse(span, header: h)
    _ = RTPDemux.classify(span)
    return 0
}
