/// Reassembles video frames from RTP packets and hands them out in decoding order (receive
/// side): packets are grouped by RTP timestamp; a frame is complete when its first packet, its
/// marker packet and every sequence number between them have arrived. A complete frame is
/// released when it directly follows the last one released, when it is a key frame, or when it
/// has waited `holdMicros` for the gap before it (time for a retransmission); older incomplete
/// frames are then dropped and counted.
///
/// The first packet: VP8 marks it (S=1, partition 0, RFC 7741 §4.2). H.264 does not (RFC 6184):
/// a packet starts a frame when it begins with an SPS, PPS, AUD or SEI, when it follows the last
/// frame released, or when the packet before it ended a frame (its marker bit) — libwebrtc's
/// `packet_buffer.cc` likewise looks back for the previous frame's end. AV1 marks only a coded
/// video sequence's first packet (N); any other frame starts by looking back the same way, at a
/// packet that does not continue an OBU (Z = 0).
public struct VideoFrameAssembler {
    public struct Frame: Sendable {
        /// The frame as its decoder takes it (VP8: the frame; H.264: the access unit, Annex B;
        /// AV1: the temporal unit, OBUs with their sizes).
        public var bytes: [UInt8]
        public var timestamp: UInt32
        public var isKeyFrame: Bool
        /// The picture size the bitstream states (a VP8 key frame's header, an H.264 SPS).
        public var width: Int?
        public var height: Int?
        /// VP8's payload descriptor (picture ID, temporal layer); nil for H.264.
        public var descriptor: VP8PayloadDescriptor?
        public var packetCount: Int
        public var firstSequence: Int64
        public var lastSequence: Int64
        /// Frames before this one were lost (released after the hold time, not in sequence).
        public var followsAGap: Bool
        /// `bytes` holds the whole frame: false for a VP8/VP9 frame that began while the
        /// assembler kept only heads (`keepsBytes`), even when it completed after.
        public var bytesKept = true
    }

    struct Fragment {
        var seq: Int64
        var payload: [UInt8]
        var start: Bool
        var marker: Bool
        var descriptor: VP8PayloadDescriptor?
        var h264: H264PacketInfo?
        var vp9: VP9PayloadDescriptor?
        /// AV1: the packet continues an OBU of the one before (Z); `payload` keeps the whole RTP
        /// payload, reassembled by `AV1Depacketizer` once the frame is complete.
        var av1ContinuesOBU = false
    }

    /// One timestamp's fragments, with what completing the frame needs noted as each arrives
    /// (a packet updates it in place: no scan of the fragments per packet, no copy of them).
    struct Pending {
        var frags: [Fragment] = []
        /// The first marker packet's sequence number, the first start packet (VP8/VP9's flag),
        /// and the lowest sequence number's first fragment, in arrival order.
        var markerSeq: Int64?
        var startIndex: Int?
        var minIndex = 0
        var maxSeq = Int64.min
        /// The fragments arrived in ascending order (nothing to sort).
        var ascending = true

        mutating func add(_ f: Fragment) {
            if let last = frags.last {
                if f.seq <= last.seq { ascending = false }
                if f.seq < frags[minIndex].seq { minIndex = frags.count }
            }
            if f.marker && markerSeq == nil { markerSeq = f.seq }
            if f.start && startIndex == nil { startIndex = frags.count }
            maxSeq = max(maxSeq, f.seq)
            frags.append(f)
        }
    }

    public let codec: VideoCodec

    var pending: [UInt32: Pending] = [:]
    var complete: [(frame: Frame, completedMicros: Int64)] = []
    var unwrapper = SequenceUnwrapper()
    /// The sequence number the next frame in order starts with.
    var nextSequence: Int64?
    /// Nothing is waiting: no fragment of an incomplete frame, no complete frame held.
    public var isEmpty: Bool { pending.isEmpty && complete.isEmpty }
    /// Frames abandoned (a packet never came).
    public private(set) var framesDropped = 0
    /// Packets whose descriptor or frame header could not be parsed.
    public private(set) var malformedPackets = 0
    /// How long a complete frame waits for an earlier incomplete one.
    public var holdMicros: Int64 = 200_000
    /// Upper bound on buffered fragments, so garbage cannot grow memory.
    public var maxFragments = 4096
    var fragmentCount = 0
    /// The sequence numbers of the last marker packets seen (H.264: the packet after one starts a frame).
    var markers = [Int64](repeating: -1, count: 16)
    var markerHead = 0

