import Testing
@testable import Impairment
import RTPCore

@Suite struct ImpairmentSpecTests {
    @Test func parsesOneStep() throws {
        let s = try ImpairmentSchedule.parse("loss=2%,burst=4,delay=40ms,jitter=10ms,rate=800kbit,queue=200ms")
        #expect(s.steps.count == 1)
        let v = s.settings(at: 0)
        #expect(v.lossPercent == 2 && v.burstLength == 4 && v.delayMicros == 40_000 && v.jitterMicros == 10_000)
        #expect(v.rateBps == 800_000 && v.queueMicros == 200_000)
    }

    @Test func parsesACumulativeSchedule() throws {
        let s = try ImpairmentSchedule.parse("0s:rate=3mbit;10s:rate=600kbit;20s:loss=100%")
        #expect(s.settings(at: 5_000_000).rateBps == 3_000_000)
        #expect(s.settings(at: 15_000_000).rateBps == 600_000)
        let last = s.settings(at: 25_000_000)
        #expect(last.rateBps == 600_000 && last.lossPercent == 100) // earlier parameters carry over
        let late = try ImpairmentSchedule.parse("5s:loss=100%;10s:loss=0%")
        #expect(
            late.settings(at: 0).isNeutral && late.settings(at: 6_000_000).lossPercent == 100
                && late.settings(at: 11_000_000).lossPercent == 0)
    }

    @Test(arguments: [
        "", "loss", "loss=200%", "speed=1", "rate=fast", "delay=-1s", "burst=0", "10s:loss=1%;5s:loss=2%",
        "loss=1%;loss=2%", "queue=0ms", "delay=1h"
    ])
    func rejectsBadSpecs(_ text: String) {
        #expect(throws: ImpairmentSchedule.ParseError.self) { try ImpairmentSchedule.parse(text) }
    }

    @Test func valueSyntax() throws {
        #expect(try ValueSyntax.bitrate("2.5mbit") == 2_500_000)
        #expect(try ValueSyntax.duration("500ms") == 500_000)
        #expect(try ValueSyntax.percent("12.5%") == 12.5)
    }

    @Test func seededFuzzNeverCrashes() {
        var rng = SplitMix64(seed: 11)
        let alphabet = Array("0123456789.%;:=,msk lossburstdelayjitterratequeue".utf8)
        var ok = 0, failed = 0
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 40)
            let text = String(decoding: (0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }, as: UTF8.self)
            if (try? ImpairmentSchedule.parse(text)) != nil { ok += 1 } else { failed += 1 }
        }
        #expect(failed > 1000)
        #expect(ok + failed == 20_000)
    }
}

@Suite struct LinkEmulatorTests {
    @Test func rateCapSpacesPacketsAndQueueDropsTheExcess() throws {
        // 1 Mbps; 1000-byte packets (8224 bits with IP/UDP) take 8.224 ms each.
        var link = LinkEmulator(schedule: try .parse("rate=1mbit,queue=100ms"), seed: 1, startMicros: 0)
        var deliveries: [Int64] = []
        for _ in 0..<30 { if let t = link.admit(size: 1000, now: 0) { deliveries.append(t) } }
        #expect(deliveries.first == 8_224)
        #expect(zip(deliveries, deliveries.dropFirst()).allSatisfy { $1 - $0 == 8_224 })
        // 100 ms of queue holds 12 packets behind the one being sent; the rest are dropped.
        #expect(deliveries.count == 13)
        #expect(link.counters.droppedByQueue == 17)
        #expect(link.counters.maxQueueMicros <= 100_000)
    }

