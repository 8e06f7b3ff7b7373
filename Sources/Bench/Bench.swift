import CBenchBaseline
public import DTLS
import Fleet
public import RTPCore
public import Transport
public import MediaCodecs
public import Stats
#if canImport(Glibc)
    import Glibc
    import Platform
#endif

/// One measured figure: operations per second of CPU over repeated runs, and (when there is
/// one) the same for a baseline measured in the same runs, interleaved, so the ratio survives
/// a noisy machine.
public struct BenchResult: Sendable {
    public var name: String
    public var unit: String
    public var runs: [Double]
    public var baseline: String?
    var baselineRuns: [Double] = []
    /// Heap allocations per operation in the measured code (nil: not counted).
    public var allocationsPerOp: Double?
    public var note: String?

    static func median(_ v: [Double]) -> Double {
        guard !v.isEmpty else { return 0 }
        let s = v.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    public var median: Double { Self.median(runs) }
    public var baselineMedian: Double? { baselineRuns.isEmpty ? nil : Self.median(baselineRuns) }
    /// Swift ÷ baseline throughput (1.0 = as fast; > 1 faster).
    public var ratio: Double? { baselineMedian.map { $0 > 0 ? median / $0 : 0 } }

    public var json: JSONValue {
        func r(_ v: Double) -> JSONValue { .double((v * 1000).rounded() / 1000) }
        return .object([
            ("name", .string(name)), ("unit", .string(unit)), ("median", r(median)), ("min", r(runs.min() ?? 0)),
            ("max", r(runs.max() ?? 0)),
            ("runs", .int(Int64(runs.count))), ("baseline", baseline.map { .string($0) } ?? .null),
            ("baselineMedian", baselineMedian.map(r) ?? .null), ("ratio", ratio.map(r) ?? .null),
            ("allocationsPerOp", allocationsPerOp.map(r) ?? .null), ("note", note.map { .string($0) } ?? .null)
        ])
    }
}

/// The hot-path benchmarks. `allocations` reads the calling thread's heap-allocation count
/// (the interposed malloc of `CAllocCounter`, linked into `pubbot-bench`).
public struct Benchmarks {
    public let allocations: () -> UInt64
    public var runs: Int
    public var scale: Double

    public init(runs: Int = 7, scale: Double = 1, allocations: @escaping () -> UInt64) {
        self.runs = runs
        self.scale = scale
        self.allocations = allocations
    }

    /// CPU seconds of this thread spent in `body`.
    @inline(__always)
    func cpuSeconds(_ body: () -> Void) -> Double {
        let t0 = Clock.threadCPUMicros()
        body()
        return Double(max(1, Clock.threadCPUMicros() - t0)) / 1e6
    }

    /// Realistic frames: 2 s of the synthetic 720p video at 2.5 Mbps from the project's encoder.
    public static func frames(
        codec: VideoCodec = .vp8, width: Int = 1280, height: Int = 720, count: Int = 60
    ) throws(CodecError) -> [[UInt8]] {
        let config = VideoLayerConfig.defaults(width: width, height: height, rid: "f")
        let encoder = try codec.makeEncoder(config: config, keyFrameInterval: 0, frameDrop: false)
        var picture = I420Frame(width: width, height: height)
        let source = SyntheticVideoSource(seed: 1)
        var out: [[UInt8]] = []
        for n in 0..<count {
            source.fill(&picture, frameNumber: UInt32(n), captureMillis: UInt32(n * 33))
            if let f = try encoder.encode(
                &picture, layer: 0, frameNumber: UInt32(n), captureMicros: Int64(n) * 33_333, forceKeyFrame: n == 0, clock: { 0 })
            {
                out.append(f.bytes)
            }
        }
        return out
    }

    // MARK: packetizer

