import Synchronization
import RTPCore
import MediaCodecs
import Stats
import Transport

/// Counters the network thread publishes.
public struct NetworkCounters: Sendable, Equatable {
    public var rtcpSent = 0
    public var rtcpReceived = 0
    /// Incoming packets that failed SRTCP authentication or parsing.
    public var rtcpRejected = 0
    public var sendErrors = 0
    /// Sends refused because the destination port is closed (ICMP port unreachable).
    public var portUnreachable = 0
    /// Packets not sent because the socket buffer was full.
    public var sendBufferDrops = 0
    public var lastError: String?
    public var byeSent = false
}

/// The network thread: turns encoded frames into SRTP packets (packetize into batch slots,
/// stamp transport-wide seq and abs-send-time, protect in place, `sendmmsg`), sends RTCP sender
/// reports and BYE, and reads incoming RTCP. Owns the socket and SRTP sessions.
final class NetworkLoop {
    let config: PublisherConfig
    let plan: StreamPlan
    let socket: UDPSocket
    let srtpOut: SRTPSession
    let srtpIn: SRTPSession
    let control: PublisherControl
    let mailbox: FrameMailbox
    let published: Locked<([OutboundStreamStats], NetworkCounters)>
    var senders: [RTPStreamSender] = []
    var audioIndex: Int?
    var videoIndex: [Int] = []
    let batch = PacketBatch(capacity: 64)
    let rx = PacketBatch(capacity: 16)
    var transportSequence: UInt16 = 1
    var counters = NetworkCounters()
    var items: [FrameMailbox.Item] = []
    /// Always on in use. Tests turn it off to count the allocations of pubbot's own send path
    /// apart from libsrtp2's (Debian's NSS-backed build allocates inside every protect call).
    var protectionEnabled = true

    init(config: PublisherConfig, plan: StreamPlan, socket: UDPSocket, control: PublisherControl, mailbox: FrameMailbox,
         published: Locked<([OutboundStreamStats], NetworkCounters)>, startMicros: Int64) throws(SRTPError) {
        self.config = config
        self.plan = plan
        self.socket = socket
        self.control = control
        self.mailbox = mailbox
        self.published = published
        srtpOut = try SRTPSession(key: config.key, direction: .outbound)
        srtpIn = try SRTPSession(key: config.key, direction: .inbound)
        for (i, s) in plan.streams.enumerated() {
            senders.append(RTPStreamSender(plan: s, layer: s.layer.map { config.layers[$0] }, startMicros: startMicros, bundle: plan.bundle))
            if s.kind == "audio" { audioIndex = i } else { videoIndex.append(i) }
        }
        items.reserveCapacity(64)
    }

    func run() {
        var nextReport = Clock.monotonicMicros() + 200_000
        var nextPublish = Clock.monotonicMicros()
        while true {
            let stopping = control.stopRequested
            mailbox.drain(into: &items)
            for item in items {
                switch item {
                case let .video(f): sendVideo(f)
                case let .audio(f): sendAudio(f)
                }
            }
            readIncoming()
            let now = Clock.monotonicMicros()
            if now >= nextReport {
                sendReports(bye: false)
                // RFC 3550 §6.3.1: randomize the interval in [0.5, 1.5] × T.
                let jitter = Int64(SecureRandom.uint32() % 1000) - 500
                nextReport = now + config.reportIntervalMicros + config.reportIntervalMicros * jitter / 1000
            }
            if now >= nextPublish { publish(); nextPublish = now + 100_000 }
            if stopping && items.isEmpty { break }
            let timeout = max(0, min(nextReport, nextPublish) - Clock.monotonicMicros())
            let ready = socket.wait(timeoutMicros: stopping ? 0 : timeout, wake: mailbox.signal)
            if ready & 2 != 0 { mailbox.signal.drain() }
        }
        sendReports(bye: true)
        counters.byeSent = true
        publish()
    }

    func publish() {
        let s = senders.map(\.stats), c = counters
        published.withLock { $0 = (s, c) }
    }

