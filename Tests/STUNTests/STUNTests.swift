import Testing
import RTPCore
import ICE
import Crypto

/// Hex with spaces and line breaks, as the RFCs print it.
func hex(_ s: String) -> [UInt8] {
    let digits = Array(s.unicodeScalars.filter { $0.properties.isASCIIHexDigit })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(String.UnicodeScalarView(digits[$0...$0 + 1])), radix: 16)! }
}

/// The test vectors of RFC 5769 ("Test Vectors for STUN"), §2.1–§2.4.
enum RFC5769 {
    static let password = Array("VOkJxbRl1RmTxUk/WvJxBt".utf8)
    static let transactionID = hex("b7 e7 a7 01 bc 34 d6 86 fa 87 df ae")
    /// §2.1: a Binding request with SOFTWARE, PRIORITY, ICE-CONTROLLED, USERNAME (padded with
    /// spaces), MESSAGE-INTEGRITY and FINGERPRINT.
    static let request = hex(
        """
        00 01 00 58 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 10 53 54 55 4e 20 74 65 73 74 20 63 6c 69 65 6e 74
        00 24 00 04 6e 00 01 ff
        80 29 00 08 93 2f f9 b1 51 26 3b 36
        00 06 00 09 65 76 74 6a 3a 68 36 76 59 20 20 20
        00 08 00 14 9a ea a7 0c bf d8 cb 56 78 1e f2 b5 b2 d3 f2 49 c1 b5 71 a2
        80 28 00 04 e5 7a 3b cf
        """)
    /// §2.2: XOR-MAPPED-ADDRESS 192.0.2.1:32853.
    static let ipv4Response = hex(
        """
        01 01 00 3c 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 0b 74 65 73 74 20 76 65 63 74 6f 72 20
        00 20 00 08 00 01 a1 47 e1 12 a6 43
        00 08 00 14 2b 91 f5 99 fd 9e 90 c3 8c 74 89 f9 2a f9 ba 53 f0 6b e7 d7
        80 28 00 04 c0 7d 4c 96
        """)
    /// §2.3: XOR-MAPPED-ADDRESS [2001:db8:1234:5678:11:2233:4455:6677]:32853.
    static let ipv6Response = hex(
        """
        01 01 00 48 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 0b 74 65 73 74 20 76 65 63 74 6f 72 20
        00 20 00 14 00 02 a1 47 01 13 a9 fa a5 d3 f1 79 bc 25 f4 b5 be d2 b9 d9
        00 08 00 14 a3 82 95 4e 4b e6 7b f1 17 84 c9 7c 82 92 c2 75 bf e3 ed 41
        80 28 00 04 c8 fb 0b 4c
        """)
    /// §2.4: long-term credentials (USERNAME "マトリックス", NONCE, REALM "example.org"), no
    /// FINGERPRINT; password "TheMatrIX" after SASLprep.
    static let longTermRequest = hex(
        """
        00 01 00 60 21 12 a4 42 78 ad 34 33 c6 ad 72 c0 29 da 41 2e
        00 06 00 12 e3 83 9e e3 83 88 e3 83 aa e3 83 83 e3 82 af e3 82 b9 00 00
        00 15 00 1c 66 2f 2f 34 39 39 6b 39 35 34 64 36 4f 4c 33 34 6f 4c 39 46 53 54 76 79 36 34 73 41
        00 14 00 0b 65 78 61 6d 70 6c 65 2e 6f 72 67 00
        00 08 00 14 f6 70 24 65 6d d6 4a 3e 02 b8 e0 71 2e 85 c9 a2 8c a8 96 66
        """)
}

func hmac(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] { Crypto.hmacSHA1(key: key, data: data) }

