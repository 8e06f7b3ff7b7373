import RTPCore

/// STUN messages (RFC 8489): the header, the attributes ICE and TURN need, MESSAGE-INTEGRITY
/// (HMAC-SHA1, computed by a function the caller passes: ICE stays free of crypto) and
/// FINGERPRINT (CRC-32).
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |0 0|     STUN Message Type     |         Message Length        |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                         Magic Cookie                          |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                     Transaction ID (96 bits)                  |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
public struct STUNMessage: Equatable, Sendable {
    /// RFC 8489 §5: the two class bits.
    public enum Class: UInt16, Sendable {
        case request = 0, indication = 1, success = 2, error = 3
    }

    static let magicCookie: UInt32 = 0x2112_A442
    public static let headerSize = 20
    /// RFC 8489 §14.7: FINGERPRINT is the CRC-32 XOR this.
    static let fingerprintXOR: UInt32 = 0x5354_554E
    public static let bindingMethod: UInt16 = 0x001
    /// TURN methods (RFC 8656 §17).
    static let allocateMethod: UInt16 = 0x003
    static let refreshMethod: UInt16 = 0x004
    static let sendMethod: UInt16 = 0x006
    static let dataMethod: UInt16 = 0x007
    static let createPermissionMethod: UInt16 = 0x008
    static let channelBindMethod: UInt16 = 0x009

    public var method: UInt16
    public var messageClass: Class
    /// 12 bytes.
    public var transactionID: [UInt8]
    /// In wire order. Parsing keeps MESSAGE-INTEGRITY and FINGERPRINT as they were found;
    /// `encode` writes what is here and can append freshly computed ones.
    public var attributes: [STUNAttribute]

    public init(method: UInt16 = bindingMethod, class messageClass: Class, transactionID: [UInt8], attributes: [STUNAttribute] = []) {
        precondition(transactionID.count == 12, "a STUN transaction ID is 12 bytes")
        self.method = method
        self.messageClass = messageClass
        self.transactionID = transactionID
        self.attributes = attributes
    }

    /// RFC 8489 §5: the method's 12 bits interleaved with the class bits C1 (bit 8) and C0 (bit 4).
    public static func messageType(method: UInt16, class c: Class) -> UInt16 {
        let m = method & 0x0FFF
        return (m & 0x000F) | (m & 0x0070) << 1 | (m & 0x0F80) << 2 | (c.rawValue & 1) << 4 | (c.rawValue & 2) << 7
    }

    public static func split(type t: UInt16) -> (method: UInt16, class: Class) {
        let method = (t & 0x000F) | (t & 0x00E0) >> 1 | (t & 0x3E00) >> 2
        let c = Class(rawValue: (t >> 4) & 1 | (t >> 7) & 2)!
        return (method, c)
    }

    /// RFC 7983: a datagram whose first byte is 0–3 is STUN (then the cookie decides).
    public static func looksLikeSTUN(_ b: Span<UInt8>) -> Bool {
        b.count >= headerSize && b[0] < 4 && b.be32(4) == magicCookie
    }

    // The first attribute of each kind pubbot reads (RFC 8489 §14: later duplicates are ignored).
    public var xorMappedAddress: STUNAddress? {
        for a in attributes { if case let .xorMappedAddress(x) = a { return x } }
        return nil
    }
    var xorRelayedAddress: STUNAddress? {
        for case let .xorRelayedAddress(a) in attributes { return a }
        return nil
    }

    var xorPeerAddress: STUNAddress? {
        for case let .xorPeerAddress(a) in attributes { return a }
        return nil
    }

    public var lifetime: UInt32? {
        for case let .lifetime(t) in attributes { return t }
        return nil
    }

    public var data: [UInt8]? {
        for case let .data(d) in attributes { return d }
        return nil
    }

    public var realm: String? {
        for case let .realm(r) in attributes { return r }
        return nil
    }

    public var nonce: String? {
        for case let .nonce(n) in attributes { return n }
        return nil
    }

