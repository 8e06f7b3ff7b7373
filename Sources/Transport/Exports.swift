// The drivers' network module re-exports the value types it is built on, as swift-nio's `NIO`
// re-exports `NIOCore`: code that opens sockets sees addresses, packet buffers and SRTP with one
// import, while the sans-IO sessions import `Net` and `SRTP` alone and cannot reach a socket.
@_exported public import Net
@_exported public import SRTP
