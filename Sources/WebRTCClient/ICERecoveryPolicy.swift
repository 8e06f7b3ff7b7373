/// When the consent watch restarts ICE (`--ice-recover-after`, publish and load): plain state
/// over time passed in. What it watches is the ICE agent's consent age (RFC 7675).
public struct ICERecoveryPolicy: Sendable {
    public let graceMicros: Int64
    public let maxAttempts: Int
    var lastAttempt: Int64 = .min / 2
    public private(set) var attempts = 0
    var refusedInARow = 0

    public init(graceMicros: Int64, maxAttempts: Int) {
        self.graceMicros = graceMicros
        self.maxAttempts = maxAttempts
    }

    /// Why to restart now (nil: not now): the path silent for the grace, the last attempt at
    /// least a grace ago, attempts left, the server not refusing three times in a row.
    public func shouldRestart(now: Int64, consentAge: Int64) -> String? {
        guard consentAge >= graceMicros, now - lastAttempt >= graceMicros, attempts < maxAttempts, refusedInARow < 3 else { return nil }
        let tenths = (consentAge + 50_000) / 100_000
        return "no consent answer for \(tenths / 10).\(tenths % 10) s"
    }

    public mutating func attempted(succeeded: Bool, at now: Int64) {
        lastAttempt = now
        attempts += 1
        refusedInARow = succeeded ? 0 : refusedInARow + 1
    }

    /// A scheduled restart counts as an attempt for the spacing (not against the limit).
    public mutating func scheduledRestart(at now: Int64) { lastAttempt = now }
}
