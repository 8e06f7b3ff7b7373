/// Reassembles VP8 frames from RTP packets and hands them out in decoding order (receive side):
/// packets are grouped by RTP timestamp; a frame is complete when its first packet (S=1, PID 0),
/// its marker packet and every sequence number between them have arrived. A complete frame is
/// released when it directly follows the last one released, when it is a key frame, or when it
/// has waited `holdMicros` for the gap before it (time for a retransmission); older incomplete
/// frames are then dropped and counted.
public struct VP8FrameAssembler {
    public struct Frame: Sendable {
        public var bytes: [UInt8]
        public var timestamp: UInt32
        public var header: VP8FrameHeader
        public var descriptor: VP8PayloadDescriptor
        public var packetCount: Int
        public var firstSequence: Int64
        public var lastSequence: Int64
        /// Frames before this one were lost (released after the hold time, not in sequence).
        public var followsAGap: Bool
    }

    struct Fragment {
        var seq: Int64
        var payload: [UInt8]
        var start: Bool
        var marker: Bool
        var descriptor: VP8PayloadDescriptor
    }

    var pending: [UInt32: [Fragment]] = [:]
    var complete: [(frame: Frame, completedMicros: Int64)] = []
    var unwrapper = SequenceUnwrapper()
    /// The sequence number the next frame in order starts with.
    var nextSequence: Int64?
    /// Frames abandoned (a packet never came).
    public private(set) var framesDropped = 0
    /// Packets whose descriptor or frame header could not be parsed.
    public private(set) var malformedPackets = 0
    /// How long a complete frame waits for an earlier incomplete one.
    public var holdMicros: Int64 = 200_000
    /// Upper bound on buffered fragments, so garbage cannot grow memory.
    public var maxFragments = 4096
    var fragmentCount = 0

    public init() {}

    /// Adds one packet's payload (a padding-only packet just advances the expected sequence).
    public mutating func insert(sequenceNumber: UInt16, timestamp: UInt32, marker: Bool, payload: Span<UInt8>, now: Int64) {
        let seq = unwrapper.unwrap(sequenceNumber)
        if let n = nextSequence, seq < n { return } // late or duplicate
        if payload.count == 0 {
            if nextSequence == seq { nextSequence = seq + 1 }
            return
        }
        let parsed: (VP8PayloadDescriptor, Int)
        do { parsed = try VP8PayloadDescriptor.parse(payload) } catch { malformedPackets += 1; return }
        let (d, n) = parsed
        let frag = Fragment(
            seq: seq, payload: payload.copyBytes(n..<payload.count),
            start: d.startOfPartition && d.partitionID == 0, marker: marker, descriptor: d)
        if fragmentCount >= maxFragments { dropAllPending() }
        pending[timestamp, default: []].append(frag)
        fragmentCount += 1
        tryComplete(timestamp, now: now)
    }

    /// The next frame in decoding order, if one may be released at `now`.
    public mutating func pop(now: Int64) -> Frame? {
        guard let i = complete.indices.min(by: { complete[$0].frame.firstSequence < complete[$1].frame.firstSequence }) else { return nil }
        let (frame, at) = complete[i]
        let inOrder = nextSequence.map { frame.firstSequence == $0 } ?? true
        guard inOrder || frame.header.isKeyFrame || now - at >= holdMicros else { return nil }
        complete.remove(at: i)
        var out = frame
        out.followsAGap = !inOrder
        nextSequence = frame.lastSequence + 1
        // Whatever is older can no longer be decoded in order.
        for (k, v) in pending where v.allSatisfy({ $0.seq < frame.firstSequence }) {
            framesDropped += 1
            fragmentCount -= v.count
            pending[k] = nil
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
        guard var frags = pending[ts],
            let first = frags.first(where: { $0.start }),
            let last = frags.first(where: { $0.marker })
        else { return }
        guard last.seq >= first.seq, Int64(frags.count) >= last.seq - first.seq + 1 else { return }
        frags.sort { $0.seq < $1.seq }
        // Duplicates may inflate the count: check contiguity.
        var expect = first.seq
        var bytes: [UInt8] = []
        var used = 0
        for f in frags where f.seq >= first.seq && f.seq <= last.seq {
            if f.seq < expect { continue }
            guard f.seq == expect else { return }
            bytes += f.payload
            expect += 1
            used += 1
        }
        guard expect == last.seq + 1 else { return }
        fragmentCount -= frags.count
        pending[ts] = nil
        let header: VP8FrameHeader
        do { header = try VP8FrameHeader.parse(bytes.span) } catch { malformedPackets += 1; return }
        complete.append(
            (
                Frame(
                    bytes: bytes, timestamp: ts, header: header, descriptor: first.descriptor, packetCount: used,
                    firstSequence: first.seq, lastSequence: last.seq, followsAGap: false), now
            ))
        if complete.count > 64 { // never released (a gap nobody fills, clock stuck): shed the oldest
            complete.removeFirst()
            framesDropped += 1
        }
    }
}
