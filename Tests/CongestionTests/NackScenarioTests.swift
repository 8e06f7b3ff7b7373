import Testing
import Congestion
import Impairment
import RTPCore

/// NACK repair in virtual time: a VP8 packet stream over a 2 %-loss link with 40 ms RTT; the
/// receiver's NackGenerator asks for gaps, the sender answers from its history, and the frame
/// assembler (holding frames for the retransmissions) delivers every frame complete and in order.
@Suite struct NackScenarioTests {
    struct Packet { var seq: UInt16; var ts: UInt32; var marker: Bool; var payload: [UInt8] }

    @Test func nackRepairsTwoPercentLossSoEveryFrameCompletes() throws {
        var link = LinkEmulator(schedule: try .parse("loss=2%,delay=20ms"), seed: 42, startMicros: 0)
        var nack = NackGenerator()
        nack.resendIntervalMicros = 50_000
        var assembler = VideoFrameAssembler()
        var history: [UInt16: Packet] = [:]
        var inFlight: [(due: Int64, packet: Packet)] = []
        var nacksInFlight: [(due: Int64, lost: [UInt16])] = []
        var seq: UInt16 = 60_000 // crosses the wrap
        var delivered: [UInt32] = []
        var retransmissions = 0
        let frames = 30 * 30 // 30 s at 30 fps
        var now: Int64 = 0
        var nextFrame = 0
        func send(_ p: Packet) { if let due = link.admit(size: p.payload.count + 40, now: now) { inFlight.append((due, p)) } }
        while now < Int64(frames + 30) * 33_333 {
            if nextFrame < frames && now >= Int64(nextFrame) * 33_333 {
                let key = nextFrame == 0
                var frame: [UInt8] = key ? [0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a, 0x40, 0x01, 0xb4, 0x00] : [0x31, 0x02, 0x00]
                frame += [UInt8](repeating: UInt8(truncatingIfNeeded: nextFrame), count: 4_000)
                var p = try VP8Packetizer(
                    frameSize: frame.count, maxPayloadSize: 1_100, descriptor: VP8PayloadDescriptor(pictureID: UInt16(nextFrame)))
                var buffer = [UInt8](repeating: 0, count: 1_200)
                while p.index < p.packetCount {
                    var n = 0, marker = false
                    buffer.withUnsafeMutableBytes { raw in
                        var w = ByteWriter(raw)
                        marker = (try? p.next(frame: frame.span, into: &w)) == true
                        n = w.count
                    }
                    let packet = Packet(seq: seq, ts: UInt32(nextFrame) * 3_000, marker: marker, payload: Array(buffer[0..<n]))
                    history[seq] = packet
                    send(packet)
                    seq &+= 1
                }
                nextFrame += 1
            }
            // Receiver: arrivals, then NACKs (20 ms return path), then frames in order.
            inFlight.sort { $0.due < $1.due }
            while let first = inFlight.first, first.due <= now {
                inFlight.removeFirst()
                let p = first.packet
                nack.onPacket(sequenceNumber: p.seq, now: now)
                assembler.insert(sequenceNumber: p.seq, timestamp: p.ts, marker: p.marker, payload: p.payload.span, now: now)
            }
            if now % 20_000 == 0 {
                let lost = nack.due(now: now)
                if !lost.isEmpty { nacksInFlight.append((now + 20_000, lost)) }
            }
            while let first = nacksInFlight.first, first.due <= now {
                nacksInFlight.removeFirst()
                for s in first.lost { if let p = history[s] { retransmissions += 1; send(p) } }
            }
            while let f = assembler.pop(now: now) {
                #expect(!f.followsAGap)
                delivered.append(f.timestamp / 3_000)
            }
            now += 1_000
        }
        #expect(link.counters.droppedByLoss > 50) // ~2 % of ~3 700 packets, retransmissions included
        #expect(retransmissions >= link.counters.droppedByLoss - 5)
        #expect(delivered == (0..<UInt32(frames)).map { $0 }) // every frame, complete and in order
        #expect(assembler.framesDropped == 0)
    }
}
