#if canImport(Glibc)
    import Glibc
#endif
import Synchronization

/// SIGINT/SIGTERM turn into a flag the command loops poll, so runs end cleanly (BYE, summary).
enum Signals {
    static let interrupted = Atomic<Bool>(false)
    /// SIGUSR1: write the RTC stats report now.
    static let reportRequested = Atomic<Bool>(false)

    static func install() {
        // A parent may have started us with these blocked (the mask is inherited): unblock them.
        var set = sigset_t()
        sigemptyset(&set)
        for sig in [SIGINT, SIGTERM, SIGUSR1] { sigaddset(&set, sig) }
        sigprocmask(SIG_UNBLOCK, &set, nil)
        signal(SIGINT) { _ in Signals.interrupted.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in Signals.interrupted.store(true, ordering: .relaxed) }
        signal(SIGPIPE, SIG_IGN)
        signal(SIGUSR1) { _ in Signals.reportRequested.store(true, ordering: .relaxed) }
    }

    static var isInterrupted: Bool { interrupted.load(ordering: .relaxed) }
    static func takeReportRequest() -> Bool { reportRequested.exchange(false, ordering: .relaxed) }
}