    public var username: String? {
        for a in attributes { if case let .username(x) = a { return x } }
        return nil
    }
    public var software: String? {
        for a in attributes { if case let .software(x) = a { return x } }
        return nil
    }
    public var errorCode: (code: Int, reason: String)? {
        for a in attributes { if case let .errorCode(c, r) = a { return (c, r) } }
        return nil
    }

    /// The attributes without MESSAGE-INTEGRITY and FINGERPRINT (to write again with fresh ones).
    public var unsignedAttributes: [STUNAttribute] {
        attributes.filter { a in
            switch a {
            case .messageIntegrity, .fingerprint: false
            default: true
            }
        }
    }

    // MARK: parsing

    /// Parses one message that fills the datagram (RFC 8489 §6.3). Attributes after
    /// MESSAGE-INTEGRITY other than FINGERPRINT are ignored (§14.5); anything after FINGERPRINT
    /// is an error (§14.7). MESSAGE-INTEGRITY and FINGERPRINT are not checked here:
    /// `verifyIntegrity`, `verifyFingerprint`.
    public static func parse(_ b: Span<UInt8>) throws(STUNError) -> STUNMessage {
        guard b.count >= headerSize else { throw .truncated }
        guard b[0] & 0xC0 == 0, b.be32(4) == magicCookie else { throw .notSTUN }
        let length = Int(b.be16(2))
        guard length % 4 == 0 else { throw .badLength }
        guard headerSize + length == b.count else { throw .badLength }
        let (method, c) = split(type: b.be16(0))
        var txid = [UInt8](repeating: 0, count: 12)
        for i in 0..<12 { txid[i] = b[8 + i] }
        var m = STUNMessage(method: method, class: c, transactionID: txid)
        var i = headerSize
        var sawIntegrity = false
        while i < b.count {
            guard i + 4 <= b.count else { throw .truncated }
            let type = b.be16(i), len = Int(b.be16(i + 2))
            let start = i + 4
            guard start + len <= b.count else { throw .badAttribute(type) }
            let padded = (len + 3) & ~3
            guard start + padded <= b.count else { throw .badAttribute(type) }
            i = start + padded
            if type == STUNAttribute.Kind.fingerprint {
                guard i == b.count else { throw .badAttribute(type) } // FINGERPRINT is last
            } else if sawIntegrity {
                continue // RFC 8489 §14.5: ignored after MESSAGE-INTEGRITY
            }
            let a = try STUNAttribute.parse(type: type, value: b.extracting(start..<(start + len)), transactionID: txid)
            if case .messageIntegrity = a { sawIntegrity = true }
            m.attributes.append(a)
        }
        return m
    }

    // MARK: writing

    /// The message on the wire: the attributes as they are, then a MESSAGE-INTEGRITY under
    /// `integrityKey` (HMAC-SHA1 from `hmacSHA1`) if given, then a FINGERPRINT if asked for
    /// (RFC 8489 §14.5, §14.7: each computed with the length field already counting it).
    /// Attributes are padded to 4 bytes with `padding` (any value is allowed, RFC 8489 §14).
    public func encode(integrityKey: [UInt8]? = nil, hmacSHA1: STUNHMAC? = nil, fingerprint: Bool = false, padding: UInt8 = 0)
        throws(STUNError) -> [UInt8]
    {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        out.appendBE16(Self.messageType(method: method, class: messageClass))
        out.appendBE16(0)
        out.appendBE32(Self.magicCookie)
        out += transactionID
        for a in attributes { try a.write(to: &out, transactionID: transactionID, padding: padding) }
        if let integrityKey {
            guard let hmacSHA1 else { throw .noHMAC }
            Self.setLength(&out, out.count - Self.headerSize + 24)
            let mac = hmacSHA1(integrityKey, out)
            guard mac.count == 20 else { throw .noHMAC }
            out.appendBE16(STUNAttribute.Kind.messageIntegrity)
            out.appendBE16(20)
            out += mac
        }
        if fingerprint {
            Self.setLength(&out, out.count - Self.headerSize + 8)
            let crc = CRC32.checksum(out) ^ Self.fingerprintXOR
            out.appendBE16(STUNAttribute.Kind.fingerprint)
            out.appendBE16(4)
            out.appendBE32(crc)
        }
        Self.setLength(&out, out.count - Self.headerSize)
        guard out.count - Self.headerSize <= 0xFFFF else { throw .badLength }
        return out
    }

