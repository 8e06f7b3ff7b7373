import RTPCore
import MediaCodecs
import Stats
import Transport
import Congestion

extension NetworkLoop {
    /// Packetizes one frame into arena slots and queues them in the pacer.
    func sendVideo(_ frame: EncodedVideoFrame) {
        guard frame.layer < videoIndex.count else { return }
        let idx = videoIndex[frame.layer]
        var s = senders[idx]
        defer { senders[idx] = s }
        var d = VP8PayloadDescriptor(pictureID: s.pictureID)
        if let tid = frame.temporalID {
            if tid == 0 { s.tl0PicIdx &+= 1 }
            d.tl0PicIdx = s.tl0PicIdx
            d.temporalID = tid
            d.layerSync = frame.layerSync
            d.nonReference = tid > 0 && frame.temporalID == UInt8(config.layers[frame.layer].temporalLayers - 1)
        }
        let headerSize = s.template.size
        do throws(RTPWriteError) {
            var packetizer = try VP8Packetizer(frameSize: frame.bytes.count, maxPayloadSize: config.maxPacketSize - headerSize, descriptor: d)
            guard arena.available >= packetizer.packetCount else {
                // The pacer holds every slot (a link far slower than the media): skip this frame.
                counters.framesDroppedNoSlot += 1
                return
            }
            let ts = s.rtpTimestamp(captureMicros: frame.captureMicros)
            let span = frame.bytes.span
            while packetizer.index < packetizer.packetCount {
                let slot = arena.allocate()!
                var w = ByteWriter(UnsafeMutableRawBufferPointer(start: arena.pointer(slot), count: config.maxPacketSize))
                try s.template.write(to: &w, sequenceNumber: s.sequenceNumber, timestamp: ts, marker: packetizer.index + 1 == packetizer.packetCount)
                _ = try packetizer.next(frame: span, into: &w)
                arena.lengths[slot] = Int32(w.count)
                slotStream[slot] = Int16(idx)
                slotPayload[slot] = Int32(w.count - headerSize)
                slotPadding[slot] = false
                s.sequenceNumber &+= 1
                pacer.enqueue(Int32(slot), size: w.count, priority: .video)
            }
            s.lastTimestamp = ts
            s.lastCaptureMicros = frame.captureMicros
        } catch {
            counters.lastError = "packetize: \(error)"
            return
        }
        s.pictureID = (s.pictureID &+ 1) & 0x7FFF
        s.stats.framesSent += 1
        if frame.isKeyFrame { s.stats.keyFramesSent += 1 }
        s.sentAny = true
    }

    func sendAudio(_ frame: EncodedAudioFrame) {
        guard let idx = audioIndex, let slot = arena.allocate() else { return }
        var s = senders[idx]
        defer { senders[idx] = s }
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
        slotStream[slot] = Int16(idx)
        slotPayload[slot] = Int32(w.count - s.template.size)
        slotPadding[slot] = false
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
                transmit(Int(slot), probeCluster: cluster, now: now)
            case let .pad(bytes, cluster):
                if let slot = makePadding(bytes) { transmit(slot, probeCluster: cluster, now: now) }
            case let .wait(until):
                flushSend()
                return until
            case .idle:
                flushSend()
                return nil
            }
        }
    }

    /// A padding-only RTP packet (P bit, RFC 3550 §5.1) on the highest video layer that is
    /// running, for probes.
    func makePadding(_ bytes: Int) -> Int? {
        guard let idx = videoIndex.last(where: { senders[$0].sentAny }), let slot = arena.allocate() else { return nil }
        var s = senders[idx]
        defer { senders[idx] = s }
        let pad = min(255, max(1, bytes))
        var w = ByteWriter(UnsafeMutableRawBufferPointer(start: arena.pointer(slot), count: config.maxPacketSize))
        do throws(RTPWriteError) {
            try s.template.write(to: &w, sequenceNumber: s.sequenceNumber, timestamp: s.lastTimestamp, marker: false)
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
        slotStream[slot] = Int16(idx)
        slotPayload[slot] = 0
        slotPadding[slot] = true
        s.sequenceNumber &+= 1
        return slot
    }

    /// Stamps send-time fields, protects in place and adds the slot to the outgoing batch.
    func transmit(_ slot: Int, probeCluster: Int?, now: Int64) {
        let idx = Int(slotStream[slot])
        let p = arena.pointer(slot)
        let length = Int(arena.lengths[slot])
        let template = senders[idx].template
        if let o = template.transportSequenceOffset {
            RTPHeaderPatch.setTransportSequence(p, offset: o, transportSequence)
        }
        if let o = template.absSendTimeOffset {
            RTPHeaderPatch.setAbsSendTime(p, offset: o, NTPTime.absSendTime(NTPTime.ntp(unixMicros: Clock.wallMicros())))
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
        if template.transportSequenceOffset != nil {
            estimator?.onPacketSent(transportSequence: transportSequence, sendMicros: now, size: sent, probeCluster: probeCluster)
            transportSequence &+= 1
        }
        let payload = Int(slotPayload[slot])
        senders[idx].stats.packetsSent += 1
        senders[idx].stats.payloadBytesSent += payload
        senders[idx].stats.headerBytesSent += length - payload
        if slotPadding[slot] { counters.paddingPacketsSent += 1 }
        let destination = senders[idx].plan.destination
        if sendCount > 0 && sendDestination != destination { flushSend() }
        sendDestination = destination
        sendPointers[sendCount] = p
        sendLengths[sendCount] = UInt32(sent)
        sendSlots[sendCount] = slot
        sendCount += 1
        if sendCount == sendPointers.count { flushSend() }
    }

    func flushSend() {
        guard sendCount > 0, let destination = sendDestination else { return }
        do {
            let n = try sendPointers.withUnsafeBufferPointer { ptrs in
                try sendLengths.withUnsafeBufferPointer { lens in
                    try socket.send(pointers: ptrs.baseAddress!, lengths: lens.baseAddress!, count: sendCount, to: destination)
                }
            }
            counters.sendBufferDrops += sendCount - n
        } catch let e as SocketError {
            record(e)
        } catch {}
        for i in 0..<sendCount { arena.release(sendSlots[i]) }
        sendCount = 0
    }

    /// Sends datagrams 0..<n of `batch` (RTCP).
    func flush(_ n: Int, to destination: SocketAddress) {
        guard n > 0 else { return }
        do {
            let sent = try socket.send(batch, 0..<n, to: destination)
            counters.sendBufferDrops += n - sent
        } catch {
            record(error)
        }
    }

    func record(_ error: SocketError) {
        if error.errno == 111 { counters.portUnreachable += 1 } else { counters.sendErrors += 1 }
        counters.lastError = error.description
    }
}
