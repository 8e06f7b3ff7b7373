import Testing
import Stats

@Suite struct HistogramTests {
    @Test func percentilesAreWithinABucketOfTheTrueValue() {
        var h = Histogram()
        for v in 1...1000 { h.add(Double(v) * 1000) }
        for (p, truth) in [(0.5, 500_000.0), (0.95, 950_000.0), (0.99, 990_000.0), (0.05, 50_000.0)] {
            let got = h.percentile(p)!
            #expect(abs(got - truth) / truth < 0.021, "p\(p): \(got) vs \(truth)")
        }
        #expect(h.count == 1000 && h.min == 1000 && h.max == 1_000_000)
        var zeros = Histogram()
        for _ in 0..<9 { zeros.add(0) }
        zeros.add(0.03)
        #expect(zeros.percentile(0.5) == 0)
        #expect(abs(zeros.percentile(0.99)! - 0.03) < 0.001)
    }

    /// Shards merge exactly: the merged histogram is the one a single process would have built.
    @Test func mergingShardsEqualsOneHistogramOfEverything() {
        var rng = SystemRandomNumberGenerator()
        var all = Histogram(), a = Histogram(), b = Histogram()
        for i in 0..<5_000 {
            let v = Double.random(in: 0...5e6, using: &rng)
            all.add(v)
            if i % 3 == 0 { a.add(v) } else { b.add(v) }
        }
        var merged = a
        merged.merge(b)
        #expect(merged.buckets == all.buckets && merged.count == all.count && merged.min == all.min && merged.max == all.max)
        for p in [0.05, 0.5, 0.95, 0.99] { #expect(merged.percentile(p) == all.percentile(p)) }
    }

    @Test func jsonRoundTripAndDamagedHistogramsAreRefused() throws {
        var h = Histogram()
        for v in [0.0, 0.5, 12, 12.1, 3_000_000] { h.add(v) }
        let back = try #require(Histogram(json: try JSONValue.parse(h.json.serialized())))
        #expect(back.buckets == h.buckets && back.count == h.count)
        #expect(Histogram(json: try JSONValue.parse(#"{"count":3,"sum":1,"min":0,"max":1,"buckets":[[1,1]]}"#)) == nil) // counts disagree
        #expect(Histogram(json: try JSONValue.parse(#"{"count":1,"sum":1,"buckets":[["x",1]]}"#)) == nil)
    }
}

@Suite struct JSONParserTests {
    @Test func parsesWhatTheSerializerWrites() throws {
        let v = JSONValue.object([
            ("a", .int(-3)), ("b", .double(1.5)), ("c", .string("q\"\\\n\u{1}é")), ("d", .array([.null, .bool(true), .bool(false)])),
            ("e", .object([]))
        ])
        #expect(try JSONValue.parse(v.serialized(pretty: true)) == v)
        #expect(try JSONValue.parse(" [1e3, -0.25, \"\\u00e9\"] ") == .array([.double(1000), .double(-0.25), .string("é")]))
    }

    @Test func refusesBrokenInputWithAPosition() {
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "tru", "\"abc", "[1] x", "01x", "{\"a\":-}", String(repeating: "[", count: 100)] {
            #expect(throws: JSONValue.ParseError.self, "\(bad)") { try JSONValue.parse(bad) }
        }
    }
}
