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
