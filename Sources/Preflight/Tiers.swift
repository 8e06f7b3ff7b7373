#if canImport(Glibc)
    import Glibc
#endif

/// The resolution tiers of the verdict (opentok-network-test `config.ts`): bits/s a tier
/// needs without and with simulcast; a tier is supported when the estimate ≥ `share` × its need.
public struct Tier: Equatable, Sendable {
    public var name: String
    public var width: Int
    public var height: Int
    public var fps: Int
    public var bitrate: Int
    var simulcastBitrate: Int

    public static let all: [Tier] = [
        Tier(name: "1080p", width: 1920, height: 1080, fps: 30, bitrate: 4_000_000, simulcastBitrate: 5_550_000),
        Tier(name: "720p", width: 1280, height: 720, fps: 30, bitrate: 2_500_000, simulcastBitrate: 3_150_000),
        Tier(name: "540p", width: 960, height: 540, fps: 30, bitrate: 1_200_000, simulcastBitrate: 1_550_000),
        Tier(name: "360p", width: 640, height: 360, fps: 30, bitrate: 500_000, simulcastBitrate: 650_000),
        Tier(name: "270p", width: 480, height: 270, fps: 30, bitrate: 300_000, simulcastBitrate: 350_000),
        Tier(name: "180p", width: 320, height: 180, fps: 30, bitrate: 150_000, simulcastBitrate: 150_000)
    ]

    public func need(simulcast: Bool) -> Int { simulcast ? simulcastBitrate : bitrate }
}

/// Thresholds of the verdict; all configurable (`--verdict-thresholds`), defaults from
/// opentok-network-test (`config.ts`, `subscriberMOS.ts`).
public struct VerdictThresholds: Equatable, Sendable {
    /// Share of a tier's bitrate the estimate must reach (0.75).
    public var tierShare = 0.75
    /// Audio is supported at this MOS or above (opentok `minMos` 2.4).
    public var audioMinMOS = 2.4
    /// Audio needs at least this much bandwidth (Opus at 32 kbps plus overhead).
    public var audioMinBitrate = 40_000
    /// Loss above this makes video unsupported whatever the bandwidth.
    public var videoMaxLoss = 0.10
    /// Use the simulcast column (pubbot publishes simulcast by default).
    public var simulcast = true

    public init() {}
}

/// Mean opinion scores (opentok-network-test `subscriberMOS.ts`; ITU-T G.107 E-model).
public enum MOS {
    /// Audio by the E-model: delay d = RTT/2 + 30 ms local, Id = 0.024 d + 0.11 (d − 177.3) H(d − 177.3),
    /// Ie = 19.8 ln(1 + 29.7 p), R = 93.2 − Id − Ie, then the ITU-T G.107 R → MOS curve.
    public static func audio(roundTripTimeMillis rtt: Double, lossFraction p: Double) -> Double {
        let d = rtt / 2 + 30
        let id = 0.024 * d + (d >= 177.3 ? 0.11 * (d - 177.3) : 0)
        let ie = 19.8 * log(1 + 29.7 * max(0, min(1, p)))
        let r = 93.2 - id - ie
        if r < 0 { return 1 }
        if r > 100 { return 4.5 }
        return 1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6
    }

    /// Video by bitrate against resolution: target(pixels) = 10^(2.069924867 · log10(pixels)^0.6250223771);
    /// below 30 kbps 1, else 1 + 4 ln(min(br, target)/30 000) / ln(target/30 000), capped at 4.5.
    public static func video(bitrate: Int, width: Int, height: Int) -> Double {
        guard bitrate >= 30_000 else { return 1 }
        let target = pow(10, 2.069924867 * pow(log10(Double(width * height)), 0.6250223771))
        let score = 1 + 4 * log(min(Double(bitrate), target) / 30_000) / log(target / 30_000)
        return min(4.5, score)
    }
}