    static func setLength(_ out: inout [UInt8], _ n: Int) {
        out[2] = UInt8(truncatingIfNeeded: n >> 8)
        out[3] = UInt8(truncatingIfNeeded: n)
    }

    // MARK: checks on received bytes

    /// RFC 8489 §14.7: nil when the message has no FINGERPRINT, else whether it matches.
    public static func verifyFingerprint(_ bytes: [UInt8]) -> Bool? {
        guard let (offset, _) = attributeOffset(bytes, STUNAttribute.Kind.fingerprint), offset + 8 == bytes.count else { return nil }
        let stated =
            UInt32(bytes[offset + 4]) << 24 | UInt32(bytes[offset + 5]) << 16 | UInt32(bytes[offset + 6]) << 8 | UInt32(bytes[offset + 7])
        return CRC32.checksum(bytes[0..<offset]) ^ fingerprintXOR == stated
    }

    /// RFC 8489 §14.5: whether the MESSAGE-INTEGRITY matches the HMAC-SHA1 under `key` of the
    /// message up to it, with the length field ending at it. False without one.
    public static func verifyIntegrity(_ bytes: [UInt8], key: [UInt8], hmacSHA1: STUNHMAC) -> Bool {
        guard let (offset, len) = attributeOffset(bytes, STUNAttribute.Kind.messageIntegrity), len == 20 else { return false }
        var covered = Array(bytes[0..<offset])
        setLength(&covered, offset - headerSize + 24)
        return hmacSHA1(key, covered) == Array(bytes[(offset + 4)..<(offset + 24)])
    }

    /// Where the first attribute of `type` starts (its header) and its length, in a message
    /// that parses.
    static func attributeOffset(_ bytes: [UInt8], _ type: UInt16) -> (Int, Int)? {
        guard bytes.count >= headerSize else { return nil }
        var i = headerSize
        while i + 4 <= bytes.count {
            let t = UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])
            let len = Int(UInt16(bytes[i + 2]) << 8 | UInt16(bytes[i + 3]))
            if t == type { return i + 4 + len <= bytes.count ? (i, len) : nil }
            i += 4 + ((len + 3) & ~3)
        }
        return nil
    }
}

/// HMAC-SHA1(key, data) → 20 bytes; supplied by the caller (OpenSSL through the Crypto module).
public typealias STUNHMAC = ([UInt8], [UInt8]) -> [UInt8]

public enum STUNError: Error, Equatable, Sendable {
    /// Not a STUN message (first bits, magic cookie).
    case notSTUN
    case truncated
    /// The length field does not fit the datagram, or is not a multiple of 4.
    case badLength
    /// An attribute runs past the message, has a value its type does not allow, or follows
    /// FINGERPRINT.
    case badAttribute(UInt16)
    /// MESSAGE-INTEGRITY asked for without an HMAC function.
    case noHMAC
}

