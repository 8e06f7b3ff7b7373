public import HTTPSignaling
import Signalling
import ICE
import DTLS
import Transport
import WebRTC
import RTPCore
import Crypto
import Platform

extension ConformanceCheck {
    /// Runs the check against a live endpoint: the offer a browser would send (WHIP: Opus and one
    /// VP8 encoding, sendonly; WHEP: recvonly, every codec pubbot decodes) with this machine's
    /// host candidate on a socket held for the run, the requests through libcurl (the token only
    /// where the RFC sends it), each announced STUN server asked for a Binding and each TURN
    /// server for an Allocation.
    public static func run(
        exchange: SignalingExchange, endpoint: String, token: String?, turnCAFile: String? = nil, timeoutMillis: Int = 10_000
    ) throws(WHIPConnectError) -> ConformanceReport {
        var options = WHIPOptions(endpoint: endpoint, token: token)
        options.turnCAFile = turnCAFile
        let bindAddress = try WHIPConnection.bindAddress(options)
        let socket: UDPSocket
        do { socket = try UDPSocket(bind: bindAddress) } catch { throw WHIPConnectError("cannot open a socket: \(error)") }
        guard let local = STUNAddress(socket.localAddress) else { throw WHIPConnectError("the socket has no usable address") }
        let certificate: DTLSCertificate
        do { certificate = try DTLSCertificate() } catch { throw WHIPConnectError("cannot make a DTLS certificate: \(error)") }
        let credentials = ICEAgent.Credentials(random: SecureRandom.bytes(32))
        let restart = ICEAgent.Credentials(random: SecureRandom.bytes(32))
        let host = ICECandidate.host(local)
        var offer = WHIPOffer(
            iceUfrag: credentials.ufrag, icePassword: credentials.password, fingerprint: certificate.sdpFingerprint, candidates: [host])
        offer.sessionID = UInt64(SecureRandom.uint32()) << 16 | 1
        if exchange == .whep {
            offer.direction = .receive
            offer.codecs = VideoCodec.allCases
        } else {
            // One encoding, as a browser's first offer (simulcast is a later question).
            offer.rids = []
            let audio = SecureRandom.uint32() | 1
            offer.audioSSRC = audio
            offer.videoSSRC = (audio ^ 0x0100_0000, audio ^ 0x0200_0000)
        }
        let material = Material(offer: offer, restartUfrag: restart.ufrag, restartPassword: restart.password, candidate: host)
        let http: HTTP = { method, url, body, headers, withToken in
            SignalingClient.send(
                method, url, body: body, headers: headers, token: withToken ? token : nil, exchange: exchange, timeoutMillis: timeoutMillis)
        }
        let probe: Probe = { link in
            guard let u = try? ICEServerURL.parse(link.url) else { return (false, "not a STUN/TURN URL") }
            guard let a = try? SocketAddress(host: u.host, port: u.port), let server = STUNAddress(a) else {
                return (false, "cannot resolve \(u.host)")
            }
            if !u.isTURN {
                for r in WHIPConnection.queryReflexive(socket: socket, hosts: [host], servers: [server]) {
                    switch r {
                    case let .reflexive(c, _, _, _, rtt):
                        return (true, "answered, reflexive \(c.address.ipText):\(c.address.port) in \(rtt / 1000) ms")
                    case let .failed(_, _, reason): return (false, reason)
                    }
                }
                return (false, "no answer")
            }
            // A socket of its own: an allocation holds its 5-tuple (RFC 8656 §2.2).
            guard let s = try? UDPSocket(bind: bindAddress), let base = STUNAddress(s.localAddress) else { return (false, "no socket") }
            switch WHIPConnection.allocate(
                socket: s, base: base, server: server, tcp: u.transport != .udp, tls: u.transport == .tls ? (u.host, turnCAFile) : nil,
                username: link.username ?? "", password: link.credential ?? "")
            {
            case let .success((t, stream)):
                let relay = t.relay.map { "\($0.ipText):\($0.port)" } ?? "?"
                // Released at once (a Refresh of lifetime 0, RFC 8656 §7): the check holds no relay.
                t.close()
                while let x = t.pollTransmit() {
                    if let stream {
                        x.bytes.withUnsafeBytes { stream.write($0) }
                        stream.flush()
                    } else if let to = SocketAddress(x.to) {
                        x.bytes.withUnsafeBytes { _ = try? s.send($0, to: to) }
                    }
                }
                return (true, "allocated, relay \(relay) (released)")
            case let .failure(e): return (false, e.description)
            }
        }
        return run(exchange: exchange, endpoint: endpoint, tokenGiven: token != nil, material: material, http: http, probe: probe)
    }
}
