import Testing
@testable import ReceiverEngine
@testable import Receiver
import Transport
import RTPCore
import ICE
import DTLS
import WebRTC
import Crypto

/// The WHIP endpoint's sessions in virtual time (sans-IO receiver): a session whose ICE never
/// connects is abandoned and freed, one whose publisher stops its consent checks is ended as
/// consent lost, one that keeps them lives on; a STUN request that fails integrity binds nothing.
@Suite struct WHIPSessionLifetimeTests {
    static let endpoint = STUNAddress(ip: [10, 0, 0, 1], port: 40_000)
    static let publisher = STUNAddress(ip: [10, 0, 0, 2], port: 50_000)
    static let attacker = STUNAddress(ip: [10, 0, 0, 66], port: 50_000)
    let hmac: @Sendable ([UInt8], [UInt8]) -> [UInt8] = { Crypto.hmacSHA1(key: $0, data: $1) }

    func receiver() throws -> (ReceiverSession, DTLSCertificate) {
        let cert = try DTLSCertificate(commonName: "endpoint")
        var config = ReceiverConfig(listen: SocketAddress(Self.endpoint)!, key: .random(suite: .gcm))
        config.webrtc = WebRTCListenConfig(certificate: cert, local: Self.endpoint)
        return (try ReceiverSession(config: config, startMicros: 0, wallOffsetMicros: 0, seed: 3), cert)
    }

    func spec(_ n: Int, remoteFingerprint: [UInt8]) -> WebRTCPublisherSpec {
        WebRTCPublisherSpec(
            resource: "r\(n)", localUfrag: "lu\(n)", localPassword: "endpoint-password-\(n)-0123456", remoteUfrag: "pu\(n)",
            remotePassword: "publisher-password-\(n)-01234", remoteFingerprint: remoteFingerprint, audioPayloadTypes: [111],
            videoPayloadTypes: [96], rtxPayloadTypes: [97], extensions: RTPExtensionIDs())
    }

    /// An endpoint that answered publisher `n`, and that publisher's transport (full ICE,
    /// controlling; the DTLS server, as its offer said actpass and the endpoint answered active).
    func publisherAndEndpoint(_ n: Int, seed: UInt64) throws -> (ReceiverSession, WebRTCTransport) {
        let (session, endpointCert) = try receiver()
        let pubCert = try DTLSCertificate(commonName: "publisher")
        let s = spec(n, remoteFingerprint: pubCert.fingerprint)
        session.addPublisher(s, seed: seed, now: 0)
        let ice = ICEAgent(
            role: .controlling, local: .init(ufrag: s.remoteUfrag, password: s.remotePassword),
            remote: .init(ufrag: s.localUfrag, password: s.localPassword), tieBreaker: 5, seed: 5, hmacSHA1: hmac)
        ice.addLocal(.host(Self.publisher))
        ice.addRemote(.host(Self.endpoint))
        return (
            session,
            WebRTCTransport(
                ice: ice, dtls: try DTLSEndpoint(role: .server, certificate: pubCert, remoteFingerprint: endpointCert.fingerprint))
        )
    }

