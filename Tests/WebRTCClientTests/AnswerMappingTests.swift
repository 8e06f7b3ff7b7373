import Foundation
import Testing
import ICE
import MediaCodecs
import PublisherEngine
import Signalling
import WebRTCClient
import RTPCore
import Transport

/// What the answers real servers gave decide about the publisher (`PublisherConfig.applying`):
/// the recorded answers of Janus 1.1.2, aiortc 1.16, Chromium 156, pion 3.1.56 and pubbot's own
/// endpoint (Tests/Fuzz/seeds/sdp/answer-*), read against pubbot's simulcast offer.
@Suite struct AnswerMappingTests {
    static let seeds = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/seeds/sdp")

    static func negotiated(_ name: String) throws -> NegotiatedSession {
        let text = try String(contentsOf: seeds.appendingPathComponent("answer-" + name), encoding: .utf8)
        var offer = WHIPOffer(
            iceUfrag: "pUfr", icePassword: "publisher-ice-password-1",
            fingerprint: "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":"),
            candidates: [.host(STUNAddress(ip: [127, 0, 0, 1], port: 40_000))])
        offer.audio = true
        offer.rids = ["q", "h", "f"]
        return try NegotiatedSession.from(answer: text, offer: offer)
    }

    static func base() throws -> PublisherConfig {
        var c = PublisherConfig(destination: try SocketAddress(host: "127.0.0.1", port: 9), key: .random(suite: .gcm))
        c.layers = VideoLayerConfig.ladder(top: 1280, 720, layers: 3)
        return c
    }

    static func line(_ summary: [(String, String)], _ key: String) -> String? { summary.first { $0.0 == key }?.1 }

    /// Janus and pion keep all three layers and take transport-cc: simulcast with RIDs.
    @Test(arguments: ["janus112", "pion3156", "pubbot"])
    func simulcastIsKeptWhereTheAnswerKeepsIt(_ name: String) throws {
        let (c, summary) = try Self.base().applying(try Self.negotiated(name), oneEncoding: false)
        #expect(c.layers.count == 3 && !c.singleEncoding && c.sendRIDs, "\(name): \(summary)")
        #expect(c.sendAudio && c.sendVideo, "\(name): \(summary)")
        #expect(Self.line(summary, "simulcast")?.contains("q") == true, "\(name): \(summary)")
    }

    /// aiortc and Chromium (as answerers) refuse simulcast: one encoding that moves between the
    /// ladder's sizes; aiortc's answer has no transport-cc, only REMB.
    @Test(arguments: ["aiortc116", "chromium156"])
    func refusedSimulcastIsOneEncoding(_ name: String) throws {
        let (c, summary) = try Self.base().applying(try Self.negotiated(name), oneEncoding: false)
        #expect(c.singleEncoding && c.layers.count == 3, "\(name): \(summary)")
        #expect(Self.line(summary, "simulcast")?.hasPrefix("refused") == true, "\(name): \(summary)")
        if name.hasPrefix("aiortc") {
            #expect(c.feedback == .remb && c.videoExtensions.transportSequence == nil, "\(name): \(summary)")
        } else {
            #expect(c.feedback == .transportCC && c.videoExtensions.transportSequence != nil, "\(name): \(summary)")
        }
    }

    /// The payload types and extension IDs are the answer's own, whatever pubbot offered.
    @Test func theAnswersNumbersAreUsed() throws {
        let n = try Self.negotiated("janus112")
        let (c, _) = try Self.base().applying(n, oneEncoding: false)
        let v = try #require(n.video), a = try #require(n.audio)
        #expect(c.videoPayloadType == v.payloadType && c.audioPayloadType == a.payloadType)
        #expect(c.rtx == (v.rtxPayloadType != nil) && (v.rtxPayloadType.map { $0 == c.rtxPayloadType } ?? true))
        #expect(c.videoExtensions == RTPExtensionIDs(negotiated: v.extensions) || c.feedback != .transportCC)
    }
}
