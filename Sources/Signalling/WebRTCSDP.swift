public import ICE
public import RTPCore

/// The offer a WHIP publisher POSTs (RFC 9725 §4.2, RFC 8829 shapes): BUNDLE and rtcp-mux, one
/// `sendonly` audio and one video m-line, simulcast by RID (RFC 8853), RTX, the feedback and
/// header extensions pubbot uses, `a=setup:actpass`, ICE credentials and host candidates, the
/// DTLS fingerprint.
public struct WHIPOffer: Sendable {
    public var iceUfrag: String
    public var icePassword: String
    /// `sha-256 AB:CD:…`
    public var fingerprint: String
    public var candidates: [ICECandidate]
    public var audio = true
    /// RIDs of the simulcast layers, lowest first (empty: no video).
    public var rids: [String] = ["q", "h", "f"]
    public var sessionID: UInt64 = 1
    /// `.receive`: a WHEP subscriber's offer (draft-ietf-wish-whep §4.2): `recvonly` sections,
    /// no RIDs or simulcast (the server chooses what it sends), video present when `receiveVideo`.
    public enum Direction: Sendable { case send, receive }
    public var direction = Direction.send
    public var receiveVideo = true
    /// The audio SSRC and the CNAME, announced as browsers do for a section without RIDs
    /// (`a=ssrc:N cname:…`, `a=ssrc:N msid:…`, RFC 5576 §4.1, RFC 8830 §2): pion resolves an
    /// unannounced SSRC only by MID and RID, so without them it drops the audio whenever video
    /// is simulcast; SRS and mediasoup-client need them too.
    public var audioSSRC: UInt32?
    /// Video sent as one encoding without RIDs (`rids` empty), as a browser offers one: its SSRC
    /// and its RTX SSRC, announced with `a=ssrc-group:FID` (RFC 5576 §4.2, RFC 4588 §8).
    public var videoSSRC: (media: UInt32, rtx: UInt32?)?
    public var cname = "pubbot"
    /// The video codecs offered, most preferred first (the answer picks one, RFC 3264 §6.1).
    public var codecs: [VideoCodec] = [.vp8]
    var hasVideo: Bool { direction == .send ? !rids.isEmpty || videoSSRC != nil : receiveVideo }

    public static let opus: UInt8 = 111, vp8: UInt8 = 96, rtx: UInt8 = 97

    /// pubbot's payload types for a codec and its RTX (RFC 4588).
    public static func payloadTypes(_ codec: VideoCodec) -> (media: UInt8, rtx: UInt8) { codec.payloadTypes }

    /// Header extensions offered (RFC 8285 one-byte IDs); the answer may renumber them.
    public static let extensions: [(id: Int, uri: String, video: Bool)] = [
        (4, "urn:ietf:params:rtp-hdrext:sdes:mid", false), // pubbot's own numbering (RTPExtension)
        (2, "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time", false),
        (3, "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01", false),
        (10, "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id", true),
        (11, "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id", true),
        (12, "https://aomediacodec.github.io/av1-rtp-spec/#dependency-descriptor-rtp-header-extension", true)
    ]

    public init(iceUfrag: String, icePassword: String, fingerprint: String, candidates: [ICECandidate]) {
        self.iceUfrag = iceUfrag
        self.icePassword = icePassword
        self.fingerprint = fingerprint
        self.candidates = candidates
    }

