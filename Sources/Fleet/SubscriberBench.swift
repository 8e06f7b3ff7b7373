import Platform
import Receiver
import Transport
import RTPCore

/// `pubbot-bench subscribers`: what one non-decoding subscriber costs the fleet's subscriber
/// loop — its real driver (`SubscriberLoop`: epoll, recvmmsg with arrival times, the timer heap)
/// and real sessions (`ReceiverSession`: SRTP, reassembly, freezes, RR, NACK, PLI, transport-cc),
/// each on its own loopback socket, fed a 180p stream at 30 fps and 50 audio packets a second
/// by a sender thread whose CPU is not counted. SDES keys stand in for DTLS (the handshake is
/// once per subscriber; its steady cost is what a load test pays).
package enum SubscriberBench {
    package struct Result: Sendable {
        /// The loop thread's CPU over the measured window, and the window.
        package var cpuMicros: Int64
        package var wallMicros: Int64
        /// Packets and completed video frames the subscribers counted, and how many counted none.
        package var packets: Int
        package var frames: Int
        package var silent: Int
    }

    /// - Parameters: `frames`: one encoded video frame after another (the first a key frame), sent
    ///   in turn at 30 fps to every subscriber; `seconds` measured after one of warm-up.
    package static func run(subscribers count: Int, frames: [[UInt8]], seconds: Double) throws -> Result {
        let key = SRTPKey.random(suite: .gcm)
        guard let loopback = SocketAddress(ip: [127, 0, 0, 1], port: 0) else { throw SocketError("127.0.0.1", errno: 22) }
        let sender = try UDPSocket(bind: loopback)
        let loop = SubscriberLoop()
        var targets: [(SocketAddress, SRTPSession)] = []
        let now = Clock.monotonicMicros()
        for k in 0..<count {
            let socket = try UDPSocket(bind: loopback)
            var rc = ReceiverConfig(listen: socket.localAddress, key: key)
            rc.maxPublishers = 1
            rc.decodedPublishers = 0
            rc.nonDecodingFollowsChain = true
            rc.deadlineSteps = true
            guard
                let session = try? ReceiverSession(
                    config: rc, startMicros: now, wallOffsetMicros: Clock.wallMicros() - now, seed: UInt64(k + 1)),
                let out = try? SRTPSession(key: key, direction: .outbound)
            else { throw SocketError("SRTP session setup", errno: 22) }
            loop.hand(SubscriberBot(number: k, session: session, socket: socket, subscription: nil))
            targets.append((socket.localAddress, out))
        }
        let members = Locked((0..<count).map { SubscriberFleet.Member(number: $0, room: 0, decodes: false) })
        let thread = JoinableThread(name: "pubbot-bench-subs") { loop.run(members: members) }
        // The streams: VP8 frames as RTP (one-byte descriptor, S on a frame's first packet, the
        // marker on its last), Opus-sized audio; one SSRC each for every subscriber.
        let video = VideoCodec.vp8.payloadTypes.media
        var buffer = [UInt8](repeating: 0, count: 1500)
        var seq: UInt16 = 1, audioSeq: UInt16 = 1
        var timestamp: UInt32 = 0, audioTimestamp: UInt32 = 0
        func send(_ payload: ArraySlice<UInt8>, first: Bool, marker: Bool, audio: Bool) {
            let header: [UInt8] = [
                0x80, (marker ? 0x80 : 0) | (audio ? 111 : video), UInt8((audio ? audioSeq : seq) >> 8),
                UInt8((audio ? audioSeq : seq) & 0xFF)
            ]
            let ts = audio ? audioTimestamp : timestamp
            let ssrc: UInt32 = audio ? 0x0A0D_10A0 : 0x0B1D_E000
            for (to, srtp) in targets {
                var n = 0
                for b in header { buffer[n] = b; n += 1 }
                for i in 0..<4 { buffer[n] = UInt8(truncatingIfNeeded: ts >> (24 - 8 * UInt32(i))); n += 1 }
                for i in 0..<4 { buffer[n] = UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * UInt32(i))); n += 1 }
                if !audio { buffer[n] = first ? 0x10 : 0x00; n += 1 }
                for b in payload { buffer[n] = b; n += 1 }
                let length = n
                buffer.withUnsafeMutableBytes { b in
                    if let sealed = try? srtp.protectRTP(b.baseAddress!, length: length, capacity: b.count) {
                        try? sender.send(UnsafeRawBufferPointer(rebasing: b[0..<sealed]), to: to)
                    }
                }
            }
            if audio { audioSeq &+= 1 } else { seq &+= 1 }
        }
        let start = Clock.monotonicMicros()
        let warm = start + 1_000_000, end = warm + Int64(seconds * 1e6)
        var cpuAtWarm: Int64?
        var nextFrame = start, nextAudio = start, frame = 0
        while true {
            let t = Clock.monotonicMicros()
            if t >= end { break }
            if cpuAtWarm == nil && t >= warm { cpuAtWarm = loop.published.value.cpuMicros }
            if t >= nextAudio {
                send(ArraySlice(repeating: 0x5A, count: 80), first: true, marker: false, audio: true)
                audioTimestamp &+= 960
                nextAudio += 20_000
            }
            if t >= nextFrame {
                let bytes = frames[frame % frames.count]
                var at = 0
                while at < bytes.count {
                    let upTo = min(bytes.count, at + 1100)
                    send(bytes[at..<upTo], first: at == 0, marker: upTo == bytes.count, audio: false)
                    at = upTo
                }
                frame += 1
                timestamp &+= 3000
                nextFrame += 33_333
            }
            Clock.sleep(untilMicros: min(nextAudio, nextFrame))
        }
        // The loop publishes its CPU every 200 ms: what it had at the end, less the warm-up.
        Clock.sleep(micros: 250_000)
        let cpuEnd = loop.published.value.cpuMicros
        loop.stop.value = true
        thread.join()
        var result = Result(cpuMicros: cpuEnd - (cpuAtWarm ?? 0), wallMicros: end - warm + 250_000, packets: 0, frames: 0, silent: 0)
        for b in loop.finished() {
            let snap = b.session.snapshot(final: true)
            let v = snap.streams.first { $0.kind == .video }
            result.packets += snap.streams.reduce(0) { $0 + $1.packetsReceived }
            result.frames += v?.framesAssembled ?? 0
            if (v?.framesAssembled ?? 0) == 0 { result.silent += 1 }
        }
        return result
    }
}
