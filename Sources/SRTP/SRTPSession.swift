internal import CSRTP

/// Why libsrtp2 refused a packet.
public enum SRTPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The authentication tag did not verify: wrong key, or tampered/garbage bytes.
    case authenticationFailed
    /// The packet index was already seen (replay protection).
    case replayed
    /// The packet index is older than the replay window.
    case tooOld
    /// The packet is too short or otherwise malformed for SRTP.
    case malformed
    /// Any other libsrtp2 status code, with the operation.
    case failed(operation: String, code: Int32)

    init(status: srtp_err_status_t, operation: String) {
        switch status {
        case srtp_err_status_auth_fail: self = .authenticationFailed
        case srtp_err_status_replay_fail: self = .replayed
        case srtp_err_status_replay_old: self = .tooOld
        case srtp_err_status_bad_param, srtp_err_status_parse_err: self = .malformed
        default: self = .failed(operation: operation, code: Int32(status.rawValue))
        }
    }

    public var description: String {
        switch self {
        case .authenticationFailed: "SRTP authentication failed (wrong key?)"
        case .replayed: "SRTP replay rejected"
        case .tooOld: "SRTP packet older than the replay window"
        case .malformed: "malformed SRTP packet"
        case let .failed(op, code): "\(op) failed (libsrtp2 status \(code))"
        }
    }
}

/// libsrtp2 must be initialised once per process.
private let srtpLibraryStatus: Int32 = Int32(srtp_init().rawValue)

/// One direction of SRTP + SRTCP protection for every SSRC (libsrtp2 wildcard policy),
/// protecting and unprotecting in place. Owned by one thread.
public final class SRTPSession {
    public enum Direction: Sendable { case outbound, inbound }

    var session: srtp_t?
    public let suite: SRTPSuite
    public let direction: Direction

    /// The authentication tag SRTP appends to each packet of a suite.
    public static func tagLength(_ suite: SRTPSuite) -> Int { suite == .gcm ? 16 : 10 }

    /// Bytes SRTP may add after an RTP packet; keep this much room after every packet.
    public static let maxTrailer = Int(csrtp_max_trailer_len())
    static let maxRTCPTrailer = Int(csrtp_max_srtcp_trailer_len())

    /// - Parameter replayWindow: packets remembered for replay protection (64…32767; libsrtp default 128).
    public init(key: SRTPKey, direction: Direction, replayWindow: Int = 1024) throws(SRTPError) {
        guard srtpLibraryStatus == 0 else { throw .failed(operation: "srtp_init", code: srtpLibraryStatus) }
        suite = key.suite
        self.direction = direction
        var s: srtp_t?
        let status = key.material.withUnsafeBufferPointer { k in
            csrtp_create(&s, key.suite == .gcm ? 1 : 0, direction == .inbound ? 1 : 0, k.baseAddress, Int32(replayWindow))
        }
        guard status == srtp_err_status_ok, let s else { throw SRTPError(status: status, operation: "srtp_create") }
        session = s
    }

    deinit { if let session { srtp_dealloc(session) } }

    /// Protects the RTP packet of `length` bytes at `packet` in place; `capacity` must leave
    /// `maxTrailer` bytes of room. Returns the protected length.
    @inline(__always)
    public func protectRTP(_ packet: UnsafeMutableRawPointer, length: Int, capacity: Int) throws(SRTPError) -> Int {
        guard capacity - length >= Self.maxTrailer else { throw .malformed }
        var len = Int32(length)
        let st = srtp_protect(session, packet, &len)
        guard st == srtp_err_status_ok else { throw SRTPError(status: st, operation: "srtp_protect") }
        return Int(len)
    }

    /// Unprotects an SRTP packet in place; returns the plain length.
    @inline(__always)
    public func unprotectRTP(_ packet: UnsafeMutableRawPointer, length: Int) throws(SRTPError) -> Int {
        guard length >= 12 else { throw .malformed }
        var len = Int32(length)
        let st = srtp_unprotect(session, packet, &len)
        guard st == srtp_err_status_ok else { throw SRTPError(status: st, operation: "srtp_unprotect") }
        return Int(len)
    }

    public func protectRTCP(_ packet: UnsafeMutableRawPointer, length: Int, capacity: Int) throws(SRTPError) -> Int {
        guard capacity - length >= Self.maxRTCPTrailer else { throw .malformed }
        var len = Int32(length)
        let st = srtp_protect_rtcp(session, packet, &len)
        guard st == srtp_err_status_ok else { throw SRTPError(status: st, operation: "srtp_protect_rtcp") }
        return Int(len)
    }

    /// Forgets the stream of `ssrc` (its keys and replay window): a receiver that hands a
    /// publisher a session of its own drops the stream its first packet made in the shared one,
    /// so the shared session's stream list — searched on every packet (libsrtp2 `srtp.c`
    /// `srtp_get_stream`) — stays short.
    public func removeStream(ssrc: UInt32) {
        // libsrtp2 `srtp_remove_stream`: the SSRC in network byte order, as in the header.
        _ = srtp_remove_stream(session, ssrc.bigEndian)
    }

    public func unprotectRTCP(_ packet: UnsafeMutableRawPointer, length: Int) throws(SRTPError) -> Int {
        guard length >= 8 else { throw .malformed }
        var len = Int32(length)
        let st = srtp_unprotect_rtcp(session, packet, &len)
        guard st == srtp_err_status_ok else { throw SRTPError(status: st, operation: "srtp_unprotect_rtcp") }
        return Int(len)
    }
}
