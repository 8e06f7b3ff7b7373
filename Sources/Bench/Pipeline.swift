import PublisherEngine
import Transport
import MediaCodecs
import Platform

extension Benchmarks {
    /// Whole bot, live: a real publisher (720p/360p/180p simulcast + Opus, SRTP, pacing,
    /// congestion control) to a loopback socket that only reads and drops, for `seconds`.
    /// Reports the process CPU over the codecs' own CPU (encoder time measured inside the run
    /// with per-thread CPU clocks): 1.0 would mean everything but the codecs is free.
    public func pipeline(seconds: Double) throws -> BenchResult {
        // Nobody reads the sink: the kernel drops at its small buffer, and no receive CPU counts.
        let sink = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), receiveBuffer: 1 << 16)
        var c = PublisherConfig(destination: sink.localAddress, key: .random(suite: .aesCm))
        c.congestionControl = false // nobody sends feedback: every layer at its target
        c.durationMicros = Int64(seconds * 1e6)
        var result = BenchResult(name: "pipeline-live", unit: "process CPU ÷ codec CPU", runs: [], baseline: nil)
        var vitals = ProcessVitals()
        let p = try Publisher(config: c)
        _ = vitals.sample()
        let cpu0 = processCPUMicros()
        p.start()
        p.wait()
        let cpu = Double(processCPUMicros() - cpu0)
        let s = p.snapshot()
        let codec = Double(s.media.encodeMicros.reduce(0, +) + s.media.audioEncodeMicros)
        result.runs = [cpu / max(1, codec)]
        let packets = s.streams.reduce(0) { $0 + $1.packetsSent }
        let draw = Double(s.media.drawMicros)
        let rest = cpu - codec - draw
        result.note =
            "process \(Int(cpu / 1e3)) ms CPU in \(seconds) s: codecs \(Int(codec / 1e3)) ms (VP8 \(s.media.encodeMicros.map { String($0 / 1000) }.joined(separator: "/")) ms per layer, Opus \(s.media.audioEncodeMicros / 1000) ms), drawing the synthetic pictures \(Int(draw / 1e3)) ms, everything else (packetize, SRTP, pacing, send, RTCP) \(Int(rest / 1e3)) ms for \(packets) packets; (codecs + drawing) ratio \(String(Double(Int(cpu / max(1, codec + draw) * 100)) / 100))"
        return result
    }

    func processCPUMicros() -> Int64 {
        var u = rusage()
        getrusage(RUSAGE_SELF.rawValue, &u)
        return Int64(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1_000_000 + Int64(u.ru_utime.tv_usec + u.ru_stime.tv_usec)
    }
}

#if canImport(Glibc)
    import Glibc
#endif
