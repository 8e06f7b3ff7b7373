// libFuzzer harness (scripts/fuzz): the AV1 Dependency Descriptor reader, the AV1 depacketizer (AOM RTP payload format: aggregation
// header, OBU elements, fragments joined across packets), the key-frame reader and the frame
// assembler in AV1 mode. The input is cut into one to three payloads (its first byte says where);
// the input as a temporal unit goes through the packetizer (every packet within the room, its
// marker on the last) and back through the depacketizer: a well-formed unit comes back OBU for
// OBU, with a temporal delimiter first and every size field restored.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let all = Span(_unsafeStart: data, count: size)
    _ = AV1OBU.isKeyFrame(all)
    // The input as a Dependency Descriptor (its RTP header extension), alone and against the
    // L1T3 structure; a structure it attaches, written again by pubbot's writer, reads back equal.
    _ = try? DependencyDescriptor.parse(all, known: FrameDependencyStructure.temporal(layers: 3, width: 1280, height: 720))
    if let d = try? DependencyDescriptor.parse(all, known: nil), let s = d.structure {
        let again = DependencyDescriptor(startOfFrame: true, endOfFrame: true, templateID: s.templateIDOffset, frameNumber: 1, structure: s)
        precondition((try? DependencyDescriptor.parse(again.bytes().span, known: nil))?.structure == s, "the structure did not round-trip")
    }
    if size > 1 {
        let cuts = [Int(bytes[0]) % size, Int(bytes[size - 1]) % size].sorted()
        let c0 = max(1, cuts[0]), c1 = max(c0, cuts[1])
        let payloads = [Array(bytes[1..<c0]), Array(bytes[c0..<c1]), Array(bytes[c1...])].filter { !$0.isEmpty }
        _ = try? AV1Depacketizer.assemble(payloads)
    }
    // The input as a temporal unit: what the round trip should give back.
    var expected: [UInt8] = [0x12, 0x00]
    var wellFormed = true
    var at = 0
    while true {
        guard let u = try? AV1OBU.unit(at: at, in: all) else {
            wellFormed = at >= size
            break
        }
        let type = u.type(all)
        if type != 2 && type != 8 && type != 15 {
            expected.append(bytes[u.header] | 0x02)
            if u.headerSize == 2 { expected.append(bytes[u.header + 1]) }
            AV1OBU.appendLEB128(u.payload.count, to: &expected)
            expected += bytes[u.payload]
        }
        at = u.end
    }
    if var p = try? AV1Packetizer(frame: all, maxPayloadSize: 200, keyFrame: bytes.first == 0x0A),
        let count = try? AV1Packetizer.packetCount(frame: all, maxPayloadSize: 200)
    {
        var buffer = [UInt8](repeating: 0, count: 200)
        var packets: [[UInt8]] = []
        while packets.count < count {
            let (marker, n): (Bool?, Int) = buffer.withUnsafeMutableBytes { raw in
                var w = ByteWriter(raw)
                let m = try? p.next(frame: all, into: &w)
                return (m ?? nil, w.count)
            }
            guard let marker else { preconditionFailure("packet \(packets.count) of \(count) not written") }
            precondition(n <= 200 && marker == (packets.count + 1 == count))
            packets.append(Array(buffer[0..<n]))
        }
        precondition(wellFormed, "the packetizer took a unit that does not parse")
        let after: Bool?? = buffer.withUnsafeMutableBytes { raw in
            var w = ByteWriter(raw)
            return try? p.next(frame: all, into: &w)
        }
        precondition(after == .some(nil), "a packet after the marker")
        let back = try? AV1Depacketizer.assemble(packets)
        precondition(back?.bytes == expected, "the unit did not survive packetization")
    } else if var p = try? AV1Packetizer(frame: all, maxPayloadSize: 200, keyFrame: false) {
        // A unit whose first element parses and a later one does not: `next` throws at it (the
        // layout is found as it writes), never traps, and ends.
        var buffer = [UInt8](repeating: 0, count: 200)
        for _ in 0..<all.count + 2 {
            let marker: Bool?? = buffer.withUnsafeMutableBytes { raw in
                var w = ByteWriter(raw)
                return try? p.next(frame: all, into: &w)
            }
            guard case .some(.some(false)) = marker else { break }
        }
    }
    feedAssembler(.av1, data, size)
    return 0
}
