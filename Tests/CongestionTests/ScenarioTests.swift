import Testing
import Congestion

/// Publisher ⇄ receiver over an emulated link in virtual time (see `Scenario`): 60 s run in a
/// fraction of a second, deterministic for the seed.
@Suite struct ScenarioTests {
    func mean(_ xs: [Scenario.Sample]) -> Double { Double(xs.reduce(0) { $0 + $1.estimate }) / Double(max(1, xs.count)) }

    func describe(_ s: Scenario) -> String {
        s.samples.filter { $0.t % 1_000_000 == 0 }.map { "\($0.t / 1_000_000)s:\($0.estimate / 1000)k/q\($0.queueMicros / 1000)ms" }.joined(separator: " ")
    }

    @Test func followsCapacitySteps4M800k4M() throws {
        var s = try Scenario("0s:rate=4mbit,delay=20ms,queue=500ms;20s:rate=800kbit;40s:rate=4mbit")
        s.run(seconds: 60)
        let trace = describe(s)
        for (from, to, capacity) in [(5.0, 20.0, 4_000_000.0), (25.0, 40.0, 800_000.0), (45.0, 60.0, 4_000_000.0)] {
            let w = s.window(from, to)
            let m = mean(w)
            #expect(abs(m - capacity) / capacity <= 0.20, "mean estimate \(Int(m)) vs capacity \(Int(capacity)) in [\(from), \(to)) s: \(trace)")
            #expect(w.allSatisfy { abs(Double($0.estimate) - capacity) / capacity <= 0.30 }, "a sample strays more than 30 %: \(trace)")
            // The bottleneck queue stays short once the estimate has settled.
            #expect(w.map(\.queueMicros).max()! < 250_000, "queueing delay: \(trace)")
        }
        // Under the 800 kbps cap the top layer is suspended; at 4 Mbps all three run at target.
        #expect(s.window(25, 40).allSatisfy { $0.layers[2] == 0 && $0.layers[0] > 0 })
        #expect(s.window(45, 60).allSatisfy { $0.layers == [150_000, 500_000, 2_500_000] })
    }

    @Test func twoPercentRandomLossDoesNotCollapseTheRate() throws {
        var s = try Scenario("rate=4mbit,delay=20ms,loss=2%")
        s.run(seconds: 30)
        let w = s.window(5, 30)
        #expect(w.allSatisfy { $0.estimate >= 3_200_000 }, "\(describe(s))")
        #expect(w.allSatisfy { $0.layers[2] > 0 })
    }

    @Test func recoversWithinFiveSecondsAfterATotalOutage() throws {
        var s = try Scenario("0s:rate=2mbit,delay=20ms;10s:loss=100%;15s:loss=0%")
        s.run(seconds: 30)
        let trace = describe(s)
        // During the outage the estimate (and with it the media) backs off.
        #expect(s.window(13, 15).allSatisfy { $0.estimate < 200_000 }, "\(trace)")
        let after = s.window(20, 30)
        #expect(abs(mean(after) - 2_000_000) / 2_000_000 <= 0.20, "\(trace)")
        #expect(after.allSatisfy { $0.estimate >= 1_400_000 }, "\(trace)")
    }

    @Test func isDeterministic() throws {
        var a = try Scenario("rate=1mbit,loss=3%,burst=3,jitter=5ms", seed: 7), b = try Scenario("rate=1mbit,loss=3%,burst=3,jitter=5ms", seed: 7)
        a.run(seconds: 10); b.run(seconds: 10)
        #expect(a.samples.map(\.estimate) == b.samples.map(\.estimate))
    }
}