    public var sdp: String {
        var mids: [String] = []
        if audio { mids.append("0") }
        if hasVideo { mids.append(audio ? "1" : "0") }
        var doc = SDPDocument(
            sessionLines: [.init("v", "0"), .init("o", "- \(sessionID) 2 IN IP4 127.0.0.1"), .init("s", "pubbot"), .init("t", "0 0")],
            sessionAttributes: [
                .init("group", "BUNDLE " + mids.joined(separator: " ")), .init("extmap-allow-mixed"),
                .init("msid-semantic", " WMS pubbot")
            ],
            media: [])
        func common(_ mid: String, video: Bool) -> [SDPDocument.Attribute] {
            var a: [SDPDocument.Attribute] = [
                .init(line: "c", "IN IP4 0.0.0.0"), .init("ice-ufrag", iceUfrag), .init("ice-pwd", icePassword),
                .init("ice-options", "trickle"), .init("fingerprint", fingerprint), .init("setup", "actpass"),
                .init("mid", mid), .init(direction == .send ? "sendonly" : "recvonly"), .init("rtcp-mux"), .init("rtcp-rsize")
            ]
            for e in Self.extensions where video || !e.video { a.append(.init("extmap", "\(e.id) \(e.uri)")) }
            if direction == .send { a.append(.init("msid", "pubbot pubbot-\(video ? "video" : "audio")")) }
            return a
        }
        if audio {
            var a = common("0", video: false)
            a += [
                .init("rtpmap", "\(Self.opus) opus/48000/2"), .init("rtcp-fb", "\(Self.opus) transport-cc"),
                .init("fmtp", "\(Self.opus) minptime=10;useinbandfec=1")
            ]
            if direction == .send, let ssrc = audioSSRC {
                a += [.init("ssrc", "\(ssrc) cname:\(cname)"), .init("ssrc", "\(ssrc) msid:pubbot pubbot-audio")]
            }
            a += candidates.map { .init("candidate", String($0.description.dropFirst("candidate:".count))) }
            a.append(.init("end-of-candidates"))
            doc.media.append(.init(kind: .audio, port: 9, proto: "UDP/TLS/RTP/SAVPF", formats: ["\(Self.opus)"], attributes: a))
        }
        if hasVideo {
            var a = common(audio ? "1" : "0", video: true)
            var formats: [String] = []
            for codec in codecs {
                let (pt, rtx) = Self.payloadTypes(codec)
                a.append(.init("rtpmap", "\(pt) \(codec.sdpName)/90000"))
                for fb in ["goog-remb", "transport-cc", "ccm fir", "nack", "nack pli"] { a.append(.init("rtcp-fb", "\(pt) \(fb)")) }
                if let f = codec.fmtp { a.append(.init("fmtp", "\(pt) \(f)")) }
                a += [.init("rtpmap", "\(rtx) rtx/90000"), .init("fmtp", "\(rtx) apt=\(pt)")]
                formats += ["\(pt)", "\(rtx)"]
            }
            if direction == .send && !rids.isEmpty {
                a += rids.map { .init("rid", "\($0) send") }
                a.append(.init("simulcast", "send " + rids.joined(separator: ";")))
            } else if direction == .send, let v = videoSSRC {
                if let rtx = v.rtx { a.append(.init("ssrc-group", "FID \(v.media) \(rtx)")) }
                for ssrc in [v.media] + (v.rtx.map { [$0] } ?? []) {
                    a += [.init("ssrc", "\(ssrc) cname:\(cname)"), .init("ssrc", "\(ssrc) msid:pubbot pubbot-video")]
                }
            }
            if !audio {
                a += candidates.map { .init("candidate", String($0.description.dropFirst("candidate:".count))) }
                a.append(.init("end-of-candidates"))
            }
            doc.media.append(
                .init(kind: .video, port: 9, proto: "UDP/TLS/RTP/SAVPF", formats: formats, attributes: a))
        }
        return doc.render()
    }
}

/// What the server's answer decided (RFC 8829 §5.3 from the offerer's side): the transport
/// (ICE, DTLS role, fingerprint) and, per kind, the payload types, header-extension IDs,
/// feedback and simulcast layers to use.
public struct NegotiatedSession: Sendable, Equatable {
    public struct Stream: Sendable, Equatable {
        public var mid: String
        public var payloadType: UInt8
        /// The video codec the answer chose (nil for audio).
        public var codec: VideoCodec?
        public var rtxPayloadType: UInt8?
        /// URI → the answer's ID.
        public var extensions: [String: Int]
        public var transportCC: Bool
        public var remb: Bool
        public var nack: Bool
        public var pli: Bool
        /// The RIDs the answer accepted (`a=simulcast:recv …`), lowest first; nil: no simulcast.
        public var simulcast: [String]?
        /// The answer's direction (RFC 8866 §6.7).
        public var direction = SDPDirection.sendrecv
        /// What a sending answerer (a WHEP server) announced: its media SSRCs (`a=ssrc`), and
        /// each RTX SSRC's media SSRC (`a=ssrc-group:FID media rtx`, RFC 5576 §4.2, RFC 4588 §8).
        public var ssrcs: [UInt32] = []
        public var rtxSSRCs: [UInt32: UInt32] = [:]
        /// The server sends on this section.
        public var sends: Bool { direction == .sendonly || direction == .sendrecv }
        /// Reduced-size RTCP (RFC 5506 §5) was negotiated: feedback may travel alone, without a
        /// report and SDES in front.
        public var reducedSizeRTCP = false
    }

