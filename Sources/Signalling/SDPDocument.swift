/// An m-line's media type (RFC 8866 §5.14): audio, video, or another token kept as written.
public enum SDPMediaKind: Hashable, Sendable, CustomStringConvertible {
    case audio, video
    case other(String)

    public init(_ token: String) {
        switch token {
        case "audio": self = .audio
        case "video": self = .video
        default: self = .other(token)
        }
    }

    public var description: String {
        switch self {
        case .audio: "audio"
        case .video: "video"
        case let .other(token): token
        }
    }
}

/// A media section's direction attribute (RFC 8866 §6.7, RFC 3264 §5.1; `sendrecv` when absent).
public enum SDPDirection: String, Sendable, CaseIterable {
    case sendrecv, sendonly, recvonly, inactive
}

/// The one SDP parser and renderer (RFC 8866): session lines and media sections with their
/// attributes, kept in order. The WebRTC offers and answers are built on it, and the SDES
/// description (`SessionDescription`) is a typed view of it.
public struct SDPDocument: Sendable, Equatable {
    /// An `a=name[:value]` line — or, inside a media section, another line kept in place
    /// (`c=`, `b=` …: `lineType` set, the whole value in `value`).
    public struct Attribute: Sendable, Equatable {
        public var name: String
        public var value: String?
        var lineType: Character?
        /// The line number it was read from (1-based; 0 when built), for errors — not part of `==`.
        var lineNumber = 0
        public init(_ name: String, _ value: String? = nil) { self.name = name; self.value = value; lineType = nil }
        public init(line type: Character, _ value: String) { name = ""; self.value = value; lineType = type }

        public static func == (a: Attribute, b: Attribute) -> Bool { a.name == b.name && a.value == b.value && a.lineType == b.lineType }
    }

    /// A session-level line other than `a=` (v=, o=, s=, t=, c= …).
    public struct Line: Sendable, Equatable {
        public var type: Character
        public var value: String
        /// As `Attribute.lineNumber`.
        var lineNumber = 0
        public init(_ type: Character, _ value: String) { self.type = type; self.value = value }

        public static func == (a: Line, b: Line) -> Bool { a.type == b.type && a.value == b.value }
    }

    public struct Media: Sendable, Equatable {
        public var kind: SDPMediaKind
        public var port: Int
        var proto: String
        public var formats: [String]
        public var attributes: [Attribute]
        /// The m= line's number (as `Attribute.lineNumber`).
        var lineNumber = 0

        public init(kind: SDPMediaKind, port: Int, proto: String, formats: [String], attributes: [Attribute]) {
            self.kind = kind
            self.port = port
            self.proto = proto
            self.formats = formats
            self.attributes = attributes
        }

        public func values(_ name: String) -> [String] { attributes.filter { $0.name == name }.compactMap(\.value) }
        public func value(_ name: String) -> String? { values(name).first }
        public func has(_ name: String) -> Bool { attributes.contains { $0.name == name } }
        /// The last direction attribute; `sendrecv` when there is none (RFC 3264 §5.1).
        public var direction: SDPDirection {
            attributes.last { $0.lineType == nil && $0.value == nil && SDPDirection(rawValue: $0.name) != nil }
                .flatMap { SDPDirection(rawValue: $0.name) } ?? .sendrecv
        }

        public static func == (a: Media, b: Media) -> Bool {
            a.kind == b.kind && a.port == b.port && a.proto == b.proto && a.formats == b.formats && a.attributes == b.attributes
        }
    }

    public var sessionLines: [Line]
    public var sessionAttributes: [Attribute]
    public var media: [Media]
    /// The number of lines read (0 when built): where an error about something missing points.
    var lineCount = 0

    public init(sessionLines: [Line], sessionAttributes: [Attribute], media: [Media]) {
        self.sessionLines = sessionLines
        self.sessionAttributes = sessionAttributes
        self.media = media
    }

