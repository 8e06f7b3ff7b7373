import CSRTP
import Foundation
import SRTP
import Testing
import Transport

/// pubbot's SRTP (RFC 3711, RFC 7714 on OpenSSL) judged by libsrtp2, the implementation
/// libwebrtc ships: byte for byte the same protected packets, and each opens what the other
/// protects — across header shapes, payload sizes, SSRCs and a sequence-number wrap.
@Suite struct SRTPAgainstLibsrtpTests {
    static let initialized: Bool = srtp_init() == srtp_err_status_ok

    /// A libsrtp2 session of the same policy pubbot's used to have (wildcard SSRC, window 1024).
    final class Reference {
        var session: srtp_t?
        init(_ key: SRTPKey, inbound: Bool) throws {
            try #require(SRTPAgainstLibsrtpTests.initialized)
            var s: srtp_t?
            let st = key.withMaterial { csrtp_create(&s, key.suite == .gcm ? 1 : 0, inbound ? 1 : 0, $0.baseAddress, 1024) }
            try #require(st == srtp_err_status_ok)
            session = s
        }
        deinit { srtp_dealloc(session) }

        func apply(_ bytes: [UInt8], rtcp: Bool, protect: Bool) -> [UInt8]? {
            var buf = bytes + [UInt8](repeating: 0, count: 200)
            var len = Int32(bytes.count)
            let st = buf.withUnsafeMutableBytes { b in
                switch (rtcp, protect) {
                case (false, true): srtp_protect(session, b.baseAddress, &len)
                case (false, false): srtp_unprotect(session, b.baseAddress, &len)
                case (true, true): srtp_protect_rtcp(session, b.baseAddress, &len)
                case (true, false): srtp_unprotect_rtcp(session, b.baseAddress, &len)
                }
            }
            return st == srtp_err_status_ok ? Array(buf[0..<Int(len)]) : nil
        }
    }

    func mine(_ s: SRTPSession, _ bytes: [UInt8], rtcp: Bool, protect: Bool) throws -> [UInt8] {
        var buf = bytes + [UInt8](repeating: 0, count: 64)
        let n = try buf.withUnsafeMutableBytes { b in
            switch (rtcp, protect) {
            case (false, true): try s.protectRTP(b.baseAddress!, length: bytes.count, capacity: b.count)
            case (false, false): try s.unprotectRTP(b.baseAddress!, length: bytes.count)
            case (true, true): try s.protectRTCP(b.baseAddress!, length: bytes.count, capacity: b.count)
            case (true, false): try s.unprotectRTCP(b.baseAddress!, length: bytes.count)
            }
        }
        return Array(buf[0..<n])
    }

    /// An RTP packet: `csrcs` CSRCs, an extension of `extWords` words when not nil, `payload` bytes.
    static func rtp(ssrc: UInt32, seq: UInt16, csrcs: Int = 0, extWords: Int? = nil, payload: Int, fill: UInt8 = 0x5A) -> [UInt8] {
        var p: [UInt8] = [0x80 | UInt8(csrcs) | (extWords == nil ? 0 : 0x10), 96, UInt8(seq >> 8), UInt8(seq & 0xFF)]
        p += [0, 1, 0x5F, 0x90].map { $0 &+ UInt8(truncatingIfNeeded: seq) }
        p += withUnsafeBytes(of: ssrc.bigEndian, Array.init)
        for c in 0..<csrcs { p += [0, 0, 0, UInt8(c + 1)] }
        if let w = extWords {
            p += [0xBE, 0xDE, 0, UInt8(w)] + (0..<(4 * w)).map { UInt8($0 & 0xFF) }
        }
        return p + (0..<payload).map { UInt8(truncatingIfNeeded: $0) ^ fill }
    }

    /// A receiver report of `ssrc` with `blocks` report blocks.
    static func rtcp(ssrc: UInt32, blocks: Int) -> [UInt8] {
        var p: [UInt8] = [0x80 | UInt8(blocks), 201, 0, UInt8(1 + 6 * blocks)]
        p += withUnsafeBytes(of: ssrc.bigEndian, Array.init)
        for b in 0..<(blocks * 24) { p.append(UInt8(b & 0xFF)) }
        return p
    }

