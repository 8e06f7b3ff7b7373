/// Packets a loss figure was counted from (transport-cc feedback, draft-holmer-rmcat-transport-wide-cc-extensions-01
/// feedback): a capture of the same transport-wide sequence numbers can count them again.
public struct LossCount: Equatable, Sendable {
    public var reported: Int
    public var lost: Int
    public var fraction: Double { reported > 0 ? Double(lost) / Double(reported) : 0 }
    public var firstSequence: Int64
    public var lastSequence: Int64

    public init(reported: Int, lost: Int, firstSequence: Int64, lastSequence: Int64) {
        self.reported = reported
        self.lost = lost
        self.firstSequence = firstSequence
        self.lastSequence = lastSequence
    }
}

/// What the network test measured (means over the steady window).
public struct Measurement: Equatable, Sendable {
    public var estimate: Int
    public var lossFraction: Double
    public var roundTripTimeMillis: Double?
    public var jitterMillis: Double?
    /// Video actually sent (payload) during the window, for the video MOS.
    public var videoBitrate: Int
    public var durationMillis: Int64
    /// The window the loss was counted over (ms, ending at the measurement), and whether it is
    /// the receiver's own count from transport-cc feedback (else receiver reports' fraction lost).
    public var lossWindowMillis: Int64?
    public var lossCountedFromFeedback = false
    /// With transport-cc: the packets behind `lossFraction` — reported on and reported lost in
    /// the window, and the transport-wide sequence numbers they span (unwrapped, first...last).
    public var lossCount: LossCount?
    /// With transport-cc: what the start-up lost before the measured phase (pubbot's own probing
    /// past the link; reported, not judged).
    public var startupLoss: LossCount?
    /// Of `lossFraction`, the share lost at a full queue (tail drop behind the sender's own
    /// overshoot; `NetworkEstimate.packetsReportedLostAtFullQueue`): reported, not judged.
    public var lossAtFullQueue = 0.0
    /// The loss rate of the packets that met no full queue (transport-cc; nil with too few):
    /// a path that drops at random drops these as often as any.
    public var randomLoss: Double?
    /// What the verdict judges: the loss that was not the sender's overshoot — the loss rate
    /// away from a full queue, else the loss less what came at one.
    public var networkLoss: Double { randomLoss ?? max(0, lossFraction - lossAtFullQueue) }
    /// The loss window began when the estimate settled (else: the run ended first, and the
    /// window is the last one, start-up included if it was that short).
    public var lossAfterSettling = false

    public init(
        estimate: Int, lossFraction: Double, roundTripTimeMillis: Double?, jitterMillis: Double?, videoBitrate: Int, durationMillis: Int64
    ) {
        self.estimate = estimate
        self.lossFraction = lossFraction
        self.roundTripTimeMillis = roundTripTimeMillis
        self.jitterMillis = jitterMillis
        self.videoBitrate = videoBitrate
        self.durationMillis = durationMillis
    }
}

/// The pre-flight verdict (the Commands article, preflight) for audio and for video, with the measured cause.
public struct Verdict: Equatable, Sendable {
    public struct Part: Equatable, Sendable {
        public var supported: Bool
        public var reason: String
        public var mos: Double
    }

    public var audio: Part
    public var video: Part
    /// The highest tier the estimate carries (nil when even 180p does not fit).
    public var recommended: Tier?
    public var measurement: Measurement

