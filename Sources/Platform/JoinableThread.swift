#if canImport(Glibc)
    import Glibc
#endif

/// A dedicated OS thread (for media and network loops that must never run on the cooperative
/// pool), started at init and joined explicitly.
public final class JoinableThread: @unchecked Sendable {
    final class Box { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }
    var tid = pthread_t()
    var joined = false

    public init(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let rc = pthread_create(
            &tid, nil,
            { arg in
                let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }

    public func join() {
        guard !joined else { return }
        joined = true
        pthread_join(tid, nil)
    }
}
