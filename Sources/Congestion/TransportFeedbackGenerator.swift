public import RTPCore

/// The receiver half of transport-cc: records (transport sequence, arrival) and builds feedback
/// messages covering everything since the last one (pion `twcc` sender interceptor).
public struct TransportFeedbackGenerator: Sendable {
    var unwrapper = SequenceUnwrapper()
    var arrivals: [Int64: Int64] = [:]
    var nextToReport: Int64?
    var highest: Int64 = -1
    var feedbackCount: UInt8 = 0
    public let senderSSRC: UInt32
    public var mediaSSRC: UInt32 = 0

    public init(senderSSRC: UInt32) { self.senderSSRC = senderSSRC }

    public mutating func onPacket(transportSequence: UInt16, arrivalMicros: Int64) {
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
            // Start at the first received packet so the reference time is an arrival.
            while from <= highest && arrivals[from] == nil { from += 1 }
            guard from <= highest, let first = arrivals[from] else { break }
            let reference = first >= 0 ? first / TransportFeedback.referenceTickMicros : (first - TransportFeedback.referenceTickMicros + 1) / TransportFeedback.referenceTickMicros
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
            out.append(TransportFeedback(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, baseSequence: UInt16(truncatingIfNeeded: from),
                                         referenceTime: Int32(truncatingIfNeeded: reference & 0x7F_FFFF), feedbackCount: feedbackCount, arrivals: list))
            feedbackCount &+= 1
            for s in from..<seq { arrivals[s] = nil }
            from = seq
        }
        nextToReport = from
        return out
    }
}
