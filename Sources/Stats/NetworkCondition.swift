/// The network condition of a transport (the `networkCondition` of the stats stream, the Commands article, --stats), with its numeric value 0…5.
public enum NetworkCondition: String, Sendable, CaseIterable, Comparable {
    case unknown, critical, warning, fair, good, excellent

    public var value: Int { Self.allCases.firstIndex(of: self)! }
    public static func < (a: Self, b: Self) -> Bool { a.value < b.value }
}

/// Why the condition is not excellent.
public enum NetworkConditionReason: String, Sendable {
    case none, unknown, bandwidth, packetLoss
}

/// Thresholds for scoring (the product's starting point, the Commands article, --condition-thresholds; the source documents publish none). All are
/// configurable; the Commands article lists the defaults.
public struct NetworkConditionThresholds: Equatable, Sendable {
    /// Loss fractions (0…1) below which the condition can be excellent / good / fair / warning;
    /// at or above `warningLoss` it is critical.
    public var excellentLoss = 0.005
    public var goodLoss = 0.02
    public var fairLoss = 0.05
    public var warningLoss = 0.10
    /// Good needs the estimate to reach this share of what the publisher wants.
    public var goodEstimateShare = 0.75
    /// Loss is averaged over this window.
    public var windowMicros: Int64 = 5_000_000
    /// A new condition must hold for this many consecutive evaluations before it is reported.
    public var holdEvaluations = 2

    public init() {}
}

/// What the scorer needs to know about one moment of a publisher's transport.
public struct TransportSample: Sendable {
    public var micros: Int64
    /// Loss reported by the receiver for this interval (0…1), nil when unknown.
    public var lossFraction: Double?
    public var estimate: Int?
    /// What the publisher would send with unlimited bandwidth (sum of targets).
    public var desired: Int
    public var activeLayers: Int
    public var totalLayers: Int
    /// True when every active layer runs at its target.
    public var layersAtTarget: Bool
    public var lowestLayerMin: Int

    public init(
        micros: Int64, lossFraction: Double?, estimate: Int?, desired: Int, activeLayers: Int, totalLayers: Int,
        layersAtTarget: Bool, lowestLayerMin: Int
    ) {
        self.micros = micros
        self.lossFraction = lossFraction
        self.estimate = estimate
        self.desired = desired
        self.activeLayers = activeLayers
        self.totalLayers = totalLayers
        self.layersAtTarget = layersAtTarget
        self.lowestLayerMin = lowestLayerMin
    }
}

/// Scores a transport over a sliding window and reports changes with hysteresis, so one bad
/// interval does not flip the condition.
public struct NetworkConditionScorer: Sendable {
    public var thresholds: NetworkConditionThresholds
    var samples: [TransportSample] = []
    public private(set) var condition: NetworkCondition = .unknown
    public private(set) var reason: NetworkConditionReason = .unknown
    /// Consecutive evaluations that scored worse (negative) or better (positive) than reported.
    var drift = 0

    public init(thresholds: NetworkConditionThresholds = NetworkConditionThresholds()) { self.thresholds = thresholds }

    /// Mean loss over the window (nil when no sample carried loss).
    var windowLoss: Double? {
        let l = samples.compactMap(\.lossFraction)
        return l.isEmpty ? nil : l.reduce(0, +) / Double(l.count)
    }

    /// The raw (instantaneous) score of the window, before hysteresis.
    public func score() -> (NetworkCondition, NetworkConditionReason) {
        guard let last = samples.last, last.estimate != nil || windowLoss != nil else { return (.unknown, .unknown) }
        let t = thresholds
        var byLoss = NetworkCondition.excellent
        if let loss = windowLoss {
            byLoss =
                loss < t.excellentLoss
                ? .excellent : loss < t.goodLoss ? .good : loss < t.fairLoss ? .fair : loss < t.warningLoss ? .warning : .critical
        }
        var byBandwidth = NetworkCondition.excellent
        if let e = last.estimate {
            if last.totalLayers > 0 && e < last.lowestLayerMin {
                byBandwidth = .critical
            } else if last.totalLayers > 1 && last.activeLayers <= 1 {
                byBandwidth = .warning
            } else if last.activeLayers < last.totalLayers {
                byBandwidth = .fair
            } else if !last.layersAtTarget {
                byBandwidth = Double(e) >= t.goodEstimateShare * Double(last.desired) ? .good : .fair
            }
        }
        let c = min(byLoss, byBandwidth)
        if c == .excellent { return (.excellent, .none) }
        return (c, byBandwidth < byLoss ? .bandwidth : .packetLoss)
    }

    /// Adds a sample; returns the new (condition, reason) when the reported condition changes.
    /// Forgets the loss samples (feedback came back after an outage: the old samples describe
    /// silence, not the path now answering), so the condition can recover within a couple of
    /// evaluations instead of waiting for the window to pass.
    public mutating func forgetLoss() {
        for i in samples.indices { samples[i].lossFraction = nil }
    }

    public mutating func add(_ s: TransportSample) -> (NetworkCondition, NetworkConditionReason)? {
        samples.append(s)
        samples.removeAll { s.micros - $0.micros > thresholds.windowMicros }
        let now = score()
        if now.0 == condition { drift = 0; reason = now.1; return nil }
        // A change must persist in one direction (worse, or better) for `holdEvaluations`
        // evaluations; the score it settles on may differ between them (fair, then critical …).
        let worse = now.0 < condition
        drift = worse ? min(drift, 0) - 1 : max(drift, 0) + 1
        // The first real score replaces `unknown` at once.
        guard condition == .unknown || abs(drift) >= thresholds.holdEvaluations else { return nil }
        condition = now.0
        reason = now.1
        drift = 0
        return (condition, reason)
    }
}
