public import Stats

/// What a publisher has done so far (copied out of its loops).
public struct PublisherSnapshot: Sendable, Equatable {
    public var streams: [OutboundStreamStats]
    public var media: MediaCounters
    public var network: NetworkCounters
    public var elapsedMicros: Int64
    public var mailboxDrops: Int

    public init(streams: [OutboundStreamStats], media: MediaCounters, network: NetworkCounters, elapsedMicros: Int64, mailboxDrops: Int = 0)
    {
        self.streams = streams
        self.media = media
        self.network = network
        self.elapsedMicros = elapsedMicros
        self.mailboxDrops = mailboxDrops
    }
}

/// Counters the media thread publishes.
public struct MediaCounters: Sendable, Equatable {
    public var framesEncoded: [Int]
    public var keyFramesEncoded: [Int]
    /// CPU time (this thread's clock) spent in the VP8 encoder per layer, in the Opus encoder,
    /// and drawing the synthetic pictures.
    public var encodeMicros: [Int64]
    public var drawMicros: Int64 = 0
    public var audioFramesEncoded = 0
    public var audioEncodeMicros: Int64 = 0
    /// Audio frames never captured: the audio thread woke over 200 ms after they were due.
    public var audioFramesSkipped = 0
    /// Frames whose capture tick was skipped because encoding ran late (all layers, and per layer).
    public var framesSkipped = 0
    public var lateFrames: [Int]
    /// Top layers held back because the encoders could not keep up (`CPUAdaptation`), or, with
    /// one encoding, the steps its resolution went down (`ResolutionSteps`); and how often
    /// either changed (W3C qualityLimitationResolutionChanges).
    public var cpuLayersHeld = 0
    public var cpuResolutionSteps = 0
    public var cpuResolutionChanges = 0
    public var error: String?

    public init(layers: Int) {
        framesEncoded = Array(repeating: 0, count: layers)
        keyFramesEncoded = Array(repeating: 0, count: layers)
        encodeMicros = Array(repeating: 0, count: layers)
        lateFrames = Array(repeating: 0, count: layers)
    }
}
