import Testing
@testable import Congestion

/// The estimator's parts one by one, each against the rule it implements.
@Suite struct NackGeneratorTests {
    @Test func asksForEachGapOldestFirstAndStopsWhenItArrives() {
        var n = NackGenerator()
        n.reorderToleranceMicros = 10_000
        n.onPacket(sequenceNumber: 10, now: 0)
        n.onPacket(sequenceNumber: 14, now: 1_000) // 11, 12, 13 missing
        #expect(n.due(now: 2_000).isEmpty) // within the reorder tolerance
        #expect(n.due(now: 20_000) == [11, 12, 13])
        #expect(n.due(now: 50_000).isEmpty) // not again before the resend interval
        n.onPacket(sequenceNumber: 12, now: 60_000) // repaired
        #expect(n.due(now: 120_000) == [11, 13])
        #expect(n.trackedCount == 2)
    }

    /// A packet merely reordered (it arrives within the tolerance) is never asked for.
    @Test func reorderingWithinTheToleranceIsNotLoss() {
        var n = NackGenerator()
        n.reorderToleranceMicros = 10_000
        for (seq, t) in [(1, 0), (3, 1_000), (2, 4_000), (4, 5_000)] as [(UInt16, Int64)] { n.onPacket(sequenceNumber: seq, now: t) }
        #expect(n.due(now: 20_000).isEmpty && n.trackedCount == 0)
        var eager = NackGenerator() // the default: ask at once
        eager.onPacket(sequenceNumber: 1, now: 0)
        eager.onPacket(sequenceNumber: 3, now: 1_000)
        #expect(eager.due(now: 1_000) == [2])
    }

    @Test func givesUpAfterItsRetriesOrItsAge() {
        var n = NackGenerator()
        n.maxRetries = 3
        n.onPacket(sequenceNumber: 1, now: 0)
        n.onPacket(sequenceNumber: 3, now: 0)
        var asked = 0
        var t: Int64 = 20_000
        while t < 1_000_000 { asked += n.due(now: t).count; t += 100_000 }
        #expect(asked == 3 && n.trackedCount == 0 && n.abandoned == 1)
        var old = NackGenerator()
        old.onPacket(sequenceNumber: 1, now: 0)
        old.onPacket(sequenceNumber: 3, now: 0)
        #expect(old.due(now: 20_000) == [2])
        #expect(old.due(now: 1_100_000).isEmpty && old.abandoned == 1) // older than a second
    }

    @Test func gapsAcrossTheWrapAndRestartsAreHandled() {
        var n = NackGenerator()
        n.onPacket(sequenceNumber: 65_534, now: 0)
        n.onPacket(sequenceNumber: 1, now: 0) // 65535 and 0 missing
        #expect(n.due(now: 20_000) == [65_535, 0])
        var jump = NackGenerator()
        jump.onPacket(sequenceNumber: 100, now: 0)
        jump.onPacket(sequenceNumber: 20_000, now: 0) // a restart, not 19 899 losses
        #expect(jump.trackedCount == 0)
    }

    /// Bounded: gaps pushed out of the 512-packet span are given up; a long clean run after a
    /// gap costs nothing; the stream goes on being tracked correctly for 10⁵ packets.
    @Test func staysBoundedOverALongStream() {
        var n = NackGenerator()
        var seq: UInt16 = 0
        var t: Int64 = 0
        n.onPacket(sequenceNumber: seq, now: t)
        var lost = 0, asked = 0
        for i in 1..<100_000 {
            seq &+= 1
            t += 1_000
            if i % 997 == 0 { seq &+= 1; lost += 1 } // one packet lost now and then
            n.onPacket(sequenceNumber: seq, now: t)
            if i % 20 == 0 { asked += n.due(now: t).count }
            #expect(n.trackedCount <= NackGenerator.maxTracked)
        }
        #expect(lost > 90 && asked >= lost) // every loss asked for (and again until it gives up)
    }
}

