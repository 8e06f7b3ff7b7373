import Testing
@testable import Congestion
import RTPCore

@Suite struct AllocatorTests {
    let layers = [
        LayerLimits(min: 30_000, target: 150_000, max: 200_000), LayerLimits(min: 150_000, target: 500_000, max: 700_000),
        LayerLimits(min: 600_000, target: 2_500_000, max: 2_500_000)
    ]

    @Test func audioFirstThenLayersBottomUp() {
        var a = BitrateAllocator(audioBitrate: 32_000, layers: layers)
        #expect(a.allocate(4_000_000).layers == [150_000, 500_000, 2_500_000])
        #expect(a.allocate(3_182_000).layers == [150_000, 500_000, 2_500_000])
        let mid = a.allocate(800_000)
        #expect(mid.audio == 32_000 && mid.layers == [150_000, 618_000, 0]) // top off, the rest to the top active layer (up to max)
        #expect(mid.bandwidthLimited == [false, false, true])
        let low = a.allocate(100_000)
        #expect(low.layers == [68_000, 0, 0] && low.bandwidthLimited == [true, true, true])
        // The lowest layer always gets its minimum, even when that is more than available.
        #expect(a.allocate(40_000).layers[0] == 30_000)
    }

    @Test func suspendedLayersResumeWithHysteresis() {
        var a = BitrateAllocator(audioBitrate: 32_000, layers: layers)
        _ = a.allocate(700_000) // top layer off
        // 682k for video: 150 + 500 leaves 32k; the top layer needs 600k × 1.2 to come back.
        #expect(a.allocate(1_350_000).layers[2] == 0) // 668k left < 720k
        #expect(a.allocate(1_420_000).layers[2] == 738_000)
        #expect(a.allocate(1_300_000).layers[2] == 618_000) // once on, its plain minimum keeps it on
    }
}

extension AllocatorTests {
    /// One encoding moves up to a size only at libwebrtc's VP8 singlecast start rate for it
    /// (`encoder_info_settings.cc`: 360p 300 kbps, 720p 900 kbps), holds it down to its minimum,
    /// and at an 800 kbit/s link stays at 360p — 720p at 750 kbps is what drove a link into loss.
    @Test func oneEncodingMovesUpAtTheStartRate() {
        #expect(LayerLimits.singlecastStartBitrate(width: 320, height: 180) == 0)
        #expect(LayerLimits.singlecastStartBitrate(width: 640, height: 360) == 300_000)
        #expect(LayerLimits.singlecastStartBitrate(width: 960, height: 540) == 500_000)
        #expect(LayerLimits.singlecastStartBitrate(width: 1280, height: 720) == 900_000)
        #expect(LayerLimits.singlecastStartBitrate(width: 1920, height: 1080) == 900_000)
        let sizes = [(320, 180), (640, 360), (1280, 720)]
        var a = BitrateAllocator(
            audioBitrate: 32_000,
            layers: zip(layers, sizes).map {
                LayerLimits(
                    min: $0.min, target: $0.target, max: $0.max, start: LayerLimits.singlecastStartBitrate(width: $1.0, height: $1.1))
            })
        a.singleEncoding = true
        #expect(a.allocate(300_000).layers == [200_000, 0, 0]) // 268k < 360p's 300k start
        #expect(a.allocate(800_000).layers == [0, 700_000, 0]) // 360p; 768k < 720p's 900k
        #expect(a.allocate(940_000).layers == [0, 0, 908_000]) // up at 908k ≥ 900k
        #expect(a.allocate(700_000).layers == [0, 0, 668_000]) // held down to its 600k minimum
        #expect(a.allocate(600_000).layers == [0, 568_000, 0]) // below it: down to 360p
    }
}

