internal import COpenSSL

/// Why a packet was refused.
public enum SRTPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The authentication tag did not verify: wrong key, or tampered/garbage bytes.
    case authenticationFailed
    /// The packet index was already seen (replay protection).
    case replayed
    /// The packet index is older than the replay window.
    case tooOld
    /// The packet is too short or otherwise malformed for SRTP.
    case malformed
    /// A cryptographic call failed, with the operation.
    case failed(operation: String, code: Int32)

    public var description: String {
        switch self {
        case .authenticationFailed: "SRTP authentication failed (wrong key?)"
        case .replayed: "SRTP replay rejected"
        case .tooOld: "SRTP packet older than the replay window"
        case .malformed: "malformed SRTP packet"
        case let .failed(op, code): "\(op) failed (status \(code))"
        }
    }
}

/// One direction of SRTP + SRTCP protection for every SSRC, protecting and unprotecting in
/// place: AES_CM_128_HMAC_SHA1_80 (RFC 3711 §4) and AEAD_AES_128_GCM (RFC 7714). The packet
/// transforms, the key derivation and the replay lists are here; every cipher and MAC is
/// OpenSSL's libcrypto (AES-CTR, AES-GCM, HMAC-SHA1), one context per session key set up once
/// and given only a new IV per packet. (Debian's libsrtp2 is built on NSS, which opens a
/// cipher context per packet: about 10 µs a 1200-byte packet with AES-CM against well under
/// one here — `pubbot-bench srtp` measures both.) Streams are the SSRCs seen, each with its
/// own rollover counter and replay list; keys are shared, as one wildcard policy in libsrtp2.
/// Owned by one thread.
public final class SRTPSession {
    public enum Direction: Sendable { case outbound, inbound }

    public let suite: SRTPSuite
    public let direction: Direction

    /// The authentication tag SRTP appends to each packet of a suite.
    public static func tagLength(_ suite: SRTPSuite) -> Int { suite == .gcm ? 16 : 10 }

    /// Bytes SRTP may add after a packet (RTP: the tag; RTCP: index and tag, 20 with GCM);
    /// keep this much room after every packet.
    public static let maxTrailer = 20
    static let maxRTCPTrailer = 20

