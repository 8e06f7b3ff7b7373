/// The SDP (RFC 8866) pubbot writes for what it sends and reads for `--sdp FILE`: one media
/// section per m-line, with SDES crypto (RFC 4568), extmap, rid/simulcast and ssrc attributes.
public struct SessionDescription: Equatable, Sendable {
    public struct Crypto: Equatable, Sendable {
        public var tag: Int
        public var suite: String
        /// base64(key‖salt): a secret, only ever written into a file the user asked for.
        public var inlineKey: String
        public init(tag: Int = 1, suite: String, inlineKey: String) { self.tag = tag; self.suite = suite; self.inlineKey = inlineKey }
    }

    public struct Media: Equatable, Sendable {
        public var kind: String // "audio" | "video"
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
        public var direction: String
        /// RTX (RFC 4588): its payload type (`apt` = `payloadType`) and (media SSRC, RTX SSRC) pairs.
        public var rtxPayloadType: UInt8?
        /// The RTX rtpmap's clock rate when it was read from text (written: this, else `clockRate`).
        public var rtxClockRate: Int?
        public var rtxSSRCs: [(media: UInt32, rtx: UInt32)] = []

        public init(
            kind: String, port: Int, payloadType: UInt8, codec: String, clockRate: Int, channels: Int? = nil, fmtp: String? = nil,
            mid: String, rtcpMux: Bool, crypto: Crypto?, extensions: [(id: UInt8, uri: String)] = [],
            ssrcs: [(ssrc: UInt32, cname: String)] = [],
            rids: [String] = [], direction: String = "sendonly"
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
    public func render() -> String {
        var l: [String] = ["v=0", "o=- \(sessionID) 1 IN \(addressType) \(address)", "s=pubbot", "c=IN \(addressType) \(address)", "t=0 0"]
        if bundle { l.append("a=group:BUNDLE " + media.map(\.mid).joined(separator: " ")) }
        for m in media {
            l.append("m=\(m.kind) \(m.port) RTP/SAVPF \(m.payloadType)" + (m.rtxPayloadType.map { " \($0)" } ?? ""))
            l.append("c=IN \(addressType) \(address)")
            if !m.rtcpMux { l.append("a=rtcp:\(m.port + 1)") }
            l.append("a=mid:\(m.mid)")
            l.append("a=\(m.direction)")
            if m.rtcpMux { l.append("a=rtcp-mux") }
            // A description read without an rtpmap for its payload type (static types need none,
            // RFC 3551 §6) is written back without one.
            if !m.codec.isEmpty { l.append("a=rtpmap:\(m.payloadType) \(m.codec)/\(m.clockRate)" + (m.channels.map { "/\($0)" } ?? "")) }
            if let f = m.fmtp { l.append("a=fmtp:\(m.payloadType) \(f)") }
            if let rtx = m.rtxPayloadType {
                l.append("a=rtpmap:\(rtx) rtx/\(m.rtxClockRate ?? m.clockRate)")
                l.append("a=fmtp:\(rtx) apt=\(m.payloadType)")
            }
            if m.kind == "video" {
                l.append("a=rtcp-fb:\(m.payloadType) nack")
                l.append("a=rtcp-fb:\(m.payloadType) nack pli")
                l.append("a=rtcp-fb:\(m.payloadType) ccm fir")
                l.append("a=rtcp-fb:\(m.payloadType) transport-cc")
            }
            for e in m.extensions { l.append("a=extmap:\(e.id) \(e.uri)") }
            if let c = m.crypto { l.append("a=crypto:\(c.tag) \(c.suite) inline:\(c.inlineKey)") }
            for r in m.rids { l.append("a=rid:\(r) send") }
            if !m.rids.isEmpty { l.append("a=simulcast:send " + m.rids.joined(separator: ";")) }
            for g in m.rtxSSRCs { l.append("a=ssrc-group:FID \(g.media) \(g.rtx)") }
            for s in m.ssrcs { l.append("a=ssrc:\(s.ssrc) cname:\(s.cname)") }
            for g in m.rtxSSRCs { l.append("a=ssrc:\(g.rtx) cname:\(m.ssrcs.first?.cname ?? "pubbot")") }
        }
        return l.joined(separator: "\r\n") + "\r\n"
    }

    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public var line: Int
        public var reason: String
        public var description: String { "SDP line \(line): \(reason)" }
    }

