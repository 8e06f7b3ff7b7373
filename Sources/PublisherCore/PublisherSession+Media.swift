import RTPCore
public import MediaCodecs
import Stats
import Net
import SRTP
import Congestion

/// Audio packets, the pacer's releases, padding for probes, retransmissions, and each packet's
/// send (history, header extensions, SRTP) into the outbox.
extension PublisherSession {
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
}
