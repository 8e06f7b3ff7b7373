public import Net
import SRTP
import Stats
import RTPCore
import Congestion
import ICE

/// The router's feedback to each publisher: transport-cc, NACK and the frame-release tick, PLI,
/// receiver reports and REMB, due on each publisher's own timers (a `DeadlineHeap` of them),
/// written as SRTCP compounds into the outbox `pollTransmit` empties.
extension ReceiverSession {

    /// Receiver reports + SDES about once a second, and a PLI (throttled) for every stream that
    /// lost its reference chain.
    /// Only a publisher whose timer is due (or whose stream just asked for a key frame) is
    /// looked at: a receiver of 500 publishers steps after every read, and walking each one's
    /// streams every time was a third of its CPU. Returns the earliest timer of them all.
    func sendFeedback(now: Int64) -> Int64 {
        guard config.deadlineSteps else {
            for peer in peers where !peer.order.isEmpty { sendFeedback(peer, now: now) }
            return now + 10_000
        }
        // Stepping on deadlines, only the publishers whose feedback is due are looked at: a
        // min-heap of their next feedback times, plus those with a key frame to ask for (a
        // receive step is taken for every batch of datagrams; with 500 publishers, a scan of all
        // of them on each was the receiver's largest single cost, 5.7 % of its CPU by perf).
        for peer in feedbackDue where peer.feedbackPending { feedback(peer, now: now) }
        feedbackDue.removeAll(keepingCapacity: true)
        while let (at, index) = feedbackHeap.peek(), at <= now {
            feedbackHeap.pop()
            let peer = peers[index]
            // An entry the publisher's feedback has moved past since it was pushed: stale.
            guard at == peer.nextFeedback else { continue }
            feedback(peer, now: now)
        }
        return feedbackHeap.peek()?.0 ?? .max
    }

    /// One publisher's feedback looked at now, and its next time pushed.
    private func feedback(_ peer: PeerSession, now: Int64) {
        peer.feedbackPending = false
        sendFeedback(peer, now: now)
        let next = min(peer.nextNack, peer.nextReport, peer.negotiated.transportCC ? peer.nextTransportFeedback : .max)
        if next != peer.nextFeedback || feedbackHeap.items.isEmpty {
            peer.nextFeedback = next
            feedbackHeap.push(next, peer.index)
        }
    }

