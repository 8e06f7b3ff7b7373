/// The SDP (RFC 8866) pubbot writes for what it sends and reads for `--sdp FILE`: one media
/// section per m-line, with SDES crypto (RFC 4568), extmap, rid/simulcast and ssrc attributes —
/// a typed view of an `SDPDocument`, which parses and renders the text.
public struct SessionDescription: Equatable, Sendable {
    public struct Crypto: Equatable, Sendable {
        public var tag: Int
        public var suite: String
        /// base64(key‖salt): a secret, only ever written into a file the user asked for.
        public var inlineKey: String
        public init(tag: Int = 1, suite: String, inlineKey: String) { self.tag = tag; self.suite = suite; self.inlineKey = inlineKey }
    }

    public struct Media: Equatable, Sendable {
        public var kind: SDPMediaKind
        public var port: Int
        public var payloadType: UInt8
        public var codec: String // "opus" | "VP8"
        public var clockRate: Int
        public var channels: Int?
        public var fmtp: String?
        public var mid: String
        public var rtcpMux: Bool
        public var crypto: Crypto?
        public var extensions: [(id: UInt8, uri: String)]
        public var ssrcs: [(ssrc: UInt32, cname: String)]
        public var rids: [String]
        public var direction: SDPDirection
        /// RTX (RFC 4588): its payload type (`apt` = `payloadType`) and (media SSRC, RTX SSRC) pairs.
        public var rtxPayloadType: UInt8?
        /// The RTX rtpmap's clock rate when it was read from text (written: this, else `clockRate`).
        var rtxClockRate: Int?
        public var rtxSSRCs: [(media: UInt32, rtx: UInt32)] = []

        public init(
            kind: SDPMediaKind, port: Int, payloadType: UInt8, codec: String, clockRate: Int, channels: Int? = nil, fmtp: String? = nil,
            mid: String, rtcpMux: Bool, crypto: Crypto?, extensions: [(id: UInt8, uri: String)] = [],
            ssrcs: [(ssrc: UInt32, cname: String)] = [],
            rids: [String] = [], direction: SDPDirection = .sendonly
        ) {
            self.kind = kind
            self.port = port
            self.payloadType = payloadType
            self.codec = codec
            self.clockRate = clockRate
            self.channels = channels
            self.fmtp = fmtp
            self.mid = mid
            self.rtcpMux = rtcpMux
            self.crypto = crypto
            self.extensions = extensions
            self.ssrcs = ssrcs
            self.rids = rids
            self.direction = direction
        }

        public static func == (a: Media, b: Media) -> Bool {
            a.kind == b.kind && a.port == b.port && a.payloadType == b.payloadType && a.codec == b.codec && a.clockRate == b.clockRate
                && a.channels == b.channels && a.fmtp == b.fmtp && a.mid == b.mid && a.rtcpMux == b.rtcpMux && a.crypto == b.crypto
                && a.extensions.map(\.id) == b.extensions.map(\.id) && a.extensions.map(\.uri) == b.extensions.map(\.uri)
                && a.ssrcs.map(\.ssrc) == b.ssrcs.map(\.ssrc) && a.ssrcs.map(\.cname) == b.ssrcs.map(\.cname)
                && a.rids == b.rids && a.direction == b.direction && a.rtxPayloadType == b.rtxPayloadType
                && a.rtxClockRate == b.rtxClockRate
                && a.rtxSSRCs.map(\.media) == b.rtxSSRCs.map(\.media) && a.rtxSSRCs.map(\.rtx) == b.rtxSSRCs.map(\.rtx)
        }
    }

    public var sessionID: UInt64
    public var address: String
    public var bundle: Bool
    public var media: [Media]

    public init(sessionID: UInt64, address: String, bundle: Bool, media: [Media]) {
        self.sessionID = sessionID
        self.address = address
        self.bundle = bundle
        self.media = media
    }

    var addressType: String { address.contains(":") ? "IP6" : "IP4" }

    /// The SDP text (CRLF line ends).
    public func render() -> String { document().render() }