    /// `bucket=` is tbf's burst: after an idle spell the bucket's bytes pass at once, then the
    /// rate applies; the queue holds `queue` of waiting on top of what the bucket passed.
    @Test func tokenBucketPassesItsBurstThenTheRate() throws {
        // 1 Mbps, a 10 kb bucket (10 240 bytes): ten 1000-byte packets (1028 bytes each) pass at
        // once, the 11th waits for the 1 040 bytes it lacks (8.32 ms), then one every 8.224 ms.
        var link = LinkEmulator(schedule: try .parse("rate=1mbit,queue=50ms,bucket=10kb"), seed: 1, startMicros: 0)
        var deliveries: [Int64] = []
        for _ in 0..<40 { if let t = link.admit(size: 1000, now: 0) { deliveries.append(t) } }
        #expect(deliveries.prefix(9).allSatisfy { $0 == 0 }, "\(deliveries)")
        #expect(deliveries[9] > 0 && deliveries[9] <= 8_224, "\(deliveries)")
        #expect(zip(deliveries.dropFirst(10), deliveries.dropFirst(11)).allSatisfy { $1 - $0 == 8_224 }, "\(deliveries)")
        // Waiting is bounded by 50 ms + the bucket's 81.92 ms at the rate.
        #expect(link.counters.maxQueueMicros <= 50_000 + 81_920 && link.counters.droppedByQueue > 0)
        #expect(deliveries.count + link.counters.droppedByQueue == 40)
        // After a second idle the bucket is full again: a burst passes at once.
        let again = link.admit(size: 1000, now: 2_000_000)
        #expect(again == 2_000_000)
        // Sustained: the throughput is the rate.
        var bits = 0, last: Int64 = 0
        for i in 0..<20_000 { if let t = link.admit(size: 1200, now: 3_000_000 + Int64(i) * 500) { bits += (1200 + 28) * 8; last = t } }
        #expect(abs(Double(bits) / (Double(last - 3_000_000) / 1e6) - 1_000_000) / 1_000_000 < 0.02)
        #expect(try ImpairmentSchedule.parse("bucket=20kb").steps[0].settings.bucketBytes == 20_480)
    }

    @Test func throughputMatchesTheCapUnderOverload() throws {
        var link = LinkEmulator(schedule: try .parse("rate=800kbit"), seed: 2, startMicros: 0)
        var bits = 0
        var last: Int64 = 0
        for i in 0..<20_000 { // offer 1200-byte packets at 2 Mbps for 10 s
            if let t = link.admit(size: 1200, now: Int64(i) * 500) { bits += (1200 + 28) * 8; last = t }
        }
        let rate = Double(bits) / (Double(last) / 1e6)
        #expect(abs(rate - 800_000) / 800_000 < 0.01)
    }

    @Test func randomLossAveragesItsRate() throws {
        var link = LinkEmulator(schedule: try .parse("loss=5%"), seed: 3, startMicros: 0)
        for i in 0..<100_000 { _ = link.admit(size: 100, now: Int64(i)) }
        let loss = Double(link.counters.droppedByLoss) / 100_000
        #expect(abs(loss - 0.05) < 0.005)
    }

    @Test func burstLossComesInBurstsWithTheSameAverage() throws {
        var link = LinkEmulator(schedule: try .parse("loss=5%,burst=8"), seed: 4, startMicros: 0)
        var lost = 0, bursts = 0, previousLost = false
        for i in 0..<200_000 {
            let l = link.admit(size: 100, now: Int64(i)) == nil
            if l { lost += 1; if !previousLost { bursts += 1 } }
            previousLost = l
        }
        #expect(abs(Double(lost) / 200_000 - 0.05) < 0.01)
        let meanBurst = Double(lost) / Double(bursts)
        #expect(meanBurst > 6 && meanBurst < 10)
    }

    @Test func delayJitterAndOrder() throws {
        var link = LinkEmulator(schedule: try .parse("delay=40ms,jitter=10ms"), seed: 5, startMicros: 0)
        var previous: Int64 = 0
        var minD = Int64.max, maxD = Int64.min
        for i in 0..<10_000 {
            let now = Int64(i) * 1000
            let admitted = link.admit(size: 100, now: now)
            let t = try #require(admitted)
            #expect(t >= previous)
            previous = t
            minD = min(minD, t - now); maxD = max(maxD, t - now)
        }
        #expect(minD >= 30_000 && minD < 40_000) // order is kept, so a packet can wait behind a later one
        #expect(maxD > 49_000)
    }

