import Foundation
import Platform

/// A third-party peer run as a child process for an interop test: its output collected as it
/// comes, its input a pipe, and a bounded end (input closed, then SIGKILL: Foundation's
/// terminate() + waitUntilExit() can hang on children here).
final class PeerProcess {
    let process = Process()
    let output = Locked("")
    let out = Pipe(), input = Pipe()

    init(_ executable: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = out
        process.standardInput = input
        let text = output
        out.fileHandleForReading.readabilityHandler = { h in
            let d = h.availableData
            text.withLock { $0 += String(decoding: d, as: UTF8.self) }
        }
        try process.run()
    }

    var text: String { output.value }

    /// Waits until the output contains `marker` (true) or `micros` pass (false).
    @discardableResult
    func wait(for marker: String, micros: Int64) -> Bool {
        let end = Clock.monotonicMicros() + micros
        while !text.contains(marker) && Clock.monotonicMicros() < end { Clock.sleep(micros: 10_000) }
        return text.contains(marker)
    }

    func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    /// Closes its input, gives it `grace` µs to leave, then kills it.
    func stop(grace: Int64 = 500_000) {
        try? input.fileHandleForWriting.close()
        let end = Clock.monotonicMicros() + grace
        while process.isRunning && Clock.monotonicMicros() < end { Clock.sleep(micros: 10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let hard = Clock.monotonicMicros() + 2_000_000
        while process.isRunning && Clock.monotonicMicros() < hard { Clock.sleep(micros: 10_000) }
        out.fileHandleForReading.readabilityHandler = nil
    }
}

/// Runs the built `pubbot` with `args` (and `env` on top of ours) to its end; `interruptAfter`
/// seconds sends SIGINT first. Output, exit code and wall time.
func runPubbot(_ binary: String, _ args: [String], env: [String: String] = [:], interruptAfter: Double? = nil) throws -> (
    code: Int32, out: String, err: String, seconds: Double
) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: binary)
    p.arguments = args
    p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    let start = Clock.monotonicMicros()
    try p.run()
    if let after = interruptAfter {
        Clock.sleep(micros: Int64(after * 1e6))
        kill(p.processIdentifier, SIGINT)
    }
    let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (
        p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self),
        Double(Clock.monotonicMicros() - start) / 1e6
    )
}

/// Starts `pubbot receive --listen 127.0.0.1:0` with `arguments`: the kernel picks the port and
/// the receiver's own "listening on 127.0.0.1:PORT" line says which — never a port found free,
/// released and handed over (another test can take it in between). Stdout goes to `stdout`.
func startReceiver(_ arguments: [String], stdout: Any? = nil) throws -> (process: Process, port: Int) {
    let p = Process()
    p.executableURL = BinaryTests.binary
    p.arguments = ["receive", "--listen", "127.0.0.1:0"] + arguments
    p.standardOutput = stdout ?? FileHandle.nullDevice
    let err = Pipe(), text = Locked("")
    p.standardError = err
    err.fileHandleForReading.readabilityHandler = { h in
        let d = h.availableData
        text.withLock { $0 += String(decoding: d, as: UTF8.self) }
    }
    try p.run()
    let end = Clock.monotonicMicros() + 10_000_000
    while Clock.monotonicMicros() < end {
        let t = text.value
        if let r = t.range(of: "listening on 127.0.0.1:") {
            let digits = t[r.upperBound...].prefix { $0.isNumber }
            if let port = Int(digits), t[r.upperBound...].dropFirst(digits.count).first == ";" { return (p, port) }
        }
        if !p.isRunning { break }
        Clock.sleep(micros: 10_000)
    }
    p.terminate()
    throw ReceiverDidNotStart(output: text.value)
}

struct ReceiverDidNotStart: Error, CustomStringConvertible {
    var output: String
    var description: String { "pubbot receive did not say where it listens: \(output)" }
}