    public static func decide(_ m: Measurement, thresholds t: VerdictThresholds = VerdictThresholds()) -> Verdict {
        let rtt = m.roundTripTimeMillis ?? 0
        let audioMOS = MOS.audio(roundTripTimeMillis: rtt, lossFraction: m.networkLoss)
        let audioOK = audioMOS >= t.audioMinMOS && m.estimate >= t.audioMinBitrate
        let audioReason: String
        if m.estimate < t.audioMinBitrate {
            audioReason = "estimate \(kbps(m.estimate)) < \(kbps(t.audioMinBitrate)) needed for audio"
        } else if !audioOK {
            audioReason =
                "MOS \(fixed(audioMOS)) < \(fixed(t.audioMinMOS)) with \(fixed(m.networkLoss * 100)) % loss and \(fixed(rtt)) ms RTT"
        } else {
            audioReason = "MOS \(fixed(audioMOS)) ≥ \(fixed(t.audioMinMOS)) (loss \(fixed(m.networkLoss * 100)) %, RTT \(fixed(rtt)) ms)"
        }

        let tiers = Tier.all
        let fits = tiers.first { Double(m.estimate) >= t.tierShare * Double($0.need(simulcast: t.simulcast)) }
        var videoReason: String
        var videoOK = fits != nil
        if let tier = fits {
            videoReason =
                "estimate \(kbps(m.estimate)) ≥ \(fixed(t.tierShare)) × \(kbps(tier.need(simulcast: t.simulcast))) needed for \(tier.name)"
            if let i = tiers.firstIndex(of: tier), i > 0 {
                let next = tiers[i - 1]
                videoReason += "; < \(fixed(t.tierShare)) × \(kbps(next.need(simulcast: t.simulcast))) needed for \(next.name)"
            }
        } else {
            let lowest = tiers.last!
            videoReason =
                "estimate \(kbps(m.estimate)) < \(fixed(t.tierShare)) × \(kbps(lowest.need(simulcast: t.simulcast))) needed for \(lowest.name)"
        }
        if videoOK && m.networkLoss > t.videoMaxLoss {
            videoOK = false
            videoReason =
                "packet loss \(fixed(m.networkLoss * 100)) % > \(fixed(t.videoMaxLoss * 100)) %"
                + (m.lossAtFullQueue > 0 ? " (besides \(fixed(m.lossAtFullQueue * 100)) % at a full queue)" : "")
        }
        let videoMOS = fits.map { MOS.video(bitrate: max(m.videoBitrate, 0), width: $0.width, height: $0.height) } ?? 1
        return Verdict(
            audio: Part(supported: audioOK, reason: audioReason, mos: (audioMOS * 100).rounded() / 100),
            video: Part(supported: videoOK, reason: videoReason, mos: (videoMOS * 100).rounded() / 100),
            recommended: videoOK ? fits : nil, measurement: m)
    }

    /// Opus at `bitrate` on the wire, as the audio-only thresholds count it: 50 packets a second
    /// (20 ms frames), each with its RTP header and the WebRTC extensions (28 bytes, what pubbot
    /// sends), the SRTP tag (16) and UDP/IPv4 (28).
    public static func audioWireBitrate(_ bitrate: Int) -> Int { bitrate + 50 * (28 + 16 + 28) * 8 }

    /// The audio verdict from a phase that sent audio alone, after a phase with video that did
    /// not fit: its loss and RTT are audio's own, and the path carries at least what the estimate
    /// measured while video was on (`pathEstimate`) — the audio phase alone, without an estimator,
    /// can only show the rate it sent.
    public mutating func judgeAudio(_ audio: Measurement, pathEstimate: Int?, thresholds t: VerdictThresholds) {
        var m = audio
        m.estimate = max(audio.estimate, pathEstimate ?? 0)
        self.audio = Verdict.decide(m, thresholds: t).audio
    }

    /// A pre-flight that sent audio only (`--audio-only`) says so instead of judging video by the
    /// audio's rate.
    public mutating func videoNotMeasured() {
        video = Part(supported: false, reason: "not measured: the pre-flight sent audio only", mos: 1)
        recommended = nil
    }

    /// What to do, never contradicting the rows above it: a tier, audio only, or nothing.
    public var recommendation: String {
        if let r = recommended { return "\(r.name) (\(r.width)x\(r.height) @ \(r.fps) fps)" }
        return audio.supported ? "audio only" : "none: neither video nor audio fits this path"
    }