    public var iceUfrag: String
    public var icePassword: String
    public var iceLite: Bool
    public var candidates: [ICECandidate]
    public var fingerprint: String
    /// The answer's `a=setup`: `active` → the server is the DTLS client, pubbot the server.
    public var dtlsServer: Bool
    public var audio: Stream?
    public var video: Stream?
    /// The answer allows one-byte and two-byte header extensions in one stream (`a=extmap-allow-mixed`,
    /// RFC 8285 §6, at session or media level).
    public var extmapAllowMixed = false

    public struct AnswerError: Error, Equatable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// - counterOffer: `text` is a WHEP server's own offer (its 406, draft-ietf-wish-whep-04),
    ///   which pubbot answers with `WHIPAnswer.answer(…, lite: false)`: its `a=setup` is
    ///   `actpass` or `passive` (pubbot answers `active`, the DTLS client), and what it sends is read
    ///   as from an answer.
    public static func from(answer text: String, offer: WHIPOffer, counterOffer: Bool = false) throws(AnswerError) -> NegotiatedSession {
        let doc: SDPDocument
        do { doc = try SDPDocument.parse(text) } catch { throw AnswerError(description: "the answer is not valid SDP: \(error)") }
        func first(_ name: String) -> String? {
            doc.sessionAttributes.first { $0.name == name }?.value ?? doc.media.lazy.compactMap { $0.value(name) }.first
        }
        guard let ufrag = first("ice-ufrag"), let pwd = first("ice-pwd") else {
            throw AnswerError(description: "the answer has no ICE credentials (a=ice-ufrag/a=ice-pwd)")
        }
        guard let fingerprint = first("fingerprint") else {
            throw AnswerError(description: "the answer has no DTLS fingerprint (a=fingerprint)")
        }
        guard fingerprint.lowercased().hasPrefix("sha-256 ") else {
            throw AnswerError(description: "the answer's fingerprint is not sha-256 (\(fingerprint.prefix(12))…)")
        }
        let setup = first("setup") ?? (counterOffer ? "actpass" : "active")
        if counterOffer {
            guard setup == "actpass" || setup == "passive" else {
                throw AnswerError(
                    description: "the counter-offer's a=setup:\(setup) leaves pubbot no DTLS client role (it answers active; RFC 5763 §5)")
            }
        } else {
            guard setup == "active" || setup == "passive" else {
                throw AnswerError(
                    description: "the answer must choose a DTLS role (a=setup:active or passive), not '\(setup)' (RFC 5763 §5)")
            }
        }
        var candidates: [ICECandidate] = []
        for m in doc.media {
            for c in m.values("candidate") {
                if let parsed = try? ICECandidate.parse(Substring("candidate:" + c)), !candidates.contains(parsed) {
                    candidates.append(parsed)
                }
            }
        }
        let lite = doc.sessionAttributes.contains { $0.name == "ice-lite" } || doc.media.contains { $0.has("ice-lite") }
        var n = NegotiatedSession(
            iceUfrag: ufrag, icePassword: pwd, iceLite: lite, candidates: candidates, fingerprint: fingerprint,
            dtlsServer: !counterOffer && setup == "active",
            audio: try stream(doc.media.first { $0.kind == .audio }, codecs: ["opus"], offer: offer),
            video: try stream(doc.media.first { $0.kind == .video }, codecs: offer.codecs.map { $0.sdpName.lowercased() }, offer: offer))
        n.extmapAllowMixed =
            doc.sessionAttributes.contains { $0.name == "extmap-allow-mixed" } || doc.media.contains { $0.has("extmap-allow-mixed") }
        return n
    }

