#if canImport(Glibc)
    import Glibc
#endif

/// A socket call failed: the operation and errno.
public struct SocketError: Error, CustomStringConvertible, Equatable, Sendable {
    public var operation: String
    public var errno: Int32

    public init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "\(operation): \(Self.explain(errno)) (errno \(errno))" }

    /// ECONNREFUSED: an ICMP port unreachable came back for an earlier datagram (Linux reports
    /// it on the next call on the socket, IP_RECVERR).
    public var isConnectionRefused: Bool { errno == ECONNREFUSED }

    static func explain(_ e: Int32) -> String {
        switch e {
        case 98: "address already in use"
        case 99: "cannot assign requested address"
        case 111: "connection refused (nothing listening at the destination port)"
        case 101: "network unreachable"
        case 13: "permission denied"
        case 22: "invalid argument"
        case 90: "message too long"
        case 105: "no buffer space"
        default: "error"
        }
    }
}
