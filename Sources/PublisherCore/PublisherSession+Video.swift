import RTPCore
public import MediaCodecs
import Stats
import Net
import SRTP
import Congestion

/// Video frames into RTP packets: each codec's packetizer, AV1's Dependency Descriptors, and a
/// frame's packets written into arena slots and queued in the pacer once whole.
extension PublisherSession {
    /// Packetizes one frame into arena slots and queues them in the pacer.
    public func sendVideo(_ frame: EncodedVideoFrame) {
        guard mediaStarted else { counters.framesBeforeConnected += 1; return }
        let idx: Int
        if config.singleEncoding {
            guard let only = videoIndex.first, frame.layer < config.layers.count else { return }
            if frame.layer != singleActive {
                // Another layer goes on the wire only from its key frame (a decoder can start there).
                guard frame.layer == singleWanted else { return }
                guard frame.isKeyFrame else {
                    // The wanted layer runs but its encoder was not asked for a key frame (it was
                    // never paused, or the request was for another layer): ask now (throttled).
                    requestKeyFrame(only)
                    return
                }
                singleActive = frame.layer
                let l = config.layers[frame.layer]
                senders[only].stats.width = l.width
                senders[only].stats.height = l.height
            }
            idx = only
        } else {
            guard frame.layer < videoIndex.count else { return }
            idx = videoIndex[frame.layer]
        }
        // A stream starts on the wire with a key frame: a frame encoded before the transport
        // connected (in flight when it did, the key frame `startMedia` asked for still coming)
        // could not be decoded by a receiver that never saw what it refers to.
        guard senders[idx].sentAny || frame.isKeyFrame else {
            counters.framesBeforeConnected += 1
            requestKeyFrame(idx) // throttled; asked already at the start, again should it be lost
            return
        }
        sendVideo(frame, stream: idx, sender: &senders[idx])
    }

