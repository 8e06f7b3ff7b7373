import Stats
import Impairment

/// What the emulated uplink (`--impair` toward a real server) did, for the summaries: its drops
/// happened before the network, so they are reported apart from the loss the server's feedback
/// shows (which counts them too).
enum UplinkReport {
    static func json(_ c: LinkEmulator.Counters, spec: String?) -> JSONValue {
        .object([
            ("impair", spec.map { .string($0) } ?? .null), ("packets", .int(Int64(c.packets))), ("delivered", .int(Int64(c.delivered))),
            ("droppedByLoss", .int(Int64(c.droppedByLoss))), ("droppedByQueue", .int(Int64(c.droppedByQueue))),
            ("maxQueueMs", .double((Double(c.maxQueueMicros) / 100).rounded() / 10))
        ])
    }

    static func text(_ c: LinkEmulator.Counters, spec: String?) -> String {
        "uplink emulator\(spec.map { " (\($0))" } ?? ""): \(c.packets) packets offered, \(c.droppedByLoss) lost, \(c.droppedByQueue) dropped by the queue, max queueing \(Units.fixed(Double(c.maxQueueMicros) / 1000, 0)) ms (before the network: the server's feedback counts these drops as loss too)\n"
    }

    /// Sums per-bot counters (a fleet's total); the largest queueing of any.
    static func sum(_ all: [LinkEmulator.Counters]) -> LinkEmulator.Counters? {
        guard var t = all.first else { return nil }
        for c in all.dropFirst() {
            t.packets += c.packets
            t.delivered += c.delivered
            t.droppedByLoss += c.droppedByLoss
            t.droppedByQueue += c.droppedByQueue
            t.maxQueueMicros = max(t.maxQueueMicros, c.maxQueueMicros)
        }
        return t
    }
}