    /// The document this description renders to.
    public func document() -> SDPDocument {
        let connection = "IN \(addressType) \(address)"
        var doc = SDPDocument(
            sessionLines: [
                .init("v", "0"), .init("o", "- \(sessionID) 1 \(connection)"), .init("s", "pubbot"), .init("c", connection),
                .init("t", "0 0")
            ],
            sessionAttributes: bundle ? [.init("group", "BUNDLE " + media.map(\.mid).joined(separator: " "))] : [],
            media: [])
        for m in media {
            var a: [SDPDocument.Attribute] = [.init(line: "c", connection)]
            if !m.rtcpMux { a.append(.init("rtcp", "\(m.port + 1)")) }
            a += [.init("mid", m.mid), .init(m.direction.rawValue)]
            if m.rtcpMux { a.append(.init("rtcp-mux")) }
            // A description read without an rtpmap for its payload type (static types need none,
            // RFC 3551 §6) is written back without one.
            if !m.codec.isEmpty {
                a.append(.init("rtpmap", "\(m.payloadType) \(m.codec)/\(m.clockRate)" + (m.channels.map { "/\($0)" } ?? "")))
            }
            if let f = m.fmtp { a.append(.init("fmtp", "\(m.payloadType) \(f)")) }
            if let rtx = m.rtxPayloadType {
                a += [.init("rtpmap", "\(rtx) rtx/\(m.rtxClockRate ?? m.clockRate)"), .init("fmtp", "\(rtx) apt=\(m.payloadType)")]
            }
            if m.kind == .video {
                for fb in ["nack", "nack pli", "ccm fir", "transport-cc"] { a.append(.init("rtcp-fb", "\(m.payloadType) \(fb)")) }
            }
            a += m.extensions.map { .init("extmap", "\($0.id) \($0.uri)") }
            if let c = m.crypto { a.append(.init("crypto", "\(c.tag) \(c.suite) inline:\(c.inlineKey)")) }
            a += m.rids.map { .init("rid", "\($0) send") }
            if !m.rids.isEmpty { a.append(.init("simulcast", "send " + m.rids.joined(separator: ";"))) }
            a += m.rtxSSRCs.map { .init("ssrc-group", "FID \($0.media) \($0.rtx)") }
            a += m.ssrcs.map { .init("ssrc", "\($0.ssrc) cname:\($0.cname)") }
            a += m.rtxSSRCs.map { .init("ssrc", "\($0.rtx) cname:\(m.ssrcs.first?.cname ?? "pubbot")") }
            let formats = ["\(m.payloadType)"] + (m.rtxPayloadType.map { ["\($0)"] } ?? [])
            doc.media.append(.init(kind: m.kind, port: m.port, proto: "RTP/SAVPF", formats: formats, attributes: a))
        }
        return doc
    }

    /// Parses the subset pubbot writes (and what common tools write for the same streams).
    public static func parse(_ text: String) throws(SDPDocument.ParseError) -> SessionDescription {
        try SessionDescription(try SDPDocument.parse(text))
    }

    /// The description a parsed document holds; the line an error names is the document's.
    public init(_ doc: SDPDocument) throws(SDPDocument.ParseError) {
        self.init(sessionID: 0, address: "", bundle: false, media: [])
        for l in doc.sessionLines { try apply(l.type, l.value, line: l.lineNumber, inMedia: false) }
        if doc.sessionAttributes.contains(where: { $0.name == "group" && ($0.value ?? "").hasPrefix("BUNDLE") }) { bundle = true }
        for section in doc.media {
            guard let first = section.formats.first, let pt = UInt8(first), pt < 128 else {
                throw SDPDocument.ParseError(line: section.lineNumber, reason: "bad m= line")
            }
            var m = Media(
                kind: section.kind, port: section.port, payloadType: pt, codec: "", clockRate: 0, mid: String(media.count),
                rtcpMux: false, crypto: nil, direction: .sendrecv)
            for a in section.attributes {
                if let type = a.lineType {
                    try apply(type, a.value ?? "", line: a.lineNumber, inMedia: true)
                } else if a.name == "group", (a.value ?? "").hasPrefix("BUNDLE") {
                    bundle = true
                } else {
                    try Self.apply(attribute: a.name, a.value ?? "", to: &m, line: a.lineNumber)
                }
            }
            // An RTX SSRC's own `a=ssrc` line is not a media stream, whichever line came first
            // (RFC 5576 §4.2: the group names them, the order of the lines does not).
            m.ssrcs.removeAll { s in m.rtxSSRCs.contains { $0.rtx == s.ssrc } }
            media.append(m)
        }
        guard !media.isEmpty else { throw SDPDocument.ParseError(line: doc.lineCount, reason: "no m= line") }
        // RFC 8866 §5.2, §5.7: the origin and a connection address are required.
        guard !address.isEmpty else { throw SDPDocument.ParseError(line: doc.lineCount, reason: "no address (o= or c= line)") }
    }