    /// The `a=rtpmap` payload types of a section, `(type, encoding name lowercased, the rest)`.
    static func rtpmaps(_ m: SDPDocument.Media) -> [(UInt8, String, String)] {
        m.values("rtpmap").compactMap { v -> (UInt8, String, String)? in
            let p = v.split(separator: " ", maxSplits: 1)
            guard p.count == 2, let pt = UInt8(p[0]), pt < 128 else { return nil }
            return (pt, String(p[1].split(separator: "/").first ?? "").lowercased(), String(p[1]))
        }
    }

    /// The payload type a section's codec list offers first among `codecs` (encoding names,
    /// lowercased), in the section's format order (RFC 3264 §6.1: the answerer's preference; an
    /// offerer's for an answerer). H.264 only with packetization mode 1 (RFC 6184 §8.1: without
    /// it, mode 0, FU-A and STAP-A are not allowed).
    static func preferred(_ m: SDPDocument.Media, codecs: [String]) -> (UInt8, String, String)? {
        let maps = rtpmaps(m)
        let fmtp = m.values("fmtp")
        for format in m.formats {
            guard let map = maps.first(where: { String($0.0) == format }), codecs.contains(map.1) else { continue }
            let params = (fmtp.first { $0.hasPrefix("\(map.0) ") }?.split(separator: " ", maxSplits: 1).last ?? "").split(separator: ";")
                .map {
                    $0.filter { $0 != " " }
                }
            if map.1 == "h264" && !params.contains("packetization-mode=1") { continue }
            // VP9: profile 0 (8-bit 4:2:0), what libvpx is set up to encode; absent means 0 (RFC 9628 §6).
            if map.1 == "vp9" && params.contains(where: { $0.hasPrefix("profile-id=") && $0 != "profile-id=0" }) { continue }
            // AV1: the main profile (0), what libaom is set up for; absent means 0 (AV1 RTP format §7.2.1).
            if map.1 == "av1" && params.contains(where: { $0.hasPrefix("profile=") && $0 != "profile=0" }) { continue }
            return map
        }
        return nil
    }

