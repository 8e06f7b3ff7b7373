// libFuzzer harness (scripts/fuzz): the HTTP/1.1 request parser every WHIP and metrics client
// reaches (RFC 9112). Whatever the bytes: complete, incomplete or refused with a status — and a
// complete request consumed no more than it was given, with a body no longer than its limit.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch HTTPRequest.parse(bytes, maxHeader: 2048, maxBody: 1024) {
    case let .complete(r, consumed):
        precondition(consumed <= bytes.count && r.body.count <= 1024, "consumed \(consumed) of \(bytes.count)")
        precondition(r.headers.filter { $0.name == "authorization" }.count <= 1, "two Authorization headers accepted")
        // Every prefix of a complete request is incomplete or refused, never another request.
        if case .complete = HTTPRequest.parse(Array(bytes[0..<max(0, consumed - 1)]), maxHeader: 2048, maxBody: 1024) {
            preconditionFailure("a prefix of a request parsed as complete")
        }
    case let .invalid(status, _):
        precondition((400..<500).contains(status), "status \(status)")
    case .needMore:
        break
    }
    return 0
}
