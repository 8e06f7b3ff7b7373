import RTPCore
import Stats
public import Net
import SRTP
import Congestion

extension PublisherSession {
    func sendReports(bye: Bool) {
        let mono = nowMicros
        let ntp = NTPTime.ntp(unixMicros: wallMicros)
        // One compound per RTCP destination: SR for each stream, SDES with every CNAME, BYE at the end.
        var groups: [(SocketAddress, [Int])] = []
        for (i, s) in senders.enumerated() {
            let d = connectedRemote ?? s.plan.rtcpDestination
            if let g = groups.firstIndex(where: { $0.0 == d }) { groups[g].1.append(i) } else { groups.append((d, [i])) }
        }
        for (dest, members) in groups {
            guard let slot = arena.allocate() else { counters.lastError = "rtcp: no packet slot"; continue }
            let p = arena.pointer(slot)
            var w = ByteWriter(UnsafeMutableRawBufferPointer(start: p, count: PacketArena.slotSize - SRTPSession.maxTrailer))
            do throws(RTPWriteError) {
                for i in members {
                    let s = senders[i]
                    let sr = SenderReport(
                        ssrc: s.plan.ssrc, ntpTime: ntp, rtpTimestamp: s.rtpTimestamp(captureMicros: mono),
                        packetCount: UInt32(truncatingIfNeeded: s.stats.packetsSent),
                        octetCount: UInt32(truncatingIfNeeded: s.stats.payloadBytesSent))
                    try sr.write(to: &w)
                }
                try SourceDescription(chunks: members.map { .init(ssrc: senders[$0].plan.ssrc, cname: config.cname) }).write(to: &w)
                if config.senderStats && dest == groups[0].0 && !bye {
                    // The sender-side stats track: this transport's figures, in-band, once per report.
                    let sst = SenderSideStats(
                        connectionMaxAllocatedBitrate: UInt32(clamping: allocator.totalMax),
                        connectionEstimatedBandwidth: UInt32(clamping: counters.estimate?.bitrate ?? allocator.totalTarget),
                        networkCondition: UInt8(counters.networkCondition.value),
                        networkConditionReason: UInt8(
                            ["none", "unknown", "bandwidth", "packetLoss"].firstIndex(of: counters.networkConditionReason.rawValue) ?? 1))
                    try sst.packet(ssrc: senders[members[0]].plan.ssrc).write(to: &w)
                    counters.senderStatsSent += 1
                }
                if bye { try Goodbye(ssrcs: members.map { senders[$0].plan.ssrc }, reason: "pubbot done").write(to: &w) }
            } catch {
                arena.release(slot)
                counters.lastError = "rtcp: \(error)"
                continue
            }
            do {
                let length = try srtpOut.protectRTCP(p, length: w.count, capacity: PacketArena.slotSize)
                enqueueOut(slot, length: length, to: dest, control: true)
            } catch {
                arena.release(slot)
                counters.lastError = "srtp_protect_rtcp: \(error)"
                continue
            }
            counters.rtcpSent += 1
        }
    }

    func senderIndex(ssrc: UInt32) -> Int? { senders.firstIndex { $0.plan.ssrc == ssrc } }

    func handle(_ packet: RTCPPacket, arrivalCompactNTP: UInt32) {
        switch packet {
        case let .receiverReport(rr): handleReports(rr.reports, arrival: arrivalCompactNTP)
        case let .senderReport(sr): handleReports(sr.reports, arrival: arrivalCompactNTP)
        case let .transportFeedback(fb):
            counters.transportFeedbackReceived += 1
            if let e = estimator?.onTransportFeedback(fb, now: nowMicros) { apply(e, now: nowMicros) }
        case let .remb(r):
            // Only when REMB is what the answer negotiated: with transport-cc the send side decides.
            if estimator?.feedback == .remb, let e = estimator?.onReceiverEstimate(Int(clamping: r.bitrate), now: nowMicros) {
                apply(e, now: nowMicros)
            }
            counters.rembReceived += 1
        case let .nack(n):
            retransmit(n, now: nowMicros)
        case let .pictureLossIndication(pli):
            if let i = senderIndex(ssrc: pli.mediaSSRC) { senders[i].stats.pliReceived += 1; requestKeyFrame(i) }
        case let .fullIntraRequest(fir):
            for e in fir.entries { if let i = senderIndex(ssrc: e.ssrc) { senders[i].stats.firReceived += 1; requestKeyFrame(i) } }
        default: break
        }
    }

    /// RTT = A − LSR − DLSR in 1/65536 s (RFC 3550 §6.4.1); blocks without an SR (LSR 0) are skipped.
    func handleReports(_ blocks: [ReportBlock], arrival: UInt32) {
        for b in blocks {
            guard let i = senderIndex(ssrc: b.ssrc) else { continue }
            senders[i].stats.fractionLost = Double(b.fractionLost) / 256
            if let f = estimator?.feedback, f != .transportCC {
                // Loss since this stream's last report (RFC 3550 §6.4.1: expected from the
                // extended highest sequence numbers, lost from the cumulative counts).
                if let (seq, lost) = senders[i].lastReport {
                    let expected = Int(Int32(bitPattern: b.extendedHighestSequence &- seq)), lostNow = Int(b.cumulativeLost &- lost)
                    if expected > 0, let e = estimator?.onReportedLoss(lost: max(0, min(lostNow, expected)), of: expected, now: nowMicros) {
                        apply(e, now: nowMicros)
                    }
                }
                senders[i].lastReport = (b.extendedHighestSequence, b.cumulativeLost)
            }
            senders[i].stats.packetsLostReported = Int(b.cumulativeLost)
            senders[i].stats.remoteJitterSeconds = Double(b.jitter) / Double(senders[i].plan.clockRate)
            if b.lastSenderReport != 0 {
                let rtt = Int64(Int32(bitPattern: arrival &- b.lastSenderReport &- b.delaySinceLastSenderReport))
                if rtt >= 0 {
                    senders[i].stats.roundTripTimeMillis = Double(rtt) * 1000 / 65_536
                    estimator?.onRoundTripTime(rtt * 1_000_000 / 65_536)
                }
            }
        }
    }

