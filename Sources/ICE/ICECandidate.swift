import RTPCore

/// An ICE candidate (RFC 8445 §5.1) as SDP carries it (RFC 8839 §5.1):
/// `candidate:<foundation> <component> UDP <priority> <address> <port> typ <type> [raddr … rport …]`.
public struct ICECandidate: Equatable, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case host, srflx, prflx, relay

        /// RFC 8445 §5.1.2.2 recommended type preferences.
        var typePreference: UInt32 {
            switch self {
            case .host: 126
            case .prflx: 110
            case .srflx: 100
            case .relay: 0
            }
        }
    }

    public var foundation: String
    var component: Int
    public var priority: UInt32
    public var address: STUNAddress
    public var kind: Kind
    /// `raddr`/`rport` (RFC 8839 §5.1, RFC 8445 §5.1.1.2): a reflexive candidate's base, a
    /// relayed one's mapped address. RFC 8839 makes them MUST for every type but host — Janus
    /// skips a relay candidate without them ("Invalid base address") — so one written without a
    /// known address gets the unspecified address and port 0, as libwebrtc writes a hidden one.
    public var relatedAddress: STUNAddress?
    /// `network-id` and `network-cost` (draft-thatcher-ice-network-cost; what libwebrtc writes
    /// after each candidate): which of the machine's networks it is on, and how much using it
    /// costs (0 wired, 10 Wi-Fi, 900 cellular, 50 unknown, as `rtc_base/network_constants.h`).
    public var networkID: Int?
    public var networkCost: Int?

    public init(
        foundation: String, component: Int = 1, priority: UInt32, address: STUNAddress, kind: Kind, relatedAddress: STUNAddress? = nil,
        networkID: Int? = nil, networkCost: Int? = nil
    ) {
        self.foundation = foundation
        self.component = component
        self.priority = priority
        self.address = address
        self.kind = kind
        self.relatedAddress = relatedAddress
        self.networkID = networkID
        self.networkCost = networkCost
    }

    /// RFC 8445 §5.1.2.1: (2^24)·type preference + (2^8)·local preference + (256 − component).
    public static func priority(kind: Kind, localPreference: UInt32 = 65_535, component: Int = 1) -> UInt32 {
        kind.typePreference << 24 | (localPreference & 0xFFFF) << 8 | UInt32(256 - component)
    }

    /// A host candidate on a local address (its foundation from the address, RFC 8445 §5.1.1.3).
    public static func host(
        _ address: STUNAddress, localPreference: UInt32 = 65_535, networkID: Int? = nil, networkCost: Int? = nil
    ) -> ICECandidate {
        ICECandidate(
            foundation: String(CRC32.checksum(address.ip), radix: 16), priority: priority(kind: .host, localPreference: localPreference),
            address: address, kind: .host, networkID: networkID, networkCost: networkCost)
    }

    /// The SDP attribute value (without `a=`).
    public var description: String {
        var line = "candidate:\(foundation) \(component) udp \(priority) \(address.ipText) \(address.port) typ \(kind.rawValue)"
        if kind != .host {
            let related = relatedAddress ?? STUNAddress(ip: [UInt8](repeating: 0, count: address.ip.count), port: 0)
            line += " raddr \(related.ipText) rport \(related.port)"
        }
        if let networkID { line += " network-id \(networkID)" }
        if let networkCost { line += " network-cost \(networkCost)" }
        return line
    }

    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Parses `candidate:…` (with or without `a=`); UDP candidates only (TCP ones are refused,
    /// not misread). Host names (mDNS `.local`) are refused too: pubbot does not resolve them.
    public static func parse(_ text: Substring) throws(ParseError) -> ICECandidate {
        var t = text
        if t.hasPrefix("a=") { t = t.dropFirst(2) }
        guard t.hasPrefix("candidate:") else { throw ParseError(description: "not a candidate line") }
        let f = t.dropFirst("candidate:".count).split(separator: " ")
        guard f.count >= 8, f[6] == "typ" else {
            throw ParseError(description: "a candidate needs foundation, component, transport, priority, address, port and typ")
        }
        guard f[2].lowercased() == "udp" else { throw ParseError(description: "transport \(f[2]) is not UDP") }
        guard let component = Int(f[1]), (1...256).contains(component), let priority = UInt32(f[3]), let port = UInt16(f[5]) else {
            throw ParseError(description: "bad component, priority or port")
        }
        guard let ip = STUNAddress.parseIP(f[4]) else { throw ParseError(description: "'\(f[4])' is not an IP address") }
        guard let kind = Kind(rawValue: String(f[7])) else { throw ParseError(description: "unknown candidate type \(f[7])") }
        // Then name-value pairs (RFC 8839 §5.1: rel-addr, rel-port, extensions); unknown ones skipped.
        var raddr: [UInt8]?, rport: UInt16?, networkID: Int?, networkCost: Int?
        var i = 8
        while i + 1 < f.count {
            switch f[i] {
            case "raddr": raddr = STUNAddress.parseIP(f[i + 1])
            case "rport": rport = UInt16(f[i + 1])
            case "network-id": networkID = Int(f[i + 1]).flatMap { (0...65_535).contains($0) ? $0 : nil }
            case "network-cost": networkCost = Int(f[i + 1]).flatMap { (0...65_535).contains($0) ? $0 : nil }
            default: break
            }
            i += 2
        }
        // `raddr 0.0.0.0 rport 0` (or `::`) is a base withheld (RFC 8839 §5.1: the fields are
        // required, the values may hide it) — what `description` writes for none: no base.
        // A host candidate has no base but itself (RFC 8445 §5.1.1.1): a raddr on one is ignored.
        let related = kind == .host ? nil : raddr.flatMap { a in rport.map { STUNAddress(ip: a, port: $0) } }
        return ICECandidate(
            foundation: String(f[0]), component: component, priority: priority, address: STUNAddress(ip: ip, port: port), kind: kind,
            relatedAddress: related.flatMap { $0.port == 0 && $0.ip.allSatisfy { $0 == 0 } ? nil : $0 }, networkID: networkID,
            networkCost: networkCost)
    }
}

extension STUNAddress {
    /// A numeric IPv4 (`192.0.2.1`) or IPv6 (`2001:db8::1`) address.
    public static func parseIP(_ s: Substring) -> [UInt8]? {
        if !s.contains(":") {
            let parts = s.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            var out: [UInt8] = []
            for p in parts {
                guard !p.isEmpty, p.count <= 3, p.allSatisfy(\.isASCII), let v = UInt8(p) else { return nil }
                out.append(v)
            }
            return out
        }
        // IPv6: up to one "::", groups of 1–4 hex digits (no embedded IPv4 form).
        let str = String(s)
        var halves = [str]
        if let r = str.firstRange(of: "::") {
            halves = [String(str[..<r.lowerBound]), String(str[r.upperBound...])]
            guard !halves[1].contains("::") else { return nil }
        }
        func groups(_ h: String) -> [UInt16]? {
            if h.isEmpty { return [] }
            var out: [UInt16] = []
            for g in h.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(g.count), let v = UInt16(g, radix: 16) else { return nil }
                out.append(v)
            }
            return out
        }
        guard let head = groups(halves[0]) else { return nil }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count < 8 else { return nil }
            all += [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        guard all.count == 8 else { return nil }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}