    /// Whether `requirement` (a tier name or "audio") is met.
    public func meets(_ requirement: String) -> Bool {
        if requirement == "audio" { return audio.supported }
        guard let want = Tier.all.firstIndex(where: { $0.name == requirement }) else { return false }
        guard let got = recommended.flatMap({ r in Tier.all.firstIndex(of: r) }) else { return false }
        return got <= want
    }

    static func kbps(_ bps: Int) -> String {
        bps >= 1_000_000 ? "\(fixed(Double(bps) / 1e6)) Mbps" : "\(bps / 1000) kbps"
    }

    static func fixed(_ v: Double) -> String {
        let r = (v * 100).rounded() / 100
        if r == r.rounded() { return String(Int64(r)) }
        let s = String(r)
        return s
    }
}

/// When the estimate is steady (documented in the Commands article): at least `minimumMicros` have passed;
/// the window is 2 s or 6 round trips, whichever is longer (a long path reacts more slowly); in
/// the last window the lowest estimate is at least `minimumSpread` × the highest (no drop or
/// climb in progress), and its mean differs from the mean of the window before it by less than
/// `tolerance`.
///
/// The capacity figure is the larger of the window's mean estimate and the 80th percentile of
/// the acknowledged (received) bitrate in it : with the link filled up to the estimate, what got
/// through is a measurement, while the estimate saw-tooths below it after each back-off.
public struct SteadyDetector: Sendable {
    var baseWindowMicros: Int64 = 2_000_000
    public var tolerance = 0.10
    var minimumSpread = 0.75
    public var minimumMicros: Int64 = 4_000_000
    /// The path's round-trip time, when known (widens the window).
    public var roundTripMicros: Int64 = 0
    var samples: [(t: Int64, v: Int, acked: Int?)] = []

    public init() {}

    public var windowMicros: Int64 { max(baseWindowMicros, 6 * roundTripMicros) }

    public mutating func add(_ estimate: Int, acknowledged: Int? = nil, at t: Int64) {
        samples.append((t, estimate, acknowledged))
        let keep = 2 * windowMicros + 500_000
        samples.removeAll { t - $0.t > keep }
    }

    public func isSteady(now: Int64, start: Int64) -> Bool {
        let w = windowMicros
        guard now - start >= max(minimumMicros, 2 * w) else { return false }
        let recent = samples.filter { now - $0.t <= w }.map(\.v)
        let before = samples.filter { now - $0.t > w && now - $0.t <= 2 * w }.map(\.v)
        guard recent.count >= 4, before.count >= 4, let lo = recent.min(), let hi = recent.max(), hi > 0 else { return false }
        guard Double(lo) >= minimumSpread * Double(hi) else { return false }
        let a = Double(recent.reduce(0, +)) / Double(recent.count)
        let b = Double(before.reduce(0, +)) / Double(before.count)
        return b > 0 && abs(a - b) / b < tolerance
    }

    /// Mean estimate over the last window.
    public func windowMean(now: Int64) -> Int? {
        let recent = samples.filter { now - $0.t <= windowMicros }
        guard !recent.isEmpty else { return nil }
        return recent.reduce(0) { $0 + $1.v } / recent.count
    }

    /// 80th percentile of the acknowledged bitrate over the last window (of media and the
    /// padding that fills the link; a probe cluster's own burst is not in it).
    func acknowledgedHigh(now: Int64) -> Int? {
        let acked = samples.filter { now - $0.t <= windowMicros }.compactMap(\.acked).sorted()
        guard !acked.isEmpty else { return nil }
        return acked[min(acked.count - 1, acked.count * 4 / 5)]
    }

    /// The capacity figure the verdict uses (see the type's comment).
    public func capacity(now: Int64) -> Int? {
        guard let mean = windowMean(now: now) else { return nil }
        return max(mean, acknowledgedHigh(now: now) ?? 0)
    }
}
