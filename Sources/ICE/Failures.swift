/// Why an ICE agent failed (RFC 8445, RFC 7675); its description is what a user reads.
public enum ICEFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Every candidate pair failed its checks (RFC 8445 §7.2.5.3). `peerChecksAnswered`: the
    /// peer's own checks that reached us and were answered (its checks arrive, ours get no
    /// answer); `answersRefused`: STUN answers dropped (bad integrity, unknown transaction).
    case noPairAnswered(pairs: Int, checksEach: Int, peerChecksAnswered: Int = 0, answersRefused: Int = 0)
    /// The selected pair stopped answering its checks.
    case selectedPairLost
    /// No consent response within the timeout (RFC 7675 §5.1: 30 s).
    case consentExpired(seconds: Int)

    public var description: String {
        switch self {
        case let .noPairAnswered(n, checks, theirs, refused):
            "no candidate pair answered ICE checks (\(n) pair\(n == 1 ? "" : "s") tried, \(checks) checks each"
                + (theirs > 0 ? "; the peer's own checks reached us and \(theirs) were answered" : "")
                + (refused > 0 ? "; \(refused) STUN message\(refused == 1 ? "" : "s") refused (integrity, username or transaction)" : "")
                + "): the peer is unreachable or refuses our credentials"
        case .selectedPairLost: "consent lost: the selected pair stopped answering"
        case let .consentExpired(s): "consent lost: the peer did not answer for \(s) s (RFC 7675)"
        }
    }
}

/// Why a TURN allocation failed (RFC 8656); its description is what a user reads.
public enum TURNFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Allocate or Refresh went unanswered through every retransmission.
    case noAnswer(server: STUNAddress, requests: Int)
    /// A success response without XOR-RELAYED-ADDRESS (RFC 8656 §7.3).
    case noRelayedAddress
    /// 401 without REALM and NONCE (RFC 8489 §9.2.4).
    case challengeWithoutRealm
    /// An error response to Allocate or Refresh (RFC 8656 §7.4, §15).
    case refused(server: STUNAddress, code: Int, reason: String)

    public var description: String {
        switch self {
        case let .noAnswer(server, n): "the TURN server \(server) does not answer (\(n) requests over 5.75 s)"
        case .noRelayedAddress: "the TURN server's allocation has no XOR-RELAYED-ADDRESS"
        case .challengeWithoutRealm: "the TURN server answered 401 without a realm and nonce"
        case let .refused(server, code, reason):
            "the TURN server \(server) "
                + {
                    switch code {
                    case 401: "refused the credentials (401 Unauthorized): check the TURN username and credential"
                    case 403: "forbids this (403 Forbidden\(reason.isEmpty ? "" : ": \(reason)"))"
                    case 437: "reports an allocation mismatch (437)"
                    case 441: "refused the credentials (441 Wrong Credentials)"
                    case 442: "does not relay UDP (442 Unsupported Transport Protocol)"
                    case 486: "refused: allocation quota reached (486)"
                    case 508: "is out of capacity (508 Insufficient Capacity)"
                    default: "answered \(code) \(reason)"
                    }
                }()
        }
    }
}
