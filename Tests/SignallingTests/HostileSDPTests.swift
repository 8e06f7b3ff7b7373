import Testing
import Foundation
import Signalling
import ICE
import RTPCore

/// The endpoint's offer → answer path and the client's answer → negotiated-session path fed
/// hostile SDP: seeded with the real offers and answers in Tests/Fuzz/seeds (Chromium 156,
/// aiortc 1.16, Janus 1.1.2, pubbot) and the extmap lines that once crashed both sides, then
/// mutated by byte and by field. Every input ends in a typed error or a result whose invariants
/// hold — never a trap (a trap ends the test process, and `scripts/test` with it).
@Suite struct HostileSDPTests {
    static let seeds = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
        "Fuzz/seeds")
    static let host = ICECandidate.host(STUNAddress(ip: [127, 0, 0, 1], port: 40_000))
    static let fingerprint = "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")

    /// The SDP seeds whose names start with `kind-` ("offer", "answer"), named without it.
    static func load(_ kind: String) throws -> [(String, String)] {
        let d = seeds.appendingPathComponent("sdp")
        return try FileManager.default.contentsOfDirectory(atPath: d.path).sorted().filter { $0.hasPrefix(kind + "-") }.map {
            (String($0.dropFirst(kind.count + 1)), try String(contentsOf: d.appendingPathComponent($0), encoding: .utf8))
        }
    }

    /// Field values that broke parsers elsewhere: empty, separators alone, signs, huge numbers,
    /// non-ASCII digits, a terminal escape.
    static let hostileFields = [
        "", "/", "//", "+1", "-1", "0", "15", "255", "256", "99999999999999999999", "1/", "/1", "١", "\u{1b}[2J", ":", " ", "~", ";;", ",,"
    ]

    struct Mutator {
        var state: UInt64
        mutating func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 17 }
        mutating func pick<T>(_ a: [T]) -> T { a[Int(next() % UInt64(a.count))] }

        /// One of: a byte changed, inserted or removed; a field of a line replaced by a hostile
        /// value; a line duplicated or dropped.
        mutating func mutate(_ text: String) -> String {
            var lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { l in
                String(Substring(l.last == UInt8(ascii: "\r") ? l.dropLast() : l))
            }
            guard !lines.isEmpty else { return text }
            for _ in 0..<(1 + Int(next() % 3)) {
                let i = Int(next() % UInt64(lines.count))
                switch next() % 5 {
                case 0:
                    var fields = lines[i].split(separator: " ", omittingEmptySubsequences: false).map(String.init)
                    let f = Int(next() % UInt64(fields.count))
                    // Keep the "a=name:" part sometimes, so the value behind it is what is hostile.
                    if let colon = fields[f].firstIndex(of: ":"), next() % 2 == 0 {
                        fields[f] = String(fields[f][...colon]) + pick(HostileSDPTests.hostileFields)
                    } else {
                        fields[f] = pick(HostileSDPTests.hostileFields)
                    }
                    lines[i] = fields.joined(separator: " ")
                case 1: lines.insert(lines[i], at: i)
                case 2: if lines.count > 1 { lines.remove(at: i) }
                default:
                    var b = Array(lines[i].utf8)
                    let at = b.isEmpty ? 0 : Int(next() % UInt64(b.count))
                    switch next() % 3 {
                    case 0 where !b.isEmpty: b[at] = UInt8(truncatingIfNeeded: next())
                    case 1: b.insert(pick(Array(":= /;,~0123456789\t".utf8)), at: at)
                    default: if !b.isEmpty { b.remove(at: at) }
                    }
                    lines[i] = String(decoding: b, as: UTF8.self)
                }
            }
            return lines.joined(separator: "\r\n")
        }
    }

    /// The endpoint side: ≥ 5 000 mutated offers.
    @Test func offersNeverTrapTheEndpoint() throws {
        let seeds = try Self.load("offer")
        #expect(seeds.count >= 7 && seeds.contains { $0.0.hasPrefix("chromium") } && seeds.contains { $0.0.hasPrefix("crash-") })
        var m = Mutator(state: 0x0FFE)
        var answered = 0, refused = 0
        for n in 0..<6_000 {
            let (name, seed) = seeds[n % seeds.count]
            let text = n < seeds.count ? seed : m.mutate(seed)
            do {
                let a = try WHIPAnswer.answer(
                    offer: text, iceUfrag: "lUfr", icePassword: "local-ice-password-0123", fingerprint: Self.fingerprint,
                    candidates: [Self.host], sessionID: 1)
                answered += 1
                for s in a.streams {
                    #expect(s.payloadType < 128 && s.extensions.values.allSatisfy { (1...14).contains($0) }, "\(name): \(s)")
                }
                #expect((try? SDPDocument.parse(a.sdp)) != nil, "\(name): the answer does not parse")
            } catch {
                refused += 1
                #expect(!error.description.isEmpty)
            }
        }
        print("offersNeverTrapTheEndpoint: \(answered) answered, \(refused) refused")
        #expect(answered > 1_000 && refused > 500, "answered \(answered), refused \(refused)")
    }

    /// The client side: ≥ 5 000 mutated answers, read for a publisher's and a subscriber's offer,
    /// then turned into what the publisher sends with (extension IDs, RTP header template).
    @Test func answersNeverTrapTheClient() throws {
        let seeds = try Self.load("answer")
        #expect(seeds.count >= 7 && seeds.contains { $0.0.hasPrefix("janus") } && seeds.contains { $0.0.hasPrefix("crash-") })
        var send = WHIPOffer(
            iceUfrag: "pUfr", icePassword: "publisher-ice-password-1", fingerprint: Self.fingerprint, candidates: [Self.host])
        var receive = send
        receive.direction = .receive
        send.audio = true
        var m = Mutator(state: 0xA25)
        var negotiated = 0, refused = 0
        for n in 0..<6_000 {
            let (name, seed) = seeds[n % seeds.count]
            let text = n < seeds.count ? seed : m.mutate(seed)
            for offer in [send, receive] {
                do {
                    let s = try NegotiatedSession.from(answer: text, offer: offer)
                    negotiated += 1
                    for st in [s.audio, s.video].compactMap({ $0 }) {
                        #expect(st.payloadType < 128 && st.mid.utf8.count <= 16, "\(name): \(st)")
                        let ids = RTPExtensionIDs(negotiated: st.extensions)
                        let t = RTPHeaderTemplate(
                            payloadType: st.payloadType, ssrc: 1,
                            strings: [ids.mid.map { ($0, "1") }, ids.rid.map { ($0, "f") }].compactMap { $0 },
                            transportSequence: ids.transportSequence != nil, absSendTime: ids.absSendTime != nil,
                            transportSequenceID: ids.transportSequence ?? 3, absSendTimeID: ids.absSendTime ?? 2)
                        #expect(t.bytes.count >= 12)
                    }
                } catch {
                    refused += 1
                }
            }
        }
        print("answersNeverTrapTheClient: \(negotiated) negotiated, \(refused) refused")
        #expect(negotiated > 1_000 && refused > 500, "negotiated \(negotiated), refused \(refused)")
    }

    /// The crash class itself: an extmap whose ID field is empty, `/`, signed or huge is ignored
    /// (that extension is not negotiated), on both sides.
    @Test func malformedExtmapIDsAreIgnored() throws {
        let offer = try #require(Self.load("offer").first { $0.0 == "pubbot-whip" }?.1)
        let answer = try #require(Self.load("answer").first { $0.0 == "janus112" }?.1)
        for id in ["", "/", "/sendonly", "+4", "-4", "4x", "99999999999999999999", "0", "256", "٤"] {
            let o = offer.replacingOccurrences(
                of: "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid", with: "a=extmap:\(id) urn:ietf:params:rtp-hdrext:sdes:mid")
            let a = try WHIPAnswer.answer(
                offer: o, iceUfrag: "lUfr", icePassword: "local-ice-password-0123", fingerprint: Self.fingerprint,
                candidates: [Self.host], sessionID: 1)
            #expect(a.streams.allSatisfy { $0.extensions["urn:ietf:params:rtp-hdrext:sdes:mid"] == nil }, "extmap:\(id)")
            let j = answer.replacingOccurrences(
                of: "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid", with: "a=extmap:\(id) urn:ietf:params:rtp-hdrext:sdes:mid")
            let n = try NegotiatedSession.from(
                answer: j,
                offer: WHIPOffer(
                    iceUfrag: "pUfr", icePassword: "publisher-ice-password-1",
                    fingerprint: Self.fingerprint, candidates: [Self.host]))
            let mid = n.video?.extensions["urn:ietf:params:rtp-hdrext:sdes:mid"]
            #expect(mid == nil || (1...255).contains(mid!), "extmap:\(id) → \(String(describing: mid))")
        }
        // The ID with a direction is still read (RFC 8285 §8: <value>["/"<direction>]).
        #expect(SDPDocument.extmapID("5/recvonly") == 5 && SDPDocument.extmapID("5") == 5 && SDPDocument.extmapID("/5") == nil)
    }
}