    /// Packets per CPU-second: the engine's path (header template with MID/RID/transport-cc/
    /// abs-send-time; VP8: descriptor with picture ID, about-equal split; H.264: RFC 6184
    /// single NAL / STAP-A / FU-A; VP9: RFC 9628 flexible mode; AV1: OBU elements; into arena slots) against the C loop doing the same bytes.
    public func packetize(frames: [[UInt8]], codec: VideoCodec = .vp8, mtu: Int = 1200) -> BenchResult {
        let template = RTPHeaderTemplate(
            payloadType: 96, ssrc: 0x1234_5678, strings: [(RTPExtension.mid.id, "0"), (RTPExtension.rid.id, "f")],
            transportSequence: true, absSendTime: true)
        let slotCount = 256, slotSize = PacketArena.slotSize
        let arena = PacketArena(capacity: slotCount)
        let maxPayload = mtu - template.size
        let totalBytes = frames.reduce(0) { $0 + $1.count }
        // About 20 ms of work per run: 600 MB of frames, 60 MB for H.264, whose start-code scan
        // reads every byte (runs of 2 ms were timer- and cache-bound).
        let bytesPerRun = codec == .h264 ? 60_000_000 : 600_000_000
        let repeats = max(1, Int(Double(bytesPerRun / max(1, totalBytes)) * scale))
        var result = BenchResult(
            name: codec == .vp8 ? "packetize" : "packetize-\(codec.rawValue)", unit: "packets/s/core", runs: [],
            baseline: "C \(codec.sdpName) packetizer loop (same bytes)")
        let cFrames = frames.map { f -> UnsafeMutablePointer<UInt8> in
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: f.count)
            p.initialize(from: f, count: f.count)
            return p
        }
        defer { cFrames.forEach { $0.deallocate() } }
        // The Swift loop reads its own copy of the frames through pointers too, as the engine
        // reads an encoder's output: no array retained and released per frame.
        let swiftFrames = frames.map { f -> UnsafeBufferPointer<UInt8> in
            let p = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: f.count)
            _ = p.initialize(from: f)
            return UnsafeBufferPointer(p)
        }
        defer { swiftFrames.forEach { $0.deallocate() } }
        let sizes = frames.map(\.count)
        let cSlots = UnsafeMutableRawPointer.allocate(byteCount: slotCount * slotSize, alignment: 64).assumingMemoryBound(to: UInt8.self)
        defer { cSlots.deallocate() }
        let cLengths = UnsafeMutablePointer<Int32>.allocate(capacity: slotCount)
        defer { cLengths.deallocate() }
        var seqC: UInt16 = 0, pidC: UInt16 = 0
        var allocs: UInt64 = 0, packets = 0
        for _ in 0..<runs {
            // C baseline
            var nC = 0
            let tC = cpuSeconds {
                cFrames.withUnsafeBufferPointer { fp in
                    sizes.withUnsafeBufferPointer { sp in
                        template.bytes.withUnsafeBufferPointer { hp in
                            for _ in 0..<repeats {
                                let ptrs = UnsafeRawPointer(fp.baseAddress!).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
                                switch codec {
                                case .vp8:
                                    nC += cbench_packetize(
                                        ptrs, sp.baseAddress, frames.count, hp.baseAddress, hp.count, maxPayload, cSlots, slotSize,
                                        slotCount, cLengths, &seqC, &pidC)
                                case .h264:
                                    nC += cbench_packetize_h264(
                                        ptrs, sp.baseAddress, frames.count, hp.baseAddress, hp.count, maxPayload, cSlots, slotSize,
                                        slotCount, cLengths, &seqC)
                                case .vp9:
                                    nC += cbench_packetize_vp9(
                                        ptrs, sp.baseAddress, frames.count, hp.baseAddress, hp.count, maxPayload, cSlots, slotSize,
                                        slotCount, cLengths, &seqC, &pidC, frames.count)
                                case .av1:
                                    nC += cbench_packetize_av1(
                                        ptrs, sp.baseAddress, frames.count, hp.baseAddress, hp.count, maxPayload, cSlots, slotSize,
                                        slotCount, cLengths, &seqC)
                                }
                            }
                        }
                    }
                }
            }
            result.baselineRuns.append(Double(nC) / tC)
            // Swift: the engine's packetizer into arena slots.
            var seq: UInt16 = 0, pid: UInt16 = 0, slot = 0, n = 0
            let a0 = allocations()
            let t = cpuSeconds {
                for _ in 0..<repeats {
                    var f = 0
                    while f < swiftFrames.count {
                        n += packetizeFrame(
                            swiftFrames[f], codec: codec, key: f == 0, template: template, arena: arena, slot: &slot, slotCount: slotCount,
                            maxPayload: maxPayload, seq: &seq, pid: &pid)
                        f += 1
                    }
                }
            }
            allocs += allocations() - a0
            packets += n
            result.runs.append(Double(n) / t)
        }
        result.allocationsPerOp = Double(allocs) / Double(max(1, packets))
        return result
    }

    /// One frame through the codec's packetizer into arena slots (the engine's path); returns
    /// the packets written. Each codec's loop is a function of its own: in one function holding
    /// all four, the compiler left each packetizer's `next` a call per packet.
    func packetizeFrame(
        _ frameBytes: UnsafeBufferPointer<UInt8>, codec: VideoCodec, key: Bool, template: RTPHeaderTemplate, arena: PacketArena,
        slot: inout Int, slotCount: Int, maxPayload: Int, seq: inout UInt16, pid: inout UInt16
    ) -> Int {
        var out = Slots(
            header: template.plainWords!, slots: arena.pointer(0), lengths: arena.lengths, slot: slot, slotCount: slotCount, seq: seq,
            ts: UInt32(truncatingIfNeeded: Int(pid) * 3000))
        let frame = Span(_unsafeElements: frameBytes)
        let ok: Bool
        switch codec {
        case .vp8: ok = Self.vp8(frame, maxPayload: maxPayload, pid: pid, into: &out)
        case .h264: ok = Self.h264(frame, maxPayload: maxPayload, into: &out)
        case .vp9: ok = Self.vp9(frame, maxPayload: maxPayload, pid: pid, key: key, into: &out)
        case .av1: ok = Self.av1(frame, maxPayload: maxPayload, key: key, into: &out)
        }
        slot = out.slot
        seq = out.seq
        if ok { pid = (pid &+ 1) & 0x7FFF }
        return out.count
    }

    /// Where a frame's packets go: arena slots in turn, each with the RTP header first. It holds
    /// the arena's storage and the template's words as plain values: a copy of the template or
    /// the arena itself cost a retain and a release per frame.
    struct Slots {
        let header: RTPHeaderTemplate.Words
        let slots: UnsafeMutableRawPointer
        let lengths: UnsafeMutablePointer<Int32>
        var slot: Int
        let slotCount: Int
        var seq: UInt16
        let ts: UInt32
        var count = 0

        /// The RTP header and then `payload` into each of `n` slots.
        @inline(__always)
        mutating func emit(_ n: Int, _ payload: (inout ByteWriter) throws(RTPWriteError) -> Void) throws(RTPWriteError) {
            // In locals through the loop (registers), stored back once.
            var slot = self.slot, seq = self.seq, count = self.count
            defer {
                self.slot = slot
                self.seq = seq
                self.count = count
            }
            for i in 0..<n {
                var w = ByteWriter(UnsafeMutableRawBufferPointer(start: slots + slot &* PacketArena.slotSize, count: PacketArena.slotSize))
                try header.write(to: &w, sequenceNumber: seq, timestamp: ts, marker: i + 1 == n)
                try payload(&w)
                lengths[slot] = Int32(truncatingIfNeeded: w.count) // a slot is 2 KB
                seq &+= 1
                slot &+= 1
                if slot == slotCount { slot = 0 }
                count &+= 1
            }
        }

        /// The RTP header and then `payload` into slots until `payload` says its packet was the
        /// frame's last; that packet's marker set after it (as the engine does for AV1, and the C
        /// loop for every codec).
        @inline(__always)
        mutating func emitToMarker(_ payload: (inout ByteWriter) throws(RTPWriteError) -> Bool) throws(RTPWriteError) {
            var slot = self.slot, seq = self.seq, count = self.count
            defer {
                self.slot = slot
                self.seq = seq
                self.count = count
            }
            while true {
                var w = ByteWriter(UnsafeMutableRawBufferPointer(start: slots + slot &* PacketArena.slotSize, count: PacketArena.slotSize))
                try header.write(to: &w, sequenceNumber: seq, timestamp: ts, marker: false)
                let last = try payload(&w)
                if last { w.setBits(at: 1, 0x80) }
                lengths[slot] = Int32(truncatingIfNeeded: w.count)
                seq &+= 1
                slot &+= 1
                if slot == slotCount { slot = 0 }
                count &+= 1
                if last { return }
            }
        }
    }

    @inline(never)
    static func vp8(_ frame: Span<UInt8>, maxPayload: Int, pid: UInt16, into out: inout Slots) -> Bool {
        do throws(RTPWriteError) {
            var p = try VP8Packetizer(frameSize: frame.count, maxPayloadSize: maxPayload, descriptor: VP8PayloadDescriptor(pictureID: pid))
            try out.emit(p.packetCount) { (w: inout ByteWriter) throws(RTPWriteError) in _ = try p.next(frame: frame, into: &w) }
            return true
        } catch { return false }
    }

    @inline(never)
    static func h264(_ frame: Span<UInt8>, maxPayload: Int, into out: inout Slots) -> Bool {
        do throws(RTPWriteError) {
            var p = try H264Packetizer(frame: frame, maxPayloadSize: maxPayload)
            try out.emit(p.packetCount) { (w: inout ByteWriter) throws(RTPWriteError) in _ = try p.next(frame: frame, into: &w) }
            return true
        } catch { return false }
    }

    @inline(never)
    static func vp9(_ frame: Span<UInt8>, maxPayload: Int, pid: UInt16, key: Bool, into out: inout Slots) -> Bool {
        do throws(RTPWriteError) {
            var p = try VP9Packetizer(
                frameSize: frame.count, maxPayloadSize: maxPayload, pictureID: pid, keyFrame: key, width: 1280, height: 720)
            try out.emit(p.packetCount) { (w: inout ByteWriter) throws(RTPWriteError) in _ = try p.next(frame: frame, into: &w) }
            return true
        } catch { return false }
    }

    @inline(never)
    static func av1(_ frame: Span<UInt8>, maxPayload: Int, key: Bool, into out: inout Slots) -> Bool {
        do throws(RTPWriteError) {
            var p = try AV1Packetizer(frame: frame, maxPayloadSize: maxPayload, keyFrame: key)
            try out.emitToMarker { (w: inout ByteWriter) throws(RTPWriteError) in try p.next(frame: frame, into: &w) ?? true }
            return true
        } catch { return false }
    }

    // MARK: SRTP

    /// Protects per CPU-second through `SRTPSession` against direct `srtp_protect` calls in C.
    public func srtp(suite: SRTPSuite, packetSize: Int = 1200) -> BenchResult {
        let key = SRTPKey.random(suite: suite)
        let slotCount = 64, slotSize = PacketArena.slotSize
        let count = max(1000, Int((suite == .gcm ? 200_000 : 50_000) * scale))
        var result = BenchResult(
            name: "srtp-\(suite.rawValue)", unit: "packets/s/core", runs: [], baseline: "libsrtp2's srtp_protect called from C")
        let slots = UnsafeMutableRawPointer.allocate(byteCount: slotCount * slotSize, alignment: 64)
        defer { slots.deallocate() }
        for i in 0..<slotCount {
            let p = slots + i * slotSize
            p.initializeMemory(as: UInt8.self, repeating: 0xab, count: slotSize)
            p.storeBytes(of: 0x80, as: UInt8.self)
            p.storeBytes(of: 96, toByteOffset: 1, as: UInt8.self)
            p.storeBytes(of: UInt32(0x1234_5678).bigEndian, toByteOffset: 8, as: UInt32.self)
        }
        var allocs: UInt64 = 0, total = 0
        for _ in 0..<runs {
            guard let session = try? SRTPSession(key: key, direction: .outbound) else { result.note = "SRTPSession failed"; return result }
            var rc: Int32 = 0
            let tC = cpuSeconds {
                rc = key.withMaterial { k in
                    cbench_srtp_protect(
                        suite == .gcm ? 1 : 0, k.baseAddress, slots.assumingMemoryBound(to: UInt8.self), slotSize, slotCount,
                        Int32(packetSize), count)
                }
            }
            if rc != 0 { result.note = "C baseline failed: libsrtp2 error \(rc)" }
            result.baselineRuns.append(Double(count) / tC)
            var seq: UInt16 = 1
            let a0 = allocations()
            let t = cpuSeconds {
                for i in 0..<count {
                    let p = slots + (i % slotCount) * slotSize
                    p.storeBytes(of: seq.bigEndian, toByteOffset: 2, as: UInt16.self)
                    seq &+= 1
                    _ = try? session.protectRTP(p, length: packetSize, capacity: slotSize)
                }
            }
            allocs += allocations() - a0
            total += count
            result.runs.append(Double(count) / t)
        }
        result.allocationsPerOp = Double(allocs) / Double(max(1, total))
        result.note =
            (result.note.map { $0 + "; " } ?? "")
            + "the baseline is libsrtp2 as Debian builds it (on NSS); SRTPSession is RFC 3711/7714 on OpenSSL's AES and HMAC"
        return result
    }

    // MARK: send path

    /// Datagrams per CPU-second to a loopback socket nobody reads (the kernel still delivers
    /// each to it and drops it there): one `sendto` each (C), `sendmmsg` batches of 32, and the
    /// engine's batched send with UDP GSO for runs of equal size (a frame's packets).
    public func send(packetSize: Int = 1200, batch: Int = 32) throws -> [BenchResult] {
        let sink = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), receiveBuffer: 1 << 16)
        let plain = try UDPSocket(for: sink.localAddress, sendBuffer: 8 << 20)
        plain.disableGSO()
        let gso = try UDPSocket(for: sink.localAddress, sendBuffer: 8 << 20)
        let count = max(2_000, Int(200_000 * scale)) / batch * batch
        let buffers = UnsafeMutableRawPointer.allocate(byteCount: batch * packetSize, alignment: 64)
        defer { buffers.deallocate() }
        buffers.initializeMemory(as: UInt8.self, repeating: 0x42, count: batch * packetSize)
        var pointers = (0..<batch).map { Optional(buffers + $0 * packetSize) }
        var lengths = [UInt32](repeating: UInt32(packetSize), count: batch)
        var each = BenchResult(name: "send-sendto", unit: "datagrams/s/core", runs: [], baseline: nil)
        var mmsg = BenchResult(name: "send-sendmmsg", unit: "datagrams/s/core", runs: [], baseline: "sendto per datagram (C)")
        var seg = BenchResult(name: "send-gso", unit: "datagrams/s/core", runs: [], baseline: "sendto per datagram (C)")
        seg.note = gso.usesGSO ? "UDP_SEGMENT runs inside one sendmmsg" : "this kernel refused UDP GSO: plain sendmmsg"
        var allocs: UInt64 = 0
        for _ in 0..<runs {
            var ok = 0
            let t1 = cpuSeconds {
                ok = sendtoEach(plain, to: sink.localAddress, buffers, packetSize, count)
            }
            each.runs.append(Double(ok) / t1)
            var sent = 0
            let t2 = cpuSeconds {
                for _ in 0..<(count / batch) {
                    sent += (try? plain.send(pointers: &pointers, lengths: &lengths, count: batch, to: sink.localAddress)) ?? 0
                }
            }
            mmsg.runs.append(Double(sent) / t2)
            sent = 0
            let a0 = allocations()
            let t3 = cpuSeconds {
                for _ in 0..<(count / batch) {
                    sent += (try? gso.send(pointers: &pointers, lengths: &lengths, count: batch, to: sink.localAddress)) ?? 0
                }
            }
            allocs += allocations() - a0
            seg.runs.append(Double(sent) / t3)
        }
        mmsg.baselineRuns = each.runs
        seg.baselineRuns = each.runs
        seg.allocationsPerOp = Double(allocs) / Double(max(1, count * runs))
        seg.note = (seg.note ?? "") + (gso.usesGSO ? "" : " (GSO turned off after a refusal)")
        return [each, mmsg, seg]
    }

    func sendtoEach(_ socket: UDPSocket, to dst: SocketAddress, _ buf: UnsafeMutableRawPointer, _ len: Int, _ count: Int) -> Int {
        dst.withRawSockaddr { sa, salen in
            cbench_sendto_each(socket.fd, sa, UInt32(salen), buf.assumingMemoryBound(to: UInt8.self), len, count)
        }
    }
}

