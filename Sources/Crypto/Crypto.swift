internal import COpenSSL

/// The cryptography pubbot needs outside SRTP, from OpenSSL's libcrypto (never written by hand):
/// HMAC-SHA1 for STUN MESSAGE-INTEGRITY (RFC 8489 §14.5) and MD5 for the long-term credential
/// key (RFC 8489 §9.2.2). (Certificate fingerprints are taken inside the DTLS shim.)
public enum Crypto {
    /// HMAC-SHA1 of `data` under `key` (20 bytes).
    public static func hmacSHA1(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        let ok = key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { o in
                    copenssl_hmac_sha1(k.baseAddress, Int32(k.count), d.baseAddress, d.count, o.baseAddress)
                }
            }
        }
        precondition(ok == 1, "OpenSSL HMAC-SHA1 failed") // only on a broken libcrypto
        return out
    }

    static func md5(_ data: [UInt8]) -> [UInt8] { digest("MD5", data) }

    static func digest(_ name: String, _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        let n = data.withUnsafeBufferPointer { d in
            out.withUnsafeMutableBufferPointer { o in copenssl_digest(name, d.baseAddress, d.count, o.baseAddress) }
        }
        precondition(n > 0, "OpenSSL \(name) failed") // only on a broken libcrypto
        return Array(out[0..<Int(n)])
    }

    /// The STUN long-term credential key: MD5(username ":" realm ":" password) (RFC 8489
    /// §9.2.2, no SASLprep: the strings are taken as given).
    public static func stunLongTermKey(username: String, realm: String, password: String) -> [UInt8] {
        md5(Array("\(username):\(realm):\(password)".utf8))
    }
}
