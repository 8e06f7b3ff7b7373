import Testing
import ICE
import Transport
@testable import WebRTCClient

/// A host candidate per usable interface and family (RFC 8445 §5.1.1.1), on one wildcard socket.
@Suite struct HostPlanTests {
    let machine = [
        LocalInterface(name: "lo", ip: [127, 0, 0, 1], isLoopback: true),
        LocalInterface(name: "wlan0", ip: [192, 168, 1, 20]),
        LocalInterface(name: "eth0", ip: [10, 0, 0, 5]),
        LocalInterface(name: "eth0", ip: [0xFD, 0] + [UInt8](repeating: 0, count: 13) + [5]),
        LocalInterface(name: "eth0", ip: [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [5]), // link-local: never offered
        LocalInterface(name: "wwan0", ip: [100, 64, 0, 9]),
        LocalInterface(name: "eth1", ip: [172, 16, 0, 1], isUp: false)
    ]

    @Test func everyUsableAddressRoutedFirstThenByCost() throws {
        let plan = try HostPlan.make(routedIP: [192, 168, 1, 20], interfaces: [], list: machine, ipv6: true)
        #expect(plan.isWildcard && plan.bind.isIPv6, "dual-stack [::] when IPv6 is offered")
        // The routed address first (Wi-Fi here), then wired IPv6 before wired IPv4 (RFC 8421),
        // then cellular; no loopback, link-local or down interface.
        #expect(plan.addresses.map(\.interface) == ["wlan0", "eth0", "eth0", "wwan0"], "\(plan.addresses)")
        #expect(plan.addresses.map(\.ip.count) == [4, 16, 4, 4])
        #expect(plan.addresses.map(\.networkCost) == [10, 0, 0, 900])
        #expect(plan.families == [4, 16])
        let c = plan.candidates(port: 5000)
        #expect(c.allSatisfy { $0.kind == .host && $0.address.port == 5000 })
        #expect(zip(c, c.dropFirst()).allSatisfy { $0.priority > $1.priority }, "distinct, in order")
        #expect(Set(c.map(\.foundation)).count == c.count, "a foundation per base (RFC 8445 §5.1.1.3)")
        #expect(c[1].networkID == c[2].networkID && c[0].networkID != c[1].networkID, "one network-id per interface")
        #expect(c[0].description.hasSuffix("network-id \(c[0].networkID!) network-cost 10"))
    }

    @Test func interfacesNamedOnlyAndIPv4Only() throws {
        let plan = try HostPlan.make(routedIP: [192, 168, 1, 20], interfaces: ["eth0", "wwan0"], list: machine, ipv6: false)
        #expect(!plan.bind.isIPv6 && plan.isWildcard)
        #expect(plan.addresses.map(\.ip) == [[10, 0, 0, 5], [100, 64, 0, 9]])
        #expect(throws: WHIPConnectError.self) {
            try HostPlan.make(routedIP: [10, 0, 0, 5], interfaces: ["eth9"], list: machine, ipv6: true)
        }
        #expect(throws: WHIPConnectError.self) {
            try HostPlan.make(routedIP: [10, 0, 0, 5], interfaces: ["eth1"], list: machine, ipv6: true)
        }
    }

    /// Toward an endpoint on this machine's loopback: the loopback address alone, bound as before.
    @Test func aLoopbackEndpointGetsTheLoopbackAddressAlone() throws {
        let plan = try HostPlan.make(routedIP: [127, 0, 0, 1], interfaces: [], list: machine, ipv6: true)
        #expect(!plan.isWildcard && plan.addresses.map(\.ip) == [[127, 0, 0, 1]])
        #expect(plan.bind.ipBytes == [127, 0, 0, 1] && plan.bind.port == 0)
    }
}
