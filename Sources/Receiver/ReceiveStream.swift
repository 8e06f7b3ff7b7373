import RTPCore
import Congestion
import MediaCodecs
import Stats
import Net
import SRTP

/// One incoming RTP stream (per SSRC): loss accounting (RFC 3550 A.3), frame assembly, decoding
/// and stamp read-back.
final class ReceiveStream {
    var stats: InboundStreamStats
    var unwrapper = SequenceUnwrapper()
    var baseSequence: Int64?
    var highestSequence: Int64 = 0
    let codec: VideoCodec
    var assembler: VideoFrameAssembler
    var videoDecoder: (any VideoDecoder)?
    var audioDecoder: OpusAudioDecoder?
    var latency = LatencyTracker()
    /// Video decoding; a fleet's rotating decoders switch it (`setDecoding`).
    var decodeVideo: Bool
    /// Decoding was switched on mid-stream: the decoder waits for a key frame whose bytes were
    /// all kept, and until then frames whose chain is whole count as shown (the stream did not
    /// freeze; only the decoder lacks its reference).
    var decoderAwaitsKeyFrame = false
    /// When the current decoding period's first frame was decoded (nil: not decoding now).
    var decodingSinceMicros: Int64?
    /// Without decoding, still follow the reference chain (ReceiverConfig.nonDecodingFollowsChain).
    var followsChain = false
    /// Opus decoding (the sampled publishers only: decoding every publisher's audio was half of
    /// a receiver's CPU under a 300-bot fleet); every packet is still parsed and counted.
    let decodeAudio: Bool
    /// The publisher (receiver session index) this stream belongs to.
    var peer = 0
    var needKeyFrame = true
    /// Set when the stream needs a key frame it has not asked for yet (the loop sends the PLI).
    var wantsKeyFrame = false
    var lastPictureID: UInt16?
    var framesSkipped = 0
    /// `--prefer …@fps`: the highest frame rate to pass on, and what the stream showed so far.
    var preferredFrameRate: Int?
    /// Measures decoded frames against the synthetic source (nil: not measured).
    var quality: PictureQuality?
    /// The CPU its publisher's measurements may take (shared by its streams).
    var qualityBudget: QualityBudget?
    var psnrHistogram = LinearHistogram(binWidth: 0.05, top: PictureQuality.maxPSNR)
    var capturePSNRHistogram = LinearHistogram(binWidth: 0.05, top: PictureQuality.maxPSNR)
    var ssimValues = LinearHistogram(binWidth: 0.0005, top: 1)
    var highestTemporalID: UInt8 = 0
    var framesFilteredTemporal = 0
    var nominalFrameRate = 30.0

    /// Frame rate up to temporal layer `tid` (each layer doubles it; the top one is the full rate).
    func frameRate(ofTemporalLayer tid: UInt8) -> Double {
        nominalFrameRate / Double(1 << Int(highestTemporalID - min(tid, highestTemporalID)))
    }
    /// The stream's picture height, learned by the router from a key frame (VP8 header, H.264 SPS).
    var routerHeight: Int?
    var routerUnwrapper = SequenceUnwrapper()
    var routerReceived = 0
    var subscriberBase: Int64?
    var subscriberHighest: Int64 = 0
    var lastRenderMicros: Int64?
    var frameIntervals = IntervalWindow()
    /// A freeze under way: packets arrive but no frame has been rendered for the freeze
    /// threshold. Counted when it starts (so a stats line shows it live), its duration when the
    /// next frame renders (or the run ends).
    var freezeOpen = false
    var decodedSize: (Int, Int)?
    /// When the assembler last gave out a frame (or the stream started).
    var lastFrameOutMicros: Int64?
    var nack = NackGenerator()
    /// The Dependency Descriptor structure last attached on this stream (AV1).
    var descriptorStructure: FrameDependencyStructure?
    // RFC 3550 A.3/A.8 state for receiver reports.
    var jitter = 0.0
    var lastTransit: Int64?
    var expectedAtLastReport: Int64 = 0
    var receivedAtLastReport = 0
    /// Middle 32 bits of the last SR's NTP time and when it arrived (µs, monotonic).
    var lastSenderReport: (compactNTP: UInt32, arrivalMicros: Int64)?
    let clockRate: Int64