/// Loss at a full queue (the sender overfilled a tail-drop bottleneck) is told from loss at
/// random (a lossy path drops whatever the queue): the pre-flight judges only the latter.
@Suite struct LossAtFullQueueTests {
    @Test func tailDropAtAFullQueueIsToldFromRandomLoss() {
        var e = BandwidthEstimator()
        e.start(now: 0)
        var results: [PacketResult] = []
        var n: Int64 = 0
        // 1 s with a 10 ms base delay and no queue; every 20th packet lost at random.
        for i in 0..<200 {
            let send = Int64(i) * 5_000
            results.append(
                PacketResult(
                    sequence: n, sendMicros: send, size: 1_000, receiveMicros: i % 20 == 19 ? nil : send + 10_000, probeCluster: nil))
            n += 1
        }
        // Then a queue that fills to 150 ms over 1 s and overflows: its last 10 packets are lost.
        for i in 0..<200 {
            let send = 1_000_000 + Int64(i) * 5_000
            let full = i >= 190
            results.append(
                PacketResult(
                    sequence: n, sendMicros: send, size: 1_000, receiveMicros: full ? nil : send + 10_000 + Int64(i) * 750,
                    probeCluster: nil))
            n += 1
        }
        var est = NetworkEstimate(bitrate: 0, delayBased: 0, lossBased: 0, acknowledged: nil, usage: .normal, lossFraction: 0, rttMicros: 0)
        for chunk in stride(from: 0, to: results.count, by: 20) {
            est = e.onPacketResults(Array(results[chunk..<chunk + 20]), now: results[chunk + 19].sendMicros + 200_000)
        }
        #expect(est.packetsReported == 400 && est.packetsReportedLost == 20, "\(est)")
        #expect(est.packetsReportedLostAtFullQueue == 10, "\(est)")
        // From the packet after the one that queued ≥ 20 ms (the 28th of the second second) on.
        #expect(est.packetsReportedAtFullQueue == 172, "\(est)")
    }
}

@Suite struct PacerTests {
    @Test func pacesAtTheRateAudioFirst() {
        var p = Pacer(pacingRate: 1_000_000) // 125 bytes per ms
        for i in 0..<20 { p.enqueue(Int32(i), size: 1_000, priority: .video) }
        p.enqueue(-1, size: 100, priority: .audio)
        var sentAt: [Int32: Int64] = [:]
        var now: Int64 = 0
        while sentAt.count < 21 && now < 1_000_000 {
            switch p.next(now: now) {
            case let .send(id, _): sentAt[id] = now; continue
            case let .wait(until): now = max(now + 1, until)
            default: now += 1_000
            }
        }
        #expect(sentAt[-1] == 0) // audio leaves at once
        // 20 kB at 1 Mbps take ~160 ms.
        let last = sentAt.values.max()!
        #expect(last > 120_000 && last < 200_000)
    }

    @Test func probeClustersArePacedAtTheProbeRateAndPadded() {
        var p = Pacer(pacingRate: 300_000)
        p.startProbe(ProbeCluster(id: 7, bitrate: 2_000_000, minPackets: 5, minBytes: 10_000))
        var now: Int64 = 0, bytes = 0, first: Int64?, last: Int64 = 0, tags = Set<Int>()
        while p.isProbing && now < 1_000_000 {
            switch p.next(now: now) {
            case let .pad(n, cluster): bytes += n; tags.insert(cluster ?? -1); first = first ?? now; last = now
            case let .wait(until): now = until
            default: now += 100
            }
        }
        #expect(tags == [7] && bytes >= 10_000)
        // ~11 kB at 2 Mbps: ~44 ms from first to last packet.
        let rate = Double(bytes - p.paddingPacketSize) * 8e6 / Double(last - first!)
        #expect(abs(rate - 2_000_000) / 2_000_000 < 0.1)
    }

    /// A probe cluster through a token-bucket shaper (tbf's burst): the bucket passes its first
    /// bytes at line rate, the rest arrive at the shaper's rate. The figure is the rate the
    /// path holds (the cluster's tail), and it says the path was saturated.
    @Test func probeThroughATokenBucketReadsTheRateAfterTheBurst() throws {
        // 20 packets of 1 000 bytes sent at 4 Mbps (2 ms apart); the first 8 pass at once, the
        // rest one every 8 ms (1 Mbps).
        var results: [PacketResult] = []
        for i in 0..<20 {
            let send = Int64(i) * 2_000
            let arrival = i < 8 ? 10_000 + send / 10 : 10_000 + Int64(i - 7) * 8_000
            results.append(PacketResult(sequence: Int64(i), sendMicros: send, size: 1_000, receiveMicros: arrival, probeCluster: 3))
        }
        var probe = ProbeBitrateEstimator()
        let r = try #require(probe.add(results).first)
        #expect(r.cluster == 3 && r.saturated)
        #expect(abs(Double(r.bitrate) - 0.95 * 1_000_000) / 1_000_000 < 0.05, "\(r.bitrate)")
        // Without the tail rule the whole cluster's 19 kB over 96 ms read 1.58 Mbps.
    }

