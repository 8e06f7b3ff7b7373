public import RTPCore

/// What the estimator concluded after a feedback message.
public struct NetworkEstimate: Equatable, Sendable {
    /// The send-side bandwidth estimate (bits/s): min(delay-based, loss-based).
    public var bitrate: Int
    public var delayBased: Int
    public var lossBased: Int
    public var acknowledged: Int?
    /// `acknowledged` without the probe clusters' packets (AcknowledgedBitrateEstimator).
    public var acknowledgedOutsideProbes: Int?
    public var usage: BandwidthUsage
    public var lossFraction: Double
    public var rttMicros: Int64
    /// Since the session began: packets transport-cc feedback reported on, and of them reported
    /// lost (each packet once, as the receiver's feedback gave it) — the loss of any window is
    /// the difference of two readings, not a mean of the loss-based rule's smoothed fraction.
    public var packetsReported = 0
    public var packetsReportedLost = 0
    /// The highest transport-wide sequence number feedback has reported on (unwrapped; its low
    /// 16 bits are the value on the wire; -1 before any): two readings name the packets a window
    /// counted, so a capture can count the same packets.
    public var highestReportedSequence: Int64 = -1
    /// Of `packetsReportedLost`, those lost at a full queue: the last packet received before
    /// each had waited ≥ 20 ms and ≥ 0.8 × the longest queueing delay seen — tail drop at a
    /// bottleneck the sender overfilled, where loss at random (a lossy radio, a policer, an
    /// nftables drop) comes at any queue length, mostly a short one.
    public var packetsReportedLostAtFullQueue = 0
    /// Packets reported on while the queue was full (by the same rule), received or lost: loss
    /// at random is then (lost − lost at a full queue) ÷ (reported − reported at a full queue),
    /// the loss rate of the packets that met no full queue.
    public var packetsReportedAtFullQueue = 0
}

/// Send-side bandwidth estimation of the GCC family over transport-cc feedback: arrival-time
/// grouping → trendline → overuse detector → AIMD, combined with the loss-based rule, with
/// start-up probing. Sans-IO: packets sent and feedback received are inputs, time is passed in.
public struct BandwidthEstimator: Sendable {
    public var adapter = TransportFeedbackAdapter()
    var interArrival = InterArrival()
    public private(set) var trendline = TrendlineEstimator()
    public private(set) var aimd: AimdRateControl
    public private(set) var loss: LossBasedEstimator
    var acked = AcknowledgedBitrateEstimator()
    public var probes: ProbeController
    var probeEstimator = ProbeBitrateEstimator()
    public private(set) var estimate: NetworkEstimate
    var lastFeedbackMicros: Int64?
    /// When the oldest packet not yet covered by feedback was sent (nil: all reported).
    var oldestUnreportedSendMicros: Int64?
    /// The estimate when feedback stopped (an outage); recovery probes aim back at it.
    var estimateBeforeOutage: Int?
    /// One-way delay (arrival in the receiver's clock − send time) of the least-delayed packet,
    /// the queueing delay of the last packet received, and the longest queueing delay seen.
    var minOneWayMicros: Int64?
    var lastQueueMicros: Int64 = 0
    var maxQueueMicros: Int64 = 0
    /// The last probe cluster measured and its bitrate (for stats and tests).
    public private(set) var lastProbeResult: (cluster: Int, bitrate: Int)?

    /// Start at 300 kbps as libwebrtc does (`congestion_controller` defaults); the floor defaults
    /// to 30 kbps, the lowest simulcast layer's minimum (libwebrtc's own floor is 5 kbps).
    /// What the receiver feeds back, as the answer negotiated it.
    public enum Feedback: String, Sendable, Equatable {
        /// Transport-wide feedback for every packet: delay-based + loss-based, probing.
        case transportCC
        /// Only the receiver's estimate (REMB, draft-alvestrand-rmcat-remb) and receiver-report
        /// loss: libwebrtc `send_side_bandwidth_estimation.cc` caps the loss-based rate with it.
        case remb
        /// Receiver reports only: the loss-based rule alone.
        case lossOnly
    }
    public let feedback: Feedback
    /// The last REMB heard (bps).
    public private(set) var receiverEstimate: Int?