    init(ssrc: UInt32, kind: MediaKind, payloadType: UInt8, codec: VideoCodec = .vp8, decodeVideo: Bool, decodeAudio: Bool = true) {
        stats = InboundStreamStats(ssrc: ssrc, kind: kind, payloadType: payloadType)
        self.codec = codec
        assembler = VideoFrameAssembler(codec: codec, keepsBytes: decodeVideo)
        if kind == .video { stats.codec = codec.sdpName }
        self.decodeVideo = decodeVideo
        self.decodeAudio = decodeAudio
        clockRate = kind == .audio ? 48_000 : 90_000
    }

    /// The router's view of a packet arriving from the publisher (before any downlink): what
    /// receiver reports describe — the publisher's uplink.
    func routerObserve(header h: RTPHeader, nowMicros: Int64) {
        let seq = routerUnwrapper.unwrap(h.sequenceNumber)
        if baseSequence == nil { baseSequence = seq; highestSequence = seq }
        highestSequence = max(highestSequence, seq)
        routerReceived += 1
        stats.uplinkPacketsLost = Int(highestSequence - baseSequence! + 1) - routerReceived
        // Interarrival jitter (RFC 3550 A.8) in timestamp units.
        let arrival = nowMicros * clockRate / 1_000_000
        let transit = arrival - Int64(h.timestamp)
        if let last = lastTransit {
            var d = transit - last
            // Timestamps wrap at 2^32: take the short way round.
            if d > Int64(UInt32.max / 2) { d -= Int64(UInt32.max) + 1 } else if d < -Int64(UInt32.max / 2) { d += Int64(UInt32.max) + 1 }
            jitter += (Double(abs(d)) - jitter) / 16
        }
        lastTransit = transit
    }

    func learnResolution(_ payload: Span<UInt8>) {
        if codec == .h264 {
            // An SPS, alone or first in a STAP-A (RFC 6184 §5.7.1), states the picture size.
            var unit = payload
            if payload.count > 3, payload[0] & 0x1F == H264NAL.stapA {
                let size = Int(payload[1]) << 8 | Int(payload[2])
                guard 3 + size <= payload.count else { return }
                unit = payload.extracting(3..<(3 + size))
            }
            if let sps = H264SPS.parse(unit) { routerHeight = sps.height }
            return
        }
        if codec == .vp9 {
            // A key frame's scalability structure states the sizes (RFC 9628 §4.2.1).
            if let (d, _) = try? VP9PayloadDescriptor.parse(payload), let size = d.scalability?.sizes.last { routerHeight = size.height }
            return
        }
        guard let (d, n) = try? VP8PayloadDescriptor.parse(payload), d.startOfPartition, d.partitionID == 0,
            let h = try? VP8FrameHeader.parse(payload.extracting(n..<payload.count)), h.isKeyFrame, let height = h.height
        else { return }
        routerHeight = height
    }

    /// Reads a packet's Dependency Descriptor (the AOM AV1 RTP format, Appendix A) against the
    /// structure the stream last attached: counted when it parses and names a template, as an
    /// error otherwise (a peer's bytes: never fatal).
    func readDescriptor(_ bytes: Span<UInt8>) {
        do {
            let d = try DependencyDescriptor.parse(bytes, known: descriptorStructure)
            if let s = d.structure { descriptorStructure = s }
            stats.dependencyDescriptors += 1
        } catch {
            stats.dependencyDescriptorErrors += 1
        }
    }

