// libFuzzer harness (scripts/fuzz): the `--impair` / `--downlink-impair` spec and schedule parser,
// and the emulator driven by what parses.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let schedule = try? ImpairmentSchedule.parse(text) else { return 0 }
    // Round trip: the canonical spec parses to the same schedule.
    precondition((try? ImpairmentSchedule.parse(schedule.spec)) == schedule, "spec round trip: \(schedule.spec)")
    var link = LinkEmulator(schedule: schedule, seed: 1, startMicros: 0)
    var t: Int64 = 0
    for i in 0..<200 { _ = link.admit(size: 100 + i, now: t); t += 1_000 }
    return 0
}
