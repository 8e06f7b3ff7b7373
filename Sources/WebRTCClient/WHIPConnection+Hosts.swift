public import ICE
import Synchronization
public import Transport
import HTTPSignaling

/// The host candidates of a WHIP (or WHEP) client (RFC 8445 §5.1.1.1): one per usable interface
/// and family, on one socket.
public struct HostPlan: Sendable, Equatable {
    /// One local address to offer, with the interface it is on.
    public struct Address: Sendable, Equatable {
        public var ip: [UInt8]
        public var interface: String
        public var networkID: Int
        public var networkCost: Int
    }
    /// Where the socket binds: the wildcard address (a host candidate per interface: each
    /// datagram says which address it reached, each send names its source), or — toward an
    /// endpoint on this machine's loopback — the loopback address itself, as before.
    public var bind: SocketAddress
    /// The addresses offered, most preferred first; the first is the one the kernel routes
    /// toward the endpoint from (STUN and TURN are asked from it).
    public var addresses: [Address]

    public var isWildcard: Bool { bind.isWildcard }
    /// The families offered (4 and/or 16 address bytes): the answer's candidates of these are used.
    public var families: Set<Int> { Set(addresses.map(\.ip.count)) }

    /// The socket the plan binds — on the wildcard, one that reports where each datagram
    /// arrived — and its host candidates (the first is where STUN and TURN are asked from).
    public func openSocket(receiveBuffer: Int = 4 << 20) throws(SocketError) -> (socket: UDPSocket, hosts: [ICECandidate]) {
        let socket = try UDPSocket(bind: bind, receiveBuffer: receiveBuffer)
        if isWildcard { try socket.enableLocalAddresses() }
        return (socket, candidates(port: socket.localAddress.port))
    }

    /// The host candidates on `port`: distinct local preferences in this order (RFC 8445
    /// §5.1.2.1: an agent with several addresses gives each its own), each with its
    /// `network-id` and `network-cost`.
    public func candidates(port: Int) -> [ICECandidate] {
        addresses.enumerated().map { i, a in
            ICECandidate.host(
                STUNAddress(ip: a.ip, port: UInt16(port)), localPreference: UInt32(65_535 - 1_024 * min(i, 63)),
                networkID: a.networkID, networkCost: a.networkCost)
        }
    }

    /// What is offered, for the summary: `eth0 192.0.2.2 (network-cost 0)`, ….
    public var text: String {
        addresses.map { "\($0.interface) \(STUNAddress(ip: $0.ip, port: 0).ipText) (network-cost \($0.networkCost))" }
            .joined(separator: ", ")
    }

    /// The plan: the address routed toward `server` first, then every other usable address —
    /// up, not loopback, not IPv6 link-local, of the families this run may use (IPv6 unless
    /// `--no-ipv6`) — or only those of `interfaces` (`--ice-interface`, repeatable). Toward a
    /// loopback endpoint only the loopback address (nothing else on this machine is a path to it
    /// worth checking). Cheaper networks go first (`network-cost`), as libwebrtc orders them.
    public static func make(
        server: SocketAddress, interfaces names: [String], list: [LocalInterface] = LocalInterfaces.list(),
        ipv6: Bool = !SocketAddress.ipv4Only
    ) throws(WHIPConnectError) -> HostPlan {
        let routed: SocketAddress
        do { routed = try server.routeSource() } catch { throw WHIPConnectError("no route to the endpoint \(server): \(error)") }
        return try make(routedIP: routed.ipBytes, interfaces: names, list: list, ipv6: ipv6)
    }

    /// `make` with the routed source address given (pure: tests pass their own interfaces).
    public static func make(routedIP: [UInt8], interfaces names: [String], list: [LocalInterface], ipv6: Bool) throws(WHIPConnectError)
        -> HostPlan
    {
        let ids = Dictionary(
            list.map(\.name).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }.enumerated().map { ($1, $0 + 1) }
        ) {
            a, _ in a
        }
        func address(_ i: LocalInterface) -> Address {
            Address(ip: i.ip, interface: i.name, networkID: ids[i.name] ?? 0, networkCost: i.networkCost)
        }
        let routedInterface = list.first { $0.ip == routedIP }
        if names.isEmpty, routedInterface?.isLoopback ?? true {
            let a = routedInterface.map(address) ?? Address(ip: routedIP, interface: "lo", networkID: 0, networkCost: 0)
            let bind: SocketAddress
            do { bind = try SocketAddress(host: STUNAddress(ip: routedIP, port: 0).ipText, port: 0) } catch {
                throw WHIPConnectError("cannot bind the routed address: \(error)")
            }
            return HostPlan(bind: bind, addresses: [a])
        }
        for n in names where !list.contains(where: { $0.name == n }) {
            throw WHIPConnectError("--ice-interface \(n): no such interface (\(Set(list.map(\.name)).sorted().joined(separator: ", ")))")
        }
        let usable = list.filter { i in
            i.isUp && !i.isLinkLocal && (ipv6 || i.ip.count == 4) && (names.isEmpty ? !i.isLoopback : names.contains(i.name))
        }
        guard !usable.isEmpty else {
            throw WHIPConnectError(
                "--ice-interface \(names.joined(separator: ", ")): no usable \(ipv6 ? "" : "IPv4 ")address on \(names.count == 1 ? "that interface" : "those interfaces")"
            )
        }
        var ordered = usable.filter { $0.ip == routedIP }
        ordered += usable.filter { $0.ip != routedIP }.enumerated().sorted { a, b in
            (a.element.networkCost, a.element.ip.count == 16 ? 0 : 1, a.offset) < (
                b.element.networkCost, b.element.ip.count == 16 ? 0 : 1, b.offset
            )
        }.map(\.element)
        let dualStack = ipv6 && ordered.contains { $0.ip.count == 16 }
        let bind: SocketAddress
        do { bind = try SocketAddress(host: dualStack ? "::" : "0.0.0.0", port: 0) } catch {
            throw WHIPConnectError("cannot make the wildcard address: \(error)")
        }
        return HostPlan(bind: bind, addresses: ordered.map(address))
    }
}

