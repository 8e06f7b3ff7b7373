// libFuzzer harness (scripts/fuzz): the VP9 payload descriptor (RFC 9628 §4.2, both modes, the
// scalability structure) and the frame assembler in VP9 mode: the input is cut into packets whose
// sequence numbers, timestamps and markers come from the input too. The packetizer runs over the
// input as a frame: every packet within the room, its descriptor readable, the bytes back.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let all = Span(_unsafeStart: data, count: size)
    if let (d, used) = try? VP9PayloadDescriptor.parse(all) { precondition(used <= size && d.pDiffs.count <= 3) }
    _ = VP9PayloadDescriptor.isKeyFrame(all)
    let key = size > 0 && bytes[0] & 1 == 0
    if var p = try? VP9Packetizer(frameSize: size, maxPayloadSize: 120, pictureID: UInt16(size), keyFrame: key, width: 320, height: 180) {
        var buffer = [UInt8](repeating: 0, count: 120)
        var rebuilt: [UInt8] = []
        var n = 0
        while n < p.packetCount {
            let (marker, count): (Bool?, Int) = buffer.withUnsafeMutableBytes { raw in
                var w = ByteWriter(raw)
                let m = try? p.next(frame: all, into: &w)
                return (m ?? nil, w.count)
            }
            guard let marker else { preconditionFailure("packet \(n) of \(p.packetCount) not written") }
            precondition(count <= 120 && marker == (n + 1 == p.packetCount))
            guard let (d, used) = try? VP9PayloadDescriptor.parse(buffer.span.extracting(0..<count)) else {
                preconditionFailure("own descriptor unreadable")
            }
            precondition(d.beginningOfFrame == (n == 0) && d.endOfFrame == marker && (d.scalability != nil) == (key && n == 0))
            rebuilt += buffer[used..<count]
            n += 1
        }
        precondition(rebuilt.elementsEqual(bytes), "the frame did not survive packetization")
    }
    feedAssembler(.vp9, data, size)
    return 0
}
