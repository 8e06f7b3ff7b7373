/// Why a publisher or receiver could not start: its socket or its SRTP session.
public enum EngineSetupError: Error, CustomStringConvertible {
    case socket(SocketError)
    case srtp(SRTPError)

    public var description: String {
        switch self {
        case let .socket(e): "cannot open the socket: \(e)"
        case let .srtp(e): "cannot set up SRTP: \(e)"
        }
    }
}