    func sendFeedback(_ peer: PeerSession, now: Int64) {
        if now >= peer.nextTransportFeedback {
            peer.nextTransportFeedback = now + 100_000
            if peer.negotiated.transportCC { sendTransportFeedback(peer, now: now) }
        }
        if now >= peer.nextNack {
            peer.nextNack = now + 20_000
            sendNacks(peer, now: now)
            // Nothing held and nothing missing in any of its video streams: the tick is parked
            // until an arrival leaves something waiting (`subscriberReceive`). Ticking every
            // publisher 50 times a second regardless was 5 % of a 500-publisher receiver (perf).
            if peer.videoStreams.allSatisfy({ $0.assembler.isEmpty && $0.nack.isEmpty }) { peer.nextNack = .max }
        }
        if let bps = peer.remoteEstimator?.remb(now: now) {
            let ssrc = self.ssrc, media = peer.order // the media streams (RTX makes none)
            if sendRTCP(
                to: peer,
                { w throws(RTPWriteError) in
                    try compoundHeader(peer, now: now, &w)
                    try ReceiverEstimatedMaxBitrate(senderSSRC: ssrc, bitrate: UInt64(bps), ssrcs: Array(media.prefix(255))).write(to: &w)
                })
            {
                snap.rembSent += 1
                snap.rembBitrate = bps
            }
        }
        var plis: [UInt32] = []
        for s in peer.videoStreams where peer.negotiated.pli && s.wantsKeyFrame {
            let id = s.stats.ssrc
            if now - (peer.lastPLI[id] ?? .min / 2) >= 500_000 { plis.append(id); peer.lastPLI[id] = now }
        }
        let reportDue = now >= peer.nextReport
        guard reportDue || !plis.isEmpty else { return }
        // One compound per media kind, each from its own SSRC (as libwebrtc's receive streams
        // report): an SFU finds the medium a compound is about by its first SSRC, and Janus
        // (ice.c) latches a sender SSRC to one medium — video NACK/PLI/RR behind an audio report
        // block, or from the SSRC it took for audio, never reach its video.
        if reportDue { peer.nextReport = now + 500_000 + Int64(random.next() % 1_000_000) } // 1 s ± 50 %
        let video = reportDue || (!plis.isEmpty && !peer.reducedSizeRTCP) ? reportBlocks(peer, .video, now: now) : []
        let audio = reportDue ? reportBlocks(peer, .audio, now: now) : []
        let ssrc = self.ssrc, audioSSRC = self.audioSSRC
        if !video.isEmpty || !plis.isEmpty || (reportDue && audio.isEmpty) {
            let sent = sendRTCP(to: peer) { w throws(RTPWriteError) in
                try ReceiverReport(ssrc: ssrc, reports: video).write(to: &w)
                if reportDue || !peer.reducedSizeRTCP {
                    try SourceDescription(chunks: [.init(ssrc: ssrc, cname: "pubbot-receiver")]).write(to: &w)
                }
                for id in plis { try PictureLossIndication(senderSSRC: ssrc, mediaSSRC: id).write(to: &w) }
            }
            if sent { snap.pliSent += plis.count }
        }
        if !audio.isEmpty && reportDue {
            sendRTCP(to: peer) { w throws(RTPWriteError) in
                try ReceiverReport(ssrc: audioSSRC, reports: audio).write(to: &w)
                try SourceDescription(chunks: [.init(ssrc: audioSSRC, cname: "pubbot-receiver")]).write(to: &w)
            }
        }
    }

    /// Writes one RTCP compound into an outbox slot, protects it and queues it for the publisher.
    @discardableResult
    func sendRTCP(to peer: PeerSession, _ write: (inout ByteWriter) throws(RTPWriteError) -> Void) -> Bool {
        let slot = scratch.slot(0)
        var w = ByteWriter(UnsafeMutableRawBufferPointer(start: slot.baseAddress, count: PacketBatch.maxPacketSize))
        do throws(RTPWriteError) { try write(&w) } catch {
            snap.lastError = "rtcp: \(error)"
            return false
        }
        let n: Int
        do {
            n = try (peer.srtpOut ?? srtpOut).protectRTCP(slot.baseAddress!, length: w.count, capacity: PacketBatch.slotSize)
        } catch {
            snap.lastError = "rtcp protect: \(error)"
            return false
        }
        // Through a TURN relay: to the server, in ChannelData or a Send indication (a permission
        // or channel request first when one is due).
        // On a wildcard socket, from the selected pair's base (RFC 8445 §5.1.1).
        let source = namesSources ? rtcByAddress[peer.address]?.transport.selectedBase.flatMap { SocketAddress($0) } : nil
        if let t = peer.relay, let turn = t.turn, let remote = STUNAddress(peer.address), let server = SocketAddress(turn.server) {
            let bytes = [UInt8](UnsafeRawBufferPointer(start: slot.baseAddress, count: n))
            guard let wrapped = turn.send(bytes, to: remote) else { return false }
            while let x = turn.pollTransmit() {
                outBytes.append(contentsOf: x.bytes)
                outPackets.append((outBytes.count, server, source))
            }
            outBytes.append(contentsOf: wrapped)
            outPackets.append((outBytes.count, server, source))
        } else {
            outBytes.append(contentsOf: UnsafeRawBufferPointer(start: slot.baseAddress, count: n))
            outPackets.append((outBytes.count, peer.address, source))
        }
        snap.rtcpSent += 1
        return true
    }

