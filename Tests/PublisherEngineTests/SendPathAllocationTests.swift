import Testing
@testable import PublisherEngine
@testable import PublisherCore
import Transport
import MediaCodecs
import Stats
import CAllocCounter

/// The send path (packetize into batch slots → stamp send-time fields → SRTP in place →
/// sendmmsg) must not allocate per packet. Counted with an interposed malloc, per thread.
@Suite(.serialized) struct SendPathAllocationTests {
    struct Rig {
        let sink: UDPSocket
        let loop: PublisherSession
        let io: SessionSocket
        let frames: [EncodedVideoFrame]
        let inbox = PacketBatch(capacity: 64)
        let streamIndex: Int

        init(suite: SRTPSuite) throws {
            sink = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0), receiveBuffer: 64 << 20)
            let layers = VideoLayerConfig.ladder(top: 1280, 720)
            var config = PublisherConfig(destination: sink.localAddress, layers: layers, key: .random(suite: suite))
            config.sendAudio = false
            config.congestionControl = false
            let plan = StreamPlan(config: config)
            io = SessionSocket(try UDPSocket(for: sink.localAddress))
            loop = try PublisherSession(config: config, plan: plan, startMicros: 0, wallOffsetMicros: 0)
            streamIndex = plan.streams.firstIndex { $0.layer == 2 }!
            // Real frames from the project's encoder: a key frame and inter frames of the top layer.
            let encoder = try LibvpxEncoder(config: layers[2])
            var picture = I420Frame(width: 1280, height: 720)
            var frames: [EncodedVideoFrame] = []
            for i in 0..<10 {
                SyntheticVideoSource().fill(&picture, frameNumber: UInt32(i), captureMillis: 0)
                if let f = try encoder.encode(
                    &picture, layer: 2, frameNumber: UInt32(i), captureMicros: Int64(i) * 33_333, forceKeyFrame: false, clock: { 0 })
                {
                    frames.append(f)
                }
            }
            self.frames = frames
        }

        var packetsSent: Int { loop.senders[streamIndex].stats.packetsSent }

        /// Sends every frame `rounds` times; returns (allocations on this thread, packets).
        func send(rounds: Int) throws -> (allocations: UInt64, packets: Int) {
            let packetsBefore = packetsSent
            var allocations: UInt64 = 0
            var now: Int64 = 0
            for _ in 0..<rounds {
                let before = alloc_counter_thread_allocations()
                // Indexing, not for-in: a debug-build for-in over structs allocates in the test itself.
                for i in 0..<frames.count {
                    loop.sendVideo(frames[i])
                    var t = now
                    while loop.pacer.queuedPackets > 0 { _ = loop.pump(now: t); io.flush(loop); t += 1_000 }
                    now = t
                }
                allocations += alloc_counter_thread_allocations() - before
                while try sink.receive(into: inbox) > 0 {} // keep the socket buffer from filling
            }
            return (allocations, packetsSent - packetsBefore)
        }
    }

    @Test func pubbotsSendPathAllocatesNothingPerPacket() throws {
        let rig = try Rig(suite: .aesCm)
        rig.loop.protectionEnabled = false
        _ = try rig.send(rounds: 2) // warm-up
        let (allocations, packets) = try rig.send(rounds: 20)
        #expect(packets > 500)
        #expect(rig.loop.counters.sendErrors == 0 && rig.loop.counters.sendBufferDrops == 0)
        #expect(allocations == 0, "\(allocations) allocations for \(packets) packets")
    }

    /// With SRTP on, the send path adds no allocation to SRTP's own (in a release build: none
    /// with AEAD-AES-GCM, and with AES-CM OpenSSL's HMAC re-initialisation, 2 per packet —
    /// `pubbot-bench srtp` counts them).
    @Test(arguments: SRTPSuite.allCases)
    func srtpWrapperAddsNoAllocations(_ suite: SRTPSuite) throws {
        let rig = try Rig(suite: suite)
        _ = try rig.send(rounds: 2)
        let (allocations, packets) = try rig.send(rounds: 10)
        // SRTP alone, same suite, same number of packets, straight calls into the session.
        let direct = try SRTPSession(key: .random(suite: suite), direction: .outbound)
        var buf = [UInt8](repeating: 0, count: 1400)
        buf[0] = 0x80; buf[1] = 96; buf[8] = 1
        for i in 0..<20 {
            buf[3] = UInt8(i);
            _ = try buf.withUnsafeMutableBytes { try direct.protectRTP($0.baseAddress!, length: 1100, capacity: $0.count) }
        }
        let before = alloc_counter_thread_allocations()
        for i in 0..<packets {
            buf[2] = UInt8(truncatingIfNeeded: (i + 20) >> 8); buf[3] = UInt8(truncatingIfNeeded: i + 20)
            _ = try buf.withUnsafeMutableBytes { try direct.protectRTP($0.baseAddress!, length: 1100, capacity: $0.count) }
        }
        let libsrtp = alloc_counter_thread_allocations() - before
        let perPacket = Double(allocations) / Double(packets), libsrtpPerPacket = Double(libsrtp) / Double(packets)
        #expect(abs(perPacket - libsrtpPerPacket) < 0.5, "send path \(perPacket)/packet vs SRTP alone \(libsrtpPerPacket)/packet")
    }

    @Test func theCounterCounts() {
        let before = alloc_counter_thread_allocations()
        var a: [Int] = []
        a.append(1)
        #expect(a.count == 1)
        #expect(alloc_counter_thread_allocations() - before >= 1)
    }
}