    /// Parses the subset pubbot writes (and what common tools write for the same streams).
    public static func parse(_ text: String) throws(ParseError) -> SessionDescription {
        var sd = SessionDescription(sessionID: 0, address: "", bundle: false, media: [])
        var sawVersion = false
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (n, raw) in lines.enumerated() {
            var line = Substring(raw)
            while line.last == "\r" || line.last == " " { line = line.dropLast() } // stray CRs and trailing blanks are not part of a value
            if line.isEmpty { continue }
            let no = n + 1
            guard line.count >= 2, line.dropFirst().first == "=" else { throw ParseError(line: no, reason: "expected <type>=<value>") }
            // RFC 8866 §5: text fields exclude CR, LF and NUL; a control character inside a line is
            // a damaged description, not part of a value.
            guard !line.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" }) else {
                throw ParseError(line: no, reason: "control character inside the line")
            }
            let type = line.first!
            let value = line.dropFirst(2)
            switch type {
            case "v": guard value == "0" else { throw ParseError(line: no, reason: "unsupported version") }; sawVersion = true
            case "o":
                let f = value.split(separator: " ")
                guard f.count >= 6 else { throw ParseError(line: no, reason: "bad o= line") }
                sd.sessionID = UInt64(f[1]) ?? 0
                guard isAddress(f[5]) else { throw ParseError(line: no, reason: "bad address in o= line") }
                if sd.address.isEmpty { sd.address = String(f[5]) }
            case "c":
                let f = value.split(separator: " ")
                guard f.count >= 3 else { throw ParseError(line: no, reason: "bad c= line") }
                // A multicast address may carry /ttl (RFC 8866 §5.7); the address is before it.
                let addr = String(f[2].split(separator: "/", omittingEmptySubsequences: false)[0])
                guard isAddress(addr[...]) else { throw ParseError(line: no, reason: "bad address in c= line") }
                if sd.media.isEmpty { sd.address = addr } else if sd.address.isEmpty { sd.address = addr }
            case "m":
                let f = value.split(separator: " ")
                guard f.count >= 4, let port = Int(f[1]), (0...65535).contains(port), let pt = UInt8(f[3]), pt < 128 else {
                    throw ParseError(line: no, reason: "bad m= line")
                }
                sd.media.append(
                    Media(
                        kind: String(f[0]), port: port, payloadType: pt, codec: "", clockRate: 0, mid: String(sd.media.count),
                        rtcpMux: false, crypto: nil, direction: "sendrecv"))
            case "a":
                let (name, arg) = splitAttribute(value)
                if name == "group", arg.hasPrefix("BUNDLE") { sd.bundle = true; continue }
                guard !sd.media.isEmpty else { continue }
                try apply(attribute: name, arg, to: &sd.media[sd.media.count - 1], line: no)
            default: break
            }
        }
        guard sawVersion else { throw ParseError(line: 1, reason: "not an SDP (no v=0)") }
        guard !sd.media.isEmpty else { throw ParseError(line: lines.count, reason: "no m= line") }
        // RFC 8866 §5.2, §5.7: the origin and a connection address are required.
        guard !sd.address.isEmpty else { throw ParseError(line: lines.count, reason: "no address (o= or c= line)") }
        return sd
    }

    /// One media-level attribute (`a=name:arg`) into `m`.
    static func apply(attribute name: String, _ arg: String, to m: inout Media, line no: Int) throws(ParseError) {
        switch name {
        case "mid": m.mid = arg
        case "rtcp-mux": m.rtcpMux = true
        case "sendonly", "recvonly", "sendrecv", "inactive": m.direction = name
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
            guard parts.count >= 2, let idText = parts[0].split(separator: "/").first, let id = UInt8(idText), id > 0 else {
                throw ParseError(line: no, reason: "bad extmap")
            }
            m.extensions.append((id, String(parts[1])))
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
            if parts[1].hasPrefix("cname:") && !m.rtxSSRCs.contains(where: { $0.rtx == ssrc }) {
                m.ssrcs.append((ssrc, String(parts[1].dropFirst(6))))
            }
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

    static func splitAttribute(_ v: Substring) -> (String, String) {
        guard let colon = v.firstIndex(of: ":") else { return (String(v), "") }
        return (String(v[..<colon]), String(v[v.index(after: colon)...]))
    }
}
