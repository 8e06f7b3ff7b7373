/// VP8 temporal layering patterns (libwebrtc `default_temporal_layers.cc`): which TID each frame
/// gets, which reference buffers it may read and update, and whether it is a layer-sync frame.
struct TemporalPattern: Sendable {
    public struct Step: Sendable, Equatable {
        public var temporalID: UInt8
        var referenceLast: Bool, referenceGolden: Bool
        var updateLast: Bool, updateGolden: Bool
        /// Y bit: references only the base layer, so a receiver may switch up here.
        public var layerSync: Bool
    }

    public let layers: Int
    public let steps: [Step]
    /// Cumulative share of the layer bitrate per temporal layer (libwebrtc kLayerRateAllocation).
    let cumulativeRateShare: [Double]
    /// Frame-rate decimators per temporal layer (libvpx ts_rate_decimator).
    let decimators: [Int]

    public init(layers: Int) {
        self.layers = max(1, min(3, layers))
        switch self.layers {
        case 2:
            steps = [
                Step(temporalID: 0, referenceLast: true, referenceGolden: false, updateLast: true, updateGolden: false, layerSync: false),
                Step(temporalID: 1, referenceLast: true, referenceGolden: false, updateLast: false, updateGolden: false, layerSync: true)
            ]
            cumulativeRateShare = [0.6, 1.0]
            decimators = [2, 1]
        case 3:
            steps = [
                Step(temporalID: 0, referenceLast: true, referenceGolden: false, updateLast: true, updateGolden: false, layerSync: false),
                Step(temporalID: 2, referenceLast: true, referenceGolden: false, updateLast: false, updateGolden: false, layerSync: true),
                Step(temporalID: 1, referenceLast: true, referenceGolden: false, updateLast: false, updateGolden: true, layerSync: true),
                Step(temporalID: 2, referenceLast: true, referenceGolden: true, updateLast: false, updateGolden: false, layerSync: false)
            ]
            cumulativeRateShare = [0.4, 0.6, 1.0]
            decimators = [4, 2, 1]
        default:
            steps = [
                Step(temporalID: 0, referenceLast: true, referenceGolden: true, updateLast: true, updateGolden: true, layerSync: false)
            ]
            cumulativeRateShare = [1.0]
            decimators = [1]
        }
    }

    public func step(_ frameIndex: Int) -> Step { steps[frameIndex % steps.count] }
}