extension Benchmarks {
    // MARK: subscribers

    /// Non-decoding subscribers per core of the fleet's subscriber loop (its real driver and
    /// sessions on loopback sockets; see `SubscriberBench`): `count` of them fed a 180p VP8
    /// stream at 30 fps and 50 audio packets a second for `seconds` per run. No baseline; the
    /// goal is ≥ 1 000 per core.
    public func subscribers(count: Int = 500, seconds: Double = 5) throws -> BenchResult {
        let frames = try Self.frames(codec: .vp8, width: 320, height: 180, count: 60)
        let n = max(20, Int(Double(count) * min(1, scale * 4)))
        var result = BenchResult(name: "subscribers", unit: "subscribers/core", runs: [])
        var notes: [String] = []
        for _ in 0..<max(1, min(runs, 3)) {
            let r = try SubscriberBench.run(subscribers: n, frames: frames, seconds: scale < 1 ? 2 : seconds)
            let cores = Double(r.cpuMicros) / Double(max(1, r.wallMicros))
            result.runs.append(Double(n) / max(cores, 1e-6))
            notes.append(
                "\(n) subscribers: the loop \(Int((cores * 1000).rounded()) / 10) % of a core, \(r.packets) packets, \(r.frames) frames completed"
                    + (r.silent > 0 ? ", \(r.silent) got no frame" : ""))
            if r.silent > 0 { result.note = "some subscribers completed no frame: the figure is not valid" }
        }
        result.note =
            ([result.note].compactMap { $0 } + [notes.last ?? ""] + [
                "one epoll loop; loopback sockets; the sender's CPU not counted; SDES keys in place of DTLS"
            ]).joined(separator: "; ")
        return result
    }

