/// One pre-flight phase's measurement, sans-IO: fed the publisher's figures at each sample (the
/// real runner every 250 ms of wall time, a simulation in virtual time), it says when the
/// estimate has settled, when nothing has answered, and what was measured. No clock inside:
/// every input carries its time.
public struct PreflightProbe: Sendable {
    /// What the publisher reports at one instant.
    public struct Sample: Sendable {
        public var now: Int64
        /// Any RTCP from the receiver so far.
        public var answered: Bool
        /// The send-side estimate (bits/s), what the receiver acknowledged, and the estimator's
        /// loss fraction; nil without an estimator (audio only, congestion control off).
        public var estimate: (bitrate: Int, acknowledged: Int?, lossFraction: Double)?
        /// The largest fraction lost any receiver report gave.
        public var reportedLoss: Double
        public var roundTripMicros: Int64?
        /// Video payload bytes sent so far.
        public var videoBytesSent: Int
        /// The transport can carry media (a WebRTC session's ICE and DTLS done; always for plain
        /// SRTP): the no-answer clock runs from here, not from the start, so a lossy path that
        /// needs a DTLS retransmission or two is measured instead of given up on.
        public var connected = true
        /// Packets transport-cc feedback has reported on so far, of them lost, and the highest
        /// transport-wide sequence number reported (nil without transport-cc).
        public var feedback: (reported: Int, lost: Int, highest: Int64, lostAtFullQueue: Int, reportedAtFullQueue: Int)?

        public init(
            now: Int64, answered: Bool, estimate: (bitrate: Int, acknowledged: Int?, lossFraction: Double)?, reportedLoss: Double,
            roundTripMicros: Int64?, videoBytesSent: Int,
            feedback: (reported: Int, lost: Int, highest: Int64, lostAtFullQueue: Int, reportedAtFullQueue: Int)? = nil
        ) {
            self.feedback = feedback
            self.now = now
            self.answered = answered
            self.estimate = estimate
            self.reportedLoss = reportedLoss
            self.roundTripMicros = roundTripMicros
            self.videoBytesSent = videoBytesSent
        }
    }

    public enum Status: Sendable, Equatable {
        case measuring
        /// The estimate has settled: the measurement can be taken.
        case steady
        /// Nothing came back within `answerTimeoutMicros`.
        case noAnswer
    }

    public let start: Int64
    /// Without an estimator (audio only): the audio's rate on the wire (`Verdict.audioWireBitrate`);
    /// the verdict scores what of it arrived.
    public let fixedBitrate: Int?
    /// Nothing measured beyond it: the estimate is capped there (nothing above was probed).
    public let probeCeiling: Int?
    var answerTimeoutMicros: Int64 = 3_000_000
    /// Never connected within this: no answer either (the transport's own ICE and DTLS
    /// timeouts usually end it sooner, with their reason).
    var connectTimeoutMicros: Int64 = 12_000_000
    public private(set) var connectedAt: Int64?
    public private(set) var detector = SteadyDetector()
    public private(set) var answered = false
    public private(set) var lastEstimate: Int?
    var losses: [(t: Int64, loss: Double)] = []
    var videoBytes: [(t: Int64, bytes: Int)] = []
    var feedbackCounts: [(t: Int64, reported: Int, lost: Int, highest: Int64, full: Int, reportedFull: Int)] = []
    var roundTrips: [(t: Int64, micros: Int64)] = []
    /// When the estimate settled (the detector first said steady): the measured phase starts
    /// there and lasts `measureMicros`. The start-up before it probes past the link on purpose
    /// (libwebrtc `probe_controller.cc` probes at 3× and 6× the start rate, then 2× what it
    /// found), so what it loses is pubbot's own doing, reported apart and not judged.
    public private(set) var settledAt: Int64?
    var measureMicros: Int64 { detector.windowMicros + 500_000 }
    /// The loss the verdict compares with (`Thresholds.videoMaxLoss`): while the measured
    /// phase's loss is within two standard errors of it (a binomial proportion over the packets
    /// reported), the phase goes on — up to three times its length — rather than let chance
    /// decide the tier (a 15 % random drop once measured 9.9 % over 2.5 s toward Chromium).
    public var lossThreshold = 0.10

    public init(start: Int64, fixedBitrate: Int? = nil, probeCeiling: Int? = nil) {
        self.start = start
        self.fixedBitrate = fixedBitrate
        self.probeCeiling = probeCeiling
    }

