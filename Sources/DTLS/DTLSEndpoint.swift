internal import COpenSSL
public import SRTP

public struct DTLSError: Error, CustomStringConvertible, Equatable, Sendable {
    public var description: String
    public init(description: String) { self.description = description }
}

/// A self-signed ECDSA P-256 certificate (RFC 8827 §6.5: WebRTC endpoints use self-signed
/// certificates, authenticated by the fingerprint in the signalling) and the DTLS context built
/// on it. One per process serves every connection of a fleet.
public final class DTLSCertificate: @unchecked Sendable {
    let key: OpaquePointer
    let certificate: OpaquePointer
    let context: OpaquePointer
    /// SHA-256 of the certificate (RFC 8122).
    public let fingerprint: [UInt8]

    public init(commonName: String = "pubbot") throws(DTLSError) {
        var key: OpaquePointer?, cert: OpaquePointer?
        guard copenssl_make_certificate(commonName, &key, &cert) == 1, let key, let cert else {
            throw DTLSError(description: "OpenSSL could not make a certificate")
        }
        var fp = [UInt8](repeating: 0, count: 32)
        guard copenssl_certificate_sha256(cert, &fp) == 1, let ctx = copenssl_dtls_context(key, cert) else {
            EVP_PKEY_free(key)
            X509_free(cert)
            throw DTLSError(description: "OpenSSL could not set up DTLS with SRTP")
        }
        self.key = key
        certificate = cert
        context = ctx
        fingerprint = fp
    }

    deinit {
        SSL_CTX_free(context)
        X509_free(certificate)
        EVP_PKEY_free(key)
    }

    /// The SDP form: `sha-256 AB:CD:…` (RFC 8122 §5).
    public var sdpFingerprint: String { "sha-256 " + Self.hex(fingerprint) }

    public static func hex(_ b: [UInt8]) -> String {
        b.map {
            let s = String($0, radix: 16, uppercase: true); return s.count == 1 ? "0" + s : s
        }.joined(separator: ":")
    }

    /// Parses the SDP value `sha-256 AB:CD:…` (other hash functions are refused).
    public static func parseFingerprint(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: " ")
        guard parts.count == 2, parts[0].lowercased() == "sha-256" else { return nil }
        let bytes = parts[1].split(separator: ":").compactMap { $0.count == 2 ? UInt8($0, radix: 16) : nil }
        return bytes.count == 32 && parts[1].split(separator: ":").count == 32 ? bytes : nil
    }
}

/// One DTLS-SRTP association (RFC 5764, RFC 8842) over memory buffers, sans-IO: datagrams in
/// (`handle`), datagrams out (`pollTransmit`), a timer (`step`), events (`pollEvent`). OpenSSL
/// keeps the handshake's retransmission timer on its own clock; `step` turns what it says is
/// left into a deadline on the caller's clock.
public final class DTLSEndpoint {
    /// RFC 5763 §5: `a=setup:active` is the DTLS client, `passive` the server.
    /// The raw value is W3C `RTCDtlsRole`'s.
    public enum Role: String, Sendable { case client, server }

    public enum Event: Sendable {
        /// The handshake is done and the peer's certificate matches: SRTP keys for each direction.
        case connected(suite: SRTPSuite, send: SRTPKey, receive: SRTPKey)
        case failed(DTLSFailure)
        /// The peer sent close_notify.
        case closed
    }

    public enum State: Sendable, Equatable { case handshaking, connected, closed, failed }

    public let role: Role
    let certificate: DTLSCertificate
    let ssl: OpaquePointer
    let expectedFingerprint: [UInt8]
    let mtu: Int
    var outbox: [[UInt8]] = []
    var events: [Event] = []
    public private(set) var state = State.handshaking

    public init(role: Role, certificate: DTLSCertificate, remoteFingerprint: [UInt8], mtu: Int = 1200) throws(DTLSError) {
        guard let ssl = copenssl_dtls_new(certificate.context, role == .server ? 1 : 0, mtu) else {
            throw DTLSError(description: "OpenSSL could not create a DTLS connection")
        }
        self.role = role
        self.certificate = certificate
        self.ssl = ssl
        expectedFingerprint = remoteFingerprint
        self.mtu = mtu
    }

    deinit { SSL_free(ssl) }

    /// RFC 7983: a first byte of 20–63 is DTLS.
    public static func looksLikeDTLS(_ first: UInt8) -> Bool { (20...63).contains(first) }