    /// A whole DTLS-SRTP handshake (client and server endpoints in memory, P-256 certificates, the
    /// fingerprint check and the key export: what each WHIP bot costs once at connect), in
    /// handshakes per CPU-second of both sides together. No baseline: it is OpenSSL's cost.
    public func dtlsHandshake() throws(DTLSError) -> BenchResult {
        let client = try DTLSCertificate(commonName: "bench-client"), server = try DTLSCertificate(commonName: "bench-server")
        let n = max(3, Int(100 * scale))
        var runs: [Double] = []
        for _ in 0..<self.runs {
            var failed = false
            let s = cpuSeconds {
                for _ in 0..<n {
                    guard let c = try? DTLSEndpoint(role: .client, certificate: client, remoteFingerprint: server.fingerprint),
                        let v = try? DTLSEndpoint(role: .server, certificate: server, remoteFingerprint: client.fingerprint)
                    else { failed = true; return }
                    c.start()
                    var rounds = 0
                    while (c.state == .handshaking || v.state == .handshaking) && rounds < 20 {
                        while let d = c.pollTransmit() { v.handle(d) }
                        while let d = v.pollTransmit() { c.handle(d) }
                        rounds += 1
                    }
                    if c.state != .connected || v.state != .connected { failed = true; return }
                }
            }
            if failed { throw DTLSError(description: "the benchmark handshake did not complete") }
            runs.append(Double(n) / s)
        }
        return BenchResult(
            name: "dtls-handshake", unit: "handshakes/s", runs: runs, note: "client + server CPU together, P-256, AEAD_AES_128_GCM export")
    }
}