    /// The subscriber's view: a packet that reached it (after the downlink, if one is emulated).
    func receive(header h: RTPHeader, extensions: RTPExtensionValues, packet: Span<UInt8>, nowMicros: Int64, wallMicros: Int64) {
        let seq = unwrapper.unwrap(h.sequenceNumber)
        if subscriberBase == nil { subscriberBase = seq; subscriberHighest = seq }
        subscriberHighest = max(subscriberHighest, seq)
        stats.packetsReceived += 1
        stats.payloadBytesReceived += h.payloadRange.count
        stats.headerBytesReceived += packet.count - h.payloadRange.count
        stats.packetsLost = Int(subscriberHighest - subscriberBase! + 1) - stats.packetsReceived
        if stats.firstPacketMicros == nil { stats.firstPacketMicros = nowMicros }
        stats.lastPacketMicros = nowMicros
        if let mid = extensions.mid, stats.mid == nil { stats.mid = mid }
        if let rid = extensions.rid, stats.rid == nil { stats.rid = rid }
        if let r = extensions.dependencyDescriptor, stats.kind == .video { readDescriptor(packet.extracting(r)) }
        if h.payloadRange.isEmpty { // padding only (probes)
            stats.paddingPackets += 1
            if stats.kind == .video { receiveVideo(h, packet.extracting(h.payloadRange), nowMicros: nowMicros, wallMicros: wallMicros) }
            return
        }
        let payload = packet.extracting(h.payloadRange)
        switch stats.kind {
        case .video: receiveVideo(h, payload, nowMicros: nowMicros, wallMicros: wallMicros)
        case .audio: receiveAudio(payload)
        }
    }

    func receiveVideo(_ h: RTPHeader, _ payload: Span<UInt8>, nowMicros: Int64, wallMicros: Int64) {
        receiveVideo(
            sequenceNumber: h.sequenceNumber, timestamp: h.timestamp, marker: h.marker, payload, nowMicros: nowMicros,
            wallMicros: wallMicros)
    }

    /// A video packet, original or recovered from RTX (then with its original sequence number).
    func receiveVideo(sequenceNumber: UInt16, timestamp: UInt32, marker: Bool, _ payload: Span<UInt8>, nowMicros: Int64, wallMicros: Int64)
    {
        nack.onPacket(sequenceNumber: sequenceNumber, now: nowMicros)
        let malformedBefore = assembler.malformedPackets
        assembler.insert(sequenceNumber: sequenceNumber, timestamp: timestamp, marker: marker, payload: payload, now: nowMicros)
        if assembler.malformedPackets > malformedBefore { stats.decodeErrors += 1 }
        releaseFrames(nowMicros: nowMicros, wallMicros: wallMicros)
    }

    /// Decodes every frame the assembler may release now (also called on timer ticks, so a frame
    /// held for a retransmission that never comes is still released).
    func releaseFrames(nowMicros: Int64, wallMicros: Int64) {
        let droppedBefore = assembler.framesDropped
        // Frames the assembler let go when it released a key frame, or the frame that directly
        // follows the last one decoded, were older than the decoder's reference chain (a stream
        // joined mid-frame, a frame nobody needs any more): they need no key frame. A drop any
        // other way (a frame released after a gap asks in `decode`; malformed, overflow) does.
        var stale = 0
        while true {
            let before = assembler.framesDropped
            guard let frame = assembler.pop(now: nowMicros) else { break }
            if frame.isKeyFrame || !frame.followsAGap { stale += assembler.framesDropped - before }
            lastFrameOutMicros = nowMicros
            decode(frame, nowMicros: nowMicros, wallMicros: wallMicros)
        }
        if assembler.framesDropped - droppedBefore > stale { requestKeyFrame() } // a frame could not be completed
        stats.framesDropped = assembler.framesDropped + framesSkipped
        guard let lastPacket = stats.lastPacketMicros else { return }
        // Packets keep coming but no frame completes (so none is ever dropped either: a loss
        // too heavy for retransmissions to fill): five hold times without a frame, ask for a
        // key frame rather than wait for the sender's periodic one.
        let since = lastFrameOutMicros ?? stats.firstPacketMicros ?? nowMicros
        if lastPacket > since && nowMicros - since >= 5 * assembler.holdMicros && !wantsKeyFrame {
            requestKeyFrame()
            lastFrameOutMicros = nowMicros
        }
        // (The threshold is at least 150 ms: no need to work it out on every tick before then.)
        if !freezeOpen, let last = lastRenderMicros, lastPacket > last, nowMicros - last >= 150_000,
            Double(nowMicros - last) >= freezeThreshold
        {
            freezeOpen = true
            stats.freezeCount += 1
        }
    }