    /// A saturated probe that reads less than the estimate lowers it to what the path carried
    /// (an earlier probe read a burst): the estimator does not wait for the queue to overflow.
    @Test func aSaturatedProbeBelowTheEstimateLowersIt() {
        var e = BandwidthEstimator(startBitrate: 3_000_000)
        var results: [PacketResult] = []
        for i in 0..<20 {
            let send = Int64(i) * 2_000 // 4 Mbps offered
            results.append(
                PacketResult(sequence: Int64(i), sendMicros: send, size: 1_000, receiveMicros: 10_000 + Int64(i) * 8_000, probeCluster: 1))
        }
        e.onPacketResults(results, now: 200_000)
        #expect(e.estimate.delayBased < 1_050_000 && e.estimate.delayBased > 850_000, "\(e.estimate)")
    }

    /// A periodic probe that "found" headroom followed within a second by overuse found none
    /// (a bucket's burst): the periodic interval grows instead of the burst being re-read.
    @Test func overuseRightAfterAPeriodicProbeBacksOffTheInterval() {
        var c = ProbeController(maxBitrate: 10_000_000)
        c.maybeProbe(estimate: 1_000_000, desired: 5_000_000, now: 3_000_000)
        let cluster = c.nextCluster()!
        c.onResult(cluster: cluster.id, bitrate: 1_900_000, now: 3_200_000)
        #expect(c.periodicInterval == ProbeController.periodicIntervalMicros)
        c.onOveruse(now: 3_600_000)
        #expect(c.periodicInterval == 2 * ProbeController.periodicIntervalMicros)
        // Overuse long after a probe is the link's, not the probe's.
        c.onOveruse(now: 9_000_000)
        #expect(c.periodicInterval == 2 * ProbeController.periodicIntervalMicros)
    }

    /// The acknowledged rate without probe packets: a probe's burst is not the link's rate.
    @Test func acknowledgedRateOutsideProbesLeavesTheProbesBurstOut() {
        var a = AcknowledgedBitrateEstimator()
        var results: [PacketResult] = []
        for i in 0..<50 { // 1 000 bytes every 10 ms: 800 kbps of media
            results.append(
                PacketResult(
                    sequence: Int64(i), sendMicros: Int64(i) * 10_000, size: 1_000, receiveMicros: Int64(i) * 10_000, probeCluster: nil))
        }
        for i in 0..<10 { // a probe's 10 kB arriving at once in the middle
            results.append(
                PacketResult(sequence: Int64(100 + i), sendMicros: 250_000, size: 1_000, receiveMicros: 250_000, probeCluster: 1))
        }
        results.sort { $0.receiveMicros! < $1.receiveMicros! }
        a.add(results)
        let all = a.bitrate!, outside = a.bitrateOutsideProbes!
        #expect(all > 900_000 && abs(outside - 800_000) < 20_000, "\(all) \(outside)")
    }

