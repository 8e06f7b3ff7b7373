// libFuzzer harness (scripts/fuzz): the H.264 depacketizer (RFC 6184 single NAL, STAP-A, FU-A),
// the SPS reader, the slice QP reader and the frame assembler in H.264 mode: the input is cut into packets whose
// sequence numbers, timestamps and markers come from the input too. The Annex B scanner and
// the packetizer run over the input as a frame (every packet within the room, the packets
// depacketized give the NAL units back).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let all = Span(_unsafeStart: data, count: size)
    var out: [UInt8] = []
    _ = try? H264Depacketizer.append(all, to: &out)
    _ = H264SPS.parse(all)
    // The slice QP reader over the input as an access unit, twice (the parameter sets it
    // keeps from the first pass are used by the second's slices).
    var qp = H264SliceQP()
    if let q = qp.parse(all) { precondition((0...51).contains(q)) }
    if let q = qp.parse(all) { precondition((0...51).contains(q)) }
    // The input as an access unit: packetize within 200 bytes, depacketize, compare the units.
    var units: [[UInt8]] = [], at = 0
    while let r = H264NAL.next(in: all, from: at) {
        units.append(Array(bytes[r]))
        at = r.upperBound
    }
    // A unit with the forbidden bit or a type that is not a NAL unit of a picture (0, 24–31)
    // comes back refused by the depacketizer: the round trip is checked for ordinary ones.
    let ordinary = units.allSatisfy { $0[0] & 0x80 == 0 && (1...23).contains($0[0] & 0x1F) }
    if var p = try? H264Packetizer(frame: all, maxPayloadSize: 200) {
        var buffer = [UInt8](repeating: 0, count: 200)
        var rebuilt: [UInt8] = []
        var packets = 0
        while packets < p.packetCount {
            let (marker, n): (Bool?, Int) = buffer.withUnsafeMutableBytes { raw in
                var w = ByteWriter(raw)
                let m = try? p.next(frame: all, into: &w)
                return (m ?? nil, w.count)
            }
            guard let marker else { preconditionFailure("packet \(packets) of \(p.packetCount) not written") }
            precondition(n <= 200 && marker == (packets + 1 == p.packetCount))
            let accepted = (try? H264Depacketizer.append(buffer.span.extracting(0..<n), to: &rebuilt)) != nil
            precondition(accepted || !ordinary, "own packet refused")
            packets += 1
        }
        var again: [[UInt8]] = []
        at = 0
        while let r = H264NAL.next(in: rebuilt.span, from: at) {
            again.append(Array(rebuilt[r]))
            at = r.upperBound
        }
        if ordinary { precondition(units == again, "units did not survive packetization") }
    }
    feedAssembler(.h264, data, size)
    return 0
}