    @Test func scheduleStepsApplyAtTheirTime() throws {
        var link = LinkEmulator(schedule: try .parse("0s:loss=0%;1s:loss=100%;2s:loss=0%"), seed: 6, startMicros: 10_000_000)
        let a = link.admit(size: 10, now: 10_500_000), b = link.admit(size: 10, now: 11_500_000), c = link.admit(size: 10, now: 12_500_000)
        #expect(a != nil && b == nil && c != nil)
    }

    @Test func sameSeedSameResult() throws {
        let s = try ImpairmentSchedule.parse("loss=10%,burst=3,jitter=5ms,rate=2mbit")
        var a = LinkEmulator(schedule: s, seed: 9, startMicros: 0), b = LinkEmulator(schedule: s, seed: 9, startMicros: 0)
        var same = 0
        for i in 0..<5000 {
            let x = a.admit(size: 500, now: Int64(i) * 300), y = b.admit(size: 500, now: Int64(i) * 300); if x == y { same += 1 }
        }
        #expect(same == 5000)
    }
}

@Suite struct ImpairmentFuzzTests {
    /// 10⁵ mutated specs and schedules: each parses or throws, and what parses drives the emulator.
    @Test func seededMutationsNeverCrash() {
        var rng = SplitMix64(seed: 0x5EED) // the emulator's own generator
        func next() -> UInt64 { rng.next() }
        let seeds = ["loss=2%,burst=4,delay=40ms,jitter=10ms,rate=800kbit,queue=200ms", "0s:rate=3mbit;10s:rate=600kbit;20s:loss=100%"].map
        { Array($0.utf8) }
        let alphabet = Array("0123456789.%;:=,-kmbitsgx ".utf8)
        var ok = 0, failed = 0
        for i in 0..<100_000 {
            var input = seeds[i % 2]
            for _ in 0..<Int(1 + next() % 4) {
                let at = Int(next() % UInt64(input.count))
                switch next() % 3 {
                case 0: input[at] = alphabet[Int(next() % UInt64(alphabet.count))]
                case 1: input.insert(alphabet[Int(next() % UInt64(alphabet.count))], at: at)
                default: if input.count > 1 { input.remove(at: at) }
                }
            }
            if let s = try? ImpairmentSchedule.parse(String(decoding: input, as: UTF8.self)) {
                ok += 1
                // Round trip: written back in the spec syntax, it parses to the same schedule.
                // (a plain comparison: 10⁵ `#expect` expansions cost more than the parser)
                if (try? ImpairmentSchedule.parse(s.spec)) != s {
                    Issue.record("round trip: \(String(decoding: input, as: UTF8.self)) → \(s.spec)")
                }
                // So does the summary a person reads (only what each step changes, round units).
                if (try? ImpairmentSchedule.parse(s.summary)) != s {
                    Issue.record("summary round trip: \(String(decoding: input, as: UTF8.self)) → \(s.summary)")
                }
                var link = LinkEmulator(schedule: s, seed: 1, startMicros: 0)
                for k in 0..<5 { _ = link.admit(size: 1_000, now: Int64(k) * 1_000) }
            } else {
                failed += 1
            }
        }
        #expect(ok > 1_000 && failed > 1_000)
    }
}

@Suite struct ImpairmentSummaryTests {
    @Test(arguments: [
        ("loss=10%", "loss=10%"), ("rate=800kbit", "rate=800kbit"),
        ("loss=2%,burst=4,delay=40ms,jitter=10ms", "loss=2%,burst=4,delay=40ms,jitter=10ms"),
        ("0s:rate=3mbit;10s:rate=600kbit", "0s:rate=3mbit;10s:rate=600kbit"), ("0s:rate=1mbit;5s:rate=none", "0s:rate=1mbit;5s:rate=none"),
        ("20s:loss=100%;22s:loss=0%", "0s:loss=0%;20s:loss=100%;22s:loss=0%"),
        ("rate=1500kbit,queue=50ms,bucket=20kb", "rate=1500kbit,queue=50ms,bucket=20480b")
    ])
    func theSummaryIsWhatWasMeant(_ given: String, _ summary: String) throws {
        let s = try ImpairmentSchedule.parse(given)
        #expect(s.summary == summary)
        #expect(try ImpairmentSchedule.parse(s.summary) == s)
    }
}