    /// Packetizes and queues one frame of the stream `idx`, whose sender `s` is changed in place
    /// inside `senders`: copied out and back per frame, it retained each of its arrays and
    /// buffers (by perf, with the audio path's copy, 3–4 % of a replay fleet's CPU).
    private func sendVideo(_ frame: EncodedVideoFrame, stream idx: Int, sender s: inout RTPStreamSender) {
        // The size on the wire (W3C frameWidth/frameHeight): a key frame starts each size (one
        // encoding's resolution changes under CPU adaptation, `ResolutionSteps`).
        if frame.isKeyFrame, frame.spatialLayers.isEmpty, frame.width > 0 {
            s.stats.width = frame.width
            s.stats.height = frame.height
        }
        let descriptor = frameDescriptor(frame, sender: &s)
        // A retransmission carries the same payload behind the RTX header and the 2-byte OSN
        // (RFC 4588 §4): budget for the larger of the two, so neither exceeds the packet size
        // (libwebrtc reserves it too, `rtp_sender.cc` RtxPacketOverhead). Both carry the
        // frame's Dependency Descriptor, if it has one.
        let room = config.maxPacketSize - max(s.template.size, s.rtxTemplate.map { $0.size + 2 } ?? 0) - (descriptor?.size ?? 0)
        do throws(RTPWriteError) {
            switch config.videoCodec {
            case .vp8:
                var d = VP8PayloadDescriptor(pictureID: s.pictureID)
                if let tid = frame.temporalID {
                    if tid == 0 { s.tl0PicIdx &+= 1 }
                    d.tl0PicIdx = s.tl0PicIdx
                    d.temporalID = tid
                    d.layerSync = frame.layerSync
                    d.nonReference = tid > 0 && frame.temporalID == UInt8(config.layers[frame.layer].temporalLayers - 1)
                }
                var packetizer = try VP8Packetizer(frameSize: frame.bytes.count, maxPayloadSize: room, descriptor: d)
                let sent = try packetize(frame, stream: idx, sender: &s, count: packetizer.packetCount) {
                    (w: inout ByteWriter) throws(RTPWriteError) in try packetizer.next(frame: frame.bytes.span, into: &w) == true
                }
                guard sent else { return }
            case .vp9:
                var packetizer = try VP9Packetizer(
                    frameSize: frame.bytes.count, maxPayloadSize: room, pictureID: s.pictureID, keyFrame: frame.isKeyFrame,
                    width: frame.width, height: frame.height, temporalID: frame.temporalID ?? 0, switchingUp: frame.layerSync,
                    references: frame.referenceDistances, spatialLayers: frame.spatialLayers.map { ($0.size, $0.width, $0.height) })
                let sent = try packetize(frame, stream: idx, sender: &s, count: packetizer.packetCount) {
                    (w: inout ByteWriter) throws(RTPWriteError) in try packetizer.next(frame: frame.bytes.span, into: &w) == true
                }
                guard sent else { return }
            case .h264:
                var packetizer = try H264Packetizer(frame: frame.bytes.span, maxPayloadSize: room)
                let sent = try packetize(frame, stream: idx, sender: &s, count: packetizer.packetCount) {
                    (w: inout ByteWriter) throws(RTPWriteError) in try packetizer.next(frame: frame.bytes.span, into: &w) == true
                }
                guard sent else { return }
            case .av1 where frame.spatialLayers.count > 1:
                // Each spatial layer's frame in packets of its own (a descriptor describes one
                // frame), the temporal unit's marker on the last; the N bit on the key picture's.
                var ranges: [Range<Int>] = []
                var packetizers: [AV1Packetizer] = []
                var counts: [Int] = []
                for (k, l) in frame.spatialLayers.enumerated() {
                    let r = (ranges.last?.upperBound ?? 0)..<((ranges.last?.upperBound ?? 0) + l.size)
                    ranges.append(r)
                    let layer = frame.bytes.span.extracting(r)
                    packetizers.append(try AV1Packetizer(frame: layer, maxPayloadSize: room, keyFrame: frame.isKeyFrame && k == 0))
                    // Each layer frame's descriptors need its last packet known before it is written.
                    counts.append(try AV1Packetizer.packetCount(frame: layer, maxPayloadSize: room))
                }
                var d = descriptor
                for k in counts.indices where k < d?.frames.count ?? 0 { d?.frames[k].packets = counts[k] }
                var current = 0
                let sent = try packetize(frame, stream: idx, sender: &s, count: counts.reduce(0, +), descriptor: d) {
                    (w: inout ByteWriter) throws(RTPWriteError) in
                    while current + 1 < packetizers.count && packetizers[current].index >= counts[current] { current += 1 }
                    return try packetizers[current].next(frame: frame.bytes.span.extracting(ranges[current]), into: &w) ?? true
                }
                guard sent else { return }
            case .av1:
                var packetizer = try AV1Packetizer(frame: frame.bytes.span, maxPayloadSize: room, keyFrame: frame.isKeyFrame)
                let sent = try packetize(frame, stream: idx, sender: &s, count: nil, descriptor: descriptor) {
                    (w: inout ByteWriter) throws(RTPWriteError) in try packetizer.next(frame: frame.bytes.span, into: &w) ?? true
                }
                guard sent else { return }
            }
        } catch {
            counters.lastError = "packetize: \(error)"
            return
        }
        s.pictureID = (s.pictureID &+ 1) & 0x7FFF
        s.stats.framesSent += 1
        if frame.isKeyFrame { s.stats.keyFramesSent += 1 }
        for (i, l) in frame.spatialLayers.enumerated() where i < s.stats.spatialLayers.count {
            s.stats.spatialLayers[i].framesSent += 1
            s.stats.spatialLayers[i].bytesSent += l.size
        }
        s.sentAny = true
    }

