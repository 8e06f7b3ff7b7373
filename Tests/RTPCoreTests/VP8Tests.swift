import Testing
@testable import RTPCore

@Suite struct VP8PayloadDescriptorTests {
    @Test(arguments: [
        ("10", VP8PayloadDescriptor(startOfPartition: true), 1),
        ("90 80 81 23", VP8PayloadDescriptor(startOfPartition: true, pictureID: 0x123), 4),
        (
            "90 e0 81 23 05 a0",
            VP8PayloadDescriptor(startOfPartition: true, pictureID: 0x123, tl0PicIdx: 5, temporalID: 2, layerSync: true), 6
        ),
        ("a0 20 40", VP8PayloadDescriptor(nonReference: true, temporalID: 1), 3),
        ("80 10 05", VP8PayloadDescriptor(keyIndex: 5), 3)
    ])
    func roundTrips(_ bytes: String, _ value: VP8PayloadDescriptor, _ size: Int) throws {
        let (parsed, n) = try VP8PayloadDescriptor.parse(hex(bytes).span)
        #expect(parsed == value)
        #expect(n == size)
        #expect(value.size == size)
        let written = try [UInt8].writing(capacity: 16) { w throws(RTPWriteError) in try value.write(to: &w) }
        #expect(written == hex(bytes))
        // The packetizer's word holds the same bytes.
        let (word, count) = value.packed
        #expect(count == size)
        #expect((0..<count).map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) } == hex(bytes))
        #expect(word >> (8 * UInt64(count)) == 0)
    }

    /// Every combination of the optional fields: `packed` is `write`'s bytes.
    @Test func packedIsWhatWriteWrites() throws {
        for mask in 0..<64 {
            var d = VP8PayloadDescriptor(nonReference: mask & 1 != 0, startOfPartition: mask & 2 != 0, partitionID: 3)
            if mask & 4 != 0 { d.pictureID = 0x7ABC & 0x7FFF }
            if mask & 8 != 0 { d.tl0PicIdx = 0xA5 }
            if mask & 16 != 0 { d.temporalID = 2; d.layerSync = true }
            if mask & 32 != 0 { d.keyIndex = 0x1B }
            for short in [false, true] where !short || d.pictureID != nil {
                if short { d.pictureID = 0x55; d.shortPictureID = true }
                let written = try [UInt8].writing(capacity: 16) { w throws(RTPWriteError) in try d.write(to: &w) }
                let (word, count) = d.packed
                #expect(count == written.count)
                #expect((0..<count).map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) } == written, "mask \(mask) short \(short)")
            }
        }
    }

    @Test func parsesShortPictureID() throws {
        let (d, n) = try VP8PayloadDescriptor.parse(hex("90 80 17").span) // M=0: 7-bit PictureID 0x17
        #expect(d.pictureID == 0x17 && d.shortPictureID && n == 3)
    }

    @Test func rejectsTruncated() {
        #expect(throws: RTPParseError.truncated) { try VP8PayloadDescriptor.parse(hex("90 80 81").span) }
        #expect(throws: RTPParseError.truncated) { try VP8PayloadDescriptor.parse(hex("90").span) }
        #expect(throws: RTPParseError.truncated) { try VP8PayloadDescriptor.parse([UInt8]().span) }
    }

    @Test func parsesKeyFrameHeader() throws {
        // P=0 (key), show_frame=1, first partition size; start code; 320x180.
        let h = try VP8FrameHeader.parse(hex("10 02 00 9d 01 2a 40 01 b4 00").span)
        #expect(h.isKeyFrame && h.showFrame && h.width == 320 && h.height == 180)
        #expect(try VP8FrameHeader.parse(hex("31 02 00").span).isKeyFrame == false)
        #expect(throws: RTPParseError.badPayload) { try VP8FrameHeader.parse(hex("10 02 00 00 00 00 40 01 b4 00").span) }
    }

    @Test func fuzzDescriptorAndAssembler() {
        var rng = SplitMix64(seed: 7)
        var ok = 0, failed = 0
        var assembler = VideoFrameAssembler()
        for i in 0..<100_000 {
            let input = mutate(hex("90 e0 81 23 05 a0 10 02 00 9d 01 2a 40 01 b4 00"), &rng)
            if let (d, size) = try? VP8PayloadDescriptor.parse(input.span) {
                ok += 1
                // Round trip: written back, it parses to the same descriptor (the bytes may be fewer:
                // an extension byte with no field set, reserved bits, are not written back).
                let bytes = try? [UInt8].writing(capacity: 8) { w throws(RTPWriteError) in try d.write(to: &w) }
                #expect(
                    bytes.map { $0.count <= size } == true && bytes.flatMap { try? VP8PayloadDescriptor.parse($0.span).0 } == d, "\(input)")
            } else {
                failed += 1
            }
            assembler.insert(
                sequenceNumber: UInt16(truncatingIfNeeded: i), timestamp: UInt32(i / 3), marker: i % 3 == 2, payload: input.span,
                now: Int64(i) * 1000)
            while assembler.pop(now: Int64(i) * 1000) != nil {}
        }
        #expect(ok > 1000 && failed > 1000)
        #expect(assembler.fragmentCount <= assembler.maxFragments)
    }
}

