/// One encoded video frame of one simulcast layer, with what the packetizer and stats need.
public struct EncodedVideoFrame: Sendable {
    public var layer: Int
    public var bytes: [UInt8]
    public var isKeyFrame: Bool
    public var width: Int
    public var height: Int
    /// Frame index in the layer's sequence (drives the 90 kHz RTP timestamp).
    public var frameNumber: UInt32
    /// Capture time, monotonic microseconds.
    public var captureMicros: Int64
    /// Temporal layer id and sync flag when temporal layering is on.
    public var temporalID: UInt8?
    public var layerSync: Bool
    /// Time the encoder spent on this frame, microseconds (for cpu limitation and benchmarks).
    public var encodeMicros: Int64
    /// VP9: how many frames back each frame this one references is (P_DIFF, RFC 9628 §4.2);
    /// empty for a key frame and for the other codecs.
    public var referenceDistances: [UInt8]
    /// VP9 spatial layers (L2T*_KEY, L3T*_KEY): `bytes` is each spatial layer's frame in turn,
    /// lowest first, and this says how long each is and its picture size; empty with one layer.
    public var spatialLayers: [SpatialLayerFrame] = []

    /// One spatial layer's frame within a picture.
    public struct SpatialLayerFrame: Sendable, Equatable {
        public var size: Int
        public var width: Int
        public var height: Int

        public init(size: Int, width: Int, height: Int) {
            self.size = size
            self.width = width
            self.height = height
        }
    }

    public init(
        layer: Int, bytes: [UInt8], isKeyFrame: Bool, width: Int, height: Int, frameNumber: UInt32,
        captureMicros: Int64, temporalID: UInt8?, layerSync: Bool, encodeMicros: Int64, referenceDistances: [UInt8] = []
    ) {
        self.layer = layer
        self.bytes = bytes
        self.isKeyFrame = isKeyFrame
        self.width = width
        self.height = height
        self.frameNumber = frameNumber
        self.captureMicros = captureMicros
        self.temporalID = temporalID
        self.layerSync = layerSync
        self.encodeMicros = encodeMicros
        self.referenceDistances = referenceDistances
    }
}

/// One encoded 20 ms Opus frame.
public struct EncodedAudioFrame: Sendable {
    public var bytes: [UInt8]
    /// Index of the 20 ms frame (drives the 48 kHz RTP timestamp).
    public var frameNumber: UInt32
    public var captureMicros: Int64

    public init(bytes: [UInt8], frameNumber: UInt32, captureMicros: Int64) {
        self.bytes = bytes
        self.frameNumber = frameNumber
        self.captureMicros = captureMicros
    }
}
