/// Why a DTLS-SRTP handshake failed (RFC 5763, RFC 5764); its description is what a user reads.
public enum DTLSFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// OpenSSL's own reason (an alert, a timeout of its retransmissions …).
    case handshake(String)
    case noCertificate
    /// The peer's certificate is not the one the signalled `a=fingerprint` names (RFC 8122 §5).
    case fingerprintMismatch(peer: String, expected: String)
    /// No `use_srtp` profile pubbot supports (RFC 5764 §4.1.2).
    case noSRTPProfile
    case keyExportFailed
    case keysDoNotFit(String)

    public var description: String {
        switch self {
        case let .handshake(reason): "the DTLS handshake failed: \(reason)"
        case .noCertificate: "the peer sent no DTLS certificate"
        case let .fingerprintMismatch(peer, expected):
            "the peer's DTLS certificate (sha-256 \(peer)) is not the one the answer's a=fingerprint names (sha-256 \(expected)): refusing the connection"
        case .noSRTPProfile: "the peer negotiated no SRTP profile pubbot supports (use_srtp, RFC 5764)"
        case .keyExportFailed: "OpenSSL could not export the SRTP keys"
        case let .keysDoNotFit(error): "the exported SRTP keys do not fit: \(error)"
        }
    }
}