@Suite struct VP8PacketizerTests {
    func packetize(_ frame: [UInt8], maxPayload: Int, descriptor: VP8PayloadDescriptor) throws -> [[UInt8]] {
        var p = try VP8Packetizer(frameSize: frame.count, maxPayloadSize: maxPayload, descriptor: descriptor)
        var out: [[UInt8]] = []
        var markers: [Bool] = []
        var storage = [UInt8](repeating: 0, count: maxPayload)
        while true {
            var marker: Bool?
            var n = 0
            var failure: RTPWriteError?
            storage.withUnsafeMutableBytes { raw in
                var w = ByteWriter(raw)
                do throws(RTPWriteError) { marker = try p.next(frame: frame.span, into: &w) } catch { failure = error }
                n = w.count
            }
            if let failure { throw failure }
            guard let m = marker else { break }
            markers.append(m)
            out.append(Array(storage[0..<n]))
        }
        #expect(markers == Array(repeating: false, count: out.count - 1) + [true])
        return out
    }

    @Test func splitsAboutEqually() throws {
        let frame = (0..<2500).map { UInt8(truncatingIfNeeded: $0) }
        let d = VP8PayloadDescriptor(pictureID: 300)
        let packets = try packetize(frame, maxPayload: 1000, descriptor: d)
        // ceil(2500 / 3) = 834 in all but the last, which takes the rest: one UDP GSO run.
        #expect(packets.map(\.count) == [4 + 834, 4 + 834, 4 + 832])
        var joined: [UInt8] = []
        for (i, p) in packets.enumerated() {
            let (desc, n) = try VP8PayloadDescriptor.parse(p.span)
            #expect(desc.startOfPartition == (i == 0))
            #expect(desc.pictureID == 300 && desc.partitionID == 0)
            joined += p[n...]
        }
        #expect(joined == frame)
    }

    /// A frame's packets are one UDP GSO run: one size in all but the last, which is no larger
    /// (Linux udp(7), UDP_SEGMENT), and about equal (the last at most n - 1 bytes short).
    @Test func everyFramesPacketsAreOneGSORun() throws {
        for size in [1, 995, 996, 997, 1991, 1992, 1993, 2500, 4000, 9999, 12_345, 60_001] {
            let frame = [UInt8](repeating: 7, count: size)
            let sizes = try packetize(frame, maxPayload: 1000, descriptor: VP8PayloadDescriptor(pictureID: 1)).map(\.count)
            #expect(sizes.reduce(0, +) == size + 4 * sizes.count, "size \(size)")
            #expect(sizes.dropLast().allSatisfy { $0 == sizes[0] } && sizes.last! <= sizes[0], "size \(size): \(sizes)")
            #expect(sizes[0] - sizes.last! < sizes.count, "size \(size): \(sizes)")
            #expect(sizes.allSatisfy { $0 <= 1000 }, "size \(size): \(sizes)")
        }
    }

    /// Where a room of a few bytes would leave the last part empty, the split stays total.
    @Test func payloadSplitKeepsEveryPartNonEmpty() {
        for total in 1...200 {
            for n in 1...min(total, 40) {
                let split = PayloadSplit(total, into: n)
                let parts = (0..<n).map { split.size(of: $0) }
                #expect(parts.reduce(0, +) == total && parts.allSatisfy { $0 >= 1 }, "\(total) into \(n): \(parts)")
                #expect(parts.max()! - parts.min()! < n, "\(total) into \(n): \(parts)")
            }
        }
    }

    @Test func singlePacketFrame() throws {
        let packets = try packetize([1, 2, 3], maxPayload: 1200, descriptor: VP8PayloadDescriptor())
        #expect(packets == [[0x10, 1, 2, 3]])
    }