    public static func == (a: SDPDocument, b: SDPDocument) -> Bool {
        a.sessionLines == b.sessionLines && a.sessionAttributes == b.sessionAttributes && a.media == b.media
    }

    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public var line: Int
        public var reason: String
        public init(line: Int, reason: String) { self.line = line; self.reason = reason }
        public var description: String { "SDP line \(line): \(reason)" }
    }

    public static func parse(_ text: String) throws(ParseError) -> SDPDocument {
        var doc = SDPDocument(sessionLines: [], sessionAttributes: [], media: [])
        var sawVersion = false
        // Lines end at LF (a CR before it is trimmed below). LF is always a grapheme break of its
        // own (Unicode UAX #29, GB4/GB5), so splitting the bytes gives the lines splitting the
        // characters would, without breaking the whole text into graphemes.
        let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        doc.lineCount = lines.count
        for (n, raw) in lines.enumerated() {
            let no = n + 1
            var line = Substring(raw)
            while line.last == "\r" || line.last == " " { line = line.dropLast() } // stray CRs and trailing blanks are not part of a value
            if line.isEmpty { continue }
            guard line.count >= 2, let type = line.first, line.dropFirst().first == "=" else {
                throw ParseError(line: no, reason: "expected <type>=<value>")
            }
            // RFC 8866 §9: values are byte strings without NUL, CR or LF; other controls (terminal
            // escapes a peer could plant in a message we print) are refused too.
            guard !line.unicodeScalars.contains(where: { ($0.value < 32 && $0 != "\t") || $0.value == 127 }) else {
                throw ParseError(line: no, reason: "control character")
            }
            let value = String(line.dropFirst(2))
            if !sawVersion {
                // RFC 8866 §5: the description starts with v=0.
                guard type == "v", value == "0" else { throw ParseError(line: no, reason: "not an SDP (it must start with v=0)") }
                sawVersion = true
            }
            switch type {
            case "m":
                let f = value.split(separator: " ")
                guard f.count >= 3, let port = Int(f[1]), (0...65535).contains(port) else {
                    throw ParseError(line: no, reason: "bad m= line")
                }
                var m = Media(
                    kind: SDPMediaKind(String(f[0])), port: port, proto: String(f[2]), formats: f.dropFirst(3).map(String.init),
                    attributes: [])
                m.lineNumber = no
                doc.media.append(m)
            case "a":
                var attribute: Attribute
                if let colon = value.firstIndex(of: ":") {
                    attribute = Attribute(String(value[..<colon]), String(value[value.index(after: colon)...]))
                } else {
                    attribute = Attribute(value)
                }
                attribute.lineNumber = no
                if doc.media.isEmpty {
                    doc.sessionAttributes.append(attribute)
                } else {
                    doc.media[doc.media.count - 1].attributes.append(attribute)
                }
            default:
                if doc.media.isEmpty {
                    var l = Line(type, value)
                    l.lineNumber = no
                    doc.sessionLines.append(l)
                } else {
                    var a = Attribute(line: type, value) // c=, b= inside a section
                    a.lineNumber = no
                    doc.media[doc.media.count - 1].attributes.append(a)
                }
            }
        }
        guard sawVersion else { throw ParseError(line: 1, reason: "empty SDP") }
        return doc
    }

    /// The ID of an `a=extmap:<id>[/<direction>] <uri>` value's first field (RFC 8285 §8: 1–255,
    /// digits only); nil for anything else — an empty field, `/`, a sign or a number out of range.
    public static func extmapID(_ field: Substring) -> Int? {
        let digits = field.prefix { $0 != "/" }
        guard (1...3).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }), let id = Int(digits), (1...255).contains(id)
        else { return nil }
        return id
    }

    /// The SDP text (CRLF line ends).
    public func render() -> String {
        var l = sessionLines.map { "\($0.type)=\($0.value)" }
        l += sessionAttributes.map { "a=" + $0.name + ($0.value.map { ":" + $0 } ?? "") }
        for m in media {
            l.append("m=\(m.kind) \(m.port) \(m.proto)" + m.formats.map { " " + $0 }.joined())
            for a in m.attributes {
                if let t = a.lineType {
                    l.append("\(t)=" + (a.value ?? ""))
                } else {
                    l.append("a=" + a.name + (a.value.map { ":" + $0 } ?? ""))
                }
            }
        }
        return l.joined(separator: "\r\n") + "\r\n"
    }
}
