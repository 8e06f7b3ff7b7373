import Testing
@testable import RTPCore

/// The AV1 Dependency Descriptor (AOM AV1 RTP format, Appendix A): what pubbot writes reads back
/// field for field, the non-symmetric code of every small range round-trips, the header carries
/// it as a two-byte element beside the one-byte-sized ones, and the reader is total.
@Suite struct DependencyDescriptorTests {
    @Test func mandatoryFieldsAreThreeBytes() throws {
        let d = DependencyDescriptor(startOfFrame: true, endOfFrame: false, templateID: 5, frameNumber: 0x1234)
        #expect(d.bytes() == [0x85, 0x12, 0x34])
        let s = FrameDependencyStructure.temporal(layers: 3, width: 1280, height: 720)
        let back = try DependencyDescriptor.parse([0x44, 0xFF, 0xFE].span, known: s)
        #expect(
            !back.startOfFrame && back.endOfFrame && back.templateID == 4 && back.frameNumber == 0xFFFE && back.frame?.frameDiffs == [1, 3])
        // Template 5 does not exist in a five-template structure at offset 0; no structure known at all.
        #expect(throws: RTPParseError.badPayload) { try DependencyDescriptor.parse([0x05, 0, 0].span, known: s) }
        #expect(throws: RTPParseError.badPayload) { try DependencyDescriptor.parse([0x01, 0, 0].span, known: nil) }
    }

    @Test(arguments: [1, 2, 3])
    func structureRoundTrips(_ layers: Int) throws {
        let s = FrameDependencyStructure.temporal(layers: layers, width: 640, height: 360)
        #expect(s.decodeTargets == layers && s.templates.first?.frameDiffs == [] && s.templates.allSatisfy { $0.dtis.count == layers })
        var d = DependencyDescriptor(startOfFrame: true, endOfFrame: true, templateID: 0, frameNumber: 7, structure: s)
        let bytes = d.bytes()
        // More than a one-byte header element holds (RFC 8285 §4.2): the two-byte form's reason.
        #expect(bytes.count > 3 && bytes.count <= 255 && (layers < 3 || bytes.count > 16), "\(bytes.count) bytes")
        let back = try DependencyDescriptor.parse(bytes.span, known: nil)
        #expect(back.structure == s)
        #expect(back.frame == s.templates[0] && back.frameNumber == 7)
        // Every later frame names its template; the structure is then the one known.
        for (i, t) in s.templates.enumerated() {
            d = DependencyDescriptor(startOfFrame: i % 2 == 0, endOfFrame: true, templateID: i, frameNumber: UInt16(8 + i))
            let p = try DependencyDescriptor.parse(d.bytes().span, known: s)
            #expect(p.frame == t && p.frameNumber == UInt16(8 + i) && p.startOfFrame == (i % 2 == 0))
        }
    }

    /// The SVC structures against a model of the stream they describe (every spatial layer's frame
    /// a frame number of its own, lowest first; LAST and GOLDEN per layer as pubbot's encoders
    /// use them; a chain per spatial layer over its T0 frames, on a key picture over the key
    /// frames of it and the layers below): every frame of two periods after a key picture is its
    /// template exactly — no custom diffs in a regular stream — and the structure round-trips.
    @Test(arguments: [(1, 1), (1, 3), (2, 2), (3, 1), (3, 3)] as [(Int, Int)])
    func svcTemplatesDescribeTheStream(_ spatial: Int, _ temporal: Int) throws {
        let sizes = (0..<spatial).map { (320 << $0, 180 << $0) }
        let s = FrameDependencyStructure.svc(spatial: spatial, temporal: temporal, sizes: sizes)
        #expect(s.decodeTargets == spatial * temporal && s.chains == spatial && s.resolutions.count == spatial)
        let back = try DependencyDescriptor.parse(
            DependencyDescriptor(startOfFrame: true, endOfFrame: true, templateID: 0, frameNumber: 0, structure: s).bytes().span, known: nil
        )
        #expect(back.structure == s)
        // (tid, references LAST, GOLDEN, updates LAST, GOLDEN) of each step (libwebrtc's 0-2-1-2).
        let steps: [(Int, Bool, Bool, Bool, Bool)] =
            switch temporal {
            case 2: [(0, true, false, true, false), (1, true, false, false, false)]
            case 3:
                [
                    (0, true, false, true, false), (2, true, false, false, false), (1, true, false, false, true),
                    (2, true, true, false, false)
                ]
            default: [(0, true, true, true, true)]
            }
        var last = [Int](repeating: 0, count: spatial), golden = last
        var chains = [Int?](repeating: nil, count: spatial)
        for picture in 0..<(2 * steps.count + 1) {
            let key = picture == 0
            let (tid, refLast, refGolden, updLast, updGolden) = steps[picture % steps.count]
            for l in 0..<spatial {
                let number = picture * spatial + l
                var fdiffs: [Int] = []
                if key {
                    fdiffs = l == 0 ? [] : [1]
                } else {
                    if refLast { fdiffs.append(number - last[l]) }
                    if refGolden && golden[l] != last[l] { fdiffs.append(number - golden[l]) }
                }
                let chainDiffs = key && l == 0 ? [Int](repeating: 0, count: spatial) : chains.map { $0.map { number - $0 } ?? 0 }
                for c in 0..<spatial where key ? c >= l : (tid == 0 && c == l) { chains[c] = number }
                if key || updLast { last[l] = number }
                if key || updGolden { golden[l] = number }
                let i = FrameDependencyStructure.template(
                    spatial: l, temporalLayers: temporal, keyPicture: key, temporalID: tid, references: fdiffs.count)
                let t = s.templates[i]
                #expect(t.spatialID == l && t.temporalID == (key ? 0 : tid), "picture \(picture) S\(l): template \(i)")
                #expect(t.frameDiffs == fdiffs.sorted(), "picture \(picture) S\(l): template \(i) fdiffs \(t.frameDiffs), stream \(fdiffs)")
                #expect(t.chainDiffs == chainDiffs, "picture \(picture) S\(l): template \(i) chains \(t.chainDiffs), stream \(chainDiffs)")
            }
        }
    }

    @Test func customDiffsRoundTrip() throws {
        let s = FrameDependencyStructure.temporal(layers: 3, width: 320, height: 180)
        for fdiffs in [[1], [5, 17], [2, 300, 4000], []] {
            var d = DependencyDescriptor(startOfFrame: true, endOfFrame: true, templateID: 3, frameNumber: 99)
            d.customFrameDiffs = fdiffs
            d.customChainDiffs = [9]
            let p = try DependencyDescriptor.parse(d.bytes().span, known: s)
            #expect(p.frame?.frameDiffs == fdiffs && p.frame?.chainDiffs == [9] && p.frame?.temporalID == 2, "\(fdiffs)")
        }
    }

    @Test func nonSymmetricCodeRoundTrips() throws {
        for n in 1...40 {
            for v in 0..<n {
                var w = BitWriter()
                w.put(1, 1)
                w.nonSymmetric(v, count: n)
                w.put(1, 1)
                var r = DescriptorBitReader(w.bytes)
                #expect(try r.bit())
                #expect(try r.nonSymmetric(n) == v, "ns(\(n)) of \(v)")
                #expect(try r.bit())
            }
        }
    }

    /// A header in the two-byte form with MID and transport-cc, the descriptor appended per packet
    /// (and, for a retransmission, copied as it was): each element reads back.
    @Test func appendedElementReadsBack() throws {
        let t = RTPHeaderTemplate(
            payloadType: 45, ssrc: 0x0102_0304, strings: [(4, "1")], transportSequence: true, transportSequenceID: 3, twoByte: true)
        #expect(t.twoByte && t.bytes[12] == 0x10 && t.bytes[13] == 0x00)
        let s = FrameDependencyStructure.temporal(layers: 3, width: 1280, height: 720)
        let dd = DependencyDescriptor(startOfFrame: true, endOfFrame: false, templateID: 0, frameNumber: 1, structure: s).bytes()
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 200, alignment: 8)
        defer { buf.deallocate() }
        var w = ByteWriter(buf)
        try t.write(to: &w, sequenceNumber: 9, timestamp: 90_000, marker: false)
        let head = Array(dd.prefix(3)), tail = Array(dd.dropFirst(3))
        try t.appendElement(id: 12, head: head.span, tail: tail.span, to: &w, headerStart: 0)
        let headerEnd = w.count
        w.u8(0xAB)
        let packet = Array(buf.prefix(w.count))
        let extra = Array(packet[t.size..<headerEnd])
        let ids = RTPExtensionIDs(mid: 4, rid: nil, repairedRid: nil, absSendTime: nil, transportSequence: 3)
        var withDD = ids
        withDD.dependencyDescriptor = 12
        let h = try RTPHeader.parse(packet.span)
        #expect(h.payloadRange.count == 1 && packet[h.payloadRange.lowerBound] == 0xAB && extra.count % 4 == 0)
        let v = try RTPExtensionValues.parse(packet.span, header: h, ids: withDD)
        #expect(v.mid == "1" && v.transportSequenceNumber != nil)
        let range = try #require(v.dependencyDescriptor)
        #expect(Array(packet[range]) == dd)
        // The retransmission's header takes the same element bytes.
        let rtx = RTPHeaderTemplate(
            payloadType: 46, ssrc: 5, strings: [(4, "1")], transportSequence: true, transportSequenceID: 3, twoByte: true)
        var r = ByteWriter(buf)
        try rtx.write(to: &r, sequenceNumber: 1, timestamp: 90_000, marker: false)
        try extra.withUnsafeBytes { e in try rtx.appendRaw(e, to: &r, headerStart: 0) }
        r.u16(9)
        let rpacket = Array(buf.prefix(r.count))
        let rh = try RTPHeader.parse(rpacket.span)
        let rv = try RTPExtensionValues.parse(rpacket.span, header: rh, ids: withDD)
        #expect(rv.dependencyDescriptor.map { Array(rpacket[$0]) } == dd && rh.payloadRange.count == 2)
    }

    /// Hostile bytes: never a trap, with and without a known structure (10⁵ seeded mutations of
    /// real descriptors).
    @Test func readerIsTotal() {
        let s = FrameDependencyStructure.temporal(layers: 3, width: 1280, height: 720)
        var custom = DependencyDescriptor(startOfFrame: true, endOfFrame: true, templateID: 4, frameNumber: 3)
        custom.customFrameDiffs = [1, 3]
        custom.customChainDiffs = [3]
        let seeds = [
            DependencyDescriptor(startOfFrame: true, endOfFrame: true, templateID: 0, frameNumber: 1, structure: s).bytes(),
            custom.bytes(), [0x41, 0x00, 0x02]
        ]
        var rng = SplitMix64(seed: 26)
        var parsed = 0
        for i in 0..<100_000 {
            let input = mutate(seeds[i % seeds.count], &rng)
            if (try? DependencyDescriptor.parse(input.span, known: i % 2 == 0 ? s : nil)) != nil { parsed += 1 }
        }
        #expect(parsed > 0)
    }
}