    public init(startBitrate: Int = 300_000, minBitrate: Int = 30_000, maxBitrate: Int = 10_000_000, feedback: Feedback = .transportCC) {
        self.feedback = feedback
        aimd = AimdRateControl(startBitrate: startBitrate)
        aimd.minBitrate = minBitrate
        aimd.maxBitrate = maxBitrate
        loss = LossBasedEstimator(startBitrate: startBitrate)
        loss.minBitrate = minBitrate
        loss.maxBitrate = maxBitrate
        probes = ProbeController(maxBitrate: maxBitrate)
        estimate = NetworkEstimate(
            bitrate: startBitrate, delayBased: startBitrate, lossBased: startBitrate, acknowledged: nil,
            usage: .normal, lossFraction: 0, rttMicros: 200_000)
    }

    /// The most the estimate may claim: without traffic to measure, an app-limited sender cannot
    /// know more, so this is set to a margin above what the publisher could ever send.
    public mutating func setMaxBitrate(_ bps: Int) {
        aimd.maxBitrate = bps
        loss.maxBitrate = bps
        probes.maxBitrate = bps
    }

    /// Probes now and then while the estimate is below `desired` (what the allocator wants).
    public mutating func onDesiredBitrate(_ desired: Int, now: Int64) {
        probes.maxBitrate = aimd.maxBitrate
        guard feedback == .transportCC else { return }
        probes.maybeProbe(estimate: estimate.bitrate, desired: desired, now: now)
    }

    /// Begins start-up probing.
    public mutating func start(now: Int64) {
        // Probes are measured from transport-cc feedback; without it there is nothing to read them.
        if feedback == .transportCC { probes.start(startBitrate: estimate.bitrate, now: now) }
    }

    /// A REMB from the receiver: an upper bound for the estimate (libwebrtc
    /// `SendSideBandwidthEstimation::UpdateReceiverEstimate`).
    @discardableResult
    public mutating func onReceiverEstimate(_ bps: Int, now: Int64) -> NetworkEstimate {
        receiverEstimate = max(bps, aimd.minBitrate)
        return updateFromReports(lost: 0, of: 0, now: now)
    }

    /// Loss a receiver report told of (packets lost of packets expected since the last one), for
    /// the REMB and loss-only modes: the loss-based rule, capped by the REMB when there is one.
    @discardableResult
    public mutating func onReportedLoss(lost: Int, of expected: Int, now: Int64) -> NetworkEstimate {
        updateFromReports(lost: lost, of: expected, now: now)
    }

    mutating func updateFromReports(lost: Int, of expected: Int, now: Int64) -> NetworkEstimate {
        guard feedback != .transportCC else { return estimate }
        let cap = min(receiverEstimate ?? loss.maxBitrate, loss.maxBitrate)
        var lossBased = loss.update(lost: lost, of: expected, delayBased: cap, now: now)
        lossBased = min(lossBased, cap)
        estimate = NetworkEstimate(
            bitrate: lossBased, delayBased: receiverEstimate ?? lossBased, lossBased: lossBased, acknowledged: nil,
            usage: .normal, lossFraction: loss.lastLossFraction, rttMicros: estimate.rttMicros)
        return estimate
    }

    public mutating func onPacketSent(transportSequence: UInt16, sendMicros: Int64, size: Int, probeCluster: Int?) {
        adapter.onSent(sequence: transportSequence, sendMicros: sendMicros, size: size, probeCluster: probeCluster)
        if oldestUnreportedSendMicros == nil { oldestUnreportedSendMicros = sendMicros }
    }

    public mutating func onRoundTripTime(_ micros: Int64) {
        estimate.rttMicros = micros
        aimd.rttMicros = micros
        loss.rttMicros = micros
    }

    @discardableResult
    public mutating func onTransportFeedback(_ fb: TransportFeedback, now: Int64) -> NetworkEstimate {
        let results = adapter.onFeedback(fb)
        return onPacketResults(results, now: now)
    }

