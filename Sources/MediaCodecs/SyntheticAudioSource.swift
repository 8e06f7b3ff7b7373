#if canImport(Glibc)
    import Glibc
#endif

/// Never-silent synthetic speech-like audio at 48 kHz mono: a voiced tone whose pitch glides
/// between 120 and 240 Hz with harmonics, shaped into 4 Hz "syllables" over a floor that never
/// drops below 25 % amplitude, so Opus never falls into DTX-like bitrates by accident.
public struct SyntheticAudioSource: Sendable {
    static let sampleRate = 48_000
    var phase = 0.0
    public private(set) var samplesProduced: Int64 = 0

    public init() {}

    /// Fills `pcm` with the next samples.
    public mutating func fill(_ pcm: inout [Int16]) {
        let sr = Double(Self.sampleRate)
        for i in 0..<pcm.count {
            let t = Double(samplesProduced + Int64(i)) / sr
            let pitch = 180 + 60 * sin(2 * Double.pi * 0.3 * t)
            phase += 2 * Double.pi * pitch / sr
            if phase > 2 * Double.pi { phase -= 2 * Double.pi }
            let voiced = sin(phase) + 0.5 * sin(2 * phase) + 0.25 * sin(3 * phase)
            let envelope = 0.25 + 0.75 * (0.5 + 0.5 * sin(2 * Double.pi * 4 * t))
            pcm[i] = Int16(max(-32767, min(32767, voiced * envelope * 7000)))
        }
        samplesProduced += Int64(pcm.count)
    }
}