    /// A v=, o= or c= line (others are not part of this view).
    mutating func apply(_ type: Character, _ value: String, line no: Int, inMedia: Bool) throws(SDPDocument.ParseError) {
        switch type {
        case "v": guard value == "0" else { throw SDPDocument.ParseError(line: no, reason: "unsupported version") }
        case "o":
            let f = value.split(separator: " ")
            guard f.count >= 6 else { throw SDPDocument.ParseError(line: no, reason: "bad o= line") }
            sessionID = UInt64(f[1]) ?? 0
            guard Self.isAddress(f[5]) else { throw SDPDocument.ParseError(line: no, reason: "bad address in o= line") }
            if address.isEmpty { address = String(f[5]) }
        case "c":
            let f = value.split(separator: " ")
            guard f.count >= 3 else { throw SDPDocument.ParseError(line: no, reason: "bad c= line") }
            // A multicast address may carry /ttl (RFC 8866 §5.7); the address is before it.
            let addr = String(f[2].split(separator: "/", omittingEmptySubsequences: false)[0])
            guard Self.isAddress(addr[...]) else { throw SDPDocument.ParseError(line: no, reason: "bad address in c= line") }
            // The session's connection line is the address; a section's counts only when there is none.
            if !inMedia || address.isEmpty { address = addr }
        default: break
        }
    }

    /// One media-level attribute (`a=name:arg`) into `m`.
    static func apply(attribute name: String, _ arg: String, to m: inout Media, line no: Int) throws(SDPDocument.ParseError) {
        typealias ParseError = SDPDocument.ParseError
        switch name {
        case "mid": m.mid = arg
        case "rtcp-mux": m.rtcpMux = true
        case "sendonly", "recvonly", "sendrecv", "inactive": m.direction = SDPDirection(rawValue: name) ?? .sendrecv
        case "rtpmap":
            let parts = arg.split(separator: " ")
            guard parts.count == 2 else { throw ParseError(line: no, reason: "bad rtpmap") }
            let enc = parts[1].split(separator: "/")
            guard enc.count >= 2, let rate = Int(enc[1]), rate > 0 else { throw ParseError(line: no, reason: "bad rtpmap") }
            if enc[0].lowercased() == "rtx", let pt = UInt8(parts[0]) {
                guard pt != m.payloadType else { throw ParseError(line: no, reason: "the RTX payload type is the media's own") }
                m.rtxPayloadType = pt
                m.rtxClockRate = rate
            } else if UInt8(parts[0]) == m.payloadType {
                m.codec = String(enc[0])
                m.clockRate = rate
                m.channels = enc.count > 2 ? Int(enc[2]) : nil
            }
        case "fmtp":
            // The media format's own parameters (the RTX format's `apt=` line is not them).
            if let sp = arg.firstIndex(of: " "), UInt8(arg[..<sp]) == m.payloadType {
                m.fmtp = String(arg[arg.index(after: sp)...])
            }
        case "extmap":
            let parts = arg.split(separator: " ")
            guard parts.count >= 2, let id = SDPDocument.extmapID(parts[0]), let id8 = UInt8(exactly: id) else {
                throw ParseError(line: no, reason: "bad extmap")
            }
            m.extensions.append((id8, String(parts[1])))
        case "crypto":
            let parts = arg.split(separator: " ")
            guard parts.count >= 3, let tag = Int(parts[0]), parts[2].hasPrefix("inline:") else {
                throw ParseError(line: no, reason: "bad crypto")
            }
            let key = parts[2].dropFirst("inline:".count).split(separator: "|").first ?? ""
            if m.crypto == nil { m.crypto = Crypto(tag: tag, suite: String(parts[1]), inlineKey: String(key)) }
        case "rid":
            if let r = arg.split(separator: " ").first { m.rids.append(String(r)) }
        case "ssrc":
            let parts = arg.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let ssrc = UInt32(parts[0]) else { throw ParseError(line: no, reason: "bad ssrc") }
            if parts[1].hasPrefix("cname:") { m.ssrcs.append((ssrc, String(parts[1].dropFirst(6)))) }
        case "ssrc-group":
            let parts = arg.split(separator: " ")
            if parts.count == 3, parts[0] == "FID", let a = UInt32(parts[1]), let b = UInt32(parts[2]) { m.rtxSSRCs.append((a, b)) }
        default: break
        }
    }

    /// An IPv4 or IPv6 address or a host name (RFC 8866 §9: unicast-address, FQDN).
    static func isAddress(_ a: Substring) -> Bool {
        !a.isEmpty
            && a.unicodeScalars.allSatisfy {
                ("0"..."9").contains($0) || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || $0 == "." || $0 == ":" || $0 == "-"
            }
    }
}
