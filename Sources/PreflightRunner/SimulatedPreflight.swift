public import Simulation
public import Preflight
import PublisherEngine

extension PreflightRunner {
    /// The pre-flight in virtual time (`pubbot simulate --preflight`, the scenario tests): the
    /// same publisher configuration as `preflight` (padding up to the estimate, probing to
    /// `probeCeiling`), the same `PreflightProbe` sampled every 250 ms of simulated time, the
    /// same stop rules (steady, no answer after 3 s, the limit), the same verdict and audio-only
    /// phase — over the emulated link instead of a socket. `config.durationMicros` is the limit.
    /// `onSample` sees every sample (stats streams, progress).
    public static func simulate(
        _ config: SimulationConfig, thresholds: VerdictThresholds,
        onSample: (Simulation) -> Void = { _ in }
    ) throws(Simulation.SetupError) -> (Outcome, Simulation) {
        let (phase, sim) = try simulatePhase(config, lossThreshold: thresholds.videoMaxLoss, onSample: onSample)
        guard phase.answered else { return (Outcome(phase: phase, verdict: nil, audioOnly: nil), sim) }
        var verdict = Verdict.decide(phase.measurement, thresholds: thresholds)
        if !config.publisher.sendVideo { verdict.videoNotMeasured() }
        var outcome = Outcome(phase: phase, verdict: verdict, audioOnly: nil)
        if !verdict.video.supported && config.publisher.sendVideo {
            var audio = config
            audio.publisher.sendVideo = false
            audio.publisher.layers = []
            audio.durationMicros = 3_000_000
            audio.publisher.durationMicros = 3_000_000
            let (a, _) = try simulatePhase(audio, onSample: { _ in })
            if a.answered {
                outcome.audioOnly = a.measurement
                verdict.judgeAudio(
                    a.measurement, pathEstimate: phase.hadEstimator ? phase.measurement.estimate : nil, thresholds: thresholds)
                outcome.verdict = verdict
            }
        }
        return (outcome, sim)
    }

    static func simulatePhase(
        _ config: SimulationConfig, lossThreshold: Double = 0.10, onSample: (Simulation) -> Void
    ) throws(Simulation.SetupError) -> (
        Phase, Simulation
    ) {
        let sim = try Simulation(config: config)
        let pc = config.publisher
        let withoutEstimator = !pc.sendVideo || !pc.congestionControl
        var probe = PreflightProbe(
            start: sim.now, fixedBitrate: withoutEstimator ? Verdict.audioWireBitrate(pc.audioBitrate) : nil, probeCeiling: pc.probeCeiling)
        probe.lossThreshold = lossThreshold
        var status = PreflightProbe.Status.measuring
        var stoppedAt: Int64?
        sim.run(intervalMicros: 250_000) { final in
            guard !final, status == .measuring else { return }
            onSample(sim)
            status = probe.add(sample(sim.publisherSnapshot, now: sim.now))
            if status != .measuring { stoppedAt = sim.now; sim.stop() }
        }
        let end = stoppedAt ?? sim.origin + config.durationMicros
        let p = sim.publisherSnapshot
        let m = probe.measurement(
            now: end, roundTripTimeMillis: p.streams.compactMap(\.roundTripTimeMillis).max(),
            jitterMillis: p.streams.first { $0.kind == .audio }?.remoteJitterSeconds.map { $0 * 1000 })
        let phase = Phase(
            measurement: m, answered: probe.answered, interrupted: false, steady: status == .steady, elapsedMicros: end - sim.origin,
            publisher: p, receiver: sim.receiverSnapshot(final: true), plan: sim.plan())
        return (phase, sim)
    }
}
