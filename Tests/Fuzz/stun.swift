// libFuzzer harness (scripts/fuzz): the STUN message parser (RFC 8489), the FINGERPRINT and
// MESSAGE-INTEGRITY checks on arbitrary bytes, and the round trip: what parses is written back
// and parses to the same message.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = STUNMessage.verifyFingerprint(bytes)
    // A stand-in MAC (libFuzzer builds RTPCore alone): exercises the integrity bookkeeping.
    _ = STUNMessage.verifyIntegrity(bytes, key: [1, 2, 3]) { key, data in
        Array(repeating: UInt8(truncatingIfNeeded: data.count &+ key.count), count: 20)
    }
    guard let m = try? STUNMessage.parse(bytes.span) else { return 0 }
    do {
        let written = try m.encode()
        let again = try STUNMessage.parse(written.span)
        precondition(again == m, "STUN round trip: \(m) → \(again)")
    } catch {
        preconditionFailure("a parsed STUN message does not write back: \(error) \(m)")
    }
    return 0
}
