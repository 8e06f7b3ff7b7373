/// The classic loss-based rule (libwebrtc `send_side_bandwidth_estimation.cc`):
/// loss ≤ 2 % → may grow 8 % per second over the lowest rate of the last second; 2–10 % → hold;
/// > 10 % → rate × (1 − loss/2), at most once per 300 ms + RTT.
public struct LossBasedEstimator: Sendable {
    public private(set) var bitrate: Int
    public var minBitrate = 5_000
    public var maxBitrate = 30_000_000
    var history: [(micros: Int64, bps: Int)] = []
    var lastDecreaseMicros: Int64 = .min / 2
    var lost = 0, expected = 0
    public private(set) var lastLossFraction = 0.0
    public var rttMicros: Int64 = 200_000

    public init(startBitrate: Int) { bitrate = startBitrate }

    /// Resets to a rate known to work (start-up probes).
    public mutating func set(_ bps: Int, now: Int64) {
        bitrate = min(maxBitrate, max(minBitrate, bps))
        history = [(now, bitrate)]
    }

    /// Loss is evaluated at most once per this interval (libwebrtc `kLossUpdateInterval`, 1 s),
    /// so one loss episode is not counted over and over.
    var updateIntervalMicros: Int64 = 1_000_000
    var lastEvaluationMicros: Int64 = .min / 2

    /// Adds loss observations; evaluates once at least 20 packets and an update interval are counted.
    public mutating func update(lost: Int, of packets: Int, delayBased: Int, now: Int64) -> Int {
        self.lost += lost
        expected += packets
        if expected >= 20 && now - lastEvaluationMicros >= updateIntervalMicros {
            lastEvaluationMicros = now
            lastLossFraction = Double(self.lost) / Double(expected)
            self.lost = 0
            expected = 0
            if lastLossFraction <= 0.02 {
                let floor = history.filter { now - $0.micros <= 1_000_000 }.map(\.bps).min() ?? bitrate
                bitrate = max(bitrate, Int(Double(floor) * 1.08) + 1_000)
            } else if lastLossFraction > 0.10, now - lastDecreaseMicros >= 300_000 + rttMicros {
                bitrate = Int(Double(bitrate) * (1 - 0.5 * lastLossFraction))
                lastDecreaseMicros = now
            }
        }
        // Never ahead of the delay-based estimate by much: the minimum of both is used anyway,
        // and letting this one run away would hide a later loss episode.
        bitrate = min(bitrate, max(delayBased, minBitrate) * 2)
        bitrate = min(maxBitrate, max(minBitrate, bitrate))
        history.append((now, bitrate))
        history.removeAll { now - $0.micros > 1_000_000 }
        return bitrate
    }
}