    @Test func paddingFillsUpToThePaddingRateAndMediaCountsAgainstIt() {
        func sent(media: Int, seconds: Int64 = 2) -> (padding: Int, media: Int) {
            var p = Pacer(pacingRate: 5_000_000)
            p.paddingRate = 1_000_000
            p.paddingPacketSize = 250
            var now: Int64 = 0, pad = 0, med = 0, nextFrame: Int64 = 0, id: Int32 = 0
            while now < seconds * 1_000_000 {
                if now >= nextFrame { // one 1 000-byte packet per frame, `media` bits/s
                    for _ in 0..<(media / 8 / 30 / 1_000) { p.enqueue(id, size: 1_000, priority: .video); id += 1 }
                    nextFrame += 33_333
                }
                switch p.next(now: now) {
                case let .pad(n, cluster): #expect(cluster == nil); pad += n
                case .send: med += 1_000
                case let .wait(until): now = min(until, nextFrame)
                case .idle: now = nextFrame
                }
            }
            return (pad * 8 / Int(seconds), med * 8 / Int(seconds))
        }
        let idle = sent(media: 0)
        #expect(abs(idle.padding - 1_000_000) < 60_000, "\(idle)")
        let some = sent(media: 600_000)
        #expect(abs(some.padding + some.media - 1_000_000) < 60_000, "\(some)")
        let above = sent(media: 1_500_000)
        #expect(above.padding == 0, "\(above)")
        var off = Pacer(pacingRate: 1_000_000)
        guard case .idle = off.next(now: 0) else { Issue.record("padding without a padding rate"); return }
    }
}

@Suite struct FeedbackLoopTests {
    @Test func generatorAndAdapterAgree() throws {
        var gen = TransportFeedbackGenerator(senderSSRC: 1)
        var adapter = TransportFeedbackAdapter()
        for i in 0..<300 {
            let seq = UInt16(truncatingIfNeeded: 65_400 + i) // crosses the wrap
            adapter.onSent(sequence: seq, sendMicros: Int64(i) * 1_000, size: 1_000)
            if i % 10 != 3 { gen.onPacket(transportSequence: seq, arrivalMicros: 5_000_000 + Int64(i) * 1_000 + 20_000, ssrc: 0xABCD) }
        }
        var results: [PacketResult] = []
        for fb in gen.makeFeedback() {
            // Through the wire format and back.
            let bytes = try [UInt8].writing(capacity: 2_000) { w throws(RTPWriteError) in try fb.write(to: &w) }
            var it = RTCPCompoundIterator()
            guard case let .transportFeedback(parsed) = try it.next(in: bytes.span) else { Issue.record("not parsed"); return }
            results += adapter.onFeedback(parsed)
        }
        #expect(results.count == 300)
        #expect(results.filter { $0.receiveMicros == nil }.count == 30)
        // One-way delay is constant: arrival − send is the same for every received packet (250 µs ticks).
        let delays = Set(results.compactMap { r in r.receiveMicros.map { $0 - r.sendMicros } })
        #expect(delays.count == 1)
        #expect(gen.makeFeedback().isEmpty) // nothing new
    }