    /// What the answer's section of one kind decided; nil when it is absent or rejected (port 0).
    static func stream(_ section: SDPDocument.Media?, codecs: [String], offer: WHIPOffer) throws(AnswerError) -> Stream? {
        guard let m = section, m.port != 0 else { return nil }
        let kind = m.kind
        let maps = rtpmaps(m)
        guard let chosen = preferred(m, codecs: codecs) else {
            let names = codecs.map {
                $0 == "h264" ? "h264 (packetization-mode=1)" : $0 == "vp9" ? "vp9 (profile-id=0)" : $0 == "av1" ? "av1 (profile=0)" : $0
            }.joined(separator: " or ")
            throw AnswerError(description: "the answer's \(kind) section has no \(names) payload type")
        }
        let pt = chosen.0
        // RFC 8843 §15: a MID is a token; one-byte header extensions carry at most 16 bytes (RFC 8285 §4.2).
        let mid = m.value("mid") ?? ""
        guard mid.utf8.count <= 16, mid.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw AnswerError(description: "the answer's \(kind) a=mid is not a token of at most 16 characters")
        }
        let rtx = maps.first { $0.1 == "rtx" && $0.0 < 128 && $0.0 != pt && m.values("fmtp").contains("\($0.0) apt=\(pt)") }?.0
        var ext: [String: Int] = [:]
        for e in m.values("extmap") {
            let p = e.split(separator: " ")
            if p.count >= 2, let id = SDPDocument.extmapID(p[0]) { ext[String(p[1])] = id }
        }
        let fb = Set(
            m.values("rtcp-fb").filter { $0.hasPrefix("\(pt) ") || $0.hasPrefix("* ") }.map {
                String($0.drop { $0 != " " }.dropFirst())
            })
        var simulcast: [String]?
        if let s = m.value("simulcast"), s.hasPrefix("recv ") {
            // `recv q;h;f` (or alternatives `q,h`): the first of each alternative list; paused (~) ones left out.
            let accepted = s.dropFirst(5).split(separator: ";").compactMap { $0.split(separator: ",").first.map(String.init) }.filter {
                !$0.hasPrefix("~")
            }
            simulcast = offer.rids.filter { accepted.contains($0) }
        }
        var st = Stream(
            mid: mid, payloadType: pt, codec: kind == .video ? VideoCodec(name: chosen.1) : nil, rtxPayloadType: rtx, extensions: ext,
            transportCC: fb.contains("transport-cc"),
            remb: fb.contains("goog-remb"), nack: fb.contains("nack"), pli: fb.contains("nack pli"), simulcast: simulcast)
        st.direction = [SDPDirection.sendonly, .recvonly, .sendrecv, .inactive].first { m.has($0.rawValue) } ?? .sendrecv
        st.reducedSizeRTCP = m.has("rtcp-rsize")
        (st.ssrcs, st.rtxSSRCs) = announcedSSRCs(m)
        return st
    }

    /// A sending answerer's media SSRCs (`a=ssrc`) and each RTX SSRC's media SSRC
    /// (`a=ssrc-group:FID media rtx`, RFC 5576 §4.2).
    static func announcedSSRCs(_ m: SDPDocument.Media) -> ([UInt32], [UInt32: UInt32]) {
        var ssrcs: [UInt32] = [], rtx: [UInt32: UInt32] = [:]
        for g in m.values("ssrc-group") where g.hasPrefix("FID ") {
            let ids = g.dropFirst(4).split(separator: " ").compactMap { UInt32($0) }
            if ids.count == 2 { rtx[ids[1]] = ids[0] }
        }
        for line in m.values("ssrc") {
            guard let id = line.split(separator: " ").first.flatMap({ UInt32($0) }), rtx[id] == nil, !ssrcs.contains(id) else { continue }
            ssrcs.append(id)
        }
        return (ssrcs, rtx)
    }
}

/// A WHIP endpoint's side of offer/answer (RFC 9725 §4.2, RFC 8829 §5.3 from the answerer) —
/// and a WHEP subscriber's answer to a server's counter-offer (`lite: false`, a full agent):
/// what the publisher offered (ICE credentials, DTLS fingerprint and role, per kind the
/// payload types, extension IDs and simulcast RIDs pubbot can receive) and the answer — ICE-lite,
/// `setup:active` (the endpoint is the DTLS client, as Janus and aiortc answer), `recvonly`,
/// the offer's payload types and extension IDs for what pubbot understands, simulcast accepted
/// as offered, transport-cc and NACK/PLI/FIR feedback; among the video codecs pubbot decodes
/// (VP8, H.264 in packetization mode 1) the offer's first. Sections pubbot cannot receive (no
/// Opus, no such video codec, data channels) are rejected with port 0.
public struct WHIPAnswer: Sendable {
    public struct Stream: Sendable, Equatable {
        public var kind: SDPMediaKind
        public var mid: String
        public var payloadType: UInt8
        /// The video codec of `payloadType` (nil for audio).
        public var codec: VideoCodec?
        public var rtxPayloadType: UInt8?
        /// URI → ID, only the extensions pubbot reads.
        public var extensions: [String: Int]
        public var rids: [String]
        /// RTX SSRC → media SSRC from the offer's `a=ssrc-group:FID media rtx` (RFC 5576 §4.2,
        /// RFC 4588 §8): a browser's one encoding has no RIDs, so its retransmissions carry no
        /// repaired-rtp-stream-id to find their stream by (at most 32 pairs are kept).
        public var rtxToMedia: [UInt32: UInt32] = [:]
    }

    public var remoteUfrag: String
    public var remotePassword: String
    public var remoteFingerprint: String
    public var streams: [Stream]
    public var sdp: String