@Suite struct STUNVectorTests {
    @Test func crc32CheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926) // the published CRC-32/ISO-HDLC check
    }

    @Test func hmacSHA1MatchesRFC2202() {
        // RFC 2202 test case 2.
        #expect(
            Crypto.hmacSHA1(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
                == hex("ef fc df 6a e5 eb 2f a2 d2 74 16 d5 f1 84 df 9c 25 9a 7c 79"))
    }

    @Test func sampleRequest() throws {
        let m = try STUNMessage.parse(RFC5769.request.span)
        #expect(m.method == STUNMessage.bindingMethod && m.messageClass == .request && m.transactionID == RFC5769.transactionID)
        #expect(
            m.attributes.prefix(4) == [
                .software("STUN test client"), .priority(0x6E00_01FF), .iceControlled(0x932F_F9B1_5126_3B36),
                .username("evtj:h6vY")
            ])
        #expect(STUNMessage.verifyFingerprint(RFC5769.request) == true)
        #expect(STUNMessage.verifyIntegrity(RFC5769.request, key: RFC5769.password, hmacSHA1: hmac))
        #expect(!STUNMessage.verifyIntegrity(RFC5769.request, key: Array("not the password".utf8), hmacSHA1: hmac))
        var changed = RFC5769.request
        changed[45] ^= 1 // inside PRIORITY
        #expect(STUNMessage.verifyFingerprint(changed) == false)
        #expect(!STUNMessage.verifyIntegrity(changed, key: RFC5769.password, hmacSHA1: hmac))
    }

    @Test(arguments: [(RFC5769.ipv4Response, "192.0.2.1:32853"), (RFC5769.ipv6Response, "[2001:db8:1234:5678:11:2233:4455:6677]:32853")])
    func sampleResponses(_ bytes: [UInt8], _ mapped: String) throws {
        let m = try STUNMessage.parse(bytes.span)
        #expect(m.messageClass == .success && m.method == STUNMessage.bindingMethod)
        #expect(m.xorMappedAddress?.description == mapped)
        #expect(m.software == "test vector")
        #expect(STUNMessage.verifyFingerprint(bytes) == true)
        #expect(STUNMessage.verifyIntegrity(bytes, key: RFC5769.password, hmacSHA1: hmac))
        // Written again with a freshly computed MESSAGE-INTEGRITY and FINGERPRINT it is the
        // RFC's bytes, but for SOFTWARE's padding byte (RFC 5769 pads with a space; padding may
        // be anything, pubbot writes zeros).
        var again = m
        again.attributes = m.unsignedAttributes
        var expected = bytes
        expected[20 + 4 + 11] = 0 // SOFTWARE's padding
        let written = try again.encode(integrityKey: RFC5769.password, hmacSHA1: hmac, fingerprint: true)
        let unsigned = bytes.count - 24 - 8 // up to MESSAGE-INTEGRITY
        #expect(written.count == bytes.count)
        #expect(Array(written[4..<unsigned]) == Array(expected[4..<unsigned]) && Array(written[0..<2]) == Array(expected[0..<2]))
        #expect(
            STUNMessage.verifyIntegrity(written, key: RFC5769.password, hmacSHA1: hmac) && STUNMessage.verifyFingerprint(written) == true)
    }

    /// Padded with spaces as the RFC pads, the written responses are the RFC's byte for byte,
    /// MESSAGE-INTEGRITY and FINGERPRINT included (the length field counts each as it is computed).
    @Test func writtenResponsesAreTheRFCs() throws {
        for (ip, bytes) in [
            ([UInt8]([192, 0, 2, 1]), RFC5769.ipv4Response),
            (hex("20 01 0d b8 12 34 56 78 00 11 22 33 44 55 66 77"), RFC5769.ipv6Response)
        ] {
            let m = STUNMessage(
                class: .success, transactionID: RFC5769.transactionID,
                attributes: [.software("test vector"), .xorMappedAddress(STUNAddress(ip: ip, port: 32853))])
            #expect(try m.encode(integrityKey: RFC5769.password, hmacSHA1: hmac, fingerprint: true, padding: 0x20) == bytes)
        }
    }

    @Test func longTermRequest() throws {
        let m = try STUNMessage.parse(RFC5769.longTermRequest.span)
        let user = "\u{30DE}\u{30C8}\u{30EA}\u{30C3}\u{30AF}\u{30B9}"
        #expect(m.attributes.prefix(3) == [.username(user), .nonce("f//499k954d6OL34oL9FSTvy64sA"), .realm("example.org")])
        #expect(STUNMessage.verifyFingerprint(RFC5769.longTermRequest) == nil)
        let key = Crypto.stunLongTermKey(username: user, realm: "example.org", password: "TheMatrIX")
        #expect(STUNMessage.verifyIntegrity(RFC5769.longTermRequest, key: key, hmacSHA1: hmac))
        #expect(
            !STUNMessage.verifyIntegrity(
                RFC5769.longTermRequest, key: Crypto.stunLongTermKey(username: user, realm: "example.org", password: "TheMatrix"),
                hmacSHA1: hmac))
    }
}

