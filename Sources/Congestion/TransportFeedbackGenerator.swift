public import RTPCore

/// The receiver half of transport-cc: records (transport sequence, arrival) and builds feedback
/// messages covering everything since the last one (pion `twcc` sender interceptor).
public struct TransportFeedbackGenerator: Sendable {
    var unwrapper = SequenceUnwrapper()
    var arrivals: [Int64: Int64] = [:]
    var nextToReport: Int64?
    var highest: Int64 = -1
    var feedbackCount: UInt8 = 0
    /// The arrival time of the last packet reported received.
    var lastReportedArrival: Int64?
    public let senderSSRC: UInt32
    /// The media source SSRC the messages carry: the SSRC of the last packet recorded, as
    /// libwebrtc's receiver does (`remote_estimator_proxy.cc` takes the media SSRC of the packets it
    /// reports). A libwebrtc sender keeps transport feedback only for an SSRC it sends
    /// (`rtcp_receiver.cc`: media_ssrc must be its local media SSRC or a registered one) — with 0
    /// every message is dropped and its estimate decays to the floor.
    public private(set) var mediaSSRC: UInt32 = 0

    public init(senderSSRC: UInt32) { self.senderSSRC = senderSSRC }

    public mutating func onPacket(transportSequence: UInt16, arrivalMicros: Int64, ssrc: UInt32) {
        mediaSSRC = ssrc
        let seq = unwrapper.unwrap(transportSequence)
        if nextToReport == nil { nextToReport = seq }
        guard seq >= nextToReport!, arrivals.count < 65_000 else { return }
        arrivals[seq] = arrivalMicros
        highest = max(highest, seq)
    }

    /// Feedback for everything received since the last call (nil when nothing new), split into
    /// several messages when it spans more than the format allows.
    public mutating func makeFeedback() -> [TransportFeedback] {
        guard var from = nextToReport, highest >= from, !arrivals.isEmpty else { return [] }
        var out: [TransportFeedback] = []
        while from <= highest {
            // The message starts at the first packet not yet reported, received or not (packets
            // lost before the first arrival are reported lost, as libwebrtc's base sequence
            // does); the reference time is the first arrival's.
            var firstArrival = from
            while firstArrival <= highest && arrivals[firstArrival] == nil { firstArrival += 1 }
            guard firstArrival <= highest, let first = arrivals[firstArrival] else { break }
            // Not after an outage: like libwebrtc's receiver, which forgets arrivals older than
            // 500 ms before the newest (`remote_estimator_proxy.cc`, kBackWindow), a gap that
            // follows an arrival more than 500 ms earlier is not reported (the sender's own
            // silence detection handled it); nor a run longer than one message can hold.
            if firstArrival - from >= 8_000 || lastReportedArrival.map({ first - $0 > 500_000 }) ?? false { from = firstArrival }
            let reference =
                first >= 0
                ? first / TransportFeedback.referenceTickMicros
                : (first - TransportFeedback.referenceTickMicros + 1) / TransportFeedback.referenceTickMicros
            let refMicros = reference * TransportFeedback.referenceTickMicros
            var list: [Int64?] = []
            var previous = refMicros
            var seq = from
            while seq <= highest && list.count < 8_000 {
                if let a = arrivals[seq] {
                    let d = (a - refMicros) / TransportFeedback.deltaTickMicros - (previous - refMicros) / TransportFeedback.deltaTickMicros
                    if d < -32_768 || d > 32_767 { break } // does not fit: next message
                    list.append(a - refMicros)
                    previous = a
                } else {
                    list.append(nil)
                }
                seq += 1
            }
            out.append(
                TransportFeedback(
                    senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, baseSequence: UInt16(truncatingIfNeeded: from),
                    referenceTime: Int32(truncatingIfNeeded: reference & 0x7F_FFFF), feedbackCount: feedbackCount, arrivals: list))
            feedbackCount &+= 1
            var k = seq - 1
            while k >= from { if let a = arrivals[k] { lastReportedArrival = a; break }; k -= 1 }
            for s in from..<seq { arrivals[s] = nil }
            from = seq
        }
        nextToReport = from
        return out
    }
}