    public struct OfferError: Error, Equatable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// URIs of the extensions the receiver reads.
    public static let understood: Set<String> = [
        "urn:ietf:params:rtp-hdrext:sdes:mid", "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
        "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01", "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
        "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id",
        "https://aomediacodec.github.io/av1-rtp-spec/#dependency-descriptor-rtp-header-extension"
    ]

    public static func answer(
        offer text: String, iceUfrag: String, icePassword: String, fingerprint: String,
        candidates: [ICECandidate], sessionID: UInt64, lite: Bool = true
    ) throws(OfferError) -> WHIPAnswer {
        let offer: SDPDocument
        do { offer = try SDPDocument.parse(text) } catch { throw OfferError(description: "the offer is not valid SDP: \(error)") }
        func first(_ name: String) -> String? {
            offer.sessionAttributes.first { $0.name == name }?.value ?? offer.media.lazy.compactMap { $0.value(name) }.first
        }
        guard let ufrag = first("ice-ufrag"), let pwd = first("ice-pwd"), !ufrag.isEmpty, !pwd.isEmpty else {
            throw OfferError(description: "the offer has no ICE credentials (a=ice-ufrag/a=ice-pwd)")
        }
        guard let fp = first("fingerprint"), fp.lowercased().hasPrefix("sha-256 ") else {
            throw OfferError(description: "the offer has no sha-256 DTLS fingerprint (a=fingerprint)")
        }
        let setup = first("setup") ?? "actpass"
        guard setup == "actpass" || setup == "passive" else {
            throw OfferError(description: "the offer's a=setup:\(setup) leaves pubbot no DTLS client role (it answers active)")
        }
        guard !offer.media.isEmpty else { throw OfferError(description: "the offer has no media sections") }
        let bundle = offer.sessionAttributes.first { $0.name == "group" && ($0.value ?? "").hasPrefix("BUNDLE") }
        var answer = SDPDocument(
            sessionLines: [
                .init("v", "0"), .init("o", "- \(sessionID) 2 IN IP4 127.0.0.1"), .init("s", "pubbot receive"), .init("t", "0 0")
            ],
            sessionAttributes: lite ? [.init("ice-lite")] : [], media: [])
        if let b = bundle { answer.sessionAttributes.insert(.init("group", b.value), at: 0) }
        // Two-byte header extensions (an AV1 sender's Dependency Descriptor structure) are read.
        if offer.sessionAttributes.contains(where: { $0.name == "extmap-allow-mixed" })
            || offer.media.contains(where: { $0.has("extmap-allow-mixed") })
        {
            answer.sessionAttributes.append(.init("extmap-allow-mixed"))
        }
        var streams: [Stream] = []
        let local = Local(iceUfrag: iceUfrag, icePassword: icePassword, fingerprint: fingerprint, candidates: candidates)
        for m in offer.media {
            let (section, stream) = Self.section(answering: m, mid: m.value("mid") ?? String(answer.media.count), local: local)
            answer.media.append(section)
            if let stream { streams.append(stream) }
        }
        guard !streams.isEmpty else {
            throw OfferError(
                description:
                    "the offer has no Opus audio or VP8, VP9 (profile-id=0), H.264 (packetization-mode=1) or AV1 (profile=0) video pubbot can receive"
            )
        }
        return WHIPAnswer(remoteUfrag: ufrag, remotePassword: pwd, remoteFingerprint: fp, streams: streams, sdp: answer.render())
    }

    /// What pubbot answers with: its ICE credentials, fingerprint and candidates.
    struct Local {
        var iceUfrag, icePassword, fingerprint: String
        var candidates: [ICECandidate]
    }

