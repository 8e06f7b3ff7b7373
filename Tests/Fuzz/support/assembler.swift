// Shared by the vp8, vp9, h264 and av1 harnesses (scripts/fuzz compiles it into each): the input cut
// into packets whose sequence numbers, timestamps and markers come from the input too, fed to
// the frame assembler in the codec's mode; it must stay within its bounds.
func feedAssembler(_ codec: VideoCodec, _ data: UnsafePointer<UInt8>, _ size: Int) {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var assembler = VideoFrameAssembler(codec: codec)
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
}
