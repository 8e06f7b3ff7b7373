/// Additive-increase / multiplicative-decrease rate control driven by the overuse detector
/// (libwebrtc `aimd_rate_control.cc`, `link_capacity_estimator.cc`): multiplicative
/// +8 %/s while far from the last known link capacity, additive (about one packet per response
/// time) near it, and on overuse back to 0.85 × the acknowledged throughput, then hold.
public struct AimdRateControl: Sendable {
    enum State: Sendable { case hold, increase, decrease }

    static let backoff = 0.85
    public private(set) var bitrate: Int
    public var minBitrate = 5_000
    public var maxBitrate = 30_000_000
    var state: State = .increase
    var lastChangeMicros: Int64?
    var lastDecreaseMicros: Int64?
    /// EWMA of the throughput seen at overuse, and its normalized variance.
    public private(set) var linkCapacity: Double?
    var capacityVariance = 0.4
    public var rttMicros: Int64 = 200_000

    public init(startBitrate: Int) { bitrate = startBitrate }

    /// Sets the estimate directly (probe results).
    public mutating func set(_ bps: Int, now: Int64) {
        bitrate = min(maxBitrate, max(minBitrate, bps))
        lastChangeMicros = now
    }

    public mutating func update(usage: BandwidthUsage, acknowledged: Int?, now: Int64) -> Int {
        switch usage {
        case .overusing: if state != .decrease { state = .decrease }
        case .normal: if state == .hold { state = .increase; lastChangeMicros = now }
        case .underusing: state = .hold
        }
        let dt = Double(min(now - (lastChangeMicros ?? now), 1_000_000)) / 1e6
        switch state {
        case .hold:
            break
        case .increase:
            let before = bitrate
            if let a = acknowledged, let upper = capacityUpperBound, Double(a) > upper { linkCapacity = nil } // the link got faster
            if linkCapacity != nil {
                // Near the link's capacity: about one packet per response time.
                let response = Double(rttMicros + 100_000) / 1e6
                let bitsPerFrame = Double(bitrate) / 30
                let packets = max(1, (bitsPerFrame / (1200 * 8)).rounded(.up))
                let increase = max(4_000, (bitsPerFrame / packets) / response) * dt
                bitrate += Int(increase)
            } else {
                bitrate += max(1_000, Int(Double(bitrate) * (pow1_08(dt) - 1)))
            }
            // Don't run far ahead of what is actually delivered (but never lower the rate for it).
            if let a = acknowledged {
                let cap = Int(1.5 * Double(a)) + 10_000
                if bitrate > cap { bitrate = max(before, cap) }
            }
            lastChangeMicros = now
        case .decrease:
            let base = Double(acknowledged ?? bitrate)
            var target = base * Self.backoff
            if target > 5_000 { target -= 5_000 }
            if target < Double(bitrate) || acknowledged == nil { bitrate = Int(min(target, Double(bitrate))) }
            if let a = acknowledged { updateCapacity(Double(a)) }
            state = .hold
            lastChangeMicros = now
            lastDecreaseMicros = now
        }
        bitrate = min(maxBitrate, max(minBitrate, bitrate))
        return bitrate
    }

    /// ±3σ band around the capacity estimate (σ² = variance · estimate, in kbps as libwebrtc).
    var capacityDeviation: Double? { linkCapacity.map { (capacityVariance * $0 / 1000).squareRoot() * 1000 } }
    var capacityUpperBound: Double? { linkCapacity.map { $0 + 3 * capacityDeviation! } }

    mutating func updateCapacity(_ sample: Double) {
        if let cap = linkCapacity, sample < cap - 3 * capacityDeviation! {
            linkCapacity = nil // the link got slower: start over from this sample
        }
        guard let cap = linkCapacity else { linkCapacity = sample; return }
        let alpha = 0.05
        let next = (1 - alpha) * cap + alpha * sample
        let errKbps = (next - sample) / 1000
        capacityVariance = min(2.5, max(0.4, (1 - alpha) * capacityVariance + alpha * errKbps * errKbps / max(next / 1000, 1)))
        linkCapacity = next
    }

    func pow1_08(_ seconds: Double) -> Double {
        // 1.08^t without Foundation: exp(t·ln 1.08) via a short series (t ≤ 1).
        let x = seconds * 0.0769610411361284
        return 1 + x + x * x / 2 + x * x * x / 6
    }
}
