import Testing
import Foundation
@testable import BotCLI
import PublisherEngine
import ReceiverEngine
import Transport
import MediaCodecs
import Impairment
import Platform

/// networkDegradationSource by definition: loss on the publisher's uplink only → remote; on the
/// subscriber's downlink only → local; on both → bothOrUnclear (issue #4 item 8).
@Suite struct DegradationSourceTests {
    @Test(arguments: [("uplink", "remote"), ("downlink", "local"), ("both", "bothOrUnclear")])
    func attributesLossToTheRightLeg(_ where_: String, _ expected: String) throws {
        let key = SRTPKey.random(suite: .aesCm)
        var rc = ReceiverConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0), key: key)
        if where_ != "downlink" { rc.impairment = try ImpairmentSchedule.parse("loss=10%") }
        if where_ != "uplink" { rc.downlinkImpairment = try ImpairmentSchedule.parse("loss=10%") }
        let r = try ReceiverEngine(config: rc)
        var c = PublisherConfig(destination: r.localAddress, layers: VideoLayerConfig.ladder(top: 640, 360, layers: 2), key: key)
        c.durationMicros = 6_000_000
        c.senderStats = true
        let p = try Publisher(config: c)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pubbot-sub-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try #require(JSONLinesWriter(target: path))
        let stream = SubscriberStatsStream(writer)
        r.start(); p.start()
        while !p.control.stopRequested {
            Clock.sleep(micros: 1_000_000)
            stream.emit(r.snapshot())
        }
        p.wait(); r.stop(); r.wait()
        let sources = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap { line -> String? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                o["type"] as? String == "subscriberMediaLinkStats"
            else { return nil }
            return ((o["stats"] as? [[String: Any]])?.first?["networkDegradationSource"]) as? String
        }
        // Once both sides have scored a few seconds of loss (after the start-up ramp), the blame is settled.
        let settled = Array(sources.suffix(2))
        #expect(settled.count == 2 && settled.allSatisfy { $0 == expected }, "\(where_): \(sources)")
    }
}
