// Shared by the vp8, vp9, h264 and av1 harnesses (scripts/fuzz compiles it into each): the input cut
// into packets whose sequence numbers, timestamps and markers come from the input too, fed to
// the frame assembler in the codec's mode; it must stay within its bounds. Whether it keeps
// payload bytes (a counting subscriber does not) comes from the input too: the first byte's low
// bit at the start, and bit 6 of a packet's third byte switches it before that packet (a
// rotating decoder moving on or off the stream).
func feedAssembler(_ codec: VideoCodec, _ data: UnsafePointer<UInt8>, _ size: Int) {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var assembler = VideoFrameAssembler(codec: codec, keepsBytes: size > 0 && bytes[0] & 1 == 1)
    var i = 0, now: Int64 = 0
    while i + 4 <= bytes.count {
        let seq = UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])
        let ts = UInt32(bytes[i + 2] & 0x0F)
        let marker = bytes[i + 2] & 0x80 != 0
        let len = min(Int(bytes[i + 3]), bytes.count - i - 4)
        if bytes[i + 2] & 0x40 != 0 { assembler.keepsBytes.toggle() }
        assembler.insert(
            sequenceNumber: seq, timestamp: ts, marker: marker, payload: Span(_unsafeStart: data + i + 4, count: len), now: now)
        while let f = assembler.pop(now: now) {
            precondition(f.bytes.count <= 1 << 24)
            // H.264 and AV1 always keep their bytes; a whole VP8/VP9 frame began while they were kept.
            precondition(f.bytesKept || codec == .vp8 || codec == .vp9)
        }
        precondition(assembler.fragmentCount <= assembler.maxFragments)
        // The count the bound is kept by is the fragments actually waiting, and what each frame
        // notes of its fragments is theirs.
        precondition(assembler.fragmentCount == assembler.pending.values.reduce(0) { $0 + $1.frags.count })
        for p in assembler.pending.values {
            precondition(p.maxSeq == p.frags.map(\.seq).max() && p.frags[p.minIndex].seq == p.frags.map(\.seq).min())
            precondition(p.markerSeq == p.frags.first(where: \.marker)?.seq && p.startIndex == p.frags.firstIndex(where: \.start))
        }
        i += 4 + len
        now += 5_000
    }
}
