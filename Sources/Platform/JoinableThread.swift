import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

/// A dedicated OS thread (for media and network loops that must never run on the cooperative
/// pool), started at init and joined explicitly.
public final class JoinableThread: Sendable {
    final class Box { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }
    let tid: pthread_t
    let joined = Atomic<Bool>(false)

    public init(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var tid = pthread_t()
        let rc = pthread_create(
            &tid, nil,
            { arg in
                let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        self.tid = tid
    }

    /// Waits for the thread's end; once (a second call returns at once).
    public func join() {
        guard joined.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        pthread_join(tid, nil)
    }
}
