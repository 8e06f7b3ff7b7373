import Testing
@testable import Preflight

@Suite struct VerdictTests {
    @Test func audioMOSFollowsTheEModel() {
        // E-model worked value (ITU-T G.107, as opentok-network-test computes it): no loss and d = RTT/2 + 30 = 180 ms → R ≈ 88.6, MOS ≈ 4.30.
        #expect(abs(MOS.audio(roundTripTimeMillis: 300, lossFraction: 0) - 4.30) < 0.01)
        // Measured loss and RTT move it: 5 % loss, 100 ms RTT is clearly worse, 30 % is unusable.
        #expect(MOS.audio(roundTripTimeMillis: 100, lossFraction: 0.05) < 3.8)
        #expect(MOS.audio(roundTripTimeMillis: 100, lossFraction: 0.30) < 2.4)
        #expect(MOS.audio(roundTripTimeMillis: 0, lossFraction: 0) <= 4.5)
    }

    @Test func videoMOSAgainstResolution() {
        #expect(MOS.video(bitrate: 20_000, width: 1280, height: 720) == 1)
        #expect(MOS.video(bitrate: 2_500_000, width: 1280, height: 720) == 4.5) // above the ~2.09 Mbps target
        let mid = MOS.video(bitrate: 500_000, width: 1280, height: 720)
        #expect(mid > 2 && mid < 4.5)
    }

    func m(_ estimate: Int, loss: Double = 0, rtt: Double = 20) -> Measurement {
        Measurement(
            estimate: estimate, lossFraction: loss, roundTripTimeMillis: rtt, jitterMillis: 1, videoBitrate: estimate * 8 / 10,
            durationMillis: 5_000)
    }

    @Test(arguments: [
        (10_000_000, "1080p"), (4_200_000, "1080p"), (4_000_000, "720p"), (2_400_000, "720p"), (800_000, "360p"),
        (600_000, "360p"), (480_000, "270p"), (270_000, "270p"), (200_000, "180p"), (112_500, "180p")
    ])
    func recommendsTheHighestTierAtThreeQuartersOfTheSimulcastNeed(_ estimate: Int, _ tier: String) {
        let v = Verdict.decide(m(estimate))
        #expect(v.recommended?.name == tier)
        #expect(v.video.supported)
    }

    @Test func explainsWithTheMeasuredCause() {
        let v = Verdict.decide(m(800_000))
        #expect(v.video.reason == "estimate 800 kbps ≥ 0.75 × 650 kbps needed for 360p; < 0.75 × 1.55 Mbps needed for 540p")
        let none = Verdict.decide(m(100_000))
        #expect(!none.video.supported && none.recommended == nil)
        #expect(none.video.reason == "estimate 100 kbps < 0.75 × 150 kbps needed for 180p")
        #expect(none.audio.supported) // audio fits in 100 kbps
        let lossy = Verdict.decide(m(4_000_000, loss: 0.2))
        #expect(!lossy.video.supported && lossy.video.reason.hasPrefix("packet loss 20 %"))
        #expect(lossy.audio.supported) // Opus with in-band FEC: the E-model still gives ~2.8 at 20 %
        let awful = Verdict.decide(m(4_000_000, loss: 0.4))
        #expect(!awful.audio.supported && awful.audio.reason.hasPrefix("MOS"))
    }