    @Test func refusesRoomSmallerThanDescriptor() {
        #expect(throws: RTPWriteError.self) {
            try VP8Packetizer(frameSize: 10, maxPayloadSize: 3, descriptor: VP8PayloadDescriptor(pictureID: 1))
        }
    }

    @Test func assemblerRebuildsFramesInAnyArrivalOrder() throws {
        var frame = hex("10 02 00 9d 01 2a 40 01 b4 00")
        frame += (0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let packets = try packetize(frame, maxPayload: 700, descriptor: VP8PayloadDescriptor(pictureID: 9))
        var a = VideoFrameAssembler()
        let order = [2, 0, 4, 1, 3].filter { $0 < packets.count }
        #expect(order.count == packets.count)
        var done: VideoFrameAssembler.Frame?
        for i in order {
            let p = packets[i]
            a.insert(sequenceNumber: UInt16(100 + i), timestamp: 5000, marker: i == packets.count - 1, payload: p.span, now: 0)
            if let f = a.pop(now: 0) { done = f }
        }
        let f = try #require(done)
        #expect(f.bytes == frame)
        #expect(f.isKeyFrame && f.width == 320 && f.height == 180)
        #expect(f.packetCount == packets.count)
    }

    /// Not kept (nobody decodes), a stream's frames come out the same — order, key flags, sizes,
    /// packet counts, drops — with only the head of each frame's first packet as bytes.
    @Test func assemblerWithoutBytesReleasesTheSameFrames() throws {
        let key = hex("10 02 00 9d 01 2a 40 01 b4 00") + (0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let delta = hex("31 02 00") + [UInt8](repeating: 2, count: 1500)
        var kept = VideoFrameAssembler(), counted = VideoFrameAssembler(codec: .vp8, keepsBytes: false)
        var seq: UInt16 = 65_000
        var out: [[VideoFrameAssembler.Frame]] = [[], []]
        for n in 0..<40 {
            let ps = try packetize(n % 20 == 0 ? key : delta, maxPayload: 700, descriptor: VP8PayloadDescriptor(pictureID: UInt16(n)))
            for (i, p) in ps.enumerated() where !(n == 7 && i == 1) { // frame 7 loses a packet
                let now = Int64(n) * 33_333
                kept.insert(
                    sequenceNumber: seq &+ UInt16(i), timestamp: UInt32(n * 3000), marker: i == ps.count - 1, payload: p.span, now: now)
                counted.insert(
                    sequenceNumber: seq &+ UInt16(i), timestamp: UInt32(n * 3000), marker: i == ps.count - 1, payload: p.span, now: now)
                while let f = kept.pop(now: now) { out[0].append(f) }
                while let f = counted.pop(now: now) { out[1].append(f) }
            }
            seq &+= UInt16(ps.count)
        }
        func shape(_ f: VideoFrameAssembler.Frame) -> [Int] {
            [Int(f.timestamp), f.isKeyFrame ? 1 : 0, f.width ?? -1, f.height ?? -1, f.packetCount, f.followsAGap ? 1 : 0]
        }
        #expect(out[0].count > 30 && out[0].map(shape) == out[1].map(shape))
        #expect(kept.framesDropped > 0 && kept.framesDropped == counted.framesDropped)
        #expect(out[1].allSatisfy { $0.bytes.count <= 64 } && out[0].first?.bytes == key)
    }

    @Test func assemblerKeepsBytesFromTheSwitchOn() throws {
        // A rotating decoder switches a counting stream to keeping bytes while frame 5 is half in:
        // frame 5 comes out marked as not whole, every later frame whole, and the same frames
        // come out as from an assembler that kept every byte.
        let key = hex("10 02 00 9d 01 2a 40 01 b4 00") + (0..<2000).map { UInt8(truncatingIfNeeded: $0 * 3) }
        let delta = (0..<1500).map { UInt8(truncatingIfNeeded: $0 * 5 + 1) | 1 }
        var kept = VideoFrameAssembler(), switched = VideoFrameAssembler(codec: .vp8, keepsBytes: false)
        var seq: UInt16 = 65_530
        var out: [[VideoFrameAssembler.Frame]] = [[], []]
        for n in 0..<12 {
            let payload = n == 8 ? key : [0x31, 0x02, 0x00] + delta
            let ps = try packetize(payload, maxPayload: 600, descriptor: VP8PayloadDescriptor(pictureID: UInt16(n)))
            for (i, p) in ps.enumerated() {
                if n == 5 && i == 1 { switched.keepsBytes = true }
                if n == 7 && i == 1 { switched.keepsBytes = true } // again: nothing moves
                for k in 0..<2 {
                    if k == 0 {
                        kept.insert(
                            sequenceNumber: seq &+ UInt16(i), timestamp: UInt32(n * 3000), marker: i == ps.count - 1, payload: p.span,
                            now: 0)
                        while let f = kept.pop(now: 0) { out[0].append(f) }
                    } else {
                        switched.insert(
                            sequenceNumber: seq &+ UInt16(i), timestamp: UInt32(n * 3000), marker: i == ps.count - 1, payload: p.span,
                            now: 0)
                        while let f = switched.pop(now: 0) { out[1].append(f) }
                    }
                }
            }
            seq &+= UInt16(ps.count)
        }
        #expect(out[0].count == 12 && out[1].count == 12)
        #expect(out[1].map(\.bytesKept) == (0..<12).map { $0 > 5 })
        #expect(out[0].allSatisfy { $0.bytesKept })
        for n in 6..<12 { #expect(out[1][n].bytes == out[0][n].bytes) }
        #expect(out[1][8].isKeyFrame && out[1][8].bytes == key)
        #expect(out[1][5].bytes.count < out[0][5].bytes.count)
        switched.keepsBytes = false
        #expect(!switched.keepsBytes)
    }

    @Test func assemblerDropsFramesWithLostPackets() throws {
        let key = hex("10 02 00 9d 01 2a 40 01 b4 00") + [UInt8](repeating: 7, count: 1500)
        let p1 = try packetize(key, maxPayload: 600, descriptor: VP8PayloadDescriptor())
        let p2 = try packetize(key, maxPayload: 600, descriptor: VP8PayloadDescriptor())
        var a = VideoFrameAssembler()
        var seq: UInt16 = 65530 // crosses the wrap
        for (i, p) in p1.enumerated() where i != 1 {
            a.insert(sequenceNumber: seq &+ UInt16(i), timestamp: 1, marker: i == p1.count - 1, payload: p.span, now: 0)
        }
        seq &+= UInt16(p1.count)
        for (i, p) in p2.enumerated() {
            a.insert(sequenceNumber: seq &+ UInt16(i), timestamp: 2, marker: i == p2.count - 1, payload: p.span, now: 0)
        }
        // The second frame is a key frame: released at once, and the incomplete first one is dropped.
        let popped = a.pop(now: 0)
        let f = try #require(popped)
        #expect(f.timestamp == 2)
        #expect(a.framesDropped == 1)
    }

    @Test func assemblerHoldsALaterFrameForARetransmission() throws {
        let key = hex("10 02 00 9d 01 2a 40 01 b4 00") + [UInt8](repeating: 1, count: 100)
        let delta = hex("31 02 00") + [UInt8](repeating: 2, count: 1000)
        let k = try packetize(key, maxPayload: 600, descriptor: VP8PayloadDescriptor())
        let d1 = try packetize(delta, maxPayload: 600, descriptor: VP8PayloadDescriptor())
        let d2 = try packetize(delta, maxPayload: 600, descriptor: VP8PayloadDescriptor())
        var a = VideoFrameAssembler()
        var seq: UInt16 = 10
        func feed(_ ps: [[UInt8]], ts: UInt32, skip: Int? = nil, now: Int64) {
            for (i, p) in ps.enumerated() where i != skip {
                a.insert(sequenceNumber: seq &+ UInt16(i), timestamp: ts, marker: i == ps.count - 1, payload: p.span, now: now)
            }
            seq &+= UInt16(ps.count)
        }
        feed(k, ts: 1, now: 0)
        #expect(a.pop(now: 0)?.timestamp == 1)
        let d1Start = seq
        feed(d1, ts: 2, skip: 0, now: 10_000) // first packet of d1 lost
        feed(d2, ts: 3, now: 20_000)
        #expect(a.pop(now: 30_000) == nil) // d2 is complete but waits for d1
        // The retransmission arrives: both come out, in order.
        let first = d1[0]
        a.insert(sequenceNumber: d1Start, timestamp: 2, marker: false, payload: first.span, now: 60_000)
        #expect(a.pop(now: 60_000)?.timestamp == 2)
        #expect(a.pop(now: 60_000)?.timestamp == 3)
        #expect(a.framesDropped == 0)
    }

    @Test func assemblerGivesUpAfterTheHoldTime() throws {
        let key = hex("10 02 00 9d 01 2a 40 01 b4 00") + [UInt8](repeating: 1, count: 100)
        let delta = hex("31 02 00") + [UInt8](repeating: 2, count: 1000)
        var a = VideoFrameAssembler()
        let k = try packetize(key, maxPayload: 600, descriptor: VP8PayloadDescriptor())
        let only = k[0]
        a.insert(sequenceNumber: 0, timestamp: 1, marker: true, payload: only.span, now: 0)
        _ = a.pop(now: 0)
        let d = try packetize(delta, maxPayload: 600, descriptor: VP8PayloadDescriptor())
        for (i, p) in d.enumerated() where i != 0 {
            a.insert(sequenceNumber: UInt16(1 + i), timestamp: 2, marker: i == d.count - 1, payload: p.span, now: 0)
        }
        for (i, p) in d.enumerated() {
            a.insert(sequenceNumber: UInt16(1 + d.count + i), timestamp: 3, marker: i == d.count - 1, payload: p.span, now: 0)
        }
        #expect(a.pop(now: 100_000) == nil)
        let released = a.pop(now: a.holdMicros)
        let late = try #require(released)
        #expect(late.timestamp == 3 && late.followsAGap)
        #expect(a.framesDropped == 1)
    }
}
