/// Lowering the video when the encoders cannot keep up with real time, as libwebrtc does under
/// CPU overuse (video/adaptation/overuse_frame_detector.cc), pure: time and the media thread's
/// frame counts in, a change of how many top layers to hold back out. Overuse is judged per
/// check interval from the share of due frames the media thread had to skip (it fell behind);
/// two overusing checks in a row hold back the top running layer — the resolution on the wire
/// drops, as a browser's does — and the lowest layer always runs. A check with no skipped frame
/// may bring one back, after a ramp-up delay that starts short and doubles whenever an overuse
/// follows a ramp-up soon (libwebrtc's kQuickRampUpDelayMs, kStandardRampUpDelayMs,
/// kMaxRampUpDelayMs, kRampUpBackoffFactor). Checks run every 2 s rather than libwebrtc's 5 s:
/// a pubbot run lasts seconds, not a call.
public struct CPUAdaptation: Sendable {
    public enum Change: Sendable, Equatable {
        /// Hold back one more top layer.
        case down
        /// Bring the last held-back layer back (it restarts on a key frame).
        case up
    }

    public static let checkIntervalMicros: Int64 = 2_000_000
    /// The share of due frames skipped in a check that counts as overuse.
    public static let overuseShare = 0.05
    static let consecutiveOveruses = 2
    static let quickRampUpDelay: Int64 = 10_000_000
    static let standardRampUpDelay: Int64 = 40_000_000
    static let maxRampUpDelay: Int64 = 240_000_000

    public let layers: Int
    /// Top layers held back for CPU now.
    public private(set) var layersHeld = 0
    /// Changes so far (W3C qualityLimitationResolutionChanges counts the same events).
    public private(set) var changes = 0
    var checkStart: Int64
    var dueAtCheck = 0
    var skippedAtCheck = 0
    var overusesInARow = 0
    var lastChange: Int64
    var lastRampUp: Int64?
    var rampUpDelay = quickRampUpDelay

    public init(layers: Int, now: Int64) {
        self.layers = layers
        checkStart = now
        lastChange = now
    }

    /// Layers that may run now (the lowest `layers - layersHeld`).
    public var runningLayers: Int { layers - layersHeld }

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
            guard overusesInARow >= Self.consecutiveOveruses, layersHeld < layers - 1 else { return nil }
            overusesInARow = 0
            // An overuse soon after a ramp-up: that ramp-up failed; wait longer before the next.
            if let up = lastRampUp, now - up < Self.standardRampUpDelay {
                rampUpDelay = min(Self.maxRampUpDelay, max(Self.standardRampUpDelay, rampUpDelay * 2))
            }
            layersHeld += 1
            changes += 1
            lastChange = now
            return .down
        }
        overusesInARow = 0
        guard skipped == 0, layersHeld > 0, now - lastChange >= rampUpDelay else { return nil }
        layersHeld -= 1
        changes += 1
        lastChange = now
        lastRampUp = now
        return .up
    }
}