/// A transport address in MAPPED-ADDRESS / XOR-MAPPED-ADDRESS (RFC 8489 §14.1, §14.2).
public struct STUNAddress: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6).
    public var ip: [UInt8]
    public var port: UInt16

    public init(ip: [UInt8], port: UInt16) {
        precondition(ip.count == 4 || ip.count == 16, "an IP address is 4 or 16 bytes")
        self.ip = ip
        self.port = port
    }

    /// The address without the port, IPv6 in its canonical text (RFC 5952 §4: lower-case hex
    /// without leading zeros, the longest run of two or more zero groups — the first of equals —
    /// as `::`). pion finds a remote candidate by comparing that text with Go's (ice/v2
    /// agent.go `findRemoteCandidate`): an uncanonical `0:0:0:0:0:0:0:1` became a peer-reflexive
    /// candidate there, nominated only after its 1 s wait.
    public var ipText: String {
        if ip.count == 4 { return ip.map(String.init).joined(separator: ".") }
        let groups = stride(from: 0, to: 16, by: 2).map { UInt16(ip[$0]) << 8 | UInt16(ip[$0 + 1]) }
        var best = (start: -1, count: 0), i = 0
        while i < 8 {
            guard groups[i] == 0 else {
                i += 1
                continue
            }
            var j = i
            while j < 8 && groups[j] == 0 { j += 1 }
            if j - i > best.count { best = (i, j - i) }
            i = j
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.count >= 2 else { return hex.joined(separator: ":") }
        return hex[..<best.start].joined(separator: ":") + "::" + hex[(best.start + best.count)...].joined(separator: ":")
    }

    public var description: String { ip.count == 4 ? "\(ipText):\(port)" : "[\(ipText)]:\(port)" }
}

/// The attributes pubbot reads and writes (RFC 8489 §14, RFC 8445 §16.1); the rest are kept as
/// bytes.
public enum STUNAttribute: Equatable, Sendable {
    case mappedAddress(STUNAddress)
    case xorMappedAddress(STUNAddress)
    case username(String)
    case messageIntegrity([UInt8])
    case fingerprint(UInt32)
    /// 300–699 and the reason phrase (RFC 8489 §14.8).
    case errorCode(Int, String)
    case realm(String)
    case nonce(String)
    case software(String)
    case unknownAttributes([UInt16])
    /// ICE (RFC 8445 §16.1).
    case priority(UInt32)
    case useCandidate
    case iceControlled(UInt64)
    case iceControlling(UInt64)
    /// TURN (RFC 8656 §18).
    case channelNumber(UInt16)
    case lifetime(UInt32)
    case xorPeerAddress(STUNAddress)
    case data([UInt8])
    case xorRelayedAddress(STUNAddress)
    /// The protocol number of the relayed transport (17 = UDP).
    case requestedTransport(UInt8)
    case other(type: UInt16, value: [UInt8])

    public enum Kind {
        public static let mappedAddress: UInt16 = 0x0001
        public static let username: UInt16 = 0x0006
        static let messageIntegrity: UInt16 = 0x0008
        public static let errorCode: UInt16 = 0x0009
        public static let unknownAttributes: UInt16 = 0x000A
        public static let realm: UInt16 = 0x0014
        public static let nonce: UInt16 = 0x0015
        public static let xorMappedAddress: UInt16 = 0x0020
        public static let priority: UInt16 = 0x0024
        public static let useCandidate: UInt16 = 0x0025
        public static let software: UInt16 = 0x8022
        public static let fingerprint: UInt16 = 0x8028
        public static let iceControlled: UInt16 = 0x8029
        public static let iceControlling: UInt16 = 0x802A
        static let channelNumber: UInt16 = 0x000C
        public static let lifetime: UInt16 = 0x000D
        static let xorPeerAddress: UInt16 = 0x0012
        public static let data: UInt16 = 0x0013
        static let xorRelayedAddress: UInt16 = 0x0016
        static let requestedTransport: UInt16 = 0x0019
    }

