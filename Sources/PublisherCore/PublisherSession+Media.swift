import RTPCore
public import MediaCodecs
import Stats
public import Net
import SRTP
import Congestion

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

    public func sendAudio(_ frame: EncodedAudioFrame) {
        guard mediaStarted else { counters.framesBeforeConnected += 1; return }
        guard let idx = audioIndex, let slot = arena.allocate() else { return }
        sendAudio(frame, stream: idx, slot: slot, sender: &senders[idx])
    }

    /// One audio packet into `slot`, the sender changed in place (see `sendVideo`).
    private func sendAudio(_ frame: EncodedAudioFrame, stream idx: Int, slot: Int, sender s: inout RTPStreamSender) {
        let ts = s.timestampBase &+ frame.frameNumber &* 960
        var w = ByteWriter(UnsafeMutableRawBufferPointer(start: arena.pointer(slot), count: config.maxPacketSize))
        do throws(RTPWriteError) {
            try s.template.write(to: &w, sequenceNumber: s.sequenceNumber, timestamp: ts, marker: !s.sentAny)
            try OpusPayload.write(frame.bytes.span, into: &w)
        } catch {
            arena.release(slot)
            counters.lastError = "audio packet: \(error)"
            return
        }
        arena.lengths[slot] = Int32(w.count)
        slots[slot] = SlotInfo(stream: Int16(idx), payload: Int32(w.count - s.template.size))
        pacer.enqueue(Int32(slot), size: w.count, priority: .audio)
        s.stats.framesSent += 1
        s.sequenceNumber &+= 1
        s.lastTimestamp = ts
        s.lastCaptureMicros = frame.captureMicros
        s.sentAny = true
    }

    /// Sends what the pacer releases now; returns when it wants to be asked again.
    func pump(now: Int64) -> Int64? {
        while true {
            switch pacer.next(now: now) {
            case let .send(slot, cluster):
                if counters.firstMediaMicros == nil { counters.firstMediaMicros = now }
                transmit(Int(slot), probeCluster: cluster, now: now)
            case let .pad(bytes, cluster):
                if let slot = makePadding(bytes) { transmit(slot, probeCluster: cluster, now: now) }
            case let .wait(until):
                return until
            case .idle:
                return nil
            }
        }
    }

    /// A padding-only RTP packet (P bit, RFC 3550 §5.1) for probes, on the RTX stream of the
    /// highest running video layer (as libwebrtc does), or on the layer itself without RTX.
    func makePadding(_ bytes: Int) -> Int? {
        guard let idx = videoIndex.last(where: { senders[$0].sentAny }), let slot = arena.allocate() else { return nil }
        return makePadding(bytes, stream: idx, slot: slot, sender: &senders[idx])
    }

    /// The padding packet into `slot`, the sender changed in place (see `sendVideo`).
    private func makePadding(_ bytes: Int, stream idx: Int, slot: Int, sender s: inout RTPStreamSender) -> Int? {
        let pad = min(255, max(1, bytes))
        let onRTX = s.rtxTemplate != nil
        var w = ByteWriter(UnsafeMutableRawBufferPointer(start: arena.pointer(slot), count: config.maxPacketSize))
        do throws(RTPWriteError) {
            if let rtx = s.rtxTemplate {
                try rtx.write(to: &w, sequenceNumber: s.rtxSequence, timestamp: s.lastTimestamp, marker: false)
            } else {
                try s.template.write(to: &w, sequenceNumber: s.sequenceNumber, timestamp: s.lastTimestamp, marker: false)
            }
            try w.require(pad)
        } catch {
            arena.release(slot)
            return nil
        }
        let p = arena.pointer(slot)
        p.storeBytes(of: p.load(as: UInt8.self) | 0x20, as: UInt8.self) // P bit
        w.zeros(pad - 1)
        w.u8(UInt8(pad))
        arena.lengths[slot] = Int32(w.count)
        slots[slot] = SlotInfo(stream: Int16(idx), payload: 0, padding: true, rtx: onRTX)
        if onRTX { s.rtxSequence &+= 1 } else { s.sequenceNumber &+= 1 }
        return slot
    }

    /// Answers a NACK: each lost packet still in the history goes out again as RTX (RFC 4588 §4:
    /// OSN, then the original payload), ahead of new video in the pacer.
    func retransmit(_ nack: GenericNACK, now: Int64) {
        guard let idx = senderIndex(ssrc: nack.mediaSSRC), let history = senders[idx].history, let rtx = senders[idx].rtxTemplate else {
            return
        }
        senders[idx].stats.nackReceived += 1
        counters.nackReceived += 1
        let rtt = Int64((senders[idx].stats.roundTripTimeMillis ?? 20) * 1000)
        // Retransmissions may use at most 30 % of the estimate per second (libwebrtc limits them
        // too): on a saturated link, resending everything would only deepen the loss.
        if now - rtxWindowStart >= 1_000_000 { rtxWindowStart = now; rtxWindowBytes = 0 }
        let budget = Int(0.3 * Double(counters.estimate?.bitrate ?? allocator.totalTarget) / 8)
        for seq in nack.lost.prefix(256) {
            guard rtxWindowBytes < budget else { counters.retransmissionsUnavailable += 1; continue }
            guard let original = history.take(sequenceNumber: seq, now: now, maxAge: 1_000_000, minInterval: max(10_000, rtt)),
                let slot = arena.allocate()
            else {
                counters.retransmissionsUnavailable += 1
                continue
            }
            var w = ByteWriter(
                UnsafeMutableRawBufferPointer(start: arena.pointer(slot), count: PacketArena.slotSize - SRTPSession.maxTrailer))
            do throws(RTPWriteError) {
                try rtx.write(to: &w, sequenceNumber: senders[idx].rtxSequence, timestamp: original.timestamp, marker: original.marker)
                // Elements appended to the original's header (its Dependency Descriptor) go along.
                let base = senders[idx].template.size
                if original.header.count > base {
                    try rtx.appendRaw(UnsafeRawBufferPointer(rebasing: original.header[base...]), to: &w, headerStart: 0)
                }
                try w.require(2 + original.payload.count)
            } catch {
                arena.release(slot)
                continue
            }
            w.u16(seq)
            w.copy(original.payload)
            arena.lengths[slot] = Int32(w.count)
            slots[slot] = SlotInfo(stream: Int16(idx), payload: Int32(2 + original.payload.count), rtx: true)
            senders[idx].rtxSequence &+= 1
            rtxWindowBytes += w.count
            pacer.enqueue(Int32(slot), size: w.count, priority: .retransmission)
        }
    }

    /// Stamps send-time fields, protects in place and adds the slot to the outgoing batch.
    func transmit(_ slot: Int, probeCluster: Int?, now: Int64) {
        let info = slots[slot]
        let idx = Int(info.stream)
        let p = arena.pointer(slot)
        let length = Int(arena.lengths[slot])
        let isRTX = info.rtx
        // The offsets only, read in place: a copy of the template retained its bytes per packet.
        let transportSequenceOffset: Int?, absSendTimeOffset: Int?
        if isRTX {
            transportSequenceOffset = senders[idx].rtxTemplate?.transportSequenceOffset
            absSendTimeOffset = senders[idx].rtxTemplate?.absSendTimeOffset
        } else {
            transportSequenceOffset = senders[idx].template.transportSequenceOffset
            absSendTimeOffset = senders[idx].template.absSendTimeOffset
            if !info.padding, let history = senders[idx].history {
                history.store(
                    sequenceNumber: info.sequence, packet: p, headerSize: length - Int(info.payload), length: length,
                    timestamp: info.timestamp, marker: info.marker, now: now)
            }
        }
        if let o = transportSequenceOffset {
            RTPHeaderPatch.setTransportSequence(p, offset: o, transportSequence)
        }
        if let o = absSendTimeOffset {
            RTPHeaderPatch.setAbsSendTime(p, offset: o, NTPTime.absSendTime(NTPTime.ntp(unixMicros: wallMicros)))
        }
        var sent = length
        if protectionEnabled {
            do { sent = try srtpOut.protectRTP(p, length: length, capacity: PacketArena.slotSize) } catch {
                counters.lastError = "srtp_protect: \(error)"
                counters.sendErrors += 1
                arena.release(slot)
                return
            }
        }
        if transportSequenceOffset != nil {
            // Sizes as the path sees them: SRTP packet + UDP/IP headers (28 bytes), like libwebrtc's
            // transport overhead, so the estimate is comparable to a link's rate.
            estimator?.onPacketSent(transportSequence: transportSequence, sendMicros: now, size: sent + 28, probeCluster: probeCluster)
            transportSequence &+= 1
        }
        let payload = Int(info.payload)
        if isRTX && !info.padding {
            senders[idx].stats.countRetransmission(payload: payload)
            counters.retransmissionsSent += 1
        } else if !isRTX {
            senders[idx].stats.countSent(payload: payload, header: length - payload)
        }
        if info.padding { counters.paddingPacketsSent += 1 }
        enqueueOut(slot, length: sent, to: connectedRemote ?? senders[idx].plan.destination)
    }

    /// Puts a protected datagram in the outbox (the arena has a slot for each, so it has room).
    /// Control datagrams (`control`: RTCP, STUN, DTLS) go behind the control already waiting but
    /// ahead of media the socket deferred: a sender report that waited behind a backlog would
    /// carry that wait into every RTT computed from it (RFC 3550 §6.4.1 times the report from
    /// its NTP stamp, taken here).
    func enqueueOut(_ slot: Int, length: Int, to destination: SocketAddress, from source: SocketAddress? = nil, control: Bool = false) {
        var length = length, destination = destination
        if relayServer != nil && destination == connectedRemote {
            guard let (l, d) = wrapForRelay(slot, length: length) else { arena.release(slot); counters.sendErrors += 1; return }
            (length, destination) = (l, d)
        }
        var at = outCount
        if control && outControlCount < outCount {
            at = outControlCount
            for k in stride(from: outCount, to: at, by: -1) {
                outSlots[k] = outSlots[k - 1]
                outPointers[k] = outPointers[k - 1]
                outLengths[k] = outLengths[k - 1]
                outDestinations[k] = outDestinations[k - 1]
                if namesSources { outSources[k] = outSources[k - 1] }
            }
        }
        if control { outControlCount += 1 }
        outSlots[at] = slot
        outPointers[at] = arena.pointer(slot)
        outLengths[at] = UInt32(length)
        outDestinations[at] = destination
        if namesSources { outSources[at] = source ?? mediaSource }
        outCount += 1
    }

    /// Hands the outbox to `send` in order, in runs of up to 64 datagrams for one destination;
    /// `send` returns how many of a run went out or throws (counted by cause; that run is
    /// dropped). A full socket buffer (fewer sent, EAGAIN or ENOBUFS from a full qdisc) is
    /// back-pressure, not loss: what did not go stays in the outbox, in order, for the next call —
    /// never dropped by the session, never sent twice — and is counted as deferred. The slots
    /// of what went are free again afterwards. The driver owns the socket: this is the
    /// session's only way out.
    public func pollTransmit(
        _ send: (UnsafePointer<UnsafeMutableRawPointer?>, UnsafePointer<UInt32>, Int, SocketAddress) throws(SocketError) -> Int
    ) {
        pollTransmit { p, l, n, to, _ throws(SocketError) in try send(p, l, n, to) }
    }

    /// `pollTransmit`, runs also split by source: `send` gets the source each run leaves from
    /// (nil: the socket's own address, when the session does not name sources).
    public func pollTransmit(
        _ send: (UnsafePointer<UnsafeMutableRawPointer?>, UnsafePointer<UInt32>, Int, SocketAddress, SocketAddress?) throws(SocketError)
            -> Int
    ) {
        var i = 0
        var blocked = false
        while i < outCount {
            let destination = outDestinations[i]
            let source = namesSources ? outSources[i] : nil
            var n = 1
            while i + n < outCount && n < 64 && outDestinations[i + n] == destination && (!namesSources || outSources[i + n] == source) {
                n += 1
            }
            do {
                let sent = try send(outPointers + i, outLengths + i, n, destination, source)
                if sent < n {
                    i += max(0, sent)
                    blocked = true
                    break
                }
            } catch {
                record(error)
            }
            i += n
        }
        for k in 0..<i { arena.release(outSlots[k]) }
        let left = outCount - i
        if left > 0 {
            // Keep the rest, in order, at the front of the outbox.
            for k in 0..<left {
                outSlots[k] = outSlots[i + k]
                outPointers[k] = outPointers[i + k]
                outLengths[k] = outLengths[i + k]
                outDestinations[k] = outDestinations[i + k]
                if namesSources { outSources[k] = outSources[i + k] }
            }
            counters.sendDeferred += left
            if blocked { counters.sendBlocked += 1 }
        }
        outCount = left
        outControlCount = max(0, outControlCount - i)
    }

    /// Datagrams wait in the outbox for the socket (it refused them last time).
    public var hasDeferredTransmit: Bool { outCount > 0 }

    func record(_ error: SocketError) {
        if error.isConnectionRefused { counters.portUnreachable += 1 } else { counters.sendErrors += 1 }
        counters.lastError = error.description
    }
}
