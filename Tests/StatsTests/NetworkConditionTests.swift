import Testing
@testable import Stats

@Suite struct NetworkConditionTests {
    func sample(_ t: Int64, loss: Double?, estimate: Int? = 4_000_000, active: Int = 3, atTarget: Bool = true) -> TransportSample {
        TransportSample(
            micros: t * 1_000_000, lossFraction: loss, estimate: estimate, desired: 3_182_000, activeLayers: active,
            totalLayers: 3, layersAtTarget: atTarget, lowestLayerMin: 30_000)
    }

    @Test(arguments: [
        (0.0, 3, true, 4_000_000, NetworkCondition.excellent, NetworkConditionReason.none),
        (0.01, 3, true, 4_000_000, .good, .packetLoss),
        (0.0, 3, false, 3_000_000, .good, .bandwidth), // estimate ≥ 75 % of the target
        (0.0, 3, false, 2_000_000, .fair, .bandwidth),
        (0.03, 3, true, 4_000_000, .fair, .packetLoss),
        (0.0, 2, false, 1_000_000, .fair, .bandwidth), // top layer suspended
        (0.07, 3, true, 4_000_000, .warning, .packetLoss),
        (0.0, 1, false, 300_000, .warning, .bandwidth), // only the lowest layer
        (0.12, 3, true, 4_000_000, .critical, .packetLoss),
        (0.0, 1, false, 20_000, .critical, .bandwidth) // below the lowest layer's minimum
    ])
    func scoresBySpecSection4(
        _ loss: Double, _ active: Int, _ atTarget: Bool, _ estimate: Int, _ condition: NetworkCondition, _ reason: NetworkConditionReason
    ) {
        var s = NetworkConditionScorer()
        _ = s.add(sample(0, loss: loss, estimate: estimate, active: active, atTarget: atTarget))
        #expect(s.condition == condition)
        #expect(s.reason == reason)
        #expect(s.condition.value == NetworkCondition.allCases.firstIndex(of: condition))
    }

    @Test func hysteresisIgnoresOneBadInterval() {
        var s = NetworkConditionScorer()
        var t: Int64 = 0
        func add(_ loss: Double) -> (NetworkCondition, NetworkConditionReason)? { t += 1; return s.add(sample(t, loss: loss)) }
        #expect(add(0)?.0 == .excellent)
        for _ in 0..<10 { #expect(add(0) == nil) }
        // One lossy second in a 5 s window: the mean is 2 %: good — but only after it persists.
        #expect(add(0.10) == nil)
        #expect(s.condition == .excellent)
        // The window still averages ≥ 0.5 %: the candidate persists for two evaluations and is reported.
        #expect(add(0)?.0 == .good)
        for _ in 0..<6 { _ = add(0) } // the lossy second leaves the window
        #expect(s.condition == .excellent)
    }

    @Test func unknownUntilThereIsSomethingToScore() {
        var s = NetworkConditionScorer()
        #expect(s.add(sample(0, loss: nil, estimate: nil)) == nil)
        #expect(s.condition == .unknown && s.reason == .unknown)
    }
}