@Suite struct InterArrivalTests {
    /// Packets sent within 5 ms of a group's first form one group; deltas compare the last
    /// packets of consecutive groups (libwebrtc `inter_arrival.cc`).
    @Test func groupsBySendTimeAndReportsDeltasBetweenGroups() {
        var ia = InterArrival()
        var out: [InterArrival.Deltas] = []
        for g in 0..<4 {
            for k in 0..<3 { // 3 packets 1 ms apart per group; groups 20 ms apart, arriving 25 ms apart
                let send = Int64(g) * 20_000 + Int64(k) * 1_000
                if let d = ia.add(sendMicros: send, arrivalMicros: 100_000 + Int64(g) * 25_000 + Int64(k) * 1_000, size: 1_000) {
                    out.append(d)
                }
            }
        }
        #expect(
            out == [
                InterArrival.Deltas(sendMicros: 20_000, arrivalMicros: 25_000, sizeBytes: 0),
                InterArrival.Deltas(sendMicros: 20_000, arrivalMicros: 25_000, sizeBytes: 0)
            ])
    }

    @Test func aPacketFromAnEarlierGroupIsIgnored() {
        var ia = InterArrival()
        _ = ia.add(sendMicros: 0, arrivalMicros: 0, size: 100)
        _ = ia.add(sendMicros: 20_000, arrivalMicros: 20_000, size: 100)
        #expect(ia.add(sendMicros: 10_000, arrivalMicros: 30_000, size: 100) == nil)
    }
}

@Suite struct LossBasedEstimatorTests {
    /// libwebrtc `send_side_bandwidth_estimation.cc`: ≤ 2 % → +8 % (over the lowest rate of the
    /// last second) + 1 kbps; 2–10 % → hold; > 10 % → × (1 − loss/2); once a second, ≥ 20 packets.
    @Test func followsTheClassicRule() {
        var e = LossBasedEstimator(startBitrate: 1_000_000)
        #expect(e.update(lost: 0, of: 10, delayBased: 5_000_000, now: 0) == 1_000_000) // too few packets
        #expect(e.update(lost: 0, of: 100, delayBased: 5_000_000, now: 0) == 1_081_000)
        #expect(e.update(lost: 0, of: 100, delayBased: 5_000_000, now: 500_000) == 1_081_000) // once a second
        #expect(e.update(lost: 5, of: 100, delayBased: 5_000_000, now: 1_000_000) == 1_081_000) // 5 %: hold
        let cut = e.update(lost: 20, of: 100, delayBased: 5_000_000, now: 2_000_000) // 20 %
        #expect(cut == Int(1_081_000 * 0.9))
        #expect(e.lastLossFraction == 0.2)
    }

    @Test func neverRunsFarAheadOfTheDelayBasedEstimate() {
        var e = LossBasedEstimator(startBitrate: 3_000_000)
        #expect(e.update(lost: 0, of: 100, delayBased: 500_000, now: 0) == 1_000_000) // 2 × delay-based
    }
}

@Suite struct TrendlineTests {
    static func feed(_ t: inout TrendlineEstimator, groups: Int, extraDelayMs: Double, start: Int64 = 0) {
        for i in 0..<groups {
            let d = InterArrival.Deltas(sendMicros: 20_000, arrivalMicros: 20_000 + Int64(extraDelayMs * 1000), sizeBytes: 0)
            t.update(deltas: d, arrivalMicros: start + Int64(i) * 20_000)
        }
    }

    /// Arrivals spreading out (a queue building) is overuse; a steady path is normal.
    @Test func detectsAGrowingQueueAsOveruse() {
        var steady = TrendlineEstimator()
        Self.feed(&steady, groups: 60, extraDelayMs: 0)
        #expect(steady.state == .normal)
        var building = TrendlineEstimator()
        Self.feed(&building, groups: 60, extraDelayMs: 2)
        #expect(building.state == .overusing)
        var draining = TrendlineEstimator()
        Self.feed(&draining, groups: 60, extraDelayMs: -2)
        #expect(draining.state == .underusing)
    }