    public mutating func add(_ s: Sample) -> Status {
        answered = answered || s.answered
        if let rtt = s.roundTripMicros { detector.roundTripMicros = rtt; roundTrips.append((s.now, rtt)) }
        if let e = s.estimate {
            detector.add(e.bitrate, acknowledged: e.acknowledged, at: s.now)
            losses.append((s.now, e.lossFraction))
            lastEstimate = e.bitrate
        } else if let fixedBitrate {
            // No estimator: score the fixed rate and the receiver reports' loss.
            detector.add(fixedBitrate, at: s.now)
            losses.append((s.now, s.reportedLoss))
        }
        videoBytes.append((s.now, s.videoBytesSent))
        if let f = s.feedback { feedbackCounts.append((s.now, f.reported, f.lost, f.highest, f.lostAtFullQueue, f.reportedAtFullQueue)) }
        let keep = 2 * detector.windowMicros + 1_000_000
        // What the measured phase needs (from the settling sample on) is kept whatever its age.
        func old(_ t: Int64) -> Bool { s.now - t > keep && (settledAt.map { t < $0 } ?? true) }
        if let first = losses.first, old(first.t) { losses.removeAll { old($0.t) } }
        if let first = videoBytes.first, s.now - first.t > keep { videoBytes.removeAll { s.now - $0.t > keep } }
        if let first = feedbackCounts.first, old(first.t) { feedbackCounts.removeAll { old($0.t) } }
        if let first = roundTrips.first, s.now - first.t > keep { roundTrips.removeAll { s.now - $0.t > keep } }
        if s.connected && connectedAt == nil { connectedAt = s.now }
        if !answered {
            guard let c = connectedAt else { return s.now - start >= connectTimeoutMicros ? .noAnswer : .measuring }
            return s.now - c >= answerTimeoutMicros ? .noAnswer : .measuring
        }
        if settledAt == nil {
            guard detector.isSteady(now: s.now, start: start) else { return .measuring }
            settledAt = s.now
        }
        let measured = s.now - settledAt!
        guard measured >= measureMicros else { return .measuring }
        return measured < 3 * measureMicros && lossIsUndecided(since: settledAt!) ? .measuring : .steady
    }

    /// The measured phase's loss (of the packets that met no full queue, when there are enough
    /// of them) is too close to `lossThreshold` for its packet count to tell which side it is on.
    func lossIsUndecided(since from: Int64) -> Bool {
        let fb = feedbackCounts.filter { $0.t >= from }
        guard let a = fb.first, let b = fb.last, b.reported > a.reported else { return false }
        var n = b.reported - a.reported, lost = b.lost - a.lost
        let calm = n - (b.reportedFull - a.reportedFull)
        if calm >= 50 { n = calm; lost -= b.full - a.full }
        let p = Double(lost) / Double(n)
        let standardError = (max(p, 0.01) * (1 - p) / Double(n)).squareRoot()
        return abs(p - lossThreshold) < 2 * standardError
    }

    /// What the phase measured. The loss is that of the measured phase — from the moment the
    /// estimate settled (or, if it never did, the detector's last window plus half a second) —
    /// and the start-up's before it is `startupLoss`. The RTT is the median of the last
    /// window's samples (one receiver report's RTT is one sender report's trip through whatever
    /// queue it met); `roundTripTimeMillis` when the window had none.
    public func measurement(now: Int64, roundTripTimeMillis: Double?, jitterMillis: Double?) -> Measurement {
        let span = detector.windowMicros + 500_000
        let from = settledAt ?? max(start, now - span)
        let rtts = roundTrips.filter { now - $0.t <= span }.map(\.micros).sorted()
        let roundTripTimeMillis = rtts.isEmpty ? roundTripTimeMillis : Double(rtts[rtts.count / 2]) / 1000
        let recentLoss = losses.filter { $0.t >= from }.map(\.loss)
        var loss = recentLoss.isEmpty ? 0 : recentLoss.reduce(0, +) / Double(recentLoss.count)
        // With transport-cc: the loss of the window itself — packets reported lost ÷ packets
        // reported on between its first and last sample (the receiver's own count of every packet).
        let fb = feedbackCounts.filter { $0.t >= from }
        var counted = false
        var countedPackets: LossCount?
        var startup: LossCount?
        var lossAtFullQueue = 0.0
        var randomLoss: Double?
        if let a = fb.first, let b = fb.last, b.reported > a.reported {
            loss = Double(b.lost - a.lost) / Double(b.reported - a.reported)
            counted = true
            countedPackets = LossCount(
                reported: b.reported - a.reported, lost: b.lost - a.lost, firstSequence: a.highest + 1, lastSequence: b.highest)
            lossAtFullQueue = Double(b.full - a.full) / Double(b.reported - a.reported)
            // The loss rate of the packets that met no full queue (enough of them to say).
            let calm = (b.reported - a.reported) - (b.reportedFull - a.reportedFull)
            if calm >= 50 { randomLoss = Double((b.lost - a.lost) - (b.full - a.full)) / Double(calm) }
            // Everything reported before the window (each packet once, in sequence from the first).
            if a.reported > 0 {
                startup = LossCount(
                    reported: a.reported, lost: a.lost, firstSequence: a.highest - Int64(a.reported) + 1, lastSequence: a.highest)
            }
        }
        let vb = videoBytes.filter { now - $0.t <= span }
        var videoRate = 0
        if let first = vb.first, let last = vb.last, last.t > first.t {
            videoRate = Int(Double((last.bytes - first.bytes) * 8) * 1e6 / Double(last.t - first.t))
        }
        // Never more than the probing ceiling: nothing above it was tried.
        var capacity = min(detector.capacity(now: now) ?? lastEstimate ?? 0, probeCeiling ?? .max)
        // Without an estimator the figure is what the path carried: the audio's rate on the wire
        // less what was lost.
        if lastEstimate == nil, let fixedBitrate { capacity = Int(Double(fixedBitrate) * (1 - min(1, max(0, loss)))) }
        var m = Measurement(
            estimate: capacity, lossFraction: loss, roundTripTimeMillis: roundTripTimeMillis, jitterMillis: jitterMillis,
            videoBitrate: videoRate, durationMillis: (now - start) / 1000)
        m.lossWindowMillis = (now - from) / 1000
        m.lossCountedFromFeedback = counted
        m.lossCount = countedPackets
        m.startupLoss = startup
        m.lossAtFullQueue = lossAtFullQueue
        m.randomLoss = randomLoss
        m.lossAfterSettling = settledAt != nil
        return m
    }
}
