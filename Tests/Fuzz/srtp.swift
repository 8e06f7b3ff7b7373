// libFuzzer harness (scripts/fuzz): SRTP and SRTCP unprotection (RFC 3711, RFC 7714) of peer
// bytes, both suites — built with the SRTP module's sources over OpenSSL. The input's first
// byte picks suite and RTP/RTCP; the rest is unprotected as it came, then (when it reads as an
// RTP header or at least an RTCP header) protected by a sender and opened again: it must come
// back the same, and the same sealed bytes a second time must be refused as a replay.
let keys = SRTPSuite.allCases.map { SRTPKey(suite: $0, material: (0..<$0.keyLength).map { UInt8($0 &* 7 &+ 1) }) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let key = keys[Int(data[0] & 1)]
    let rtcp = data[0] & 2 != 0
    let body = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    guard let inbound = try? SRTPSession(key: key, direction: .inbound),
        let outbound = try? SRTPSession(key: key, direction: .outbound)
    else { fatalError("no SRTP session") }
    var buf = body + [UInt8](repeating: 0, count: SRTPSession.maxTrailer)
    buf.withUnsafeMutableBytes { b in
        let n =
            (try? rtcp
                ? inbound.unprotectRTCP(b.baseAddress!, length: body.count) : inbound.unprotectRTP(b.baseAddress!, length: body.count)) ?? 0
        precondition(n <= body.count)
    }
    // The round trip.
    buf = body + [UInt8](repeating: 0, count: SRTPSession.maxTrailer)
    let sealed: Int? = buf.withUnsafeMutableBytes { b in
        try? rtcp
            ? outbound.protectRTCP(b.baseAddress!, length: body.count, capacity: b.count)
            : outbound.protectRTP(b.baseAddress!, length: body.count, capacity: b.count)
    }
    guard let sealed else { return 0 }
    let copy = Array(buf[0..<sealed])
    let opened: Int? = buf.withUnsafeMutableBytes { b in
        try? rtcp ? inbound.unprotectRTCP(b.baseAddress!, length: sealed) : inbound.unprotectRTP(b.baseAddress!, length: sealed)
    }
    precondition(opened == body.count && Array(buf[0..<body.count]) == body, "the round trip changed the packet")
    var again = copy
    let replay: Int? = again.withUnsafeMutableBytes { b in
        try? rtcp ? inbound.unprotectRTCP(b.baseAddress!, length: sealed) : inbound.unprotectRTP(b.baseAddress!, length: sealed)
    }
    precondition(replay == nil, "a replay was accepted")
    return 0
}
