import Testing
@testable import Stats

@Suite struct VitalsRecorderTests {
    @Test func customEntriesAreCappedTruncatedAndFlaggedNeverDropped() {
        var v = VitalsRecorder()
        v.log("early", .string("before the session"), wallMillis: 1) // no session: dropped, counted
        v.startSession()
        v.log("small", .object([("a", .int(1))]), wallMillis: 2)
        v.log("big", .string(String(repeating: "x", count: 5_000)), wallMillis: 3)
        let lines = v.flush().joined().split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].contains("\"name\":\"small\"") && lines[0].contains("\"truncated\":false"))
        #expect(lines[1].contains("\"name\":\"big\"") && lines[1].contains("\"truncated\":true"))
        #expect(lines[1].utf8.count < VitalsRecorder.maxEntryBytes + 200)
        #expect(v.entriesDropped == 1 && v.entriesTruncated == 1)
    }

    @Test func flushesInChunksOfAtMost64KB() {
        var v = VitalsRecorder()
        v.startSession()
        for i in 0..<2_000 { v.add(.init(wallMillis: Int64(i), cpuPercent: 12.5, rssBytes: 50_000_000 + i)) }
        let chunks = v.flush()
        #expect(chunks.count > 1)
        #expect(chunks.allSatisfy { $0.utf8.count <= VitalsRecorder.maxChunkBytes })
        #expect(chunks.joined().split(separator: "\n").count == 2_000) // nothing lost or split
        #expect(v.flush().isEmpty)
        let summary = v.summary(wallMillis: 9).serialized()
        #expect(summary.contains("\"samples\":2000") && summary.contains("\"rssBytesMax\":50001999"))
    }

    @Test func urlsLoseTheirQueryUnlessAsked() {
        var v = VitalsRecorder()
        #expect(v.recordable(url: "https://x.example/a/b?token=SECRET&x=1") == "https://x.example/a/b")
        #expect(v.recordable(url: "https://x.example/a#frag") == "https://x.example/a")
        v.keepURLQueries = true
        #expect(v.recordable(url: "https://x.example/a?t=1") == "https://x.example/a?t=1")
    }

    @Test func remoteSettingsCanOnlyLowerTheRate() {
        var v = VitalsRecorder(intervalMicros: 1_000_000)
        v.applyRemote(intervalMicros: 500_000)
        #expect(v.intervalMicros == 1_000_000) // a faster remote rate does not raise ours
        v.applyRemote(intervalMicros: 5_000_000)
        #expect(v.intervalMicros == 5_000_000)
    }
}