    /// Hands each queued feedback datagram to `send` (bytes, destination), in order.
    public func pollTransmit(_ send: (UnsafeRawBufferPointer, SocketAddress) throws(SocketError) -> Void) {
        pollTransmit { b, to, _ throws(SocketError) in try send(b, to) }
    }

    /// `pollTransmit` with each datagram's source (nil unless the session names sources).
    public func pollTransmit(_ send: (UnsafeRawBufferPointer, SocketAddress, SocketAddress?) throws(SocketError) -> Void) {
        outBytes.withUnsafeBytes { all in
            var start = 0
            for (end, destination, source) in outPackets {
                defer { start = end }
                do { try send(UnsafeRawBufferPointer(rebasing: all[start..<end]), destination, source) } catch {
                    snap.lastError = "rtcp send: \(error)"
                }
            }
        }
        outBytes.removeAll(keepingCapacity: true)
        outPackets.removeAll(keepingCapacity: true)
    }

    /// transport-cc feedback (RTPFB FMT 15) for everything received since the last one, every
    /// 100 ms, as reduced-size RTCP (RFC 5506).
    func sendTransportFeedback(_ peer: PeerSession, now: Int64) {
        for fb in peer.feedback.makeFeedback() {
            if sendRTCP(
                to: peer,
                { w throws(RTPWriteError) in
                    try compoundHeader(peer, now: now, &w)
                    try fb.write(to: &w)
                })
            {
                snap.transportFeedbackSent += 1
            }
        }
    }

    /// Without reduced-size RTCP a compound starts with a report and carries the CNAME (RFC 3550
    /// §6.1): the video streams' receiver report and SDES in front of the feedback, as libwebrtc's
    /// compound mode sends (an SFU finds the medium a compound is about by its report blocks;
    /// Janus takes a compound without any for audio).
    func compoundHeader(_ peer: PeerSession, now: Int64, _ w: inout ByteWriter) throws(RTPWriteError) {
        guard !peer.reducedSizeRTCP else { return }
        try ReceiverReport(ssrc: ssrc, reports: reportBlocks(peer, .video, now: now)).write(to: &w)
        try SourceDescription(chunks: [.init(ssrc: ssrc, cname: "pubbot-receiver")]).write(to: &w)
    }

    /// Report blocks (RFC 3550 §6.4.1) for the peer's streams of one kind (of its first 31); each
    /// starts a new reporting interval.
    func reportBlocks(_ peer: PeerSession, _ kind: MediaKind, now: Int64) -> [ReportBlock] {
        peer.order.prefix(31).compactMap { id in
            guard let s = streams[id], s.stats.kind == kind else { return nil }
            return s.reportBlock(nowMicros: now)
        }
    }

    /// Generic NACKs (RFC 4585) for the gaps each video stream is still waiting for.
    func sendNacks(_ peer: PeerSession, now: Int64) {
        var nacks: [GenericNACK] = []
        let ssrc = self.ssrc
        for s in peer.videoStreams {
            // Nothing held for a missing packet and nothing missing: this tick has nothing to
            // release or ask for (an arrival releases its own frames). Every video stream of
            // every publisher 50 times a second was as many calls as packets at 500 publishers.
            guard !s.assembler.isEmpty || !s.nack.isEmpty else { continue }
            s.releaseFrames(nowMicros: now, wallMicros: now + wallOffsetMicros)
            let lost = s.nack.due(now: now)
            if !lost.isEmpty { nacks.append(GenericNACK(senderSSRC: ssrc, mediaSSRC: s.stats.ssrc, lost: lost)) }
        }
        guard !nacks.isEmpty, peer.negotiated.nack else { return }
        if sendRTCP(
            to: peer,
            { w throws(RTPWriteError) in
                try compoundHeader(peer, now: now, &w)
                for n in nacks { try n.write(to: &w) }
            })
        {
            snap.nackSent += nacks.count
        }
    }
}
