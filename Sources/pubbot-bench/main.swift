import Bench
import RTPCore
import CAllocCounter
import Stats
import Transport
#if canImport(Glibc)
    import Glibc
#endif

/// `pubbot-bench [packetize|srtp|send|pipeline|dtls|subscribers|quality|all] [--codec C] [--json] [--runs N] [--smoke]`
/// (run through `scripts/bench`, which builds it in release mode). `--codec` keeps packetize
/// to one codec (for a profile of one packetizer).
let usage =
    "Usage: pubbot-bench [packetize|srtp|send|pipeline|dtls|subscribers|quality|all] [--codec vp8|h264|vp9|av1] [--json] [--runs N] [--smoke]"
var which = "all", json = false, runs = 7, smoke = false
var codecs: [VideoCodec] = [.vp8, .h264, .vp9, .av1]
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "packetize", "srtp", "send", "pipeline", "dtls", "subscribers", "quality", "all": which = a
    case "--json": json = true
    case "--smoke": smoke = true
    case "--runs":
        guard let v = args.popFirst().flatMap({ Int($0) }), (1...101).contains(v) else {
            FileHandle.err("Error: --runs takes 1…101\n\(usage)\n"); exit(64)
        }
        runs = v
    case "--codec":
        guard let v = args.popFirst().flatMap({ VideoCodec(rawValue: $0) }) else {
            FileHandle.err("Error: --codec takes vp8, h264, vp9 or av1\n\(usage)\n"); exit(64)
        }
        codecs = [v]
    case "-h", "--help": print(usage); exit(0)
    default: FileHandle.err("Error: unknown argument '\(a)'\n\(usage)\n"); exit(64)
    }
}
if smoke { runs = min(runs, 3) }
let bench = Benchmarks(runs: runs, scale: smoke ? 0.05 : 1, allocations: { alloc_counter_thread_allocations() })
var results: [BenchResult] = []
do {
    if which == "packetize" || which == "all" {
        FileHandle.err("bench: encoding 2 s of 720p for realistic frames…\n")
        for codec in codecs { results.append(bench.packetize(frames: try Benchmarks.frames(codec: codec), codec: codec)) }
    }
    if which == "srtp" || which == "all" { results.append(bench.srtp(suite: .aesCm)); results.append(bench.srtp(suite: .gcm)) }
    if which == "send" || which == "all" { results += try bench.send() }
    if (which == "pipeline" || which == "all") && !smoke { results.append(try bench.pipeline(seconds: 10)) }
    if which == "dtls" || which == "all" { results.append(try bench.dtlsHandshake()) }
    if which == "subscribers" || which == "all" { results.append(try bench.subscribers()) }
    if which == "quality" || which == "all" { results += try bench.quality() }
} catch {
    FileHandle.err("Error: \(error)\n")
    exit(2)
}

func fmt(_ v: Double) -> String {
    if v >= 1e6 { return Units.fixed(v / 1e6, 2) + " M" }
    if v >= 1e3 { return Units.fixed(v / 1e3, 1) + " k" }
    return Units.fixed(v, 2)
}
if json {
    print(
        JSONValue.object([("machine", .string(machine())), ("runs", .int(Int64(runs))), ("results", .array(results.map(\.json)))])
            .serialized(pretty: true))
} else {
    var t = TextTable(
        headers: ["benchmark", "median", "min", "max", "unit", "baseline median", "ratio", "allocs/op"], rightAligned: [1, 2, 3, 5, 6, 7])
    for r in results {
        t.add([
            r.name, fmt(r.median), fmt(r.runs.min() ?? 0), fmt(r.runs.max() ?? 0), r.unit, r.baselineMedian.map(fmt) ?? "-",
            r.ratio.map { Units.fixed($0, 2) + "×" } ?? "-", r.allocationsPerOp.map { Units.fixed($0, 2) } ?? "-"
        ])
    }
    print("pubbot-bench — \(machine()), \(runs) runs each, medians; ratio = Swift ÷ baseline throughput in the same runs")
    print(t.render(), terminator: "")
    for r in results { if let b = r.baseline { print("  \(r.name): baseline = \(b)") }; if let n = r.note { print("  \(r.name): \(n)") } }
}
// The smoke test's contract: pubbot's own packetizer and send path allocate nothing per packet.
let own = results.filter { $0.name.hasPrefix("packetize") || $0.name == "send-gso" }
if let bad = own.first(where: { ($0.allocationsPerOp ?? 0) > 0 }) {
    FileHandle.err("Error: \(bad.name) allocates \(bad.allocationsPerOp!) times per packet\n")
    exit(1)
}

func machine() -> String {
    var u = utsname()
    uname(&u)
    let release = withUnsafeBytes(of: u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    return "\(sysconf(Int32(_SC_NPROCESSORS_ONLN))) cores, Linux \(release)"
}

enum FileHandle {
    static func err(_ s: String) { var b = Array(s.utf8); _ = write(2, &b, b.count) }
}