    /// An AV1 picture's Dependency Descriptors (the AOM RTP format, Appendix A), when the stream
    /// sends them: one frame per spatial layer, each with the template of its layer and place in
    /// the temporal pattern, the structure on a key picture's first packet, and custom frame and
    /// chain diffs where the frame's are not its template's (a frame the encoder dropped moved
    /// them). Counts the stream's frame numbers and keeps each chain's last frame.
    func frameDescriptor(_ frame: EncodedVideoFrame, sender s: inout RTPStreamSender) -> FrameDescriptor? {
        guard let id = s.descriptorID, frame.layer < config.layers.count else { return nil }
        let temporal = max(1, min(3, config.layers[frame.layer].temporalLayers))
        let spatial = max(1, frame.spatialLayers.count)
        // The structure changes only at a key picture (a switch of layer, of size): built then.
        if frame.isKeyFrame || s.descriptorStructure?.chains != spatial {
            let sizes = frame.spatialLayers.isEmpty ? [(frame.width, frame.height)] : frame.spatialLayers.map { ($0.width, $0.height) }
            s.descriptorStructure = FrameDependencyStructure.svc(spatial: spatial, temporal: temporal, sizes: sizes)
            s.descriptorChainFrames = Array(repeating: nil, count: spatial)
        }
        guard let structure = s.descriptorStructure else { return nil }
        let tid = Int(frame.temporalID ?? 0)
        var out = FrameDescriptor(id: id, frames: [])
        for l in 0..<spatial {
            let number = s.descriptorFrame
            s.descriptorFrame &+= 1
            let index = FrameDependencyStructure.template(
                spatial: l, temporalLayers: temporal, keyPicture: frame.isKeyFrame, temporalID: tid,
                references: frame.referenceDistances.count)
            let t = structure.templates[index]
            var d = DependencyDescriptor(
                startOfFrame: true, endOfFrame: true, templateID: structure.templateIDOffset + index, frameNumber: number)
            // The frame's references: the picture's (in pictures, each `spatial` frames), or on a
            // key picture the layer below.
            let fdiffs = frame.isKeyFrame ? (l == 0 ? [] : [1]) : frame.referenceDistances.map { Int($0) * spatial }
            // Each chain's previous frame; a key picture restarts them (its lowest frame's diffs are 0).
            let chains =
                frame.isKeyFrame && l == 0
                ? [Int](repeating: 0, count: spatial) : s.descriptorChainFrames.map { $0.map { Int(number &- $0) } ?? 0 }
            // On a key picture the layer's frame joins its chain and those above; a T0 frame its own.
            for c in 0..<spatial where frame.isKeyFrame ? c >= l : (tid == 0 && c == l) { s.descriptorChainFrames[c] = number }
            if fdiffs != t.frameDiffs { d.customFrameDiffs = fdiffs }
            if chains != t.chainDiffs { d.customChainDiffs = chains }
            var tail: [UInt8] = d.customFrameDiffs != nil || d.customChainDiffs != nil ? Array(d.bytes().dropFirst(3)) : []
            var first = tail
            if frame.isKeyFrame && l == 0 {
                d.structure = structure
                first = Array(d.bytes().dropFirst(3))
                tail = []
            }
            out.frames.append(.init(templateID: d.templateID, frameNumber: number, firstTail: first, tail: tail))
        }
        return out
    }

