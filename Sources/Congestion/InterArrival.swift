/// Groups packets by send time (5 ms groups, plus bursts) and yields the send/arrival deltas
/// between consecutive complete groups (libwebrtc `inter_arrival_delta.cc`).
public struct InterArrival: Sendable {
    public struct Deltas: Equatable, Sendable {
        public var sendMicros: Int64
        public var arrivalMicros: Int64
        public var sizeBytes: Int
    }

    struct Group: Sendable {
        var firstSend: Int64, lastSend: Int64, firstArrival: Int64, lastArrival: Int64, size: Int
    }

    static let groupLengthMicros: Int64 = 5_000
    static let burstDeltaMicros: Int64 = 5_000
    static let maxBurstMicros: Int64 = 100_000

    var current: Group?
    var previous: Group?

    public init() {}

    /// Feeds one received packet (in send order); returns deltas when it closes a group.
    public mutating func add(sendMicros: Int64, arrivalMicros: Int64, size: Int) -> Deltas? {
        guard var g = current else {
            current = Group(
                firstSend: sendMicros, lastSend: sendMicros, firstArrival: arrivalMicros, lastArrival: arrivalMicros, size: size)
            return nil
        }
        if sendMicros < g.firstSend { return nil } // reordered across groups: ignore
        let inGroup = sendMicros - g.firstSend <= Self.groupLengthMicros
        let propagation = (arrivalMicros - g.lastArrival) - (sendMicros - g.lastSend)
        let burst =
            arrivalMicros - g.lastArrival <= Self.burstDeltaMicros && propagation < 0
            && arrivalMicros - g.firstArrival < Self.maxBurstMicros
        if inGroup || burst {
            g.lastSend = max(g.lastSend, sendMicros)
            g.lastArrival = max(g.lastArrival, arrivalMicros)
            g.size += size
            current = g
            return nil
        }
        var result: Deltas?
        if let p = previous {
            result = Deltas(sendMicros: g.lastSend - p.lastSend, arrivalMicros: g.lastArrival - p.lastArrival, sizeBytes: g.size - p.size)
        }
        previous = g
        current = Group(firstSend: sendMicros, lastSend: sendMicros, firstArrival: arrivalMicros, lastArrival: arrivalMicros, size: size)
        return result
    }
}
