import RTPCore
import MediaCodecs
import Stats
import Transport

/// One incoming RTP stream (per SSRC): loss accounting (RFC 3550 A.3), frame assembly, decoding
/// and stamp read-back.
final class ReceiveStream {
    var stats: InboundStreamStats
    var unwrapper = SequenceUnwrapper()
    var baseSequence: Int64?
    var highestSequence: Int64 = 0
    var assembler = VP8FrameAssembler()
    var videoDecoder: VP8Decoder?
    var audioDecoder: OpusAudioDecoder?
    var latency = LatencyTracker()
    let decodeVideo: Bool
    var needKeyFrame = true

    init(ssrc: UInt32, kind: MediaKind, payloadType: UInt8, decodeVideo: Bool) {
        stats = InboundStreamStats(ssrc: ssrc, kind: kind, payloadType: payloadType)
        self.decodeVideo = decodeVideo
    }

    func receive(header h: RTPHeader, extensions: RTPExtensionValues, packet: Span<UInt8>, nowMicros: Int64, wallMicros: Int64) {
        let seq = unwrapper.unwrap(h.sequenceNumber)
        if baseSequence == nil { baseSequence = seq; highestSequence = seq }
        highestSequence = max(highestSequence, seq)
        stats.packetsReceived += 1
        stats.payloadBytesReceived += h.payloadRange.count
        stats.headerBytesReceived += packet.count - h.payloadRange.count
        stats.packetsLost = Int(highestSequence - baseSequence! + 1) - stats.packetsReceived
        if stats.firstPacketMicros == nil { stats.firstPacketMicros = nowMicros }
        stats.lastPacketMicros = nowMicros
        if let mid = extensions.mid, stats.mid == nil { stats.mid = mid }
        if let rid = extensions.rid, stats.rid == nil { stats.rid = rid }
        let payload = packet.extracting(h.payloadRange)
        switch stats.kind {
        case .video: receiveVideo(h, payload, wallMicros: wallMicros)
        case .audio: receiveAudio(payload)
        }
    }

    func receiveVideo(_ h: RTPHeader, _ payload: Span<UInt8>, wallMicros: Int64) {
        let malformedBefore = assembler.malformedPackets
        guard let frame = assembler.insert(sequenceNumber: h.sequenceNumber, timestamp: h.timestamp, marker: h.marker, payload: payload) else {
            if assembler.malformedPackets > malformedBefore { stats.decodeErrors += 1 }
            stats.framesDropped = assembler.framesDropped
            return
        }
        stats.framesDropped = assembler.framesDropped
        stats.framesAssembled += 1
        if let w = frame.header.width, let hh = frame.header.height { stats.width = w; stats.height = hh }
        guard decodeVideo else { return }
        if needKeyFrame && !frame.header.isKeyFrame { return } // cannot decode before the first key frame
        do {
            if videoDecoder == nil { videoDecoder = try VP8Decoder() }
            guard let decoded = try videoDecoder!.decode(frame.bytes) else { return }
            needKeyFrame = false
            stats.framesDecoded += 1
            if frame.header.isKeyFrame { stats.keyFramesDecoded += 1 }
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
        } catch {
            stats.decodeErrors += 1
            needKeyFrame = true
        }
    }

    func receiveAudio(_ payload: Span<UInt8>) {
        do {
            _ = try OpusPayload.parse(payload)
        } catch {
            stats.decodeErrors += 1
            return
        }
        stats.framesAssembled += 1
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

    func finalize() {
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
