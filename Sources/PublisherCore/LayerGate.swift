public import MediaCodecs

/// What each layer's media source must do after the session's requests, with one copy of the
/// rules for every source (the live encoders, fleet replay bots, the simulation's feeders): a
/// layer whose target is 0 is suspended and sends nothing; a resumed layer starts again on a key
/// frame; a key-frame request (PLI/FIR) is answered by the layer's next frame, and stays pending
/// if that frame is not a key frame after all (an encoder dropped it).
public struct LayerGate: Sendable {
    /// What the frame due now on a layer should be.
    public enum Admission: Sendable, Equatable {
        /// The layer is suspended: send nothing.
        case skip
        /// A key frame (asked for, or the layer resumed).
        case keyFrame
        case any
    }

    public private(set) var suspended: [Bool]
    var keyFrameWanted: [Bool]

    public init(layers: Int) {
        suspended = Array(repeating: false, count: layers)
        keyFrameWanted = Array(repeating: false, count: layers)
    }

    /// A layer's new target: 0 suspends it; a target for a suspended layer resumes it on a key
    /// frame. Returns true when the layer runs (its encoder should take the target).
    @discardableResult
    public mutating func setTarget(layer: Int, bitrate: Int) -> Bool {
        guard layer < suspended.count else { return false }
        if bitrate <= 0 { suspended[layer] = true; return false }
        if suspended[layer] { suspended[layer] = false; keyFrameWanted[layer] = true }
        return true
    }

    public mutating func requestKeyFrame(layer: Int) {
        if layer < keyFrameWanted.count { keyFrameWanted[layer] = true }
    }

    /// Key-frame requests as a bitmask (bit i = layer i), as `PublisherControl` collects them.
    public mutating func requestKeyFrames(_ mask: UInt64) {
        for i in keyFrameWanted.indices where mask & (1 << UInt64(i)) != 0 { keyFrameWanted[i] = true }
    }

    /// A session event: a layer's target or a key-frame request. Returns the target an encoder
    /// should take when the event was a target for a running layer.
    public mutating func apply(_ event: PublisherSessionEvent) -> (layer: Int, bitrate: Int)? {
        switch event {
        case let .keyFrameRequest(layer):
            requestKeyFrame(layer: layer)
            return nil
        case let .layerTarget(layer, bitrate):
            return setTarget(layer: layer, bitrate: bitrate) ? (layer, bitrate) : nil
        }
    }

    /// For the frame due now on `layer`: skip it, or send it — as a key frame if one is wanted
    /// (the request is taken; hand it back with `keyFrameMissed` if no key frame came out).
    public mutating func admit(layer: Int) -> Admission {
        guard layer < suspended.count, !suspended[layer] else { return .skip }
        guard keyFrameWanted[layer] else { return .any }
        keyFrameWanted[layer] = false
        return .keyFrame
    }

    public mutating func keyFrameMissed(layer: Int) {
        if layer < keyFrameWanted.count { keyFrameWanted[layer] = true }
    }
}

/// Replay loops as a media source (fleet bots, simulations): each layer steps through its loop;
/// a wanted key frame jumps to the layer's next one; a suspended layer sends nothing.
public struct ReplayCursor: Sendable {
    public let library: ReplayLibrary
    public var gate: LayerGate
    var position: [Int]
    var frameCount: [UInt32]
    public private(set) var keyFramesSent = 0

    /// `layers`: how many of the library's layers to send; `offset` staggers the starting
    /// point (bots of a fleet start at different places so their key frames do not line up).
    public init(library: ReplayLibrary, layers: Int, offset: Int = 0) {
        self.library = library
        gate = LayerGate(layers: layers)
        position = (0..<layers).map { i in
            let frames = library.layers[i].frames.count
            return library.layers[i].keyFrame(atOrAfter: frames > 0 ? offset % frames : 0)
        }
        frameCount = Array(repeating: 0, count: layers)
    }

    /// The frame layer `i` sends at `captureMicros`, or nil (suspended, empty loop).
    public mutating func frame(layer i: Int, captureMicros: Int64) -> EncodedVideoFrame? {
        let layer = library.layers[i]
        guard !layer.frames.isEmpty else { return nil }
        switch gate.admit(layer: i) {
        case .skip: return nil
        case .keyFrame: if !layer.frames[position[i]].isKeyFrame { position[i] = layer.keyFrame(atOrAfter: position[i]) }
        case .any: break
        }
        let f = layer.frames[position[i]]
        if f.isKeyFrame { keyFramesSent += 1 }
        position[i] = (position[i] + 1) % layer.frames.count
        defer { frameCount[i] &+= 1 }
        return EncodedVideoFrame(
            layer: i, bytes: f.bytes, isKeyFrame: f.isKeyFrame, width: layer.config.width, height: layer.config.height,
            frameNumber: frameCount[i], captureMicros: captureMicros, temporalID: nil, layerSync: false, encodeMicros: 0)
    }
}
