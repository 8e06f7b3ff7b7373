public import PublisherEngine
public import Signalling
import RTPCore

extension PublisherConfig {
    /// What a WHIP answer decided, applied to the publisher's configuration — its payload types,
    /// header-extension IDs, RTX, simulcast (the layers the answer's `a=simulcast` kept, or one
    /// encoding when it kept fewer than two), and the congestion control its feedback allows
    /// (transport-cc, else REMB, else loss only) — with the summary lines `publish` prints. Pure:
    /// unit-tested with the answers Janus, aiortc, Chromium, pion and pubbot gave.
    /// `oneEncoding`: the offer had one layer and no RIDs (as a browser's).
    public func applying(_ n: NegotiatedSession, oneEncoding: Bool) -> (PublisherConfig, [(String, String)]) {
        var c = self
        let base = self
        var summary: [(String, String)] = []
        c.sendAudio = base.sendAudio && n.audio != nil
        c.sendVideo = base.sendVideo && n.video != nil
        if let a = n.audio {
            c.audioPayloadType = a.payloadType
            c.audioExtensions = RTPExtensionIDs(negotiated: a.extensions)
            summary.append(("audio", "opus/\(a.payloadType)"))
        } else if base.sendAudio {
            summary.append(("audio", "rejected by the answer"))
        }
        if let v = n.video {
            c.videoCodec = v.codec ?? .vp8
            c.videoPayloadType = v.payloadType
            c.videoExtensions = RTPExtensionIDs(negotiated: v.extensions)
            // The Dependency Descriptor goes with AV1, in two-byte headers the answer must allow.
            if c.videoCodec != .av1 || !n.extmapAllowMixed { c.videoExtensions.dependencyDescriptor = nil }
            c.rtx = v.rtxPayloadType != nil
            if let r = v.rtxPayloadType { c.rtxPayloadType = r }
            let accepted = v.simulcast ?? []
            if accepted.count >= 2 {
                c.layers = base.layers.filter { accepted.contains($0.rid) }
                summary.append(("simulcast", accepted.joined(separator: ";")))
            } else if oneEncoding {
                c.singleEncoding = true
                c.sendRIDs = false
                summary.append(("simulcast", "off: one encoding, \(base.layers[0].height)p (a=ssrc \(videoSSRC.map(String.init) ?? "-")))"))
            } else {
                // Simulcast refused: one RTP stream carrying the best layer the estimate allows.
                c.layers = base.layers
                c.singleEncoding = true
                c.sendRIDs = accepted.count == 1
                summary.append(
                    (
                        "simulcast",
                        "refused: one encoding, the best of \(base.layers.map { "\($0.height)p" }.joined(separator: "/")) the estimate carries"
                    ))
            }
            summary.append(
                (
                    "video",
                    "\(c.videoCodec.sdpName)/\(v.payloadType)" + (v.rtxPayloadType.map { " rtx/\($0)" } ?? " no rtx")
                        + (c.videoExtensions.dependencyDescriptor.map { ", dependency descriptor \($0)" } ?? "")
                ))
        } else if base.sendVideo {
            summary.append(("video", "rejected by the answer"))
        }
        let streams = [n.audio, n.video].compactMap { $0 }
        let transportCC =
            streams.contains(where: \.transportCC)
            && (c.videoExtensions.transportSequence != nil || c.audioExtensions.transportSequence != nil)
        if transportCC {
            c.feedback = .transportCC
        } else {
            // Without transport-cc the packets carry no transport-wide sequence numbers.
            c.audioExtensions.transportSequence = nil
            c.videoExtensions.transportSequence = nil
            c.feedback = streams.contains(where: \.remb) ? .remb : .lossOnly
        }
        summary.append(("congestionControl", c.feedback.rawValue))
        summary.append(("iceLite", n.iceLite ? "yes" : "no"))
        return (c, summary)
    }
}