    /// The core update, for feedback already matched to sent packets.
    @discardableResult
    public mutating func onPacketResults(_ results: [PacketResult], now: Int64) -> NetworkEstimate {
        guard !results.isEmpty else { return estimate }
        lastFeedbackMicros = now
        oldestUnreportedSendMicros = nil
        if let before = estimateBeforeOutage, results.contains(where: { $0.receiveMicros != nil }) {
            // Feedback with arrivals again: the path is back. Probe at the rate that worked.
            estimateBeforeOutage = nil
            probes.probeForRecovery(bitrate: Int(Double(before) * 0.85), now: now)
        }
        acked.add(results)
        var usage = trendline.state
        for r in results {
            guard let arrival = r.receiveMicros else { continue }
            if let d = interArrival.add(sendMicros: r.sendMicros, arrivalMicros: arrival, size: r.size) {
                trendline.update(deltas: d, arrivalMicros: arrival)
                usage = trendline.state
            }
        }
        if usage == .overusing { probes.onOveruse(now: now) }
        let ackedRate = acked.bitrate
        var delayBased = aimd.update(usage: usage, acknowledged: ackedRate, now: now)
        for (cluster, probed, saturated) in probeEstimator.add(results) {
            lastProbeResult = (cluster, probed)
            probes.onResult(cluster: cluster, bitrate: probed, now: now)
            if probed > delayBased {
                aimd.set(probed, now: now)
                delayBased = aimd.bitrate
                loss.set(max(loss.bitrate, probed), now: now)
            } else if saturated {
                // The path delivered less than the estimate while the probe offered more: it
                // holds no more than that now. An earlier probe read a burst (a token-bucket
                // shaper passes its bucket at line rate), or the link got slower; back off to
                // what it delivered instead of waiting for the queue to overflow into overuse.
                aimd.set(probed, now: now)
                delayBased = aimd.bitrate
            }
        }
        let lost = results.filter { $0.receiveMicros == nil }.count
        var lostAtFullQueue = 0, atFullQueue = 0
        for r in results {
            let full = lastQueueMicros >= 20_000 && Double(lastQueueMicros) >= 0.8 * Double(maxQueueMicros)
            if full { atFullQueue += 1 }
            if let arrival = r.receiveMicros {
                let d = arrival - r.sendMicros
                if minOneWayMicros == nil || d < minOneWayMicros! { minOneWayMicros = d }
                lastQueueMicros = d - minOneWayMicros!
                maxQueueMicros = max(maxQueueMicros, lastQueueMicros)
            } else if full {
                lostAtFullQueue += 1
            }
        }
        let lossBased = loss.update(lost: lost, of: results.count, delayBased: delayBased, now: now)
        let (reported, reportedLost) = (estimate.packetsReported + results.count, estimate.packetsReportedLost + lost)
        estimate = NetworkEstimate(
            bitrate: min(delayBased, lossBased), delayBased: delayBased, lossBased: lossBased, acknowledged: ackedRate,
            acknowledgedOutsideProbes: acked.bitrateOutsideProbes,
            usage: usage, lossFraction: loss.lastLossFraction, rttMicros: estimate.rttMicros,
            packetsReported: reported, packetsReportedLost: reportedLost,
            highestReportedSequence: max(estimate.highestReportedSequence, results.last?.sequence ?? -1),
            packetsReportedLostAtFullQueue: estimate.packetsReportedLostAtFullQueue + lostAtFullQueue,
            packetsReportedAtFullQueue: estimate.packetsReportedAtFullQueue + atFullQueue)
        return estimate
    }

    /// No feedback for a while (total outage): halve the estimate every 500 ms that packets sent
    /// go unreported, down to the floor, so the sender stops flooding a dead path. The clock runs
    /// from the first packet sent after the last feedback, not from the feedback itself: a
    /// sender of a few packets a second (one video layer at 1 fps, no audio) hears feedback as
    /// seldom as it sends, which is no outage (libwebrtc `send_side_bandwidth_estimation.cc`
    /// likewise times out on feedback missing for packets it sent).
    public mutating func onTimer(now: Int64) {
        probes.timeOut(now: now)
        guard lastFeedbackMicros != nil, let oldest = oldestUnreportedSendMicros, now - oldest > 500_000 else { return }
        oldestUnreportedSendMicros = now
        if estimateBeforeOutage == nil { estimateBeforeOutage = estimate.bitrate }
        aimd.set(aimd.bitrate / 2, now: now)
        loss.set(min(loss.bitrate, aimd.bitrate), now: now)
        estimate.delayBased = aimd.bitrate
        estimate.lossBased = loss.bitrate
        estimate.bitrate = min(aimd.bitrate, loss.bitrate)
        estimate.lossFraction = 1
    }
}
