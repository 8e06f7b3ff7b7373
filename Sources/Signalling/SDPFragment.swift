public import ICE

/// An `application/trickle-ice-sdpfrag` body (RFC 8840 §4.4; RFC 9725 §4.3): the ICE
/// credentials, candidates and end-of-candidates of a trickle or restart PATCH, or of the 200
/// that answers a restart. Total: any bytes give a fragment (a line it cannot use is skipped, a
/// candidate of another transport or an unparsable one too, RFC 9725 §4.3.2), never a trap.
public struct SDPFragment: Equatable, Sendable {
    public var ufrag: String?
    public var password: String?
    public var candidates: [ICECandidate] = []
    public var endOfCandidates = false
    /// `a=ice-lite` (a server's restart answer).
    public var lite = false

    public init() {}

    /// At most `maxLines` lines are read (a PATCH body is bounded by the HTTP server too).
    public static func parse(_ text: String, maxLines: Int = 1_024) -> SDPFragment {
        var f = SDPFragment()
        var lines = 0
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            lines += 1
            if lines > maxLines { break }
            if line.hasPrefix("a=ice-ufrag:") {
                f.ufrag = String(line.dropFirst(12))
            } else if line.hasPrefix("a=ice-pwd:") {
                f.password = String(line.dropFirst(10))
            } else if line.hasPrefix("a=candidate:") {
                if let c = try? ICECandidate.parse(line.dropFirst(2)), !f.candidates.contains(c) { f.candidates.append(c) }
            } else if line == "a=end-of-candidates" {
                f.endOfCandidates = true
            } else if line == "a=ice-lite" {
                f.lite = true
            }
        }
        return f
    }

    /// RFC 8839 §5.4: `ice-ufrag` 4–256 and `ice-pwd` 22–256 ice-chars (ALPHA / DIGIT / "+" / "/").
    public var credentialsValid: Bool {
        guard let u = ufrag, let p = password else { return false }
        func iceChars(_ s: String, _ range: ClosedRange<Int>) -> Bool {
            range.contains(s.utf8.count)
                && s.utf8.allSatisfy {
                    (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2B || $0 == 0x2F
                }
        }
        return iceChars(u, 4...256) && iceChars(p, 22...256)
    }
}