@Suite struct STUNCodecTests {
    @Test func messageTypesInterleaveTheClassBits() {
        // RFC 8489 §5 / RFC 8656 values.
        for (method, c, t) in [
            (UInt16(0x001), STUNMessage.Class.request, UInt16(0x0001)), (0x001, .success, 0x0101), (0x001, .error, 0x0111),
            (0x001, .indication, 0x0011), (0x003, .request, 0x0003), (0x003, .error, 0x0113), (0x004, .request, 0x0004),
            (0x006, .indication, 0x0016), (0x007, .indication, 0x0017), (0x008, .request, 0x0008), (0x009, .success, 0x0109)
        ] {
            #expect(STUNMessage.messageType(method: method, class: c) == t)
            let (m, k) = STUNMessage.split(type: t)
            #expect(m == method && k == c)
        }
    }

    @Test func everyAttributeRoundTrips() throws {
        let m = STUNMessage(
            class: .error, transactionID: Array(1...12),
            attributes: [
                .username("remote:local"), .priority(1_853_817_087), .useCandidate, .iceControlling(0x0102_0304_0506_0708),
                .errorCode(487, "Role Conflict"), .realm("example.org"), .nonce("abc"), .unknownAttributes([0x8000, 0x0031]),
                .mappedAddress(STUNAddress(ip: [10, 0, 0, 1], port: 5000)),
                .xorMappedAddress(STUNAddress(ip: Array(0..<16), port: 443)), .other(type: 0xC057, value: [0, 1, 0, 10])
            ])
        let bytes = try m.encode(integrityKey: Array("pw".utf8), hmacSHA1: hmac, fingerprint: true)
        var parsed = try STUNMessage.parse(bytes.span)
        #expect(STUNMessage.verifyIntegrity(bytes, key: Array("pw".utf8), hmacSHA1: hmac) && STUNMessage.verifyFingerprint(bytes) == true)
        parsed.attributes.removeLast(2)
        #expect(parsed == m)
    }

    @Test func junkIsNotAMessage() {
        #expect(throws: STUNError.truncated) { try STUNMessage.parse([UInt8](repeating: 0, count: 19).span) }
        var b = RFC5769.request
        b[4] ^= 1
        #expect(throws: STUNError.notSTUN) { try STUNMessage.parse(b.span) }
        b = RFC5769.request
        b[3] = 0x5C
        #expect(throws: STUNError.badLength) { try STUNMessage.parse(b.span) }
        b = RFC5769.request
        b[23] = 0x40 // SOFTWARE claims 64 bytes
        #expect(throws: STUNError.badAttribute(0x8022)) { try STUNMessage.parse(b.span) }
        let rtp: [UInt8] = [0x80, 0x60, 0, 1] + [UInt8](repeating: 0, count: 20)
        let notSTUN = STUNMessage.looksLikeSTUN(rtp.span), isSTUN = STUNMessage.looksLikeSTUN(RFC5769.request.span)
        #expect(!notSTUN && isSTUN)
        // An attribute after FINGERPRINT.
        b = RFC5769.request + [0x80, 0x22, 0x00, 0x00]
        b[3] += 4
        #expect(throws: STUNError.badAttribute(0x8028)) { try STUNMessage.parse(b.span) }
    }

    /// Seeded mutations of the vectors: every input parses or throws; what parses writes back
    /// to bytes that parse to the same message (round trip), and the checks never crash.
    @Test func seededFuzzRoundTrips() throws {
        var state: UInt64 = 0x57A7
        func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 11 }
        let seeds = [RFC5769.request, RFC5769.ipv4Response, RFC5769.ipv6Response, RFC5769.longTermRequest]
        var ok = 0, failed = 0
        for i in 0..<50_000 {
            var input = seeds[i % seeds.count]
            for _ in 0..<Int(1 + next() % 3) {
                let at = Int(next() % UInt64(input.count))
                input[at] = next() % 4 == 0 ? UInt8(truncatingIfNeeded: next()) : input[at] ^ UInt8(1 << (next() % 8))
            }
            _ = STUNMessage.verifyFingerprint(input)
            _ = STUNMessage.verifyIntegrity(input, key: RFC5769.password, hmacSHA1: hmac)
            guard let m = try? STUNMessage.parse(input.span) else { failed += 1; continue }
            ok += 1
            let written = try m.encode()
            let again = try STUNMessage.parse(written.span)
            #expect(again == m, "\(input)")
        }
        #expect(ok > 1_000 && failed > 1_000, "ok \(ok), failed \(failed)")
    }
}
