import Testing
import Congestion
import Preflight

/// The accuracy matrix's CI subset, in virtual time: the estimate the closed loop settles on
/// over an emulated link, fed to the verdict, recommends the tier 0.75 × capacity supports.
@Suite struct VerdictScenarioTests {
    @Test(arguments: [("300kbit", 300_000, "270p"), ("800kbit", 800_000, "360p"), ("2mbit", 2_000_000, "540p"), ("800kbit,loss=2%,delay=100ms", 800_000, "360p")])
    func tierMatchesTheCapacity(_ spec: String, _ capacity: Int, _ tier: String) throws {
        var s = try Scenario("rate=\(spec),queue=200ms")
        s.run(seconds: 8)
        let w = s.window(6, 8)
        let estimate = w.reduce(0) { $0 + $1.estimate } / max(1, w.count)
        let v = Verdict.decide(Measurement(estimate: estimate, lossFraction: s.estimator.estimate.lossFraction, roundTripTimeMillis: 40,
                                           jitterMillis: nil, videoBitrate: estimate / 2, durationMillis: 8_000))
        #expect(v.recommended?.name == tier, "\(spec): estimate \(estimate)")
        #expect(abs(Double(estimate - capacity)) / Double(capacity) <= 0.25, "\(spec): estimate \(estimate)")
    }

    /// 1.5 Mbps is where the ladder is app-limited (720p's minimum does not fit beside 360p):
    /// without padding the sender stops short of the link; pre-flight pads up to the estimate.
    @Test func paddingMeasuresTheLinkWhereTheLadderIsAppLimited() throws {
        func run(pad: Bool) throws -> Int {
            var s = try Scenario("rate=1.5mbit,delay=300ms,queue=200ms", maxBitrate: 12_000_000, padToEstimate: pad)
            s.run(seconds: 10)
            return s.window(4, 10).map(\.sentBitrate).max() ?? 0
        }
        let padded = try run(pad: true), plain = try run(pad: false)
        #expect(plain < 1_150_000, "without padding the ladder sends \(plain)")
        #expect(padded > 1_350_000, "with padding the link carries \(padded)")
    }
}