    @Test(arguments: SRTPSuite.allCases)
    func sameBytesAsLibsrtp2AndEachOpensTheOthers(_ suite: SRTPSuite) throws {
        let key = SRTPKey.random(suite: suite)
        let ref = try Reference(key, inbound: false), refIn = try Reference(key, inbound: true)
        let out = try SRTPSession(key: key, direction: .outbound), inb = try SRTPSession(key: key, direction: .inbound)
        var packets: [[UInt8]] = []
        // Two SSRCs; the first wraps its sequence number (ROC 0 → 1); every header shape.
        for i in 0..<300 {
            let seq = UInt16(truncatingIfNeeded: 65_400 + i)
            packets.append(
                Self.rtp(
                    ssrc: 0x1234_5678, seq: seq, csrcs: i % 3, extWords: i % 4 == 0 ? nil : i % 4,
                    payload: [0, 1, 15, 16, 17, 160, 1200][i % 7]))
            packets.append(Self.rtp(ssrc: 0xCAFE_F00D, seq: UInt16(i * 3), payload: 100 + i))
        }
        for p in packets {
            let theirs = try #require(ref.apply(p, rtcp: false, protect: true))
            let ours = try mine(out, p, rtcp: false, protect: true)
            #expect(ours == theirs, "seq \(p[2]) \(p[3]), \(p.count) bytes")
            #expect(refIn.apply(ours, rtcp: false, protect: false) == p)
            #expect(try mine(inb, theirs, rtcp: false, protect: false) == p)
        }
        for i in 0..<40 {
            let p = Self.rtcp(ssrc: i % 2 == 0 ? 0x1111 : 0x2222, blocks: i % 4)
            let theirs = try #require(ref.apply(p, rtcp: true, protect: true))
            let ours = try mine(out, p, rtcp: true, protect: true)
            #expect(ours == theirs, "RTCP \(i)")
            #expect(refIn.apply(ours, rtcp: true, protect: false) == p)
            #expect(try mine(inb, theirs, rtcp: true, protect: false) == p)
        }
    }

    @Test(arguments: SRTPSuite.allCases)
    func replaysTamperingAndShortPacketsAreRefused(_ suite: SRTPSuite) throws {
        let key = SRTPKey.random(suite: suite)
        let out = try SRTPSession(key: key, direction: .outbound), inb = try SRTPSession(key: key, direction: .inbound)
        var sealed: [[UInt8]] = []
        for seq in 0..<1200 { sealed.append(try mine(out, Self.rtp(ssrc: 7, seq: UInt16(seq), payload: 50), rtcp: false, protect: true)) }
        #expect(try mine(inb, sealed[1199], rtcp: false, protect: false).count == 62)
        #expect(throws: SRTPError.replayed) { try mine(inb, sealed[1199], rtcp: false, protect: false) }
        // 1 024 behind the newest is outside the window; 1 023 behind is inside and new.
        #expect(throws: SRTPError.tooOld) { try mine(inb, sealed[175], rtcp: false, protect: false) }
        #expect(try mine(inb, sealed[176], rtcp: false, protect: false).count == 62)
        // A flipped bit anywhere: refused, and the buffer is left as it came.
        for at in [1, 5, 12, 40, sealed[500].count - 1] {
            var bad = sealed[500]
            bad[at] ^= 0x04
            var buf = bad
            #expect(throws: SRTPError.authenticationFailed) {
                _ = try buf.withUnsafeMutableBytes { b in try inb.unprotectRTP(b.baseAddress!, length: b.count) }
            }
            #expect(buf == bad)
        }
        // RTCP: a replay, and a wrong key.
        let r = try mine(out, Self.rtcp(ssrc: 9, blocks: 1), rtcp: true, protect: true)
        #expect(try mine(inb, r, rtcp: true, protect: false) == Self.rtcp(ssrc: 9, blocks: 1))
        #expect(throws: SRTPError.replayed) { try mine(inb, r, rtcp: true, protect: false) }
        let other = try SRTPSession(key: SRTPKey.random(suite: suite), direction: .inbound)
        #expect(throws: SRTPError.authenticationFailed) { try mine(other, sealed[3], rtcp: false, protect: false) }
        for n in [0, 5, 11, 12 + SRTPSession.tagLength(suite) - 1] {
            #expect(throws: SRTPError.malformed) { try mine(inb, Array(sealed[4].prefix(n)), rtcp: false, protect: false) }
        }
        // A header whose extension claims more than the packet holds.
        var lying = Self.rtp(ssrc: 7, seq: 5000, extWords: 1, payload: 40)
        lying[14] = 0xFF
        #expect(throws: SRTPError.malformed) { try mine(out, lying, rtcp: false, protect: true) }
    }

    /// Whatever bytes arrive, unprotecting returns or throws (the receivers feed it peer bytes).
    @Test(arguments: SRTPSuite.allCases)
    func randomBytesNeverTrap(_ suite: SRTPSuite) throws {
        let inb = try SRTPSession(key: SRTPKey.random(suite: suite), direction: .inbound)
        var rng = SystemRandomNumberGenerator()
        var refused = 0
        for i in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0..<300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if i % 2 == 0, bytes.count > 0 { bytes[0] = 0x80 | (bytes[0] & 0x3F) }
            do { _ = try mine(inb, bytes, rtcp: i % 3 == 0, protect: false) } catch { refused += 1 }
        }
        #expect(refused == 20_000)
    }
}
