/// Lowering the video when the encoders cannot keep up with real time, as libwebrtc does under
/// CPU overuse (video/adaptation/overuse_frame_detector.cc), pure: time and the media thread's
/// frame counts in, a step down or up out. Overuse is judged per check interval from the share
/// of due frames the media thread had to skip (it fell behind); two overusing checks in a row
/// take one step down — simulcast holds back its top running layer, one encoding lowers its
/// resolution (`ResolutionSteps`): either way the resolution on the wire drops, as a browser's
/// does — until no step is left (the lowest layer, 320×180). A check with no skipped frame may
/// take one back, after a ramp-up delay that starts short and doubles whenever an overuse
/// follows a ramp-up soon (libwebrtc's kQuickRampUpDelayMs, kStandardRampUpDelayMs,
/// kMaxRampUpDelayMs, kRampUpBackoffFactor). Checks run every 2 s rather than libwebrtc's 5 s:
/// a pubbot run lasts seconds, not a call.
public struct CPUAdaptation: Sendable {
    public enum Change: Sendable, Equatable {
        /// One step down: hold back one more top layer, or a lower resolution.
        case down
        /// One step back up (the layer or the resolution restarts on a key frame).
        case up
    }

    public static let checkIntervalMicros: Int64 = 2_000_000
    /// The share of due frames skipped in a check that counts as overuse.
    public static let overuseShare = 0.05
    static let consecutiveOveruses = 2
    static let quickRampUpDelay: Int64 = 10_000_000
    static let standardRampUpDelay: Int64 = 40_000_000
    static let maxRampUpDelay: Int64 = 240_000_000

    /// Steps down there are: simulcast layers that may be held back (all but the lowest), or
    /// one encoding's resolution steps.
    public let steps: Int
    /// Steps down taken now.
    public private(set) var level = 0
    /// Changes so far (W3C qualityLimitationResolutionChanges counts the same events).
    public private(set) var changes = 0
    var checkStart: Int64
    var dueAtCheck = 0
    var skippedAtCheck = 0
    var overusesInARow = 0
    var lastChange: Int64
    var lastRampUp: Int64?
    var rampUpDelay = quickRampUpDelay

    public init(steps: Int, now: Int64) {
        self.steps = max(0, steps)
        checkStart = now
        lastChange = now
    }

    /// Called each turn of the media loop with the cumulative frames that came due and that
    /// were skipped because the encoders ran late; returns a change at the end of a check.
    public mutating func update(now: Int64, framesDue: Int, framesSkipped: Int) -> Change? {
        guard now - checkStart >= Self.checkIntervalMicros else { return nil }
        let due = framesDue - dueAtCheck, skipped = framesSkipped - skippedAtCheck
        checkStart = now
        dueAtCheck = framesDue
        skippedAtCheck = framesSkipped
        guard due > 0 else { return nil }
        if Double(skipped) >= Self.overuseShare * Double(due) {
            overusesInARow += 1
            guard overusesInARow >= Self.consecutiveOveruses, level < steps else { return nil }
            overusesInARow = 0
            // An overuse soon after a ramp-up: that ramp-up failed; wait longer before the next.
            if let up = lastRampUp, now - up < Self.standardRampUpDelay {
                rampUpDelay = min(Self.maxRampUpDelay, max(Self.standardRampUpDelay, rampUpDelay * 2))
            }
            level += 1
            changes += 1
            lastChange = now
            return .down
        }
        overusesInARow = 0
        guard skipped == 0, level > 0, now - lastChange >= rampUpDelay else { return nil }
        level -= 1
        changes += 1
        lastChange = now
        lastRampUp = now
        return .up
    }
}