    /// One offered section answered: accepted (`recvonly`, the offer's payload types and the
    /// extension IDs pubbot reads, feedback, simulcast as offered) with the stream it describes,
    /// or rejected with port 0 when pubbot cannot receive it (no Opus, no VP8, not sending).
    static func section(answering m: SDPDocument.Media, mid: String, local: Local) -> (SDPDocument.Media, Stream?) {
        let codecs = m.kind == .audio ? ["opus"] : m.kind == .video ? VideoCodec.allCases.map { $0.sdpName.lowercased() } : []
        let maps = NegotiatedSession.rtpmaps(m)
        // The offerer's order decides among the codecs pubbot decodes (RFC 3264 §6.1).
        guard !codecs.isEmpty, !m.has("inactive"), !m.has("recvonly"), let media = NegotiatedSession.preferred(m, codecs: codecs) else {
            let rejected = SDPDocument.Media(
                kind: m.kind, port: 0, proto: m.proto, formats: m.formats.prefix(1).map { $0 }, attributes: [.init("mid", mid)])
            return (rejected, nil)
        }
        let rtx = maps.first { $0.1 == "rtx" && m.values("fmtp").contains("\($0.0) apt=\(media.0)") }
        var ext: [String: Int] = [:]
        var attributes: [SDPDocument.Attribute] = [
            .init(line: "c", "IN IP4 0.0.0.0"), .init("ice-ufrag", local.iceUfrag), .init("ice-pwd", local.icePassword),
            .init("fingerprint", local.fingerprint), .init("setup", "active"), .init("mid", mid)
        ]
        for e in m.values("extmap") {
            let p = e.split(separator: " ")
            guard p.count >= 2, let id = SDPDocument.extmapID(p[0]), (1...14).contains(id), Self.understood.contains(String(p[1]))
            else { continue }
            ext[String(p[1])] = id
            attributes.append(.init("extmap", "\(id) \(p[1])"))
        }
        attributes += [.init("recvonly"), .init("rtcp-mux"), .init("rtcp-rsize"), .init("rtpmap", "\(media.0) \(media.2)")]
        if let f = m.values("fmtp").first(where: { $0.hasPrefix("\(media.0) ") }) { attributes.append(.init("fmtp", f)) }
        let video = m.kind == .video
        let feedback = video ? ["transport-cc", "ccm fir", "nack", "nack pli"] : ["transport-cc"]
        for fb in feedback { attributes.append(.init("rtcp-fb", "\(media.0) \(fb)")) }
        if let r = rtx { attributes += [.init("rtpmap", "\(r.0) \(r.2)"), .init("fmtp", "\(r.0) apt=\(media.0)")] }
        let rids = video ? offeredRIDs(m) : []
        attributes += rids.map { .init("rid", "\($0) recv") }
        if !rids.isEmpty { attributes.append(.init("simulcast", "recv " + rids.joined(separator: ";"))) }
        attributes += local.candidates.map { .init("candidate", String($0.description.dropFirst("candidate:".count))) }
        attributes.append(.init("end-of-candidates"))
        let section = SDPDocument.Media(
            kind: m.kind, port: 9, proto: m.proto, formats: [String(media.0)] + (rtx.map { [String($0.0)] } ?? []), attributes: attributes)
        var stream = Stream(
            kind: m.kind, mid: mid, payloadType: media.0, codec: video ? VideoCodec(name: media.1) : nil, rtxPayloadType: rtx?.0,
            extensions: ext, rids: rids)
        for g in m.values("ssrc-group") where g.hasPrefix("FID ") && stream.rtxToMedia.count < 32 {
            let ids = g.dropFirst(4).split(separator: " ").compactMap { UInt32($0) }
            if ids.count == 2 && ids[0] != ids[1] { stream.rtxToMedia[ids[1]] = ids[0] }
        }
        return (section, stream)
    }

    /// The RIDs an offer sends (`a=simulcast:send`, RFC 8853 §5.1: the first of each alternative
    /// list, paused `~` ones left out) that it also declares with `a=rid:… send`.
    static func offeredRIDs(_ m: SDPDocument.Media) -> [String] {
        guard let s = m.value("simulcast"), s.hasPrefix("send ") else { return [] }
        let rids = s.dropFirst(5).split(separator: ";").compactMap { $0.split(separator: ",").first.map(String.init) }.filter {
            !$0.hasPrefix("~")
        }
        return rids.filter { rid in m.values("rid").contains { $0.hasPrefix(rid + " send") } }
    }
}
