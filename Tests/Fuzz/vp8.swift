// libFuzzer harness (scripts/fuzz): VP8 payload descriptor and the frame assembler (the
// depacketizer): the input is cut into packets whose sequence numbers, timestamps and markers
// come from the input too.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    if let (d, used) = try? VP8PayloadDescriptor.parse(Span(_unsafeStart: data, count: size)) {
        // Round trip: written back, the descriptor is no longer and parses to itself.
        var out = [UInt8](repeating: 0, count: 8)
        let n: Int = out.withUnsafeMutableBytes { raw in
            var w = ByteWriter(raw)
            do { try d.write(to: &w) } catch { preconditionFailure("descriptor does not write back: \(error)") }
            return w.count
        }
        precondition(n <= used && (try? VP8PayloadDescriptor.parse(out.span.extracting(0..<n)).0) == d, "descriptor round trip \(d)")
    }
    feedAssembler(.vp8, data, size)
    return 0
}
