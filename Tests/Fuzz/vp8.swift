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
    var assembler = VideoFrameAssembler()
    var i = 0, now: Int64 = 0
    while i + 4 <= bytes.count {
        let seq = UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])
        let ts = UInt32(bytes[i + 2] & 0x0F)
        let marker = bytes[i + 2] & 0x80 != 0
        let len = min(Int(bytes[i + 3]), bytes.count - i - 4)
        assembler.insert(
            sequenceNumber: seq, timestamp: ts, marker: marker, payload: Span(_unsafeStart: data + i + 4, count: len), now: now)
        while let f = assembler.pop(now: now) { precondition(f.bytes.count <= 1 << 24) }
        precondition(assembler.fragmentCount <= assembler.maxFragments)
        i += 4 + len
        now += 5_000
    }
    return 0
}