    // MARK: media

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
        s.pictureID = (s.pictureID &+ 1) & 0x7FFF
        let ts = s.rtpTimestamp(captureMicros: frame.captureMicros)
        let headerSize = s.template.size
        let absTime = NTPTime.absSendTime(NTPTime.ntp(unixMicros: Clock.wallMicros()))
        do throws(RTPWriteError) {
            var packetizer = try VP8Packetizer(frameSize: frame.bytes.count, maxPayloadSize: config.maxPacketSize - headerSize, descriptor: d)
            let span = frame.bytes.span
            var n = 0
            while packetizer.index < packetizer.packetCount {
                let slot = batch.slot(n)
                var w = ByteWriter(UnsafeMutableRawBufferPointer(start: slot.baseAddress, count: config.maxPacketSize))
                try s.template.write(to: &w, sequenceNumber: s.sequenceNumber, timestamp: ts, marker: packetizer.index + 1 == packetizer.packetCount)
                _ = try packetizer.next(frame: span, into: &w)
                guard finish(slot: n, length: w.count, template: s.template, absTime: absTime) else { continue }
                s.stats.packetsSent += 1
                s.stats.headerBytesSent += headerSize
                s.stats.payloadBytesSent += w.count - headerSize
                s.sequenceNumber &+= 1
                n += 1
                if n == batch.capacity { flush(n, to: s.plan.destination); n = 0 }
            }
            flush(n, to: s.plan.destination)
        } catch {
            counters.lastError = "packetize: \(error)"
            return
        }
        s.stats.framesSent += 1
        if frame.isKeyFrame { s.stats.keyFramesSent += 1 }
        s.lastTimestamp = ts
        s.lastCaptureMicros = frame.captureMicros
        s.sentAny = true
    }

    func sendAudio(_ frame: EncodedAudioFrame) {
        guard let idx = audioIndex else { return }
        var s = senders[idx]
        defer { senders[idx] = s }
        let ts = s.timestampBase &+ frame.frameNumber &* 960
        let slot = batch.slot(0)
        var w = ByteWriter(UnsafeMutableRawBufferPointer(start: slot.baseAddress, count: config.maxPacketSize))
        do throws(RTPWriteError) {
            try s.template.write(to: &w, sequenceNumber: s.sequenceNumber, timestamp: ts, marker: !s.sentAny)
            try OpusPayload.write(frame.bytes.span, into: &w)
        } catch {
            counters.lastError = "audio packet: \(error)"
            return
        }
        let absTime = NTPTime.absSendTime(NTPTime.ntp(unixMicros: Clock.wallMicros()))
        guard finish(slot: 0, length: w.count, template: s.template, absTime: absTime) else { return }
        flush(1, to: s.plan.destination)
        s.stats.packetsSent += 1
        s.stats.headerBytesSent += s.template.size
        s.stats.payloadBytesSent += w.count - s.template.size
        s.stats.framesSent += 1
        s.sequenceNumber &+= 1
        s.lastTimestamp = ts
        s.lastCaptureMicros = frame.captureMicros
        s.sentAny = true
    }

    /// Stamps send-time extensions and protects slot `i` in place.
    @inline(__always)
    func finish(slot i: Int, length: Int, template: RTPHeaderTemplate, absTime: UInt32) -> Bool {
        let p = batch.slot(i).baseAddress!
        if let o = template.transportSequenceOffset {
            RTPHeaderPatch.setTransportSequence(p, offset: o, transportSequence)
            transportSequence &+= 1
        }
        if let o = template.absSendTimeOffset { RTPHeaderPatch.setAbsSendTime(p, offset: o, absTime) }
        guard protectionEnabled else {
            batch.lengths[i] = UInt32(length)
            return true
        }
        do {
            batch.lengths[i] = UInt32(try srtpOut.protectRTP(p, length: length, capacity: PacketBatch.slotSize))
            return true
        } catch {
            counters.lastError = "srtp_protect: \(error)"
            counters.sendErrors += 1
            return false
        }
    }

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

    // MARK: RTCP

    func sendReports(bye: Bool) {
        let wall = Clock.wallMicros()
        let mono = Clock.monotonicMicros()
        let ntp = NTPTime.ntp(unixMicros: wall)
        // One compound per RTCP destination: SR for each stream, SDES with every CNAME, BYE at the end.
        var groups: [(SocketAddress, [Int])] = []
        for (i, s) in senders.enumerated() {
            if let g = groups.firstIndex(where: { $0.0 == s.plan.rtcpDestination }) { groups[g].1.append(i) }
            else { groups.append((s.plan.rtcpDestination, [i])) }
        }
        for (dest, members) in groups {
            let slot = batch.slot(0)
            var w = ByteWriter(UnsafeMutableRawBufferPointer(start: slot.baseAddress, count: PacketBatch.maxPacketSize - 200))
            do throws(RTPWriteError) {
                for i in members {
                    let s = senders[i]
                    let sr = SenderReport(ssrc: s.plan.ssrc, ntpTime: ntp, rtpTimestamp: s.rtpTimestamp(captureMicros: mono),
                                          packetCount: UInt32(truncatingIfNeeded: s.stats.packetsSent),
                                          octetCount: UInt32(truncatingIfNeeded: s.stats.payloadBytesSent))
                    try sr.write(to: &w)
                }
                try SourceDescription(chunks: members.map { .init(ssrc: senders[$0].plan.ssrc, cname: config.cname) }).write(to: &w)
                if bye { try Goodbye(ssrcs: members.map { senders[$0].plan.ssrc }, reason: "pubbot done").write(to: &w) }
            } catch {
                counters.lastError = "rtcp: \(error)"
                continue
            }
            do {
                batch.lengths[0] = UInt32(try srtpOut.protectRTCP(slot.baseAddress!, length: w.count, capacity: PacketBatch.slotSize))
            } catch {
                counters.lastError = "srtp_protect_rtcp: \(error)"
                continue
            }
            flush(1, to: dest)
            counters.rtcpSent += 1
        }
    }

    func senderIndex(ssrc: UInt32) -> Int? { senders.firstIndex { $0.plan.ssrc == ssrc } }

    func handle(_ packet: RTCPPacket, arrivalCompactNTP: UInt32) {
        switch packet {
        case let .receiverReport(rr): handleReports(rr.reports, arrival: arrivalCompactNTP)
        case let .senderReport(sr): handleReports(sr.reports, arrival: arrivalCompactNTP)
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
            senders[i].stats.packetsLostReported = Int(b.cumulativeLost)
            senders[i].stats.remoteJitterSeconds = Double(b.jitter) / Double(senders[i].plan.clockRate)
            if b.lastSenderReport != 0 {
                let rtt = Int64(Int32(bitPattern: arrival &- b.lastSenderReport &- b.delaySinceLastSenderReport))
                if rtt >= 0 { senders[i].stats.roundTripTimeMillis = Double(rtt) * 1000 / 65_536 }
            }
        }
    }

    /// Key frames on PLI/FIR, at most one per layer per 300 ms (repeated requests while one is
    /// on its way would only multiply key frames).
    func requestKeyFrame(_ senderIndex: Int) {
        guard let layer = senders[senderIndex].plan.layer else { return }
        let now = Clock.monotonicMicros()
        if now - senders[senderIndex].lastKeyFrameRequestMicros < 300_000 { return }
        senders[senderIndex].lastKeyFrameRequestMicros = now
        control.requestKeyFrame(layer: layer)
    }

    func readIncoming() {
        for _ in 0..<8 {
            let n: Int
            do { n = try socket.receive(into: rx) } catch { record(error); return }
            if n == 0 { return }
            for i in 0..<n {
                let len = Int(rx.lengths[i])
                guard len <= PacketBatch.maxPacketSize else { counters.rtcpRejected += 1; continue }
                let p = rx.slot(i).baseAddress!
                let kind = RTPDemux.classify(Span(_unsafeStart: p.assumingMemoryBound(to: UInt8.self), count: min(len, 2)))
                guard kind == .rtcp else { counters.rtcpRejected += 1; continue }
                do {
                    let plain = try srtpIn.unprotectRTCP(p, length: len)
                    let span = Span(_unsafeStart: p.assumingMemoryBound(to: UInt8.self), count: plain)
                    var it = RTCPCompoundIterator()
                    let arrival = NTPTime.compact(NTPTime.ntp(unixMicros: Clock.wallMicros()))
                    while let packet = try it.next(in: span) { handle(packet, arrivalCompactNTP: arrival) }
                    counters.rtcpReceived += 1
                } catch {
                    counters.rtcpRejected += 1
                }
            }
        }
    }
}
