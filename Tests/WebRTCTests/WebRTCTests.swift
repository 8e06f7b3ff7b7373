import Testing
import WebRTC
import ICE
import DTLS
import RTPCore
import Transport
import Crypto

func hmac(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] { Crypto.hmacSHA1(key: key, data: data) }

let publisherAddress = STUNAddress(ip: [10, 0, 0, 2], port: 40_000)
let serverAddress = STUNAddress(ip: [10, 0, 0, 1], port: 8189)
let pubCreds = ICEAgent.Credentials(ufrag: "pubr", password: "publisher-password-22chars")
let srvCreds = ICEAgent.Credentials(ufrag: "srvr", password: "server-password-24-chars")

/// A publisher transport (controlling full ICE, DTLS server: the server answered
/// `setup:active`, as Janus and aiortc do) and a server transport (ICE-lite, DTLS client).
func pair(serverFingerprintSeenByPublisher: [UInt8]? = nil) throws -> (WebRTCTransport, WebRTCTransport, DTLSCertificate, DTLSCertificate) {
    let pc = try DTLSCertificate(commonName: "publisher"), sc = try DTLSCertificate(commonName: "server")
    let pIce = ICEAgent(role: .controlling, local: pubCreds, remote: srvCreds, tieBreaker: 5, seed: 1, hmacSHA1: hmac)
    pIce.addLocal(.host(publisherAddress))
    pIce.addRemote(.host(serverAddress))
    let sIce = ICEAgent(role: .controlled, local: srvCreds, remote: pubCreds, tieBreaker: 6, lite: true, seed: 2, hmacSHA1: hmac)
    sIce.addLocal(.host(serverAddress))
    let p = WebRTCTransport(
        ice: pIce,
        dtls: try DTLSEndpoint(role: .server, certificate: pc, remoteFingerprint: serverFingerprintSeenByPublisher ?? sc.fingerprint))
    let s = WebRTCTransport(ice: sIce, dtls: try DTLSEndpoint(role: .client, certificate: sc, remoteFingerprint: pc.fingerprint))
    return (p, s, pc, sc)
}

/// Runs both transports over a virtual wire (10 ms one way) until `stop` or `until` µs.
func run(_ a: WebRTCTransport, _ b: WebRTCTransport, until: Int64, stop: () -> Bool) -> (
    events: [(Int, WebRTCTransport.Event)], media: [[UInt8]], now: Int64
) {
    var now: Int64 = 0
    var inFlight: [(Int64, Transmit)] = []
    var events: [(Int, WebRTCTransport.Event)] = []
    var media: [[UInt8]] = []
    let ends = [(a, publisherAddress), (b, serverAddress)]
    while now <= until && !stop() {
        var wake = until + 1
        for (k, (t, _)) in ends.enumerated() {
            if let w = t.step(now: now) { wake = min(wake, w) }
            while let x = t.pollTransmit() { inFlight.append((now + 10_000, x)) }
            while let e = t.pollEvent() { events.append((k, e)) }
        }
        inFlight.sort { $0.0 < $1.0 }
        var delivered = false
        while let f = inFlight.first, f.0 <= now {
            inFlight.removeFirst()
            delivered = true
            if let (t, _) = ends.first(where: { $0.1 == f.1.to }), let m = t.handle(f.1.bytes, from: f.1.from, to: f.1.to, now: now) {
                media.append(m)
            }
        }
        for (k, (t, _)) in ends.enumerated() { while let e = t.pollEvent() { events.append((k, e)) } }
        if delivered { continue }
        if let f = inFlight.first { wake = min(wake, f.0) }
        now = max(now + 1, wake)
    }
    return (events, media, now)
}

func connected(_ events: [(Int, WebRTCTransport.Event)], _ k: Int) -> (STUNAddress, SRTPSuite, SRTPKey, SRTPKey)? {
    for (i, e) in events where i == k {
        if case let .connected(_, remote, suite, send, receive) = e { return (remote, suite, send, receive) }
    }
    return nil
}

@Suite struct WebRTCTransportTests {
    /// ICE then DTLS over one path, then SRTP with the exported keys: what the publisher
    /// protects, the server unprotects.
    @Test func iceThenDTLSThenMedia() throws {
        let (p, s, _, _) = try pair()
        let r = run(p, s, until: 5_000_000) { p.isConnected && s.isConnected }
        let events = r.events
        #expect(r.now < 200_000, "connected after \(r.now) µs") // ICE 2 round trips + DTLS 2 round trips at 20 ms
        let (pRemote, suite, pSend, _) = try #require(connected(events, 0), "publisher: \(events)")
        let (sRemote, suite2, _, sReceive) = try #require(connected(events, 1), "server: \(events)")
        #expect(pRemote == serverAddress && sRemote == publisherAddress && suite == .gcm && suite2 == .gcm)
        #expect(p.selectedPath?.remote == serverAddress)
        let tx = try SRTPSession(key: pSend, direction: .outbound), rx = try SRTPSession(key: sReceive, direction: .inbound)
        var packet: [UInt8] = [0x80, 0x60, 0, 1, 0, 0, 0, 1, 1, 2, 3, 4] + Array(repeating: 9, count: 50) + Array(repeating: 0, count: 160)
        let n = try packet.withUnsafeMutableBytes { try tx.protectRTP($0.baseAddress!, length: 62, capacity: $0.count) }
        let wire = Array(packet[0..<n])
        // Through the server's transport: RTP comes back out for the session.
        var got = try #require(s.handle(wire, from: publisherAddress, to: serverAddress, now: 6_000_000))
        let plain = try got.withUnsafeMutableBytes { try rx.unprotectRTP($0.baseAddress!, length: n) }
        #expect(plain == 62 && got[12..<62].allSatisfy { $0 == 9 })
    }

    /// The answer named another certificate: ICE connects, DTLS refuses, the transport fails
    /// with the fingerprint message.
    @Test func wrongFingerprintFailsTheTransport() throws {
        let (p, s, _, _) = try pair(serverFingerprintSeenByPublisher: try DTLSCertificate().fingerprint)
        var events: [(Int, WebRTCTransport.Event)] = []
        let r = run(p, s, until: 5_000_000) { p.failed }
        events = r.events
        let failure = events.compactMap { e -> TransportFailure? in if e.0 == 0, case let .failed(x) = e.1 { x } else { nil } }.first
        #expect(p.failed && failure?.layer == .dtls && failure?.reason.contains("a=fingerprint") == true, "\(events)")
        #expect(connected(events, 0) == nil)
    }

    /// Nothing answers ICE: the transport fails in bounded time, saying why.
    @Test func unreachableServerFails() throws {
        let (p, _, _, _) = try pair()
        var now: Int64 = 0
        var reason = ""
        var layer: TransportFailure.Layer?
        while now < 20_000_000 && !p.failed {
            let wake = p.step(now: now)
            while p.pollTransmit() != nil {}
            while let e = p.pollEvent() { if case let .failed(r) = e { reason = r.reason; layer = r.layer } }
            now = max(now + 1, wake ?? now + 100_000)
        }
        #expect(p.failed && now < 7_000_000 && layer == .ice && reason.contains("no candidate pair answered"), "\(now) \(reason)")
    }
}