    /// false: nobody decodes the frames (`receive --no-decode`, a fleet's counting subscribers),
    /// so VP8 and VP9 keep only the head of a frame's first packet — what its key-frame flag
    /// and size are read from (RFC 6386 §9.1: 10 bytes; the VP9 uncompressed header's first
    /// bytes) — and every other payload is counted, not copied. A copy of every payload was 5 %
    /// of a 500-publisher receiver's CPU (perf), its allocations more. Set true on a running
    /// stream (a fleet's decoder rotating onto it), it keeps the packets after the highest one
    /// seen: frames that began before come out with `bytesKept` false.
    public var keepsBytes: Bool {
        get { bytesFrom != .max }
        set {
            guard newValue != keepsBytes else { return } // setting it again must not move where keeping began
            bytesFrom = newValue ? (highestSequence.map { $0 + 1 } ?? .min) : .max
        }
    }
    /// The first (unwrapped) sequence number whose payload is kept whole; `.max`: none.
    var bytesFrom: Int64 = .min
    var highestSequence: Int64?

    public init(codec: VideoCodec = .vp8, keepsBytes: Bool = true) {
        self.codec = codec
        bytesFrom = keepsBytes ? .min : .max
    }

    /// A VP8/VP9 payload as kept: whole, or (not kept) the head of a frame's first packet.
    func kept(_ payload: Span<UInt8>, seq: Int64, from n: Int, start: Bool) -> [UInt8] {
        if seq >= bytesFrom { return payload.copyBytes(n..<payload.count) }
        return start ? payload.copyBytes(n..<min(payload.count, n + 64)) : []
    }

    /// Adds one packet's payload (a padding-only packet just advances the expected sequence).
    public mutating func insert(sequenceNumber: UInt16, timestamp: UInt32, marker: Bool, payload: Span<UInt8>, now: Int64) {
        let seq = unwrapper.unwrap(sequenceNumber)
        if highestSequence.map({ seq > $0 }) ?? true { highestSequence = seq }
        if let n = nextSequence, seq < n { return } // late or duplicate
        if payload.count == 0 {
            if nextSequence == seq { nextSequence = seq + 1 }
            return
        }
        if fragmentCount >= maxFragments { dropAllPending() }
        let frag: Fragment
        switch codec {
        case .vp8:
            let parsed: (VP8PayloadDescriptor, Int)
            do { parsed = try VP8PayloadDescriptor.parse(payload) } catch { malformedPackets += 1; return }
            let (d, n) = parsed
            let start = d.startOfPartition && d.partitionID == 0
            frag = Fragment(seq: seq, payload: kept(payload, seq: seq, from: n, start: start), start: start, marker: marker, descriptor: d)
        case .vp9:
            let parsed: (VP9PayloadDescriptor, Int)
            do { parsed = try VP9PayloadDescriptor.parse(payload) } catch { malformedPackets += 1; return }
            let (d, n) = parsed
            let start = d.beginningOfFrame && d.spatialID == 0
            frag = Fragment(seq: seq, payload: kept(payload, seq: seq, from: n, start: start), start: start, marker: marker, vp9: d)
        case .h264:
            var bytes: [UInt8] = []
            let info: H264PacketInfo
            do { info = try H264Depacketizer.append(payload, to: &bytes) } catch { malformedPackets += 1; return }
            frag = Fragment(seq: seq, payload: bytes, start: info.beginsAccessUnit, marker: marker, h264: info)
        case .av1:
            let h: AV1Depacketizer.Header
            do { h = try AV1Depacketizer.header(payload) } catch { malformedPackets += 1; return }
            frag = Fragment(
                seq: seq, payload: payload.copyBytes(0..<payload.count), start: h.newCodedVideoSequence && !h.continuesOBU,
                marker: marker, av1ContinuesOBU: h.continuesOBU)
        }
        pending[timestamp, default: Pending()].add(frag)
        fragmentCount += 1
        tryComplete(timestamp, now: now)
        if codec.startsByLookingBack && marker {
            markers[markerHead] = seq
            markerHead = (markerHead + 1) % markers.count
            // The frame after this one may have been waiting to know where it starts.
            for ts in pending.keys where ts != timestamp { tryComplete(ts, now: now) }
        }
    }

    /// Whether the frame's lowest packet is its first (see the type's description).
    func startsFrame(_ f: Fragment) -> Bool {
        switch codec {
        case .vp8, .vp9: f.start
        case .h264: f.start || nextSequence == f.seq || markers.contains(f.seq - 1)
        case .av1: !f.av1ContinuesOBU && (f.start || nextSequence == f.seq || markers.contains(f.seq - 1))
        }
    }

    /// The next frame in decoding order, if one may be released at `now`.
    public mutating func pop(now: Int64) -> Frame? {
        guard let i = complete.indices.min(by: { complete[$0].frame.firstSequence < complete[$1].frame.firstSequence }) else { return nil }
        let (frame, at) = complete[i]
        let inOrder = nextSequence.map { frame.firstSequence == $0 } ?? true
        guard inOrder || frame.isKeyFrame || now - at >= holdMicros else { return nil }
        complete.remove(at: i)
        var out = frame
        out.followsAGap = !inOrder
        nextSequence = frame.lastSequence + 1
        // Whatever is older can no longer be decoded in order (looked for first: removing while
        // iterating would copy the table).
        if pending.values.contains(where: { $0.maxSeq < frame.firstSequence }) {
            for (k, v) in pending where v.maxSeq < frame.firstSequence {
                framesDropped += 1
                fragmentCount -= v.frags.count
                pending[k] = nil
            }
        }
        let before = complete.count
        complete.removeAll { $0.frame.firstSequence < frame.firstSequence }
        framesDropped += before - complete.count
        return out
    }