    @Test func sessionsThatNeverConnectAreFreed() throws {
        let (session, _) = try receiver()
        let other = try DTLSCertificate(commonName: "publisher")
        for n in 0..<3 { session.addPublisher(spec(n, remoteFingerprint: other.fingerprint), seed: UInt64(n + 1), now: 0) }
        var now: Int64 = 0
        while now < 14_900_000 { now = min(session.step(now: now), now + 1_000_000) + 1 }
        #expect(
            session.snapshot(final: false).webrtcEndings.abandoned == 0 && session.takeEndedResources().isEmpty, "still waiting at 14.9 s")
        while now < 15_100_000 { now = min(session.step(now: now), now + 100_000) + 1 }
        let snap = session.snapshot(final: false)
        #expect(snap.webrtcEndings.abandoned == 3, "\(snap.webrtcEndings)")
        #expect(Set(session.takeEndedResources()) == ["r0", "r1", "r2"] && session.takeEndedResources().isEmpty)
        #expect(snap.webrtcPublishers.isEmpty, "abandoned sessions are counted, not kept")
        #expect(session.rtcPeers.isEmpty && session.rtcPending.isEmpty, "the transports (DTLS contexts) are released")
        // A ufrag of a freed session no longer finds anything.
        var request = bindingRequest(user: "lu0:pu0", password: "endpoint-password-0-0123456")
        request.withUnsafeMutableBytes {
            session.handleDatagram($0.baseAddress!, length: $0.count, from: SocketAddress(Self.publisher), now: now)
        }
        #expect(session.snapshot(final: false).rejected.unknownSource == 1)
    }

    /// A full-ICE publisher connects (ICE + DTLS); while its consent checks arrive the session
    /// lives, 30 s after the last one it is ended as consent lost (RFC 7675) and freed.
    @Test func consentLostEndsAConnectedSession() throws {
        let (session, pub) = try publisherAndEndpoint(7, seed: 11)
        var now: Int64 = 0
        var publisherAlive = true
        func run(until end: Int64) {
            while now < end {
                _ = session.step(now: now)
                session.pollTransmit { b, _ throws(SocketError) in
                    if publisherAlive { _ = pub.handle([UInt8](b), from: Self.endpoint, to: Self.publisher, now: now) }
                }
                _ = pub.step(now: now)
                while let x = pub.pollTransmit() {
                    guard publisherAlive else { continue }
                    var b = x.bytes
                    b.withUnsafeMutableBytes {
                        session.handleDatagram($0.baseAddress!, length: $0.count, from: SocketAddress(Self.publisher), now: now)
                    }
                }
                while pub.pollEvent() != nil {}
                now += 5_000
            }
        }
        run(until: 2_000_000)
        #expect(session.snapshot(final: false).webrtcPublishers.first?.state == .connected)
        run(until: 60_000_000)
        #expect(session.snapshot(final: false).webrtcPublishers.first?.state == .connected, "consent checks every 4–6 s keep it")
        publisherAlive = false
        let silentFrom = now
        // The last check came at most 6 s before the silence: the session lives 30 s after it.
        run(until: silentFrom + 23_000_000)
        #expect(session.snapshot(final: false).webrtcEndings.consentLost == 0)
        run(until: silentFrom + 36_000_000)
        let snap = session.snapshot(final: false)
        #expect(snap.webrtcEndings.consentLost == 1 && snap.webrtcEndings.failed == 0, "\(snap.webrtcEndings)")
        #expect(snap.webrtcPublishers.first?.failure?.reason.contains("consent") == true && session.takeEndedResources() == ["r7"])
        #expect(session.rtcPeers.isEmpty && session.rtcByAddress.isEmpty)
    }

    /// ICE connects but the publisher never completes DTLS (its records are lost): 10 s after
    /// ICE the session fails and its slot is freed.
    @Test func dtlsThatNeverFinishesIsFreed() throws {
        let (session, pub) = try publisherAndEndpoint(3, seed: 13)
        var now: Int64 = 0
        while now < 12_000_000 {
            _ = session.step(now: now)
            session.pollTransmit { b, _ throws(SocketError) in _ = pub.handle([UInt8](b), from: Self.endpoint, to: Self.publisher, now: now)
            }
            _ = pub.step(now: now)
            while let x = pub.pollTransmit() {
                guard let first = x.bytes.first, !(20...63).contains(first) else { continue } // DTLS lost on the way
                var b = x.bytes
                b.withUnsafeMutableBytes {
                    session.handleDatagram($0.baseAddress!, length: $0.count, from: SocketAddress(Self.publisher), now: now)
                }
            }
            while pub.pollEvent() != nil {}
            now += 5_000
        }
        let snap = session.snapshot(final: false)
        #expect(
            snap.webrtcEndings.failed == 1 && snap.webrtcPublishers.first?.failure?.layer == .dtls
                && snap.webrtcPublishers.first?.failure?.reason.contains("DTLS") == true, "\(snap.webrtcPublishers)")
        #expect(session.takeEndedResources() == ["r3"] && session.rtcPeers.isEmpty)
    }

    /// A request with a session's real USERNAME but a wrong MESSAGE-INTEGRITY binds nothing: what
    /// that source sends next (DTLS here) is refused, not handed to the session's transport.
    @Test func badIntegrityBindsNoAddress() throws {
        let (session, _) = try receiver()
        let other = try DTLSCertificate(commonName: "publisher")
        session.addPublisher(spec(1, remoteFingerprint: other.fingerprint), seed: 1, now: 0)
        var forged = bindingRequest(user: "lu1:pu1", password: "not-the-password-at-all")
        forged.withUnsafeMutableBytes {
            session.handleDatagram($0.baseAddress!, length: $0.count, from: SocketAddress(Self.attacker), now: 1000)
        }
        #expect(session.rtcByAddress[SocketAddress(Self.attacker)!] == nil)
        var dtls: [UInt8] = [22, 254, 253] + [UInt8](repeating: 0, count: 40)
        dtls.withUnsafeMutableBytes {
            session.handleDatagram($0.baseAddress!, length: $0.count, from: SocketAddress(Self.attacker), now: 2000)
        }
        #expect(session.snapshot(final: false).rejected.unknownSource == 1)
        // The real password binds the source.
        var real = bindingRequest(user: "lu1:pu1", password: "endpoint-password-1-0123456")
        real.withUnsafeMutableBytes {
            session.handleDatagram($0.baseAddress!, length: $0.count, from: SocketAddress(Self.publisher), now: 3000)
        }
        #expect(session.rtcByAddress[SocketAddress(Self.publisher)!] != nil)
    }

    func bindingRequest(user: String, password: String) -> [UInt8] {
        let m = STUNMessage(
            class: .request, transactionID: [UInt8](repeating: 7, count: 12),
            attributes: [.username(user), .priority(1 << 24), .iceControlling(9), .useCandidate])
        return (try? m.encode(integrityKey: Array(password.utf8), hmacSHA1: hmac, fingerprint: true)) ?? []
    }
}
