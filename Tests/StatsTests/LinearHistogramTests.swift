import Testing
import Stats

@Suite struct LinearHistogramTests {
    @Test func theMeanIsExactAndAPercentileWithinHalfABin() {
        var h = LinearHistogram(binWidth: 0.05, top: 48)
        #expect(h.mean == nil && h.percentile(0.1) == nil)
        let values = (0..<1000).map { 30 + Double($0 % 97) * 0.13 }
        for v in values { h.add(v) }
        h.add(.infinity) // not a value: ignored
        #expect(h.count == 1000)
        #expect(abs(h.mean! - values.reduce(0, +) / 1000) < 1e-9)
        let sorted = values.sorted()
        for q in [0.1, 0.5, 0.9] {
            let exact = sorted[Int((q * 1000).rounded(.up)) - 1]
            #expect(abs(h.percentile(q)! - exact) <= 0.025 + 1e-9, "p\(Int(q * 100)): \(h.percentile(q)!) vs \(exact)")
        }
        h.add(60) // clamped to the top
        #expect(h.percentile(1) == 48)
    }
}
