import Testing
import WebRTCClient

/// `--ice-recover-after`'s decisions over time passed in: a restart once the path has been silent
/// for the grace, spaced by it, at most so many, and none after three refusals in a row.
@Suite struct ICERecoveryPolicyTests {
    @Test func restartsWhenSilentSpacedAndBounded() {
        var p = ICERecoveryPolicy(graceMicros: 8_000_000, maxAttempts: 3)
        #expect(p.shouldRestart(now: 5_000_000, consentAge: 5_900_000) == nil) // between two consent checks
        #expect(p.shouldRestart(now: 9_000_000, consentAge: 8_200_000) == "no consent answer for 8.2 s")
        p.attempted(succeeded: true, at: 9_000_000)
        #expect(p.shouldRestart(now: 12_000_000, consentAge: 11_000_000) == nil) // a grace since the last one
        #expect(p.shouldRestart(now: 17_000_000, consentAge: 16_000_000) != nil)
        p.attempted(succeeded: true, at: 17_000_000)
        p.attempted(succeeded: true, at: 25_000_000)
        #expect(p.shouldRestart(now: 40_000_000, consentAge: 20_000_000) == nil) // three attempts made
        var refused = ICERecoveryPolicy(graceMicros: 8_000_000, maxAttempts: 8)
        for k in 0..<3 { refused.attempted(succeeded: false, at: Int64(k) * 8_000_000) }
        #expect(refused.shouldRestart(now: 60_000_000, consentAge: 20_000_000) == nil)
        var scheduled = ICERecoveryPolicy(graceMicros: 8_000_000, maxAttempts: 8)
        scheduled.scheduledRestart(at: 10_000_000)
        #expect(scheduled.shouldRestart(now: 12_000_000, consentAge: 9_000_000) == nil)
        #expect(scheduled.attempts == 0)
    }
}
