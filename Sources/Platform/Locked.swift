import Synchronization

/// A value shared between threads behind a Mutex, as a class so it can be handed around.
public final class Locked<Value: Sendable>: Sendable {
    let mutex: Mutex<Value>

    public init(_ value: Value) { mutex = Mutex(value) }

    public func withLock<R: Sendable>(_ body: (inout sending Value) -> sending R) -> sending R {
        mutex.withLock { body(&$0) }
    }

    public var value: Value {
        get { mutex.withLock { $0 } }
        set { mutex.withLock { $0 = newValue } }
    }
}

/// A value handed to another thread exactly once (for non-Sendable resources such as a socket
/// created on the caller's thread so its errors surface there, then owned by the loop thread).
public final class Handoff<Value>: @unchecked Sendable {
    /// Guarded by `lock` (the value itself need not be Sendable: it crosses once).
    private var value: Value?
    private let lock = Mutex<Void>(())
    public init(_ value: Value) { self.value = value }
    public func take() -> Value {
        let v = lock.withLock { _ in value.take() }
        guard let v else { preconditionFailure("Handoff taken twice") }
        return v
    }
}
