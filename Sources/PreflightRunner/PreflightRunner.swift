public import PublisherEngine
public import ReceiverEngine
public import Preflight
import Platform

/// The pre-flight's driver: runs a real publisher (and the embedded receiver when there is one)
/// in wall-clock time, samples it every 250 ms into a `PreflightProbe`, stops when the estimate
/// is steady, nothing answers, the limit is reached or the user interrupts, and decides the
/// verdict — with a short audio-only phase when video does not fit. What is printed, and how,
/// stays with the command line.
public enum PreflightRunner {
    public struct Phase: Sendable {
        public var measurement: Measurement
        public var answered: Bool
        public var interrupted: Bool
        public var steady: Bool
        public var elapsedMicros: Int64
        public var publisher: PublisherSnapshot?
        public var receiver: ReceiverSnapshot?
        public var plan: StreamPlan
        /// The publisher could not start (socket, SRTP): said once, nothing was measured.
        public var startError: String?
        /// The phase ran the send-side estimator (video and congestion control on): its estimate
        /// is what the path carries.
        var hadEstimator: Bool { plan.config.sendVideo && plan.config.congestionControl }

        public init(
            measurement: Measurement, answered: Bool, interrupted: Bool, steady: Bool, elapsedMicros: Int64,
            publisher: PublisherSnapshot?, receiver: ReceiverSnapshot?, plan: StreamPlan, startError: String? = nil
        ) {
            self.measurement = measurement
            self.answered = answered
            self.interrupted = interrupted
            self.steady = steady
            self.elapsedMicros = elapsedMicros
            self.publisher = publisher
            self.receiver = receiver
            self.plan = plan
            self.startError = startError
        }
    }

    public struct Outcome: Sendable {
        public var phase: Phase
        /// Nil when nothing was measured (no answer, a start error, an interruption).
        public var verdict: Verdict?
        /// The audio-only phase's measurement, when video did not fit.
        public var audioOnly: Measurement?
        /// The audio-only phase could not start (said as a warning; the verdict stands).
        public var audioOnlyError: String?
    }

    /// How a phase gets its publisher: by default a plain one (SDES, the configured destination);
    /// with WHIP the connector POSTs an offer, applies the answer and hands back the publisher
    /// with its transport, and `end` DELETEs the session when the phase is over.
    public struct Connector: Sendable {
        public var open: @Sendable (PublisherConfig) -> Result<(publisher: Publisher, end: @Sendable () -> Void), ConnectError>
        public init(open: @escaping @Sendable (PublisherConfig) -> Result<(publisher: Publisher, end: @Sendable () -> Void), ConnectError>)
        {
            self.open = open
        }
        public static let plain = Connector { pc in
            do { return .success((try Publisher(config: pc), {})) } catch { return .failure(ConnectError(message: "\(error)")) }
        }
    }

