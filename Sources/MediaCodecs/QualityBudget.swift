/// The CPU live picture quality may take from the thread that decodes: a token bucket of CPU
/// microseconds filled at `share` of the wall time that passes (at most half a second's worth
/// banked), emptied by what each measurement cost. A frame that finds the bucket empty is
/// decoded as always and not measured — counted in `skipped` — so measuring never slows the
/// decoding (and the feedback) it rides on; on an idle machine nothing is skipped (a 720p30
/// stream's measurement costs about 4 % of a core: `pubbot-bench quality`).
///
/// Time comes in (`now`, the driver's clock) and each measurement's cost comes from the clock
/// the driver hands in (`PictureQuality.cpuClock`, the thread's CPU time): no clock read here.
public final class QualityBudget {
    /// Share of one core, 0…1.
    public let share: Double
    var tokens: Double
    var last: Int64?
    /// Frames not measured because the budget was spent.
    public private(set) var skipped = 0
    /// Frames measured under it.
    public private(set) var admitted = 0

    /// At most this much of one core over time (the default: 15 %, room for a publisher's three
    /// simulcast layers — 7 % measured — twice over).
    public init(share: Double = 0.15) {
        self.share = min(1, max(0.001, share))
        tokens = self.share * Self.bankMicros
    }

    static let bankMicros = 500_000.0

    /// Whether the frame decoded at `now` may be measured (counts the refusal when not).
    public func admit(now: Int64) -> Bool {
        if let last, now > last { tokens = min(share * Self.bankMicros, tokens + share * Double(now - last)) }
        if last == nil || now > last! { last = now }
        guard tokens > 0 else {
            skipped += 1
            return false
        }
        admitted += 1
        return true
    }

    /// What an admitted measurement cost, CPU microseconds.
    public func charge(_ micros: Int64) { tokens -= Double(max(0, micros)) }
}