    static func parse(type: UInt16, value v: Span<UInt8>, transactionID: [UInt8]) throws(STUNError) -> STUNAttribute {
        func text(max: Int) throws(STUNError) -> String {
            guard v.count <= max else { throw .badAttribute(type) }
            var bytes = [UInt8](repeating: 0, count: v.count)
            for i in 0..<v.count { bytes[i] = v[i] }
            guard let s = String(validating: bytes, as: UTF8.self) else { throw .badAttribute(type) }
            return s
        }
        switch type {
        case Kind.mappedAddress: return .mappedAddress(try address(v, type: type, xor: nil))
        case Kind.xorMappedAddress: return .xorMappedAddress(try address(v, type: type, xor: transactionID))
        case Kind.username: return .username(try text(max: 513)) // RFC 8489 §14.3
        case Kind.realm: return .realm(try text(max: 763))
        case Kind.nonce: return .nonce(try text(max: 763))
        case Kind.software: return .software(try text(max: 763))
        case Kind.messageIntegrity:
            guard v.count == 20 else { throw .badAttribute(type) }
            return .messageIntegrity((0..<20).map { v[$0] })
        case Kind.fingerprint:
            guard v.count == 4 else { throw .badAttribute(type) }
            return .fingerprint(v.be32(0))
        case Kind.errorCode:
            // 21 reserved bits, class (3 bits, 3–6), number (0–99), then the reason (UTF-8).
            guard v.count >= 4, v[0] == 0, v[1] == 0, v[2] & 0xF8 == 0 else { throw .badAttribute(type) }
            let cls = Int(v[2] & 0x07), number = Int(v[3])
            guard (3...6).contains(cls), number < 100 else { throw .badAttribute(type) }
            var reason = [UInt8](repeating: 0, count: v.count - 4)
            for i in 0..<reason.count { reason[i] = v[4 + i] }
            guard reason.count <= 763, let s = String(validating: reason, as: UTF8.self) else { throw .badAttribute(type) }
            return .errorCode(cls * 100 + number, s)
        case Kind.unknownAttributes:
            guard v.count % 2 == 0 else { throw .badAttribute(type) }
            return .unknownAttributes(stride(from: 0, to: v.count, by: 2).map { v.be16($0) })
        case Kind.priority:
            guard v.count == 4 else { throw .badAttribute(type) }
            return .priority(v.be32(0))
        case Kind.useCandidate:
            guard v.count == 0 else { throw .badAttribute(type) }
            return .useCandidate
        case Kind.iceControlled, Kind.iceControlling:
            guard v.count == 8 else { throw .badAttribute(type) }
            let tie = UInt64(v.be32(0)) << 32 | UInt64(v.be32(4))
            return type == Kind.iceControlled ? .iceControlled(tie) : .iceControlling(tie)
        case Kind.channelNumber:
            // RFC 8656 §18.1: the number, then 16 bits RFFU.
            guard v.count == 4 else { throw .badAttribute(type) }
            return .channelNumber(v.be16(0))
        case Kind.lifetime:
            guard v.count == 4 else { throw .badAttribute(type) }
            return .lifetime(v.be32(0))
        case Kind.xorPeerAddress: return .xorPeerAddress(try address(v, type: type, xor: transactionID))
        case Kind.xorRelayedAddress: return .xorRelayedAddress(try address(v, type: type, xor: transactionID))
        case Kind.data: return .data((0..<v.count).map { v[$0] })
        case Kind.requestedTransport:
            guard v.count == 4 else { throw .badAttribute(type) }
            return .requestedTransport(v[0])
        default:
            return .other(type: type, value: (0..<v.count).map { v[$0] })
        }
    }

    /// RFC 8489 §14.1–§14.2: family 1 (IPv4) or 2 (IPv6); the XOR form masks the port with the
    /// cookie's top 16 bits and the address with the cookie (‖ transaction ID for IPv6).
    static func address(_ v: Span<UInt8>, type: UInt16, xor txid: [UInt8]?) throws(STUNError) -> STUNAddress {
        guard v.count >= 4, v[0] == 0 else { throw .badAttribute(type) }
        let size: Int
        switch v[1] {
        case 1: size = 4
        case 2: size = 16
        default: throw .badAttribute(type)
        }
        guard v.count == 4 + size else { throw .badAttribute(type) }
        var port = v.be16(2)
        var ip = (0..<size).map { v[4 + $0] }
        if let txid {
            port ^= UInt16(STUNMessage.magicCookie >> 16)
            let mask = xorMask(txid)
            for i in 0..<size { ip[i] ^= mask[i] }
        }
        return STUNAddress(ip: ip, port: port)
    }

    static func xorMask(_ txid: [UInt8]) -> [UInt8] {
        let c = STUNMessage.magicCookie
        return [UInt8(c >> 24), UInt8(c >> 16 & 0xFF), UInt8(c >> 8 & 0xFF), UInt8(c & 0xFF)] + txid
    }

