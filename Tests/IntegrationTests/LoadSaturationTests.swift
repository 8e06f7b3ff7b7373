import Foundation
import Testing

/// pubbot overloaded on purpose says that it is the bottleneck: more decoding than one receive
/// thread can do (`load --decode`, every bot's video decoded by the embedded receiver) makes
/// its drivers run their timed work far behind; the report names the driver and the figures it
/// spoils, and `--require` fails for that reason rather than blaming the network. Runs apart
/// from the real-time interop tests (scripts/test), whose CPU it takes for a few seconds.
@Suite(.serialized) struct LoadSaturationTests {
    let bin = BinaryTests()

    @Test func anOverloadedPubbotSaysItIsTheBottleneck() throws {
        let media = NSTemporaryDirectory() + "pubbot-saturation-media-\(getpid())"
        if !FileManager.default.fileExists(atPath: media + "/manifest.txt") {
            let built = try bin.run(["media", "build", "--out", media, "--seconds", "2"])
            try #require(built.code == 0, "\(built.err)")
        }
        let path = NSTemporaryDirectory() + "load-saturated-\(getpid()).json"
        let r = try bin.run([
            "load", "--media", media, "--bots", "80", "--decode", "--duration", "7s", "--ramp", "1s", "--report", path,
            "--require", "loss<100%"
        ])
        #expect(r.code == 1, "\(r.out)\(r.err)")
        #expect(r.out.contains("SATURATED: pubbot was the bottleneck"), "\(r.out)")
        #expect(r.out.contains("require: not judged — pubbot itself was saturated"), "\(r.out)")
        let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        let cost = try #require(doc["cost"] as? [String: Any])
        let lag = try #require(cost["driverLagMs"] as? [String: Any])
        #expect((lag["p99"] as? Double ?? 0) > 50, "\(lag)")
        let saturated = try #require(cost["saturated"] as? [String: Any], "\(cost)")
        #expect((saturated["untrustworthy"] as? [String] ?? []).contains("latency"))
        // The loss requirement itself was met: the verdict is pubbot's saturation, not the link.
        #expect((doc["requirements"] as! [[String: Any]]).allSatisfy { $0["met"] as? Bool == true })
    }
}