    /// The audio-only phase after video did not fit: its own loss and RTT, the path's estimate.
    @Test func audioOnlyPhaseIsJudgedOnThePath() {
        #expect(Verdict.audioWireBitrate(32_000) == 60_800)
        let path = Measurement(
            estimate: 100_000, lossFraction: 0.01, roundTripTimeMillis: 40, jitterMillis: 2, videoBitrate: 30_000, durationMillis: 6_000)
        var v = Verdict.decide(path)
        #expect(
            !v.video.supported && v.recommendation == (v.audio.supported ? "audio only" : "none: neither video nor audio fits this path"))
        // The audio phase alone carried 32 kbps of its 60.8 (a fixed rate is not an estimate).
        let audio = Measurement(
            estimate: 32_000, lossFraction: 0, roundTripTimeMillis: 30, jitterMillis: 1, videoBitrate: 0, durationMillis: 3_000)
        v.judgeAudio(audio, pathEstimate: 100_000, thresholds: VerdictThresholds())
        #expect(v.audio.supported && v.recommendation == "audio only", "\(v.audio)")
        v.judgeAudio(audio, pathEstimate: nil, thresholds: VerdictThresholds())
        #expect(!v.audio.supported && v.recommendation.hasPrefix("none"), "no path estimate: the audio's own 32 kbps < 40 kbps")
        var lossy = audio
        lossy.lossFraction = 0.4
        v.judgeAudio(lossy, pathEstimate: 100_000, thresholds: VerdictThresholds())
        #expect(!v.audio.supported && v.audio.reason.contains("MOS"), "\(v.audio)")
    }

    @Test func requirements() {
        let v = Verdict.decide(m(800_000))
        #expect(v.meets("360p") && v.meets("180p") && v.meets("audio"))
        #expect(!v.meets("720p") && !v.meets("540p") && !v.meets("nonsense"))
    }

    @Test func nonSimulcastThresholds() {
        var t = VerdictThresholds()
        t.simulcast = false
        #expect(Verdict.decide(m(2_000_000), thresholds: t).recommended?.name == "720p") // 0.75 × 2.5M = 1.875M
    }

    @Test func steadyNeedsTwoQuietWindowsAfterTheMinimum() {
        var s = SteadyDetector()
        var t: Int64 = 0
        for _ in 0..<12 { t += 250_000; s.add(4_000_000, at: t) }
        #expect(!s.isSteady(now: t, start: 0)) // 3 s < 4 s minimum
        for _ in 0..<4 { t += 250_000; s.add(4_000_000, at: t) }
        #expect(s.isSteady(now: t, start: 0))
        var ramp = SteadyDetector()
        t = 0
        for i in 0..<24 { t += 250_000; ramp.add(300_000 + i * 150_000, at: t) } // still climbing
        #expect(!ramp.isSteady(now: t, start: 0))
        #expect(ramp.windowMean(now: t)! > 3_000_000)
    }

    @Test func aDropInTheLastWindowIsNotSteadyAndLongPathsWaitLonger() {
        var s = SteadyDetector()
        var t: Int64 = 0
        // Two windows with the same mean, but the last one holds a drop from 1.4M to 830k.
        for _ in 0..<8 { t += 250_000; s.add(1_000_000, at: t) }
        for i in 0..<8 { t += 250_000; s.add(i < 4 ? 1_400_000 : 830_000, at: t) }
        #expect(!s.isSteady(now: t, start: 0))
        var long = SteadyDetector()
        long.roundTripMicros = 600_000 // 6 RTT = 3.6 s window
        t = 0
        for _ in 0..<24 { t += 250_000; long.add(2_000_000, at: t) }
        #expect(!long.isSteady(now: t, start: 0)) // 6 s < 2 windows of 3.6 s
        for _ in 0..<6 { t += 250_000; long.add(2_000_000, at: t) }
        #expect(long.isSteady(now: t, start: 0))
    }

    /// With transport-cc the measured loss is the measured phase's own count (packets reported
    /// lost ÷ reported on from the moment the estimate settled to the end), not a mean of the
    /// loss-based rule's smoothed fraction — which here says 30 % while 2 % of the phase's
    /// packets were lost. The start-up's 20 % (pubbot's own probing) is reported apart.
    @Test func lossIsCountedOverTheMeasuredPhaseFromFeedback() {
        var probe = PreflightProbe(start: 0)
        var i = 0
        var status = PreflightProbe.Status.measuring
        while status == .measuring && i < 80 {
            i += 1
            status = probe.add(
                .init(
                    now: Int64(i) * 250_000, answered: true, estimate: (1_000_000, 1_000_000, 0.3), reportedLoss: 0.25,
                    roundTripMicros: 20_000,
                    videoBytesSent: i * 25_000,
                    feedback: (
                        reported: i * 100, lost: i <= 16 ? i * 20 : 320 + (i - 16) * 2,
                        highest: Int64(1_000 + i * 100 - 1), lostAtFullQueue: 0, reportedAtFullQueue: 0
                    )))
        }
        // Settled at 4 s (two quiet 2 s windows), then measured for 2.5 s.
        #expect(status == .steady && probe.settledAt == 4_000_000 && i == 26, "\(status) \(String(describing: probe.settledAt)) \(i)")
        let m = probe.measurement(now: Int64(i) * 250_000, roundTripTimeMillis: 20, jitterMillis: 1)
        #expect(abs(m.lossFraction - 0.02) < 1e-9 && m.lossCountedFromFeedback && m.lossAfterSettling, "\(m)")
        #expect(m.lossWindowMillis == 2_500, "\(String(describing: m.lossWindowMillis))")
        // The packets it was counted from, by transport-wide sequence number, for a capture to
        // count again: those after the settling sample (1 600 reported) up to the last (2 600),
        // offset by the first number sent (1 000); the start-up's are the ones before.
        #expect(
            m.lossCount == LossCount(reported: 1_000, lost: 20, firstSequence: 2_600, lastSequence: 3_599),
            "\(String(describing: m.lossCount))")
        #expect(
            m.startupLoss == LossCount(reported: 1_600, lost: 320, firstSequence: 1_000, lastSequence: 2_599),
            "\(String(describing: m.startupLoss))")
        // A run that ends before the estimate settles: the last window, said so.
        var short = PreflightProbe(start: 0)
        for k in 1...12 {
            _ = short.add(
                .init(
                    now: Int64(k) * 250_000, answered: true, estimate: (k % 2 == 0 ? 500_000 : 1_500_000, nil, 0), reportedLoss: 0,
                    roundTripMicros: 20_000, videoBytesSent: 0,
                    feedback: (reported: k * 100, lost: k * 10, highest: Int64(k * 100 - 1), lostAtFullQueue: 0, reportedAtFullQueue: 0)))
        }
        let sm = short.measurement(now: 3_000_000, roundTripTimeMillis: nil, jitterMillis: nil)
        #expect(
            short.settledAt == nil && !sm.lossAfterSettling && sm.lossWindowMillis == 2_500 && abs(sm.lossFraction - 0.1) < 1e-9, "\(sm)")
        // Without feedback counts (REMB or loss-only): the receiver reports' fraction, as before.
        var plain = PreflightProbe(start: 0)
        for i in 1...40 {
            _ = plain.add(
                .init(
                    now: Int64(i) * 250_000, answered: true, estimate: (1_000_000, nil, 0.05), reportedLoss: 0.05, roundTripMicros: nil,
                    videoBytesSent: 0))
        }
        let p = plain.measurement(now: 10_000_000, roundTripTimeMillis: nil, jitterMillis: nil)
        #expect(abs(p.lossFraction - 0.05) < 1e-9 && !p.lossCountedFromFeedback)
    }

    /// A measured phase whose loss is too close to the threshold for its packet count goes on
    /// (up to three times its length): 10 % of 400 packets could be a 15 % link's chance low;
    /// 20 % of them is clear and ends on time.
    @Test func anUndecidedLossIsMeasuredLonger() {
        func run(lostPerSample: Int) -> (Int, Double) {
            var probe = PreflightProbe(start: 0)
            var i = 0
            var status = PreflightProbe.Status.measuring
            while status == .measuring && i < 80 {
                i += 1
                status = probe.add(
                    .init(
                        now: Int64(i) * 250_000, answered: true, estimate: (1_000_000, 1_000_000, 0.1), reportedLoss: 0.1,
                        roundTripMicros: 20_000, videoBytesSent: i * 25_000,
                        feedback: (
                            reported: i * 40, lost: i * lostPerSample, highest: Int64(i * 40 - 1), lostAtFullQueue: 0,
                            reportedAtFullQueue: 0
                        )))
            }
            let m = probe.measurement(now: Int64(i) * 250_000, roundTripTimeMillis: 20, jitterMillis: 1)
            return (i, m.lossFraction)
        }
        // Settled at 4 s (sample 16); 2.5 s more is sample 26.
        let clear = run(lostPerSample: 8)
        #expect(clear.0 == 26 && abs(clear.1 - 0.2) < 1e-9, "\(clear)")
        // 10 %: within two standard errors of the threshold however long: three times the phase.
        let close = run(lostPerSample: 4)
        #expect(close.0 == 46 && abs(close.1 - 0.1) < 1e-9, "\(close)")
    }

    /// The no-answer clock runs from when the transport could carry media: a WebRTC session whose
    /// DTLS needed 5 s on a lossy path is measured, not given up on 3 s after the start; one that
    /// connects and then hears nothing for 3 s is; one that never connects, at 12 s.
    @Test func noAnswerCountsFromTheConnection() {
        func run(connectAt: Int64?, answerAt: Int64?) -> (PreflightProbe.Status, Int64) {
            var probe = PreflightProbe(start: 0)
            var t: Int64 = 0
            while t < 20_000_000 {
                t += 250_000
                var s = PreflightProbe.Sample(
                    now: t, answered: answerAt.map { t >= $0 } ?? false, estimate: (500_000, nil, 0), reportedLoss: 0,
                    roundTripMicros: nil, videoBytesSent: 0)
                s.connected = connectAt.map { t >= $0 } ?? false
                let status = probe.add(s)
                if status != .measuring { return (status, t) }
            }
            return (.measuring, t)
        }
        #expect(run(connectAt: 5_000_000, answerAt: 5_500_000).0 == .steady)
        #expect(run(connectAt: 5_000_000, answerAt: nil) == (.noAnswer, 8_000_000))
        #expect(run(connectAt: nil, answerAt: nil) == (.noAnswer, 12_000_000))
    }

    /// The verdict judges the loss away from a full queue: a 20 % loss of which 9 points came
    /// at a full queue while packets that met none lost 15 % is a lossy path (video NO); the
    /// same 20 % all at a full queue, with none elsewhere, is the sender's overshoot (video yes).
    @Test func lossAtAFullQueueIsNotJudged() {
        var lossy = Measurement(
            estimate: 1_400_000, lossFraction: 0.20, roundTripTimeMillis: 40, jitterMillis: 5, videoBitrate: 1_000_000,
            durationMillis: 7_000)
        lossy.lossAtFullQueue = 0.09
        lossy.randomLoss = 0.15
        let a = Verdict.decide(lossy)
        #expect(!a.video.supported && a.video.reason.contains("15") && a.video.reason.contains("full queue"), "\(a.video)")
        var overshoot = lossy
        overshoot.lossAtFullQueue = 0.20
        overshoot.randomLoss = 0
        let b = Verdict.decide(overshoot)
        #expect(b.video.supported && b.recommended?.name == "540p", "\(b.video)")
        // Too few packets away from a full queue to say: the loss less what came at one.
        overshoot.randomLoss = nil
        #expect(abs(overshoot.networkLoss - 0) < 1e-12 && Verdict.decide(overshoot).video.supported)
    }

    /// The RTT is the median of the window's samples: one receiver report that timed a sender
    /// report stuck behind a burst does not become the path's RTT.
    @Test func roundTripIsTheMedianOfTheWindow() {
        var probe = PreflightProbe(start: 0)
        for i in 1...40 {
            let rtt: Int64 = i == 40 ? 900_000 : (i % 2 == 0 ? 30_000 : 50_000)
            _ = probe.add(
                .init(
                    now: Int64(i) * 250_000, answered: true, estimate: (1_000_000, 1_000_000, 0), reportedLoss: 0,
                    roundTripMicros: rtt, videoBytesSent: i * 25_000))
        }
        let m = probe.measurement(now: 10_000_000, roundTripTimeMillis: 900, jitterMillis: nil)
        #expect(m.roundTripTimeMillis == 50, "\(String(describing: m.roundTripTimeMillis))")
        // No sample in the window: what the caller read.
        let none = PreflightProbe(start: 0).measurement(now: 1_000_000, roundTripTimeMillis: 12, jitterMillis: nil)
        #expect(none.roundTripTimeMillis == 12)
    }

    @Test func capacityIsTheLargerOfTheMeanEstimateAndWhatGotThrough() {
        var s = SteadyDetector()
        var t: Int64 = 0
        for i in 0..<8 { t += 250_000; s.add(i % 2 == 0 ? 100_000 : 120_000, acknowledged: 145_000 + i * 1_000, at: t) }
        #expect(s.windowMean(now: t) == 110_000)
        #expect(s.capacity(now: t) == 151_000) // 80th percentile of 145k…152k
        var appLimited = SteadyDetector()
        for i in 0..<8 { appLimited.add(9_000_000, acknowledged: 3_000_000, at: Int64(i) * 250_000) }
        #expect(appLimited.capacity(now: 1_750_000) == 9_000_000)
    }
}