    /// W3C webrtc-stats freeze: a frame interval of at least max(3 × mean, mean + 150 ms).
    /// Before a second frame has given an interval, the mean is taken as 1/30 s (so one frame
    /// and then nothing, while packets keep coming, is a freeze too).
    var freezeThreshold: Double {
        let mean = frameIntervals.isEmpty ? 33_333 : frameIntervals.mean
        return max(3 * mean, mean + 150_000)
    }

    func decode(_ frame: VideoFrameAssembler.Frame, nowMicros: Int64, wallMicros: Int64) {
        stats.framesAssembled += 1
        if let tid = frame.descriptor?.temporalID {
            highestTemporalID = max(highestTemporalID, tid)
            // --prefer …@fps: frames of temporal layers above the preferred rate are not passed on
            // (they are never references for lower layers, so the rest still decodes).
            if let fps = preferredFrameRate, tid > 0, frameRate(ofTemporalLayer: tid) > Double(fps) {
                framesFilteredTemporal += 1
                lastPictureID = frame.descriptor?.pictureID // skipped on purpose: not a gap
                return
            }
        }
        if let w = frame.width, let hh = frame.height { stats.width = w; stats.height = hh }
        // Not decoding and not following the chain (`receive --no-decode`, the scenarios' sized
        // runs): a completed frame stands for a shown one.
        guard decodeVideo || followsChain else {
            rendered(at: nowMicros)
            return
        }
        // A missing picture breaks the reference chain: wait for a key frame rather than decode garbage.
        if !frame.isKeyFrame {
            if frame.followsAGap { requestKeyFrame() }
            if let d = frame.descriptor, let last = lastPictureID, let id = d.pictureID,
                id != (last &+ 1) & (d.shortPictureID ? 0x7F : 0x7FFF)
            {
                requestKeyFrame()
            }
        }
        lastPictureID = frame.descriptor?.pictureID
        if needKeyFrame && !frame.isKeyFrame {
            // Cannot decode without a key frame: ask for one (a receiver that joined mid-stream or
            // restarted would otherwise wait for the sender's next periodic key frame; libwebrtc's
            // RtpVideoStreamReceiver2 asks too). The PLI itself is throttled by the session.
            framesSkipped += 1
            wantsKeyFrame = true
            return
        }
        // Not decoding, following the chain (a sampled fleet subscriber): a completed frame
        // whose chain is whole stands for a shown one — freezes still come from the frames'
        // completion times, and a key frame ends the wait for one as a decoded one would (else
        // the stream asked for key frames every 500 ms for the rest of the run: 64 PLIs from
        // one subscriber through pion, 4 047 at two publishers from 500 subscribers).
        // Decoding switched on mid-stream, no whole key frame yet: the same, still asking.
        guard decodeVideo, !decoderAwaitsKeyFrame || (frame.isKeyFrame && frame.bytesKept) else {
            needKeyFrame = false
            wantsKeyFrame = decodeVideo
            rendered(at: nowMicros)
            return
        }
        do {
            if videoDecoder == nil { videoDecoder = try codec.makeDecoder() }
            var measuring = quality
            if quality != nil, let qualityBudget, !qualityBudget.admit(now: nowMicros) {
                measuring = nil
                stats.framesNotMeasured += 1
            }
            guard let decoded = try videoDecoder!.decode(frame.bytes, readStamp: true, quality: measuring) else { return }
            if let measuring, let qualityBudget { qualityBudget.charge(measuring.lastCostMicros) }
            needKeyFrame = false
            wantsKeyFrame = false
            decoderAwaitsKeyFrame = false
            if decodingSinceMicros == nil { decodingSinceMicros = nowMicros }
            stats.framesDecoded += 1
            rendered(at: nowMicros)
            if frame.isKeyFrame { stats.keyFramesDecoded += 1 }
            if let (w, h) = decodedSize, w != decoded.width || h != decoded.height { stats.resolutionChanges += 1 }
            decodedSize = (decoded.width, decoded.height)
            stats.width = decoded.width
            stats.height = decoded.height
            if let stamp = decoded.stamp {
                stats.stampsRead += 1
                if let last = stats.lastFrameNumber, stamp.frameNumber <= last { stats.stampsOutOfOrder += 1 }
                stats.lastFrameNumber = stamp.frameNumber
                let nowMs = UInt32(truncatingIfNeeded: wallMicros / 1000)
                let ms = Int32(bitPattern: nowMs &- stamp.captureMillis)
                if ms > -1000 && ms < 60_000 { latency.add(Double(ms)) }
                stats.latencyMeanMillis = latency.mean
            }
            if let q = decoded.quality {
                psnrHistogram.add(q.psnrY)
                stats.framesMeasured = psnrHistogram.count
                stats.psnrYMean = psnrHistogram.mean
                stats.psnrYP10 = psnrHistogram.percentile(0.10)
                if let ssim = q.ssimY {
                    ssimValues.add(ssim)
                    stats.ssimFramesMeasured = ssimValues.count
                    stats.ssimYMean = ssimValues.mean
                    stats.ssimYP10 = ssimValues.percentile(0.10)
                }
                if let p = q.psnrYCapture {
                    capturePSNRHistogram.add(p)
                    stats.captureFramesMeasured = capturePSNRHistogram.count
                    stats.psnrYCaptureMean = capturePSNRHistogram.mean
                    stats.psnrYCaptureP10 = capturePSNRHistogram.percentile(0.10)
                }
            }
        } catch {
            stats.decodeErrors += 1
            requestKeyFrame()
        }
    }

