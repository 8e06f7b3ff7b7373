import Platform

/// How late each kind of driver of this process ran its timed work: the fleet's event loops,
/// the embedded receivers' threads, the subscribers' event loops — apart, since a loop runs
/// thousands of turns a second and a receive thread a hundred: added up, a saturated receiver
/// would vanish in the loops' counts.
struct DriverLags {
    var groups: [(name: String, lag: LagMeter)]

    func since(_ earlier: DriverLags) -> DriverLags {
        DriverLags(
            groups: groups.map { g in (g.name, earlier.groups.first { $0.name == g.name }.map { g.lag.since($0.lag) } ?? g.lag) })
    }

    /// The group whose p99 lag is the largest (of those that ran).
    var worst: (name: String, lag: LagMeter)? {
        groups.filter { $0.lag.count > 0 }.max { ($0.lag.percentile(0.99) ?? 0) < ($1.lag.percentile(0.99) ?? 0) }
    }
}