    /// Writes a frame's packets into arena slots (RTP header, then `payload` writes the codec's
    /// payload and returns whether it was the frame's last) and queues them in the pacer once the
    /// frame is whole. `count` is the number of packets when the packetizer knows it beforehand;
    /// nil when the last packet says so itself (AV1's, laid out once as it writes): its marker
    /// bit and its Dependency Descriptor's end-of-frame flag are then set after its payload.
    /// False when the slots do not suffice (the frame is skipped and counted, nothing of it sent).
    func packetize(
        _ frame: EncodedVideoFrame, stream idx: Int, sender s: inout RTPStreamSender, count: Int?, descriptor: FrameDescriptor? = nil,
        _ payload: (inout ByteWriter) throws(RTPWriteError) -> Bool
    ) throws(RTPWriteError) -> Bool {
        // Without a count, the fewest packets the frame can take must at least be free.
        guard arena.available >= count ?? (frame.bytes.count / config.maxPacketSize + 1) else { return skipFrame(sender: &s) }
        var headerSize = s.template.size
        var layerFrame = 0, layerStart = 0
        let ts = s.rtpTimestamp(captureMicros: frame.captureMicros)
        let firstSequence = s.sequenceNumber
        var written = 0
        while written < count ?? Int.max {
            guard let slot = arena.allocate() else {
                giveBack(written, sender: &s, sequence: firstSequence)
                return skipFrame(sender: &s)
            }
            let i = written
            frameSlots[written] = Int32(slot)
            written += 1
            let knownLast = count.map { i + 1 == $0 } ?? false
            var w = ByteWriter(UnsafeMutableRawBufferPointer(start: arena.pointer(slot), count: config.maxPacketSize))
            var endOfFrameAt: Int? = nil
            let last: Bool
            do throws(RTPWriteError) {
                try s.template.write(to: &w, sequenceNumber: s.sequenceNumber, timestamp: ts, marker: knownLast)
                if let d = descriptor {
                    // Which layer frame the packet belongs to (each is `packets` long, in turn).
                    while layerFrame + 1 < d.frames.count && i >= layerStart + d.frames[layerFrame].packets {
                        layerStart += d.frames[layerFrame].packets
                        layerFrame += 1
                    }
                    let f = d.frames[layerFrame]
                    let first = i == layerStart, end = i + 1 == layerStart + f.packets || knownLast
                    // The three mandatory bytes (start/end of frame, template, frame number), then
                    // the structure (a key picture's first packet) or the frame's custom fields.
                    let head: InlineArray<3, UInt8> = [
                        (first ? 0x80 : 0) | (end ? 0x40 : 0) | UInt8(f.templateID & 63), UInt8(f.frameNumber >> 8),
                        UInt8(f.frameNumber & 0xFF)
                    ]
                    let at = w.count
                    try s.template.appendElement(
                        id: d.id, head: head.span, tail: (first ? f.firstTail : f.tail).span, to: &w, headerStart: 0)
                    // The two-byte element's ID and length, then the head (RFC 8285 §4.3).
                    if w.count > at { endOfFrameAt = at + 2 }
                }
                headerSize = w.count
                let said = try payload(&w)
                last = count == nil ? said : knownLast
            } catch {
                giveBack(written, sender: &s, sequence: firstSequence)
                throw error
            }
            if last && !knownLast {
                // RFC 3550 §5.1: the marker in the second byte's top bit; the descriptor's
                // end_of_frame (the AOM RTP format, Appendix A.8.1) in its first byte.
                w.setBits(at: 1, 0x80)
                if let at = endOfFrameAt { w.setBits(at: at, 0x40) }
            }
            arena.lengths[slot] = Int32(w.count)
            slots[slot] = SlotInfo(
                stream: Int16(idx), payload: Int32(w.count - headerSize), sequence: s.sequenceNumber, timestamp: ts, marker: last)
            s.sequenceNumber &+= 1
            if last { break }
        }
        for k in 0..<written { pacer.enqueue(frameSlots[k], size: Int(arena.lengths[Int(frameSlots[k])]), priority: .video) }
        s.lastTimestamp = ts
        s.lastCaptureMicros = frame.captureMicros
        return true
    }

    /// The pacer holds every slot (a link far slower than the media): the frame is skipped.
    private func skipFrame(sender s: inout RTPStreamSender) -> Bool {
        counters.framesDroppedNoSlot += 1
        // The picture ID moves on: the receiver sees the gap (VP8) and a VP9 frame's P_DIFFs,
        // counted in pictures, still point at the frames they mean.
        s.pictureID = (s.pictureID &+ 1) & 0x7FFF
        return false
    }

    /// Gives back the slots of a frame's first `written` packets (none of them queued yet) and
    /// its sequence numbers.
    private func giveBack(_ written: Int, sender s: inout RTPStreamSender, sequence: UInt16) {
        for k in 0..<written { arena.release(Int(frameSlots[k])) }
        s.sequenceNumber = sequence
    }
}
