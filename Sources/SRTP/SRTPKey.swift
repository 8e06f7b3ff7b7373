import RTPCore

/// SRTP protection profiles pubbot offers (libsrtp2 policies; SDES names per RFC 4568 / libwebrtc).
public enum SRTPSuite: String, Sendable, CaseIterable {
    /// AES_CM_128_HMAC_SHA1_80: 16-byte key + 14-byte salt, 10-byte tag.
    case aesCm = "aes-cm"
    /// AEAD_AES_128_GCM: 16-byte key + 12-byte salt, 16-byte tag.
    case gcm = "gcm"

    public var sdesName: String {
        switch self {
        case .aesCm: "AES_CM_128_HMAC_SHA1_80"
        case .gcm: "AEAD_AES_128_GCM"
        }
    }

    public init?(sdesName: String) {
        guard let s = Self.allCases.first(where: { $0.sdesName == sdesName }) else { return nil }
        self = s
    }

    /// Master key ‖ salt length in bytes.
    public var keyLength: Int {
        switch self {
        case .aesCm: 30
        case .gcm: 28
        }
    }
}

/// SDES master key material (key ‖ salt). Its description never shows the key.
public struct SRTPKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public let suite: SRTPSuite
    let material: [UInt8]

    /// The raw key ‖ salt for a C call (the benchmarks' direct libsrtp2 baseline); not printable.
    public func withMaterial<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R { material.withUnsafeBufferPointer(body) }

    public enum ParseError: Error, CustomStringConvertible, Equatable, Sendable {
        case notBase64
        case wrongLength(got: Int, expected: Int, suite: SRTPSuite)

        public var description: String {
            switch self {
            case .notBase64: "the key is not valid base64 (expected base64 of key‖salt, as in an SDP a=crypto inline: value)"
            case let .wrongLength(got, expected, suite):
                "the key decodes to \(got) bytes; \(suite.sdesName) needs \(expected) (key‖salt)"
            }
        }
    }

    /// Parses base64(key‖salt) for `suite`.
    public init(base64: String, suite: SRTPSuite) throws(ParseError) {
        guard let bytes = Base64.decode(base64.trimmingWhitespace) else { throw .notBase64 }
        guard bytes.count == suite.keyLength else { throw .wrongLength(got: bytes.count, expected: suite.keyLength, suite: suite) }
        self.init(suite: suite, material: bytes)
    }

    /// Key ‖ salt as they come out of a key exchange (DTLS-SRTP, RFC 5764 §4.2).
    public init(suite: SRTPSuite, keyAndSalt: [UInt8]) throws(ParseError) {
        guard keyAndSalt.count == suite.keyLength else {
            throw .wrongLength(got: keyAndSalt.count, expected: suite.keyLength, suite: suite)
        }
        self.init(suite: suite, material: keyAndSalt)
    }

    package init(suite: SRTPSuite, material: [UInt8]) {
        self.suite = suite
        self.material = material
    }

    /// The base64 SDES inline value. Only for writing into an SDP file the user asked for.
    public func revealBase64() -> String { Base64.encode(material) }

    public var description: String { "SRTPKey(\(suite.sdesName), redacted)" }
    public var debugDescription: String { description }
}

extension String {
    var trimmingWhitespace: String {
        String(drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed())
    }
}