extension WHIPConnection {
    /// The endpoint's address (resolved), for the host plan.
    static func endpointAddress(_ options: WHIPOptions) throws(WHIPConnectError) -> SocketAddress {
        guard let (host, port) = endpointHostPort(options.endpoint) else {
            throw WHIPConnectError("'\(SignalingClient.redacted(options.endpoint))' is not an http:// or https:// URL")
        }
        do { return try SocketAddress(host: host, port: port) } catch {
            throw WHIPConnectError("cannot resolve the endpoint's host '\(host)': \(error)")
        }
    }

    /// The publisher's host plan (`HostPlan.make` toward the endpoint).
    public static func hostPlan(_ options: WHIPOptions) throws(WHIPConnectError) -> HostPlan {
        try HostPlan.make(server: try endpointAddress(options), interfaces: options.interfaces)
    }
}

/// A session's host candidates kept up with the interfaces (a WHIP publisher's, a WHEP
/// subscriber's): the plan they came from, the candidates offered, and what to make them anew
/// from. Locked: the driver that watches and the one that restarts may be different threads.
final class HostWatch: Sendable {
    struct State {
        var plan: HostPlan?
        var offered: [ICECandidate]
    }
    let state: Mutex<State>
    let options: WHIPOptions?
    let port: Int

    init(plan: HostPlan?, offered: [ICECandidate], options: WHIPOptions?, port: Int) {
        state = Mutex(State(plan: plan, offered: offered))
        self.options = options
        self.port = port
    }

    var offered: [ICECandidate] { state.withLock { $0.offered } }
    var families: Set<Int>? { state.withLock { $0.plan?.families } }

    /// Reads the interfaces again (a driver asks about once a second). When the usable
    /// addresses changed — one gone, one come — the new host candidates, and the gathered ones
    /// whose base is still here (`relayBase`: the TURN allocation's), become the offered ones:
    /// what an ICE restart offers (RFC 8445 §9; a browser restarts ICE on a network change).
    /// Returns what changed and the candidates for the ICE agent; nil while nothing did, for a
    /// socket bound to one address (it cannot take another), and when no usable address is
    /// left (nothing to restart on).
    func change(list: [LocalInterface], relayBase: STUNAddress?) -> (what: String, candidates: [ICECandidate])? {
        guard let current = state.withLock({ $0.plan }), current.isWildcard, let options else { return nil }
        guard let server = try? WHIPConnection.endpointAddress(options),
            let fresh = try? HostPlan.make(server: server, interfaces: options.interfaces, list: list),
            fresh.isWildcard, !fresh.addresses.isEmpty
        else { return nil }
        let before = Set(current.addresses.map(\.ip)), after = Set(fresh.addresses.map(\.ip))
        guard before != after else { return nil }
        func text(_ ips: [[UInt8]]) -> String { ips.map { STUNAddress(ip: $0, port: 0).ipText }.joined(separator: ", ") }
        let gone = current.addresses.map(\.ip).filter { !after.contains($0) }
        let come = fresh.addresses.map(\.ip).filter { !before.contains($0) }
        var what: [String] = []
        if !gone.isEmpty { what.append("\(text(gone)) gone") }
        if !come.isEmpty { what.append("\(text(come)) new") }
        let hosts = fresh.candidates(port: port)
        return state.withLock { s in
            let kept = s.offered.filter { c in
                switch c.kind {
                case .host: return false
                case .srflx, .prflx: return c.relatedAddress.map { after.contains($0.ip) } ?? false
                case .relay: return relayBase.map { after.contains($0.ip) } ?? false
                }
            }
            s.plan = fresh
            s.offered = (options.policy == .noHost ? [] : hosts) + kept
            return (what.joined(separator: "; "), hosts + kept)
        }
    }
}

extension WHIPConnection {
    /// `HostWatch.change` for this publisher's socket and TURN allocation.
    public func interfaceChange(list: [LocalInterface] = LocalInterfaces.list()) -> (what: String, candidates: [ICECandidate])? {
        hosts.change(list: list, relayBase: transport.turn?.base)
    }
}
