/// An outer loop over the encoder's own rate control: it compares the bits the encoder produced
/// over the last few seconds with the bits its targets asked for, and scales the rate handed to
/// libvpx so the two meet.
///
/// libvpx learns the size of a frame at a given quantizer per frame (`vp8/encoder/ratectrl.c`,
/// rate correction factors, damped on every update), so it converges in frames, not seconds: at
/// 30 fps within a second, but a 720p layer with three temporal layers at 7 fps (its base layer
/// at 1.75 fps) runs 40–50 % under its target for 3–4 s, and at 1 fps it swings around the
/// target for tens of seconds. libwebrtc corrects the overshoot half of this
/// (`encoder_bitrate_adjuster.cc`, utilization factors per layer); a test publisher must put on
/// the wire the rate it reports, so this corrects both ways, within [0.5, 2] × the target.
///
/// Sans-IO: time is the frames' capture time. Dropped frames count as zero bits.
public struct EncoderRateTrim: Sendable {
    struct Entry: Sendable { var micros: Int64; var bits: Double; var targetBits: Double }

    /// What the encoder should be asked for, as a multiple of the target.
    public private(set) var factor = 1.0
    public static let factorRange = 0.5...2.0
    /// An undershoot is corrected by its square root per step, at most ×1.25: gently, since
    /// libvpx raises its own sizes too. An overshoot is corrected at once (up to 1/1.5 a step),
    /// since libvpx's buffer then also spends what the undershoot saved. Tuned on the synthetic
    /// source at 7/15/30 fps, L1T1 and L1T3: every 5 s window of 180p/360p/720p within
    /// 0.86–1.15 × target (`EncoderRateTests`).
    static let maxStep = 1.25
    static let maxStepDown = 1.5
    /// Until the first step down the encoder is still warming up (its first seconds run well
    /// under target): climb faster.
    static let warmUpStep = 1.4

    let frameMicros: Int64
    /// The measurement window: at least 1 s and 4 frames, in whole temporal-layer pattern periods
    /// (a base-layer frame is several times the size of the others).
    let windowMicros: Int64
    var entries: [Entry] = []
    var head = 0
    var lastAdjustMicros: Int64?
    var settled = false
    var lastCaptureMicros: Int64?

    public init(fps: Int, patternPeriod: Int = 1) {
        frameMicros = 1_000_000 / Int64(max(1, fps))
        let period = max(1, patternPeriod)
        let frames = (max(max(1, fps), 4) + period - 1) / period * period
        windowMicros = Int64(frames) * frameMicros
    }

    /// Records one frame (nil bits: the encoder dropped it) encoded at `target` bits/s, and
    /// returns the new factor when it changed by more than 2 %. The frame is owed the target over
    /// the time since the previous one (a skipped capture tick makes the next frame larger, as
    /// libvpx sizes it from the timestamps), at most 4 frame intervals (after a suspension).
    public mutating func add(captureMicros now: Int64, bits: Int?, target: Int) -> Double? {
        let span = min(4 * frameMicros, max(0, now - (lastCaptureMicros ?? (now - frameMicros))))
        lastCaptureMicros = now
        entries.append(Entry(micros: now, bits: Double(bits ?? 0), targetBits: Double(target) * Double(span) / 1e6))
        while head < entries.count && entries[head].micros <= now - windowMicros { head += 1 }
        if head > 64 && head * 2 > entries.count { entries.removeFirst(head); head = 0 }
        // Judge only a window that is full and made entirely after the last change.
        guard let first = entries[head...].first, now - first.micros >= windowMicros - 2 * frameMicros,
            lastAdjustMicros.map({ first.micros > $0 }) ?? (entries.count - head >= 3)
        else { return nil }
        var produced = 0.0, wanted = 0.0
        for e in entries[head...] { produced += e.bits; wanted += e.targetBits }
        guard wanted > 0 else { return nil }
        let ratio = max(produced, wanted * 0.1) / wanted
        let up = settled ? Self.maxStep : Self.warmUpStep
        let step = ratio > 1 ? max(1 / Self.maxStepDown, 1 / ratio) : min(up, (1 / ratio).squareRoot())
        if ratio > 1 { settled = true }
        let next = min(Self.factorRange.upperBound, max(Self.factorRange.lowerBound, factor * step))
        guard abs(next / factor - 1) > 0.02 else { return nil }
        factor = next
        lastAdjustMicros = now
        return next
    }
}