    /// Packets lost just before the first arrival of a feedback message are reported lost (the
    /// message starts at the first packet not yet reported), and the message names a media SSRC
    /// the sender sends (libwebrtc drops transport feedback for an SSRC it does not know).
    @Test func lossesBeforeAMessagesFirstArrivalAreReported() throws {
        var gen = TransportFeedbackGenerator(senderSSRC: 1)
        for seq in UInt16(0)..<10 { gen.onPacket(transportSequence: seq, arrivalMicros: Int64(seq) * 1_000, ssrc: 0x1111) }
        #expect(gen.makeFeedback().map(\.arrivals.count) == [10])
        for seq in UInt16(12)..<20 { gen.onPacket(transportSequence: seq, arrivalMicros: Int64(seq) * 1_000, ssrc: 0x2222) }
        let second = gen.makeFeedback()
        #expect(second.count == 1 && second[0].baseSequence == 10 && second[0].arrivals.count == 10, "\(second)")
        #expect(
            second.first?.arrivals.prefix(2).allSatisfy { $0 == nil } == true
                && second.first?.arrivals.dropFirst(2).allSatisfy { $0 != nil } == true)
        #expect(second.first?.mediaSSRC == 0x2222)
        // Through the wire and back, the two losses are still there.
        let bytes = try [UInt8].writing(capacity: 500) { w throws(RTPWriteError) in try second[0].write(to: &w) }
        var it = RTCPCompoundIterator()
        guard case let .transportFeedback(parsed) = try it.next(in: bytes.span) else { Issue.record("not parsed"); return }
        #expect(parsed.arrivals.count == 10 && parsed.arrivals.filter { $0 == nil }.count == 2 && parsed.mediaSSRC == 0x2222)
        // After an outage (nothing for 3 s, 20 packets gone) the gap is not reported as one burst
        // of loss: as libwebrtc's receiver, arrivals older than 500 ms are forgotten.
        for seq in UInt16(40)..<45 { gen.onPacket(transportSequence: seq, arrivalMicros: 3_000_000 + Int64(seq) * 1_000, ssrc: 0x2222) }
        let after = gen.makeFeedback()
        #expect(after.count == 1 && after[0].baseSequence == 40 && after[0].arrivals.allSatisfy { $0 != nil }, "\(after)")
    }

    @Test func trendlineSeesAGrowingQueue() {
        var t = TrendlineEstimator()
        // Groups every 10 ms, arrivals spreading 2 ms more each time: the queue grows.
        for i in 1...60 {
            t.update(deltas: .init(sendMicros: 10_000, arrivalMicros: 12_000, sizeBytes: 0), arrivalMicros: Int64(i) * 12_000)
        }
        #expect(t.state == .overusing)
        var steady = TrendlineEstimator()
        for i in 1...60 {
            steady.update(deltas: .init(sendMicros: 10_000, arrivalMicros: 10_000, sizeBytes: 0), arrivalMicros: Int64(i) * 10_000)
        }
        #expect(steady.state == .normal)
    }

    @Test func aimdBacksOffToThroughputAndHolds() {
        var a = AimdRateControl(startBitrate: 2_000_000)
        let down = a.update(usage: .overusing, acknowledged: 1_000_000, now: 1_000_000)
        #expect(down == 845_000) // 0.85 × 1 Mbps − 5 kbps
        #expect(a.update(usage: .underusing, acknowledged: 1_000_000, now: 1_100_000) == down) // hold
        #expect(a.update(usage: .normal, acknowledged: 900_000, now: 2_100_000) == down) // increase starts from here
        let up = a.update(usage: .normal, acknowledged: 900_000, now: 3_100_000)
        #expect(up > down && up < 900_000) // additive near the known capacity
    }
}

@Suite struct FeedbackOutageTests {
    /// A sender of one packet a second (a single layer at 1 fps, no audio) hears feedback once a
    /// second: that is no outage, the estimate must not halve.
    @Test func sparseSenderWithTimelyFeedbackIsNoOutage() {
        var e = BandwidthEstimator(startBitrate: 300_000)
        var now: Int64 = 0
        for n in 0..<20 {
            now = Int64(n) * 1_000_000
            e.onPacketSent(transportSequence: UInt16(n), sendMicros: now, size: 1_000, probeCluster: nil)
            e.onPacketResults(
                [PacketResult(sequence: Int64(n), sendMicros: now, size: 1_000, receiveMicros: now + 20_000, probeCluster: nil)],
                now: now + 50_000)
            for t in stride(from: now + 60_000, to: now + 1_000_000, by: 100_000) { e.onTimer(now: t) }
        }
        #expect(e.estimate.lossFraction == 0)
        #expect(e.estimate.bitrate >= 300_000)
    }

    /// Packets sent and no feedback for them: halve every 500 ms.
    @Test func unreportedPacketsAreAnOutage() {
        var e = BandwidthEstimator(startBitrate: 800_000)
        e.onPacketSent(transportSequence: 0, sendMicros: 0, size: 1_000, probeCluster: nil)
        e.onPacketResults([PacketResult(sequence: 0, sendMicros: 0, size: 1_000, receiveMicros: 10_000, probeCluster: nil)], now: 20_000)
        let before = e.estimate.bitrate
        for n in 1...60 { // 50 packets/s for 1.2 s, no feedback
            let t = Int64(n) * 20_000
            e.onPacketSent(transportSequence: UInt16(n), sendMicros: t, size: 1_000, probeCluster: nil)
            e.onTimer(now: t)
        }
        #expect(e.estimate.lossFraction == 1)
        #expect(e.estimate.bitrate < before / 3) // halved twice (at ~0.54 s and ~1.06 s)
    }
}