    public struct ConnectError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public init(message: String) { self.message = message }
        public var description: String { message }
    }

    /// What the command line hears while a phase runs.
    public struct Observer {
        /// Asked at every sample; true stops the run (SIGINT).
        public var interrupted: () -> Bool
        /// Every sample: the publisher's figures at `now` (monotonic µs), e.g. for a stats stream.
        public var sample: (_ snapshot: PublisherSnapshot, _ now: Int64) -> Void
        /// Every sample: the phase's label, its share of the limit done, seconds elapsed, the estimate, and whether anything answered.
        public var progress: (_ label: String, _ fraction: Double, _ elapsedSeconds: Double, _ estimate: Int?, _ answered: Bool) -> Void

        public init(
            interrupted: @escaping () -> Bool, sample: @escaping (PublisherSnapshot, Int64) -> Void,
            progress: @escaping (String, Double, Double, Int?, Bool) -> Void
        ) {
            self.interrupted = interrupted
            self.sample = sample
            self.progress = progress
        }
    }

    /// The whole pre-flight: the measured phase, the verdict, and the audio-only phase if needed.
    /// `receiver` is the embedded one (started here, stopped at the end) or nil for a remote one.
    /// `minimumMicros`: the measured phase does not end on a steady estimate before this (a
    /// subscriber through the server, `--whep`, needs time to watch).
    public static func run(
        _ pc: PublisherConfig, receiver: ReceiverEngine?, thresholds: VerdictThresholds, observer: Observer,
        connector: Connector = .plain, minimumMicros: Int64 = 0
    ) -> Outcome {
        var phase = runPhase(
            pc, receiver: receiver, startReceiver: true, limit: pc.durationMicros ?? 15_000_000, label: "preflight", observer: observer,
            connector: connector, minimumMicros: minimumMicros, lossThreshold: thresholds.videoMaxLoss)
        guard !phase.interrupted, phase.startError == nil, phase.answered else {
            receiver?.stop()
            receiver?.wait()
            return Outcome(phase: phase, verdict: nil, audioOnly: nil)
        }
        var verdict = Verdict.decide(phase.measurement, thresholds: thresholds)
        if !pc.sendVideo { verdict.videoNotMeasured() }
        var outcome = Outcome(phase: phase, verdict: verdict, audioOnly: nil)
        // Audio-only phase: when video does not fit, measure audio on its own for 3 s.
        if !verdict.video.supported && pc.sendVideo {
            var ac = pc
            ac.sendVideo = false
            ac.layers = []
            ac.durationMicros = 3_000_000
            var quiet = observer
            quiet.sample = { _, _ in }
            let a = runPhase(
                ac, receiver: receiver, startReceiver: false, limit: 3_000_000, label: "audio-only", observer: quiet, connector: connector)
            outcome.audioOnlyError = a.startError
            if a.answered {
                outcome.audioOnly = a.measurement
                verdict.judgeAudio(
                    a.measurement, pathEstimate: phase.hadEstimator ? phase.measurement.estimate : nil, thresholds: thresholds)
                outcome.verdict = verdict
            }
        }
        receiver?.stop()
        receiver?.wait()
        if let receiver { phase.receiver = receiver.snapshot() } // final figures (latency percentiles)
        outcome.phase = phase
        return outcome
    }

    /// Publishes until the estimate is steady (or the limit), watching for any answer.
    static func runPhase(
        _ pc: PublisherConfig, receiver: ReceiverEngine?, startReceiver: Bool, limit: Int64, label: String,
        observer: Observer, connector: Connector, minimumMicros: Int64 = 0, lossThreshold: Double = 0.10
    ) -> Phase {
        let publisher: Publisher, end: @Sendable () -> Void
        switch connector.open(pc) {
        case let .success(c): (publisher, end) = c
        case let .failure(error):
            return Phase(
                measurement: Measurement(
                    estimate: 0, lossFraction: 1, roundTripTimeMillis: nil, jitterMillis: nil, videoBitrate: 0, durationMillis: 0),
                answered: false, interrupted: false, steady: false, elapsedMicros: 0,
                publisher: nil, receiver: nil, plan: StreamPlan(config: pc), startError: error.message)
        }
        let pc = publisher.config // what the answer made of it
        if startReceiver { receiver?.start() }
        publisher.start()
        let started = Clock.monotonicMicros()
        let withoutEstimator = !pc.sendVideo || !pc.congestionControl
        var probe = PreflightProbe(
            start: started, fixedBitrate: withoutEstimator ? Verdict.audioWireBitrate(pc.audioBitrate) : nil, probeCeiling: pc.probeCeiling)
        probe.lossThreshold = lossThreshold
        var steady = false
        var interrupted = false
        while !publisher.control.stopRequested {
            if observer.interrupted() { interrupted = true; break }
            Clock.sleep(micros: 250_000)
            let now = Clock.monotonicMicros()
            let p = publisher.snapshot()
            observer.sample(p, now)
            let status = probe.add(sample(p, now: now))
            let elapsed = Double(now - started) / 1e6
            observer.progress(label, min(1, elapsed / (Double(limit) / 1e6)), elapsed, p.network.estimate?.bitrate, probe.answered)
            if status == .noAnswer { break }
            if status == .steady && now - started >= minimumMicros { steady = true; break }
        }
        interrupted = interrupted || observer.interrupted()
        publisher.stop()
        publisher.wait()
        end()
        let now = Clock.monotonicMicros()
        let p = publisher.snapshot()
        let m = probe.measurement(
            now: now, roundTripTimeMillis: p.streams.compactMap(\.roundTripTimeMillis).max(),
            jitterMillis: p.streams.first { $0.kind == .audio }?.remoteJitterSeconds.map { $0 * 1000 })
        Clock.sleep(micros: 200_000) // the BYE and the last packets
        return Phase(
            measurement: m, answered: probe.answered, interrupted: interrupted, steady: steady, elapsedMicros: now - started,
            publisher: p, receiver: receiver?.snapshot(), plan: publisher.plan)
    }

    /// The middle value (upper median), nil for none.
    static func median(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.sorted()[values.count / 2] }

    /// A publisher snapshot as the probe reads it: the RTT is the median of the streams' (each
    /// from its own receiver report blocks; a paused layer's can be old).
    public static func sample(_ p: PublisherSnapshot, now: Int64) -> PreflightProbe.Sample {
        var s = PreflightProbe.Sample(
            now: now, answered: p.network.rtcpReceived > 0,
            estimate: p.network.estimate.map { ($0.bitrate, $0.acknowledgedOutsideProbes ?? $0.acknowledged, $0.lossFraction) },
            reportedLoss: p.streams.map(\.fractionLost).max() ?? 0,
            roundTripMicros: median(p.streams.compactMap(\.roundTripTimeMillis)).map { Int64($0 * 1000) },
            videoBytesSent: p.streams.filter { $0.kind == .video }.reduce(0) { $0 + $1.payloadBytesSent },
            feedback: p.network.estimate.flatMap {
                $0.packetsReported > 0
                    ? (
                        $0.packetsReported, $0.packetsReportedLost, $0.highestReportedSequence, $0.packetsReportedLostAtFullQueue,
                        $0.packetsReportedAtFullQueue
                    ) : nil
            })
        s.connected = p.network.transport.map { $0.srtpCipher != nil } ?? true
        return s
    }
}
