/// Reassembles VP8 frames from RTP packets (receive side): packets are grouped by RTP timestamp;
/// a frame is complete when its first packet (S=1, PID 0), its marker packet and every sequence
/// number between them have arrived. Older incomplete frames are dropped and counted.
public struct VP8FrameAssembler {
    public struct Frame: Sendable {
        public var bytes: [UInt8]
        public var timestamp: UInt32
        public var header: VP8FrameHeader
        public var descriptor: VP8PayloadDescriptor
        public var packetCount: Int
    }

    struct Fragment {
        var seq: Int64
        var payload: [UInt8]
        var start: Bool
        var marker: Bool
        var descriptor: VP8PayloadDescriptor
    }

    var pending: [UInt32: [Fragment]] = [:]
    var unwrapper = SequenceUnwrapper()
    var lastCompletedSeq: Int64 = -1
    /// Frames abandoned because a later frame completed first (lost packets).
    public private(set) var framesDropped = 0
    /// Packets whose descriptor could not be parsed.
    public private(set) var malformedPackets = 0
    /// Upper bound on buffered fragments, so garbage cannot grow memory.
    public var maxFragments = 4096
    var fragmentCount = 0

    public init() {}

    /// Adds one packet's payload; returns a frame when this packet completes one.
    public mutating func insert(sequenceNumber: UInt16, timestamp: UInt32, marker: Bool, payload: Span<UInt8>) -> Frame? {
        let seq = unwrapper.unwrap(sequenceNumber)
        guard seq > lastCompletedSeq else { return nil } // late or duplicate
        let parsed: (VP8PayloadDescriptor, Int)
        do { parsed = try VP8PayloadDescriptor.parse(payload) } catch { malformedPackets += 1; return nil }
        let (d, n) = parsed
        let frag = Fragment(seq: seq, payload: payload.copyBytes(n..<payload.count),
                            start: d.startOfPartition && d.partitionID == 0, marker: marker, descriptor: d)
        if fragmentCount >= maxFragments { dropAll() }
        pending[timestamp, default: []].append(frag)
        fragmentCount += 1
        return tryComplete(timestamp)
    }

    mutating func dropAll() {
        framesDropped += pending.count
        pending.removeAll(keepingCapacity: true)
        fragmentCount = 0
    }

    mutating func tryComplete(_ ts: UInt32) -> Frame? {
        guard var frags = pending[ts],
              let first = frags.first(where: { $0.start }),
              let last = frags.first(where: { $0.marker }) else { return nil }
        guard last.seq >= first.seq, Int64(frags.count) >= last.seq - first.seq + 1 else { return nil }
        frags.sort { $0.seq < $1.seq }
        // Duplicates may inflate the count: check contiguity.
        var expect = first.seq
        var bytes: [UInt8] = []
        var used = 0
        for f in frags where f.seq >= first.seq && f.seq <= last.seq {
            if f.seq < expect { continue }
            guard f.seq == expect else { return nil }
            bytes += f.payload
            expect += 1
            used += 1
        }
        guard expect == last.seq + 1 else { return nil }
        fragmentCount -= frags.count
        pending[ts] = nil
        // Anything older than this frame can no longer complete in order.
        for (k, v) in pending where v.allSatisfy({ $0.seq < first.seq }) {
            framesDropped += 1
            fragmentCount -= v.count
            pending[k] = nil
        }
        lastCompletedSeq = last.seq
        let header: VP8FrameHeader
        do { header = try VP8FrameHeader.parse(bytes.span) }
        catch { malformedPackets += 1; return nil }
        return Frame(bytes: bytes, timestamp: ts, header: header, descriptor: first.descriptor, packetCount: used)
    }
}