    public func pollTransmit() -> [UInt8]? { outbox.isEmpty ? nil : outbox.removeFirst() }
    public func pollEvent() -> Event? { events.isEmpty ? nil : events.removeFirst() }

    /// The client starts the handshake (ClientHello); the server waits for it.
    public func start() { advance() }

    public func handle(_ datagram: [UInt8]) {
        guard state == .handshaking || state == .connected else { return }
        _ = datagram.withUnsafeBufferPointer { copenssl_feed(ssl, $0.baseAddress, Int32($0.count)) }
        if state == .handshaking {
            advance()
        } else {
            if copenssl_drain(ssl) == 1 { state = .closed; events.append(.closed) }
            flush()
        }
    }

    /// Retransmits a lost flight when OpenSSL's timer has run out; returns when to call again.
    public func step(now: Int64) -> Int64? {
        guard state == .handshaking else { return nil }
        var left = copenssl_timeout_us(ssl)
        if left == 0 {
            _ = copenssl_handle_timeout(ssl)
            flush()
            left = copenssl_timeout_us(ssl)
        }
        return left < 0 ? nil : now + Int64(left)
    }

    /// Sends close_notify (the end of the session, RFC 5246 §7.2.1).
    public func close() {
        guard state == .connected else { return }
        _ = copenssl_shutdown(ssl)
        flush()
        state = .closed
    }

    func advance() {
        var reason = [CChar](repeating: 0, count: 256)
        let rc = copenssl_handshake(ssl, &reason, reason.count)
        flush()
        if rc < 0 {
            fail(.handshake(String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
            return
        }
        guard rc == 1 else { return }
        var peer = [UInt8](repeating: 0, count: 32)
        guard copenssl_peer_sha256(ssl, &peer) == 1 else { fail(.noCertificate); return }
        guard peer == expectedFingerprint else {
            fail(.fingerprintMismatch(peer: DTLSCertificate.hex(peer), expected: DTLSCertificate.hex(expectedFingerprint)))
            return
        }
        // RFC 5764 §4.2: client key | server key | client salt | server salt.
        let suite: SRTPSuite, saltLength: Int
        switch copenssl_srtp_profile(ssl) {
        case 0x0007: suite = .gcm; saltLength = 12 // SRTP_AEAD_AES_128_GCM (RFC 7714)
        case 0x0001: suite = .aesCm; saltLength = 14 // SRTP_AES128_CM_HMAC_SHA1_80
        default: fail(.noSRTPProfile); return
        }
        var material = [UInt8](repeating: 0, count: 2 * (16 + saltLength))
        guard copenssl_export_srtp(ssl, &material, material.count) == 1 else { fail(.keyExportFailed); return }
        let clientKey = Array(material[0..<16]), serverKey = Array(material[16..<32])
        let clientSalt = Array(material[32..<(32 + saltLength)]), serverSalt = Array(material[(32 + saltLength)...])
        do throws(SRTPKey.ParseError) {
            let client = try SRTPKey(suite: suite, keyAndSalt: clientKey + clientSalt)
            let server = try SRTPKey(suite: suite, keyAndSalt: serverKey + serverSalt)
            state = .connected
            events.append(
                role == .client
                    ? .connected(suite: suite, send: client, receive: server) : .connected(suite: suite, send: server, receive: client))
        } catch {
            fail(.keysDoNotFit("\(error)"))
        }
    }

    func fail(_ reason: DTLSFailure) {
        state = .failed
        events.append(.failed(reason))
    }

    /// Takes what OpenSSL wrote and packs its records into datagrams of at most `mtu` bytes
    /// (the memory BIO runs records together; a record is never split).
    func flush() {
        let n = Int(copenssl_pending_out(ssl))
        guard n > 0 else { return }
        var bytes = [UInt8](repeating: 0, count: n)
        let got = Int(bytes.withUnsafeMutableBufferPointer { copenssl_take_out(ssl, $0.baseAddress, Int32(n)) })
        guard got > 0 else { return }
        bytes.removeLast(n - got)
        var datagram: [UInt8] = []
        var i = 0
        while i + 13 <= bytes.count {
            let length = Int(bytes[i + 11]) << 8 | Int(bytes[i + 12])
            let end = min(bytes.count, i + 13 + length)
            if !datagram.isEmpty && datagram.count + (end - i) > mtu { outbox.append(datagram); datagram = [] }
            datagram += bytes[i..<end]
            i = end
        }
        if !datagram.isEmpty { outbox.append(datagram) }
    }
}