    mutating func dropAllPending() {
        framesDropped += pending.count
        pending.removeAll(keepingCapacity: true)
        fragmentCount = 0
    }

    mutating func tryComplete(_ ts: UInt32, now: Int64) {
        guard let waiting = pending[ts], let lastSeq = waiting.markerSeq else { return }
        let firstIndex: Int
        switch codec {
        case .vp8, .vp9:
            guard let i = waiting.startIndex else { return }
            firstIndex = i
        case .h264, .av1:
            guard startsFrame(waiting.frags[waiting.minIndex]) else { return }
            firstIndex = waiting.minIndex
        }
        let firstSeq = waiting.frags[firstIndex].seq
        guard lastSeq >= firstSeq, Int64(waiting.frags.count) >= lastSeq - firstSeq + 1 else { return }
        // Taken out whole (no copy); put back if duplicates made the count look complete.
        guard let p = pending.removeValue(forKey: ts) else { return }
        let first = p.frags[firstIndex]
        let frags = p.ascending ? p.frags : p.frags.sorted { $0.seq < $1.seq }
        var expect = first.seq
        var bytes: [UInt8] = []
        var parts: [[UInt8]] = []
        var used = 0
        var inFragment = false
        var h264 = H264PacketInfo()
        for f in frags where f.seq >= first.seq && f.seq <= lastSeq {
            if f.seq < expect { continue }
            guard f.seq == expect else {
                pending[ts] = p
                return
            }
            if let info = f.h264 {
                // An FU-A's fragments in order: a start, middles, an end, nothing else between.
                guard info.isFragment ? (info.fragmentStart ? !inFragment : inFragment) : !inFragment else {
                    malformed(fragments: p.frags.count)
                    return
                }
                inFragment = info.isFragment && !info.fragmentEnd
                h264.hasIDR = h264.hasIDR || info.hasIDR
                if h264.sps == nil { h264.sps = info.sps }
            }
            if codec == .av1 { parts.append(f.payload) } else { bytes += f.payload }
            expect += 1
            used += 1
        }
        guard expect == lastSeq + 1 else {
            pending[ts] = p
            return
        }
        fragmentCount -= p.frags.count
        let frame: Frame
        switch codec {
        case .vp8:
            let header: VP8FrameHeader
            do { header = try VP8FrameHeader.parse(bytes.span) } catch { malformedPackets += 1; return }
            frame = Frame(
                bytes: bytes, timestamp: ts, isKeyFrame: header.isKeyFrame, width: header.width, height: header.height,
                descriptor: first.descriptor, packetCount: used, firstSequence: first.seq, lastSequence: lastSeq, followsAGap: false)
        case .vp9:
            let size = first.vp9?.scalability?.sizes.last
            frame = Frame(
                bytes: bytes, timestamp: ts, isKeyFrame: VP9PayloadDescriptor.isKeyFrame(bytes.span), width: size?.width,
                height: size?.height, descriptor: nil, packetCount: used, firstSequence: first.seq, lastSequence: lastSeq,
                followsAGap: false)
        case .h264:
            guard !inFragment else { malformedPackets += 1; return } // the marker packet ended inside a unit
            frame = Frame(
                bytes: bytes, timestamp: ts, isKeyFrame: h264.hasIDR, width: h264.sps?.width, height: h264.sps?.height,
                descriptor: nil, packetCount: used, firstSequence: first.seq, lastSequence: lastSeq, followsAGap: false)
        case .av1:
            let unit: (bytes: [UInt8], isKeyFrame: Bool)
            do { unit = try AV1Depacketizer.assemble(parts) } catch {
                malformed(fragments: 0) // its fragments are already uncounted
                return
            }
            frame = Frame(
                bytes: unit.bytes, timestamp: ts, isKeyFrame: unit.isKeyFrame, width: nil, height: nil, descriptor: nil,
                packetCount: used, firstSequence: first.seq, lastSequence: lastSeq, followsAGap: false)
        }
        var out = frame
        out.bytesKept = first.seq >= bytesFrom || codec == .h264 || codec == .av1
        complete.append((out, now))
        if complete.count > 64 { // never released (a gap nobody fills, clock stuck): shed the oldest
            complete.removeFirst()
            framesDropped += 1
        }
    }

    /// A frame (already taken out of `pending`) whose packets cannot form an access unit:
    /// counted and let go.
    mutating func malformed(fragments: Int) {
        malformedPackets += 1
        fragmentCount -= fragments
        framesDropped += 1
    }
}
