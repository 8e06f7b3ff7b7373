internal import CLinuxNet

/// One address of one of the machine's network interfaces (getifaddrs).
public struct LocalInterface: Sendable, Equatable {
    public var name: String
    /// 4 bytes (IPv4) or 16 (IPv6).
    public var ip: [UInt8]
    public var isLoopback: Bool
    public var isUp: Bool

    public init(name: String, ip: [UInt8], isLoopback: Bool = false, isUp: Bool = true) {
        self.name = name
        self.ip = ip
        self.isLoopback = isLoopback
        self.isUp = isUp
    }

    /// IPv6 link-local (fe80::/10): usable only with a scope, never an ICE host candidate here.
    public var isLinkLocal: Bool { ip.count == 16 && ip[0] == 0xFE && ip[1] & 0xC0 == 0x80 }

    /// What using this interface costs, as libwebrtc rates an adapter (`rtc_base/network.cc`:
    /// the type from the interface's name, `ComputeNetworkCostByType`; the values of
    /// `rtc_base/network_constants.h`): wired and loopback 0, Wi-Fi 10, cellular 900, a VPN one
    /// more than unknown, unknown 50. Announced as `network-cost` beside the candidate.
    public var networkCost: Int {
        let n = name.lowercased()
        func starts(_ prefixes: [String]) -> Bool { prefixes.contains { n.hasPrefix($0) } }
        if isLoopback || starts(["eth", "en", "veth", "vt", "br", "bond"]) { return 0 }
        if starts(["wlan", "wl", "v4-wlan"]) { return 10 }
        if starts(["rmnet", "wwan", "pdp_ip", "ccmni", "ccemni", "v4-rmnet"]) { return 900 }
        if starts(["tun", "tap", "ipsec", "utun", "wg", "ppp"]) { return 51 }
        return 50
    }
}

public enum LocalInterfaces {
    public static func list() -> [LocalInterface] {
        var buffer = [clinux_interface](repeating: clinux_interface(), count: 128)
        let n = Int(buffer.withUnsafeMutableBufferPointer { clinux_interfaces($0.baseAddress, Int32($0.count)) })
        guard n > 0 else { return [] }
        return buffer.prefix(n).map { i in
            var entry = i
            let name = withUnsafeBytes(of: &entry.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let ip = withUnsafeBytes(of: &entry.ip) { Array($0.prefix(i.family == 4 ? 4 : 16)) }
            return LocalInterface(name: name, ip: ip, isLoopback: i.flags & 1 != 0, isUp: i.flags & 2 != 0)
        }
    }

    /// The addresses to offer as ICE host candidates (RFC 8445 §5.1.1.1): interfaces that are
    /// up, not loopback (unless asked: tests and same-machine peers) and not IPv6 link-local;
    /// only `interface` when one is named (`--ice-interface`).
    public static func hostAddresses(interface: String? = nil, includeLoopback: Bool = false, ipv6: Bool = true) -> [LocalInterface] {
        list().filter { i in
            i.isUp && (includeLoopback || !i.isLoopback) && !i.isLinkLocal && (ipv6 || i.ip.count == 4)
                && (interface == nil || i.name == interface)
        }
    }
}

extension SocketAddress {
    /// The local address the kernel would send from to reach `self` (its routing table, as
    /// `ip route get` shows; port 0). Nothing is sent.
    public func routeSource() throws(SocketError) -> SocketAddress {
        var dst = raw
        var out = clinux_addr()
        let rc = clinux_route_source(&dst, &out)
        guard rc == 0 else { throw SocketError("no route to \(self)", errno: -rc) }
        return SocketAddress(raw: out).withPort(0)
    }
}
