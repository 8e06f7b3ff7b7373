/// Whether the path's queue is growing (overusing), draining (underusing) or stable.
public enum BandwidthUsage: Sendable, Equatable { case normal, underusing, overusing }

/// Delay-gradient trend over a window of smoothed one-way delay samples, with the overuse
/// detector and its adaptive threshold (libwebrtc `trendline_estimator.cc`, its
/// defaults: window 20, smoothing 0.9, gain 4, threshold 12.5 in [6, 600], k_up 0.0087,
/// k_down 0.039, overuse after 10 ms over at least 2 samples).
public struct TrendlineEstimator: Sendable {
    static let windowSize = 20
    static let smoothing = 0.9
    static let thresholdGain = 4.0
    static let kUp = 0.0087, kDown = 0.039
    static let overusingTimeThresholdMs = 10.0

    var accumulatedDelay = 0.0
    var smoothedDelay = 0.0
    var firstArrivalMs: Double?
    var history: [(x: Double, y: Double)] = []
    var numDeltas = 0
    public private(set) var trend = 0.0
    var previousTrend = 0.0
    public private(set) var threshold = 12.5
    var lastThresholdUpdateMs: Double?
    var timeOverUsing = -1.0
    var overuseCounter = 0
    public private(set) var state: BandwidthUsage = .normal
    public private(set) var modifiedTrend = 0.0

    public init() {}

    public mutating func update(deltas d: InterArrival.Deltas, arrivalMicros: Int64) {
        let recvMs = Double(d.arrivalMicros) / 1000, sendMs = Double(d.sendMicros) / 1000
        let arrivalMs = Double(arrivalMicros) / 1000
        numDeltas = min(numDeltas + 1, 1000)
        if firstArrivalMs == nil { firstArrivalMs = arrivalMs }
        accumulatedDelay += recvMs - sendMs
        smoothedDelay = Self.smoothing * smoothedDelay + (1 - Self.smoothing) * accumulatedDelay
        history.append((arrivalMs - firstArrivalMs!, smoothedDelay))
        if history.count > Self.windowSize { history.removeFirst() }
        if history.count == Self.windowSize, let slope = Self.slope(history) { trend = slope }
        detect(sendDeltaMs: sendMs, nowMs: arrivalMs)
    }

    static func slope(_ points: [(x: Double, y: Double)]) -> Double? {
        let n = Double(points.count)
        let mx = points.reduce(0) { $0 + $1.x } / n, my = points.reduce(0) { $0 + $1.y } / n
        var num = 0.0, den = 0.0
        for p in points { num += (p.x - mx) * (p.y - my); den += (p.x - mx) * (p.x - mx) }
        return den == 0 ? nil : num / den
    }

    mutating func detect(sendDeltaMs: Double, nowMs: Double) {
        if numDeltas < 2 { state = .normal; return }
        modifiedTrend = Double(min(numDeltas, 60)) * trend * Self.thresholdGain
        if modifiedTrend > threshold {
            timeOverUsing = timeOverUsing < 0 ? sendDeltaMs / 2 : timeOverUsing + sendDeltaMs
            overuseCounter += 1
            if timeOverUsing > Self.overusingTimeThresholdMs && overuseCounter > 1 && trend >= previousTrend {
                timeOverUsing = 0
                overuseCounter = 0
                state = .overusing
            }
        } else if modifiedTrend < -threshold {
            timeOverUsing = -1
            overuseCounter = 0
            state = .underusing
        } else {
            timeOverUsing = -1
            overuseCounter = 0
            state = .normal
        }
        previousTrend = trend
        updateThreshold(nowMs: nowMs)
    }

    mutating func updateThreshold(nowMs: Double) {
        let last = lastThresholdUpdateMs ?? nowMs
        let m = abs(modifiedTrend)
        if m > threshold + 15 { lastThresholdUpdateMs = nowMs; return } // a spike: don't adapt to it
        let k = m < threshold ? Self.kDown : Self.kUp
        let dt = min(nowMs - last, 100)
        threshold = min(600, max(6, threshold + k * (m - threshold) * dt))
        lastThresholdUpdateMs = nowMs
    }
}
