public import Synchronization
public import ICE

/// The few values that cross into the media loop while it runs: stop, key-frame requests and
/// per-layer target bitrates.
public final class PublisherControl: Sendable {
    let stopFlag = Atomic<Bool>(false)
    let keyFrameRequests = Atomic<UInt64>(0)
    let targets: Mutex<[Int]>
    public let targetGeneration = Atomic<Int>(0)

    public init(layerTargets: [Int]) { targets = Mutex(layerTargets) }

    public var stopRequested: Bool { stopFlag.load(ordering: .acquiring) }
    public func requestStop() { stopFlag.store(true, ordering: .releasing) }

    public func requestKeyFrame(layer: Int) {
        guard layer >= 0 && layer < 64 else { return }
        keyFrameRequests.bitwiseOr(1 << UInt64(layer), ordering: .relaxed)
    }

    /// Takes and clears the pending key-frame requests (bit i = layer i).
    public func takeKeyFrameRequests() -> UInt64 { keyFrameRequests.exchange(0, ordering: .relaxed) }

    public func setTargetBitrate(layer: Int, bps: Int) {
        targets.withLock { t in if layer >= 0 && layer < t.count { t[layer] = bps } }
        targetGeneration.add(1, ordering: .releasing)
    }

    public func currentTargets() -> [Int] { targets.withLock { $0 } }

    /// An ICE restart the server answered (RFC 9725 §4.3.3), for the network loop to apply.
    public struct ICERestart: Sendable {
        public var local: ICEAgent.Credentials
        public var remote: ICEAgent.Credentials
        public var remoteCandidates: [ICECandidate]
        /// This side's candidates anew, when the restart is for an interface change (nil: the
        /// same as before).
        public var localCandidates: [ICECandidate]?
        public init(
            local: ICEAgent.Credentials, remote: ICEAgent.Credentials, remoteCandidates: [ICECandidate],
            localCandidates: [ICECandidate]? = nil
        ) {
            self.local = local
            self.remote = remote
            self.remoteCandidates = remoteCandidates
            self.localCandidates = localCandidates
        }
    }
    let iceRestart = Mutex<ICERestart?>(nil)

    /// Hands a restart to the network loop (the last one asked wins: RFC 9725 §4.3.3, a client
    /// applies only the answer to its last request).
    public func requestICERestart(_ r: ICERestart) { iceRestart.withLock { $0 = r } }
    func takeICERestart() -> ICERestart? {
        iceRestart.withLock { r in
            defer { r = nil }; return r
        }
    }
}