    let rtp: SessionKeys
    let rtcp: SessionKeys
    let replayWindow: Int
    var rtpStreams = SSRCTable<RTPStream>()
    var rtcpStreams = SSRCTable<RTCPStream>()
    /// Where an opened GCM payload is written before its tag is known to be good, so a refused
    /// packet is left as it came.
    let scratch = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 16)

    struct RTPStream {
        var index = RTPIndex()
        var window: ReplayWindow?

        /// The index `seq` stands for, if the replay list lets it in (RFC 3711 §3.3.2).
        func admit(_ seq: UInt16) throws(SRTPError) -> Int64 {
            let index = self.index.estimate(seq).index
            try window?.admit(index)
            return index
        }

        /// Records an authenticated packet's index.
        mutating func accept(_ index: Int64, window size: Int) {
            if window == nil { window = ReplayWindow(size: size) }
            window!.add(index)
            self.index.advance(to: index)
        }
    }

    struct RTCPStream {
        /// Outbound: the last SRTCP index sent. Inbound: the replay list of indices received.
        var sent: UInt32 = 0
        var window: ReplayWindow?

        /// Records an authenticated SRTCP index (libsrtp2 `rdb.c` keeps 128).
        mutating func accept(_ index: Int64) {
            if window == nil { window = ReplayWindow(size: 128) }
            window!.add(index)
        }
    }

    /// - Parameter replayWindow: RTP packets remembered per stream for replay protection
    ///   (rounded up to a power of two; SRTCP keeps 128, as libsrtp2's `rdb.c`).
    public init(key: SRTPKey, direction: Direction, replayWindow: Int = 1024) throws(SRTPError) {
        suite = key.suite
        self.direction = direction
        self.replayWindow = max(64, min(replayWindow, 32768))
        let (rtp, rtcp) = try key.material.withUnsafeBufferPointer { m throws(SRTPError) in
            try (SessionKeys(suite: key.suite, master: m, rtcp: false), SessionKeys(suite: key.suite, master: m, rtcp: true))
        }
        self.rtp = rtp
        self.rtcp = rtcp
    }

    deinit { scratch.deallocate() }

    // MARK: RTP

    /// The RTP header's length (fixed part, CSRCs, extension), or nil when it does not fit.
    @inline(__always)
    static func headerLength(_ p: UnsafeMutableRawPointer, length: Int) -> Int? {
        guard length >= 12 else { return nil }
        let b0 = p.load(as: UInt8.self)
        guard b0 >> 6 == 2 else { return nil }
        var h = 12 + 4 * Int(b0 & 0x0F)
        if b0 & 0x10 != 0 {
            guard length >= h + 4 else { return nil }
            h += 4 + 4 * Int(UInt16(bigEndian: p.loadUnaligned(fromByteOffset: h + 2, as: UInt16.self)))
        }
        return h <= length ? h : nil
    }

    /// Protects the RTP packet of `length` bytes at `packet` in place; `capacity` must leave
    /// `maxTrailer` bytes of room. Returns the protected length.
    @inline(__always)
    public func protectRTP(_ packet: UnsafeMutableRawPointer, length: Int, capacity: Int) throws(SRTPError) -> Int {
        guard capacity - length >= Self.maxTrailer, let h = Self.headerLength(packet, length: length) else { throw .malformed }
        let ssrc = UInt32(bigEndian: packet.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        let seq = UInt16(bigEndian: packet.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        // The sender keeps the index as the receiver will estimate it (RFC 3711 §3.3.1); a
        // retransmission with the same sequence number gets the same index, so the same bytes.
        // In place (the array's modify accessor): a stream copied out and back would share its
        // storage with the copy, and the write would copy it.
        let at = rtpStreams.position(of: ssrc, adding: { RTPStream() })
        let index = rtpStreams.values[at].index.advance(estimating: seq)
        let roc = UInt32(truncatingIfNeeded: index >> 16)
        switch suite {
        case .gcm:
            var iv = rtp.gcmIV(ssrc: ssrc, a: roc, b: UInt32(seq))
            let ok = withUnsafeBytes(of: &iv) { v in
                copenssl_gcm_seal(
                    rtp.cipher, v.baseAddress, packet, Int32(h), nil, 0, packet + h, Int32(length - h), packet + length)
            }
            guard ok == 1 else { throw .failed(operation: "AES-GCM seal", code: ok) }
            return length + 16
        case .aesCm:
            var iv = rtp.ctrIV(ssrc: ssrc, index: index)
            let ok = withUnsafeBytes(of: &iv) { v in copenssl_ctr_xor(rtp.cipher, v.baseAddress, packet + h, Int32(length - h)) }
            guard ok == 1 else { throw .failed(operation: "AES-CTR", code: ok) }
            try rtp.authenticate(packet, length: length, roc: roc, tag: packet + length)
            return length + 10
        }
    }

    /// Unprotects an SRTP packet in place; returns the plain length. A refused packet's bytes
    /// are left as they came.
    @inline(__always)
    public func unprotectRTP(_ packet: UnsafeMutableRawPointer, length: Int) throws(SRTPError) -> Int {
        let tag = suite == .gcm ? 16 : 10
        guard length >= 12 + tag, let h = Self.headerLength(packet, length: length - tag) else { throw .malformed }
        let ssrc = UInt32(bigEndian: packet.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        let seq = UInt16(bigEndian: packet.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        // One lookup for the check and the record: the stream is only added (after the tag
        // verified) when it is new.
        let at = rtpStreams.position(of: ssrc)
        let index = try at.map { i throws(SRTPError) in try rtpStreams.values[i].admit(seq) } ?? RTPIndex().estimate(seq).index
        let roc = UInt32(truncatingIfNeeded: index >> 16)
        let body = length - tag - h
        switch suite {
        case .gcm:
            var iv = rtp.gcmIV(ssrc: ssrc, a: roc, b: UInt32(seq))
            try open(
                rtp, iv: &iv, aad: packet, aadLength: h, aad2: nil, aad2Length: 0, data: packet + h, length: body, tag: packet + h + body)
        case .aesCm:
            try rtp.verify(packet, length: length - tag, roc: roc, tag: packet + length - tag)
            var iv = rtp.ctrIV(ssrc: ssrc, index: index)
            let ok = withUnsafeBytes(of: &iv) { v in copenssl_ctr_xor(rtp.cipher, v.baseAddress, packet + h, Int32(body)) }
            guard ok == 1 else { throw .failed(operation: "AES-CTR", code: ok) }
        }
        // Recorded in place: a copy out and back would copy the replay list's words per packet.
        rtpStreams.values[at ?? rtpStreams.position(of: ssrc, adding: { RTPStream() })].accept(index, window: replayWindow)
        return length - tag
    }

    // MARK: RTCP

    public func protectRTCP(_ packet: UnsafeMutableRawPointer, length: Int, capacity: Int) throws(SRTPError) -> Int {
        guard capacity - length >= Self.maxRTCPTrailer, length >= 8 else { throw .malformed }
        let ssrc = UInt32(bigEndian: packet.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        // The SRTCP index counts this SSRC's compound packets, 31 bits (RFC 3711 §3.4).
        let at = rtcpStreams.position(of: ssrc, adding: { RTCPStream() })
        let index = rtcpStreams.values[at].sent &+ 1
        guard index <= 0x7FFF_FFFF else { throw .failed(operation: "SRTCP index", code: -1) }
        rtcpStreams.values[at].sent = index
        var trailer = (index | 0x8000_0000).bigEndian // E: encrypted
        switch suite {
        case .gcm:
            // RFC 7714 §9.1: header ‖ ciphertext ‖ tag ‖ E‖index; the AAD is the first 8 bytes and E‖index.
            var iv = rtcp.gcmIV(ssrc: ssrc, a: index >> 16, b: index & 0xFFFF)
            let ok = withUnsafeBytes(of: &iv) { v in
                withUnsafeBytes(of: &trailer) { t in
                    copenssl_gcm_seal(
                        rtcp.cipher, v.baseAddress, packet, 8, t.baseAddress, 4, packet + 8, Int32(length - 8), packet + length)
                }
            }
            guard ok == 1 else { throw .failed(operation: "AES-GCM seal", code: ok) }
            packet.storeBytes(of: trailer, toByteOffset: length + 16, as: UInt32.self)
            return length + 20
        case .aesCm:
            // RFC 3711 §3.4: header ‖ encrypted ‖ E‖index ‖ tag over all before it.
            var iv = rtcp.ctrIV(ssrc: ssrc, index: Int64(index))
            let ok = withUnsafeBytes(of: &iv) { v in copenssl_ctr_xor(rtcp.cipher, v.baseAddress, packet + 8, Int32(length - 8)) }
            guard ok == 1 else { throw .failed(operation: "AES-CTR", code: ok) }
            packet.storeBytes(of: trailer, toByteOffset: length, as: UInt32.self)
            try rtcp.authenticate(packet, length: length + 4, roc: nil, tag: packet + length + 4)
            return length + 14
        }
    }

    public func unprotectRTCP(_ packet: UnsafeMutableRawPointer, length: Int) throws(SRTPError) -> Int {
        let tag = suite == .gcm ? 16 : 10
        guard length >= 8 + 4 + tag else { throw .malformed }
        let ssrc = UInt32(bigEndian: packet.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        let trailerAt = suite == .gcm ? length - 4 : length - 4 - tag
        let trailer = UInt32(bigEndian: packet.loadUnaligned(fromByteOffset: trailerAt, as: UInt32.self))
        let encrypted = trailer & 0x8000_0000 != 0
        let index = trailer & 0x7FFF_FFFF
        let at = rtcpStreams.position(of: ssrc)
        if let at { try rtcpStreams.values[at].window?.admit(Int64(index)) }
        let plain: Int
        switch suite {
        case .gcm:
            plain = length - 20
            var iv = rtcp.gcmIV(ssrc: ssrc, a: index >> 16, b: index & 0xFFFF)
            let aadLength = encrypted ? 8 : plain
            try open(
                rtcp, iv: &iv, aad: packet, aadLength: aadLength, aad2: packet + trailerAt, aad2Length: 4, data: packet + aadLength,
                length: plain - aadLength, tag: packet + plain)
        case .aesCm:
            plain = length - 14
            try rtcp.verify(packet, length: length - tag, roc: nil, tag: packet + length - tag)
            if encrypted {
                var iv = rtcp.ctrIV(ssrc: ssrc, index: Int64(index))
                let ok = withUnsafeBytes(of: &iv) { v in copenssl_ctr_xor(rtcp.cipher, v.baseAddress, packet + 8, Int32(plain - 8)) }
                guard ok == 1 else { throw .failed(operation: "AES-CTR", code: ok) }
            }
        }
        rtcpStreams.values[at ?? rtcpStreams.position(of: ssrc, adding: { RTCPStream() })].accept(Int64(index))
        return plain
    }

    /// Forgets the stream of `ssrc` (its rollover counter and replay lists): a receiver that
    /// hands a publisher a session of its own drops what its first packet made in the shared one.
    public func removeStream(ssrc: UInt32) {
        rtpStreams.remove(ssrc)
        rtcpStreams.remove(ssrc)
    }

    /// Opens a GCM payload through the scratch buffer (or one of its own when larger), copying
    /// it back only when the tag verified.
    @inline(__always)
    func open(
        _ keys: SessionKeys, iv: inout GCMIV, aad: UnsafeMutableRawPointer, aadLength: Int, aad2: UnsafeMutableRawPointer?, aad2Length: Int,
        data: UnsafeMutableRawPointer, length: Int, tag: UnsafeMutableRawPointer
    ) throws(SRTPError) {
        let out = length <= 2048 ? scratch : UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 16)
        defer { if out != scratch { out.deallocate() } }
        let ok = withUnsafeBytes(of: &iv) { v in
            copenssl_gcm_open(
                keys.openCipher, v.baseAddress, aad, Int32(aadLength),
                aad2, Int32(aad2Length), data, Int32(length), tag, out)
        }
        guard ok == 1 else { throw .authenticationFailed }
        data.copyMemory(from: out, byteCount: length)
    }
}

/// A GCM IV (12 bytes) or an AES-CM IV (16 bytes), built on the stack.
typealias GCMIV = (UInt32, UInt32, UInt32)
typealias CTRIV = (UInt32, UInt32, UInt32, UInt32)

/// The session keys of RTP or of RTCP (RFC 3711 §4.3: encryption key, salt and, for AES-CM,
/// the authentication key), held as OpenSSL contexts.
final class SessionKeys {
    let cipher: OpaquePointer
    /// GCM: the context that opens (OpenSSL keeps the direction in the context).
    let openCipher: OpaquePointer?
    let mac: OpaquePointer?
    /// The session salt in network order (14 bytes for AES-CM, 12 for GCM), zero-padded to 16.
    let salt: CTRIV

    init(suite: SRTPSuite, master: UnsafeBufferPointer<UInt8>, rtcp: Bool) throws(SRTPError) {
        let base: UInt8 = rtcp ? 3 : 0
        let saltLength = suite == .gcm ? 12 : 14
        let encKey = try Self.derive(master, label: base, count: 16)
        var s = try Self.derive(master, label: base + 2, count: saltLength) + [UInt8](repeating: 0, count: 16 - saltLength)
        salt = s.withUnsafeBytes { $0.loadUnaligned(as: CTRIV.self) }
        for i in s.indices { s[i] = 0 }
        let made: (OpaquePointer?, OpaquePointer?) = encKey.withUnsafeBufferPointer { k in
            suite == .gcm
                ? (copenssl_aes128_new(1, k.baseAddress), copenssl_aes128_new(2, k.baseAddress))
                : (copenssl_aes128_new(0, k.baseAddress), nil)
        }
        guard let c = made.0, suite == .aesCm || made.1 != nil else { throw .failed(operation: "AES key setup", code: 0) }
        cipher = c
        openCipher = made.1
        if suite == .aesCm {
            let authKey = try Self.derive(master, label: base + 1, count: 20)
            guard let m = authKey.withUnsafeBufferPointer({ copenssl_hmac_sha1_new($0.baseAddress, 20) }) else {
                throw .failed(operation: "HMAC-SHA1 key setup", code: 0)
            }
            mac = m
        } else {
            mac = nil
        }
    }

    deinit {
        copenssl_cipher_free(cipher)
        if let openCipher { copenssl_cipher_free(openCipher) }
        if let mac { copenssl_hmac_free(mac) }
    }

    /// The AES-CM key derivation (RFC 3711 §4.3.1 and §4.3.3, key derivation rate 0): the
    /// keystream of AES-CTR under the master key from IV = (master salt XOR label << 48) · 2^16.
    /// A GCM master salt is 12 bytes, taken as zero-padded to 14 (RFC 7714 §11, libsrtp2 `srtp.c`
    /// `srtp_stream_init_keys`).
    static func derive(_ master: UnsafeBufferPointer<UInt8>, label: UInt8, count: Int) throws(SRTPError) -> [UInt8] {
        var iv = [UInt8](repeating: 0, count: 16)
        for i in 16..<master.count { iv[i - 16] = master[i] }
        iv[7] ^= label
        var out = [UInt8](repeating: 0, count: count)
        guard let ctx = copenssl_aes128_new(0, master.baseAddress) else { throw .failed(operation: "AES key setup", code: 0) }
        defer { copenssl_cipher_free(ctx) }
        let ok = iv.withUnsafeBufferPointer { v in
            out.withUnsafeMutableBufferPointer { copenssl_ctr_xor(ctx, v.baseAddress, $0.baseAddress, Int32(count)) }
        }
        guard ok == 1 else { throw .failed(operation: "SRTP key derivation", code: ok) }
        return out
    }

    /// AES-CM's IV (RFC 3711 §4.1.1): salt · 2^16 XOR SSRC · 2^64 XOR index · 2^16.
    @inline(__always)
    func ctrIV(ssrc: UInt32, index: Int64) -> CTRIV {
        let i = UInt64(index) << 16
        return (
            salt.0, salt.1 ^ ssrc.bigEndian, salt.2 ^ UInt32(truncatingIfNeeded: i >> 32).bigEndian,
            salt.3 ^ UInt32(truncatingIfNeeded: i).bigEndian
        )
    }

    /// GCM's IV (RFC 7714 §8.1, §9.1): the 12 bytes 0x0000 ‖ SSRC ‖ `a` ‖ `b` XOR the salt —
    /// for RTP `a` is the ROC and `b` the sequence number, for RTCP `a` ‖ `b` is 0x0000 ‖ the
    /// 31-bit SRTCP index.
    @inline(__always)
    func gcmIV(ssrc: UInt32, a: UInt32, b: UInt32) -> GCMIV {
        let w0 = ssrc >> 16
        let w1 = (ssrc & 0xFFFF) << 16 | a >> 16
        let w2 = (a & 0xFFFF) << 16 | (b & 0xFFFF)
        return (salt.0 ^ w0.bigEndian, salt.1 ^ w1.bigEndian, salt.2 ^ w2.bigEndian)
    }

    /// Appends the 80-bit HMAC-SHA1 tag (RFC 3711 §4.2) of the packet (‖ ROC for RTP) at `tag`.
    @inline(__always)
    func authenticate(_ p: UnsafeMutableRawPointer, length: Int, roc: UInt32?, tag: UnsafeMutableRawPointer) throws(SRTPError) {
        var full = (UInt64(0), UInt64(0), UInt32(0))
        let ok = mac20(p, length: length, roc: roc, into: &full)
        guard ok else { throw .failed(operation: "HMAC-SHA1", code: 0) }
        withUnsafeBytes(of: &full) { tag.copyMemory(from: $0.baseAddress!, byteCount: 10) }
    }

    /// Checks the 80-bit tag at `tag` in constant time.
    @inline(__always)
    func verify(_ p: UnsafeMutableRawPointer, length: Int, roc: UInt32?, tag: UnsafeMutableRawPointer) throws(SRTPError) {
        var full = (UInt64(0), UInt64(0), UInt32(0))
        guard mac20(p, length: length, roc: roc, into: &full) else { throw .failed(operation: "HMAC-SHA1", code: 0) }
        let same = withUnsafeBytes(of: &full) { copenssl_memcmp($0.baseAddress, tag, 10) == 0 }
        guard same else { throw .authenticationFailed }
    }

    @inline(__always)
    func mac20(_ p: UnsafeMutableRawPointer, length: Int, roc: UInt32?, into full: inout (UInt64, UInt64, UInt32)) -> Bool {
        var r = (roc ?? 0).bigEndian
        return withUnsafeBytes(of: &r) { rb in
            withUnsafeMutableBytes(of: &full) { f in
                copenssl_hmac_sha1_two(
                    mac, p.assumingMemoryBound(to: UInt8.self), length, rb.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    roc == nil ? 0 : 4, f.baseAddress?.assumingMemoryBound(to: UInt8.self)) == 1
            }
        }
    }
}
