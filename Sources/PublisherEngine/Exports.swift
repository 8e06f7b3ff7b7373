import Platform

// The publisher's drivers (threads, sockets, clocks) re-export the sans-IO session they drive,
// as swift-nio's `NIO` re-exports `NIOCore`: `import PublisherEngine` is enough to run a
// publisher; code that must not reach a clock or a socket imports `PublisherCore` alone.
@_exported public import PublisherCore

extension StreamPlan {
    /// A plan whose unpredictable bits (SSRCs, first sequence numbers and timestamps; RFC 3550
    /// §5.1) come from the OS's secure random source.
    public init(config: PublisherConfig) {
        self.init(config: config, ssrcs: nil, random: { SecureRandom.bytes(8).reduce(0) { $0 << 8 | UInt64($1) } })
    }
}