    /// Freeze and pause accounting on each decoded ("rendered") frame (W3C webrtc-stats).
    func rendered(at now: Int64) {
        defer { lastRenderMicros = now }
        guard let last = lastRenderMicros else { return }
        let gap = now - last
        if freezeOpen {
            // Counted when it began (media flowed, nothing rendered): now its length.
            freezeOpen = false
            stats.totalFreezesDurationMillis += Double(gap) / 1000
        } else if gap > 5_000_000 {
            stats.pauseCount += 1
            stats.totalPausesDurationMillis += Double(gap) / 1000
        } else if !frameIntervals.isEmpty, gap >= 150_000, Double(gap) >= freezeThreshold { // the threshold is ≥ 150 ms
            stats.freezeCount += 1
            stats.totalFreezesDurationMillis += Double(gap) / 1000
        }
        frameIntervals.append(gap)
    }

    func requestKeyFrame() {
        // A stream that neither decodes nor follows the chain never asks (once it did, and never
        // stopped: nothing it did cleared the request).
        guard decodeVideo || followsChain else { return }
        wantsKeyFrame = true
        needKeyFrame = true
    }

    /// The reception report block for this stream (RFC 3550 §6.4.1, A.3), and resets the interval.
    func reportBlock(nowMicros: Int64) -> ReportBlock? {
        guard let base = baseSequence else { return nil }
        let expected = highestSequence - base + 1
        let lost = expected - Int64(routerReceived)
        let expectedInterval = expected - expectedAtLastReport
        let receivedInterval = routerReceived - receivedAtLastReport
        expectedAtLastReport = expected
        receivedAtLastReport = routerReceived
        let lostInterval = expectedInterval - Int64(receivedInterval)
        let fraction = expectedInterval <= 0 || lostInterval <= 0 ? 0 : UInt8(min(255, (lostInterval << 8) / expectedInterval))
        var block = ReportBlock(
            ssrc: stats.ssrc, fractionLost: fraction, cumulativeLost: Int32(clamping: lost),
            extendedHighestSequence: UInt32(truncatingIfNeeded: highestSequence), jitter: UInt32(jitter))
        if let sr = lastSenderReport {
            block.lastSenderReport = sr.compactNTP
            block.delaySinceLastSenderReport = UInt32(truncatingIfNeeded: (nowMicros - sr.arrivalMicros) * 65_536 / 1_000_000)
        }
        return block
    }