    func write(to out: inout [UInt8], transactionID: [UInt8], padding: UInt8 = 0) throws(STUNError) {
        func tlv(_ type: UInt16, _ value: [UInt8]) throws(STUNError) {
            guard value.count <= 0xFFFF else { throw .badAttribute(type) }
            out.appendBE16(type)
            out.appendBE16(UInt16(value.count))
            out += value
            while out.count % 4 != 0 { out.append(padding) }
        }
        func addressValue(_ a: STUNAddress, xor: Bool) -> [UInt8] {
            var port = a.port, ip = a.ip
            if xor {
                port ^= UInt16(STUNMessage.magicCookie >> 16)
                let mask = Self.xorMask(transactionID)
                for i in ip.indices { ip[i] ^= mask[i] }
            }
            return [0, a.ip.count == 4 ? 1 : 2, UInt8(port >> 8), UInt8(port & 0xFF)] + ip
        }
        switch self {
        case let .mappedAddress(a): try tlv(Kind.mappedAddress, addressValue(a, xor: false))
        case let .xorMappedAddress(a): try tlv(Kind.xorMappedAddress, addressValue(a, xor: true))
        case let .username(s): try tlv(Kind.username, Array(s.utf8))
        case let .realm(s): try tlv(Kind.realm, Array(s.utf8))
        case let .nonce(s): try tlv(Kind.nonce, Array(s.utf8))
        case let .software(s): try tlv(Kind.software, Array(s.utf8))
        case let .messageIntegrity(mac): try tlv(Kind.messageIntegrity, mac)
        case let .fingerprint(v): try tlv(Kind.fingerprint, [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)])
        case let .errorCode(code, reason):
            guard (300...699).contains(code) else { throw .badAttribute(Kind.errorCode) }
            try tlv(Kind.errorCode, [0, 0, UInt8(code / 100), UInt8(code % 100)] + Array(reason.utf8))
        case let .unknownAttributes(types): try tlv(Kind.unknownAttributes, types.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
        case let .priority(p): try tlv(Kind.priority, [UInt8(p >> 24), UInt8(p >> 16 & 0xFF), UInt8(p >> 8 & 0xFF), UInt8(p & 0xFF)])
        case .useCandidate: try tlv(Kind.useCandidate, [])
        case let .iceControlled(t): try tlv(Kind.iceControlled, (0..<8).map { UInt8(truncatingIfNeeded: t >> (56 - 8 * $0)) })
        case let .iceControlling(t): try tlv(Kind.iceControlling, (0..<8).map { UInt8(truncatingIfNeeded: t >> (56 - 8 * $0)) })
        case let .channelNumber(n): try tlv(Kind.channelNumber, [UInt8(n >> 8), UInt8(n & 0xFF), 0, 0])
        case let .lifetime(t): try tlv(Kind.lifetime, [UInt8(t >> 24), UInt8(t >> 16 & 0xFF), UInt8(t >> 8 & 0xFF), UInt8(t & 0xFF)])
        case let .xorPeerAddress(a): try tlv(Kind.xorPeerAddress, addressValue(a, xor: true))
        case let .xorRelayedAddress(a): try tlv(Kind.xorRelayedAddress, addressValue(a, xor: true))
        case let .data(d): try tlv(Kind.data, d)
        case let .requestedTransport(p): try tlv(Kind.requestedTransport, [p, 0, 0, 0])
        case let .other(type, value): try tlv(type, value)
        }
    }
}

/// CRC-32 (ISO-HDLC: reflected polynomial 0xEDB88320, as zlib and Ethernet), for the STUN
/// FINGERPRINT (RFC 8489 §14.7). A checksum, not cryptography.
public enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    public static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}

extension [UInt8] {
    mutating func appendBE16(_ v: UInt16) { append(UInt8(v >> 8)); append(UInt8(v & 0xFF)) }
    mutating func appendBE32(_ v: UInt32) { appendBE16(UInt16(v >> 16)); appendBE16(UInt16(v & 0xFFFF)) }
}