    /// The threshold adapts towards |modified trend| (up at k_up, down at k_down), within [6, 600]
    /// (libwebrtc `trendline_estimator.cc` UpdateThreshold).
    @Test func adaptiveThresholdMovesTowardsTheTrendWithinItsBounds() {
        var quiet = TrendlineEstimator()
        Self.feed(&quiet, groups: 400, extraDelayMs: 0)
        #expect(quiet.threshold == 6) // no trend for 8 s: down to the floor
        var noisy = TrendlineEstimator()
        Self.feed(&noisy, groups: 30, extraDelayMs: 0)
        let before = noisy.threshold
        // A sustained trend: modified trend ≈ 60 × 0.04 × 4 ≈ 9.6, above the threshold but not a
        // spike (> threshold + 15, which is not adapted to): the threshold rises towards it.
        Self.feed(&noisy, groups: 60, extraDelayMs: 0.8, start: 600_000)
        #expect(noisy.threshold > before + 1, "\(noisy.threshold), modified trend \(noisy.modifiedTrend)")
        #expect(noisy.threshold <= noisy.modifiedTrend + 0.5)
    }
}

/// The receive-side estimate behind REMB (a WHEP server with goog-remb but no transport-cc),
/// open loop: a sender that does not listen, one packet of 1200 bytes at a time.
@Suite struct RemoteBitrateEstimatorTests {
    /// Packets sent at `sendBps` for `seconds` through a bottleneck of `linkBps` (nil: none), with
    /// their 24-bit abs-send-time; the estimate at the end and every REMB the throttle let out.
    func run(sendBps: Int, linkBps: Int?, seconds: Int64, startAbs: Int64 = 0) -> (estimate: Int?, rembs: [(Int64, Int)]) {
        var e = RemoteBitrateEstimator()
        let interval = Int64(1200 * 8) * 1_000_000 / Int64(sendBps)
        var send: Int64 = 0, linkFree: Int64 = 0
        var rembs: [(Int64, Int)] = []
        while send < seconds * 1_000_000 {
            var arrival = send + 20_000 // 20 ms of propagation
            if let link = linkBps {
                arrival = max(arrival, linkFree) + Int64(1200 * 8) * 1_000_000 / Int64(link)
                linkFree = arrival
            }
            let abs = UInt32(truncatingIfNeeded: ((send + startAbs) << 18) / 1_000_000) & 0xFF_FFFF
            e.onPacket(absSendTime: abs, arrivalMicros: arrival, size: 1200)
            if let r = e.remb(now: arrival) { rembs.append((arrival, r)) }
            send += interval
        }
        return (e.estimate, rembs)
    }

    @Test func findsTheBottleneck() throws {
        // 2 Mbit/s into 1 Mbit/s: the queue grows, the delay gradient says overuse, and the
        // estimate falls to about what gets through (AIMD backs off to 0.85 × the incoming rate).
        let (estimate, rembs) = run(sendBps: 2_000_000, linkBps: 1_000_000, seconds: 10)
        let e = try #require(estimate)
        #expect(e >= 600_000 && e <= 1_100_000, "\(e)")
        // A drop goes out at once, a rise at most every 200 ms.
        for (a, b) in zip(rembs, rembs.dropFirst()) where b.1 * 103 / 100 > a.1 { #expect(b.0 - a.0 >= 200_000, "\(a) → \(b)") }
        #expect(rembs.count >= 10)
    }

    @Test func doesNotCutAnUncongestedFlow() throws {
        // 1 Mbit/s with no bottleneck: no overuse; the estimate is never below what arrives.
        let e = try #require(run(sendBps: 1_000_000, linkBps: nil, seconds: 10).estimate)
        #expect(e >= 950_000, "\(e)")
    }

    @Test func survivesTheAbsSendTimeWrap() throws {
        // abs-send-time wraps every 64 s: start 3 s before the wrap; a wrong unwrap reads as a
        // 64 s jump (a huge send gap) and the detector would see nonsense.
        let e = try #require(run(sendBps: 1_000_000, linkBps: nil, seconds: 8, startAbs: 61_000_000).estimate)
        #expect(e >= 950_000, "\(e)")
    }
}