    func receiveAudio(_ payload: Span<UInt8>) {
        do {
            _ = try OpusPayload.parse(payload)
        } catch {
            stats.decodeErrors += 1
            return
        }
        stats.framesAssembled += 1
        guard decodeAudio else { return }
        do {
            if audioDecoder == nil { audioDecoder = try OpusAudioDecoder() }
            let r = try audioDecoder!.decode(payload.copyToArray())
            stats.framesDecoded += 1
            stats.samplesDecoded += r.samples
            stats.audioPeak = max(stats.audioPeak, r.peak)
        } catch {
            stats.decodeErrors += 1
        }
    }

    /// Switches video decoding on or off mid-stream (a fleet's decoder rotating onto or off this
    /// subscriber). On: bytes are kept from the next packet and a key frame is asked for (as a
    /// viewer that starts decoding would); off: the decoder is let go and the period's decoding
    /// time counted (`stats.decodingMillis`: decoded frame rate = frames decoded / that time).
    func setDecoding(_ on: Bool, nowMicros: Int64) {
        guard stats.kind == .video, on != decodeVideo else { return }
        decodeVideo = on
        assembler.keepsBytes = on
        if on {
            decoderAwaitsKeyFrame = true
            wantsKeyFrame = true
        } else {
            closeDecodingPeriod(at: nowMicros)
            decoderAwaitsKeyFrame = false
            videoDecoder = nil
        }
    }

    func closeDecodingPeriod(at now: Int64) {
        if let since = decodingSinceMicros { stats.decodingMillis += Double(max(0, now - since)) / 1000 }
        decodingSinceMicros = nil
    }

    func finalize() {
        closeDecodingPeriod(at: max(stats.lastPacketMicros ?? 0, decodingSinceMicros ?? 0))
        if freezeOpen, let last = lastRenderMicros, let end = stats.lastPacketMicros, end > last {
            freezeOpen = false
            stats.totalFreezesDurationMillis += Double(end - last) / 1000
        }
        stats.latencyMeanMillis = latency.mean
        stats.latencyP95Millis = latency.percentile(95)
    }
}

extension Span where Element == UInt8 {
    func copyToArray() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        for i in 0..<count { out[i] = self[i] }
        return out
    }
}

/// The last 30 frame intervals and their sum, whose mean the freeze threshold takes: a ring in
/// place, not an array shifted and summed per frame (that was 1.7 % of a 500-publisher receiver).
struct IntervalWindow {
    static let capacity = 30
    var values = InlineArray<30, Int64>(repeating: 0)
    var next = 0
    private(set) var count = 0
    private(set) var sum: Int64 = 0

    var isEmpty: Bool { count == 0 }
    /// The mean of the intervals held (not empty).
    var mean: Double { Double(sum) / Double(count) }

    mutating func append(_ v: Int64) {
        if count == Self.capacity { sum -= values[next] } else { count += 1 }
        values[next] = v
        sum += v
        next = next + 1 == Self.capacity ? 0 : next + 1
    }
}
