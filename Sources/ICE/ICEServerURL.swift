/// An ICE server URL — `stun:` (RFC 7064) or `turn:`/`turns:` (RFC 7065) — parsed once where the
/// user gives it; the rest of the code reads its fields.
public struct ICEServerURL: Equatable, Hashable, Sendable, CustomStringConvertible {
    public enum Scheme: String, Sendable, Hashable { case stun, turn, turns }
    /// How a TURN server is reached: UDP, TCP (`?transport=tcp`) or TLS over TCP (`turns:`).
    public enum Transport: String, Sendable, Hashable { case udp, tcp, tls }

    public var scheme: Scheme
    /// A name, an IPv4 address, or an IPv6 address (without its brackets).
    public var host: String
    public var port: Int
    public var transport: Transport

    public var isTURN: Bool { scheme != .stun }

    public init(scheme: Scheme, host: String, port: Int? = nil, transport: Transport? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port ?? (scheme == .turns ? 5349 : 3478)
        self.transport = scheme == .turns ? .tls : (transport ?? .udp)
    }

    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    static let syntax = "stun:HOST[:PORT], turn:HOST[:PORT][?transport=udp|tcp] or turns:HOST[:PORT]"

    /// `stun:HOST[:PORT]`, `turn:HOST[:PORT][?transport=udp|tcp]`, `turns:HOST[:PORT][?transport=tcp]`;
    /// an IPv6 host in brackets; the scheme and the query case-insensitive; default ports 3478,
    /// and 5349 for `turns:` (RFC 7064 §3.1, RFC 7065 §3).
    public static func parse(_ text: String) throws(ParseError) -> ICEServerURL {
        func bad(_ why: String) -> ParseError { ParseError(message: "'\(text)': \(why) (\(syntax))") }
        guard let colon = text.firstIndex(of: ":"), let scheme = Scheme(rawValue: text[..<colon].lowercased()) else {
            throw bad("not a stun:, turn: or turns: URL")
        }
        var rest = text[text.index(after: colon)...]
        var transport: Transport?
        if let q = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: q)...].lowercased()
            switch (scheme, query) {
            case (.turn, "transport=udp"): transport = .udp
            case (.turn, "transport=tcp"), (.turns, "transport=tcp"): transport = .tcp
            case (.stun, _): throw bad("a stun: URL takes no query")
            case (.turns, _): throw bad("turns: is TLS over TCP: only transport=tcp")
            default: throw bad("transport=udp or transport=tcp")
            }
            rest = rest[..<q]
        }
        var host: Substring, portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw bad("an IPv6 host needs its closing ]") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw bad("expected :PORT after the IPv6 host") }
                portText = after.dropFirst()
            }
        } else if let c = rest.lastIndex(of: ":") {
            host = rest[..<c]
            portText = rest[rest.index(after: c)...]
            guard !host.contains(":") else { throw bad("an IPv6 host goes in brackets") }
        } else {
            host = rest
        }
        guard !host.isEmpty, !host.contains(where: { $0 == "/" || $0 == "@" || $0 == " " }) else { throw bad("no host") }
        var port: Int?
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else { throw bad("the port must be 1…65535") }
            port = p
        }
        return ICEServerURL(scheme: scheme, host: String(host), port: port, transport: transport)
    }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        let query = scheme == .turn && transport == .tcp ? "?transport=tcp" : ""
        return "\(scheme.rawValue):\(h):\(port)\(query)"
    }
}
