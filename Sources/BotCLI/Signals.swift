#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// SIGINT/SIGTERM turn into a flag the command loops poll, so runs end cleanly (BYE, summary).
enum Signals {
    static let interrupted = Atomic<Bool>(false)

    static func install() {
        signal(SIGINT) { _ in Signals.interrupted.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in Signals.interrupted.store(true, ordering: .relaxed) }
        signal(SIGPIPE, SIG_IGN)
    }

    static var isInterrupted: Bool { interrupted.load(ordering: .relaxed) }
}