    /// The shortest time between two key frames asked of a layer: libwebrtc's
    /// `kMinKeyframeSendIntervalMs` (video/encoder_rtcp_feedback.cc), so a server's repeated
    /// requests while one key frame is on its way do not multiply key frames.
    static let minKeyFrameIntervalMicros: Int64 = 300_000

    /// Key frames on PLI/FIR, at most one per layer per `minKeyFrameIntervalMicros`. A request
    /// inside the interval is not dropped (libwebrtc drops it) but answered when the interval
    /// ends: a server that asks once per new subscriber (pion's fan-out) would otherwise leave
    /// that subscriber waiting for the next periodic key frame, and one that asks with every
    /// packet until a key frame comes (Janus 1.1.2's VideoRoom for a subscriber that has none
    /// yet) keeps asking for the whole wait.
    func requestKeyFrame(_ senderIndex: Int) {
        guard senders[senderIndex].plan.layer != nil else { return }
        if nowMicros - senders[senderIndex].lastKeyFrameRequestMicros < Self.minKeyFrameIntervalMicros {
            senders[senderIndex].keyFrameRequestDeferred = true
            return
        }
        issueKeyFrameRequest(senderIndex)
    }

    func issueKeyFrameRequest(_ senderIndex: Int) {
        guard var layer = senders[senderIndex].plan.layer else { return }
        // Single encoding: the layer on the wire, or the one about to be (its key frame starts it).
        if config.singleEncoding { layer = singleWanted }
        senders[senderIndex].lastKeyFrameRequestMicros = nowMicros
        senders[senderIndex].keyFrameRequestDeferred = false
        events.append(.keyFrameRequest(layer: layer))
    }

    /// Issues the deferred requests whose interval has ended; returns when the next one is due.
    func issueDeferredKeyFrameRequests() -> Int64? {
        var next: Int64?
        for i in senders.indices where senders[i].keyFrameRequestDeferred {
            let due = senders[i].lastKeyFrameRequestMicros + Self.minKeyFrameIntervalMicros
            if nowMicros >= due { issueKeyFrameRequest(i) } else { next = min(next ?? due, due) }
        }
        return next
    }

    /// One datagram from the network, arrived at `now`, in a buffer the session may decrypt in
    /// place (`length` bytes; anything over `PacketBatch.maxPacketSize` was truncated), from
    /// `from` (needed with WebRTC: ICE answers to where a check came from). SRTCP from the
    /// receiver, and with WebRTC STUN and DTLS; anything else is counted and dropped.
    public func handleDatagram(
        _ p: UnsafeMutableRawPointer, length len: Int, from: SocketAddress? = nil, to: SocketAddress? = nil, now: Int64
    ) {
        nowMicros = now
        guard len <= PacketBatch.maxPacketSize, len > 0 else { counters.rtcpRejected += 1; return }
        if webrtc != nil {
            let first = p.load(as: UInt8.self)
            // RFC 7983: STUN 0–3, DTLS 20–63 and TURN ChannelData 64–79 belong to the transport.
            if first <= 3 || (20...79).contains(first) { handleTransportDatagram(p, length: len, from: from, to: to, now: now); return }
            // SRTCP only from the selected remote, and only once there are keys for it.
            guard mediaStarted, from == nil || from == connectedRemote else { counters.rtcpRejected += 1; return }
        }
        handleSRTCP(p, length: len, now: now)
    }

    /// SRTCP from the receiver (directly, or relayed by TURN and unwrapped by the transport).
    func handleSRTCP(_ p: UnsafeMutableRawPointer, length len: Int, now: Int64) {
        let kind = RTPDemux.classify(Span(_unsafeStart: p.assumingMemoryBound(to: UInt8.self), count: min(len, 2)))
        guard kind == .rtcp else { counters.rtcpRejected += 1; return }
        do {
            let plain = try srtpIn.unprotectRTCP(p, length: len)
            let span = Span(_unsafeStart: p.assumingMemoryBound(to: UInt8.self), count: plain)
            var it = RTCPCompoundIterator()
            let arrival = NTPTime.compact(NTPTime.ntp(unixMicros: wallMicros))
            let feedbackBefore = counters.transportFeedbackReceived
            while let packet = try it.next(in: span) { handle(packet, arrivalCompactNTP: arrival) }
            counters.rtcpReceived += 1
            // Feedback is back after ≥ 2 s of silence — all RTCP (the receiver was gone), or the
            // transport-cc feedback that only comes while packets arrive (the uplink was cut and
            // the receiver's reports went on): the loss the window remembers was the outage, not
            // the path answering now.
            if lastRTCPMicros > 0 && now - lastRTCPMicros >= 2_000_000 { scorer.forgetLoss() }
            lastRTCPMicros = now
            if counters.transportFeedbackReceived > feedbackBefore {
                if lastTransportFeedbackMicros > 0 && now - lastTransportFeedbackMicros >= 2_000_000 { scorer.forgetLoss() }
                lastTransportFeedbackMicros = now
            }
        } catch {
            counters.rtcpRejected += 1
        }
    }

    /// A receive error the driver saw on the socket (ICMP port unreachable arrives this way).
    public func handleSocketError(_ error: SocketError) { record(error) }
}
