import PublisherEngine
import Platform
import Transport
import MediaCodecs
import Stats
import WebRTC
import RTPCore
import WebRTCClient

/// A replay bot: a PublisherSession driven by its fleet loop, and a cursor per layer into the replay
/// loops. It still reacts: a PLI jumps the layer to its next key frame, the allocator suspends
/// and resumes layers (resuming on a key frame).
final class ReplayBot {
    let slot: Int
    let control: PublisherControl
    let network: PublisherSession
    let io: SessionSocket
    let published: Locked<([OutboundStreamStats], NetworkCounters)>
    var nextPublish: Int64 = 0
    let library: ReplayLibrary
    let live: SharedEncoder?
    /// Live mode: the next frame number to take per layer and for audio, and the layers'
    /// suspend/key-frame state (a layer starts, and resumes, on a key frame).
    var liveNext: [Int] = []
    var liveAudioNext = 0
    var liveGate: LayerGate
    /// Replay mode: the loops, their cursors and the layers' suspend/key-frame state.
    var replay: ReplayCursor
    var nextVideo: [Int64]
    var audioIndex: UInt32 = 0
    var nextAudio: Int64
    var seenGeneration = 0
    var nextWake: Int64 = 0
    /// When the bot's session was last stepped (its datagrams are never handed it earlier).
    var lastTurn: Int64 = 0
    var done = false
    var liveKeyFramesSent = 0
    /// WHIP: the session to DELETE when the bot is done.
    let whip: WHIPConnection?
    /// When the bot started, and how many of the fleet's ICE restarts it has asked for.
    var startedAt: Int64 = 0
    var restartsAsked = 0
    /// The interfaces as they are after a change, for the bot's next turn to look at (its
    /// `WHIPConnection.interfaceChange`).
    var interfacesChanged: [LocalInterface]?
    /// `--ice-recover-after`: the bot's consent watch, and when it looks next.
    var recovery: ICERecoveryPolicy?
    var nextRecoveryCheck: Int64 = 0
    var keyFramesSent: Int { live == nil ? replay.keyFramesSent : liveKeyFramesSent }

    init(
        slot: Int, config: PublisherConfig, library: ReplayLibrary, live: SharedEncoder? = nil,
        published: Locked<([OutboundStreamStats], NetworkCounters)>, startMicros: Int64, whip: WHIPConnection? = nil
    ) throws(EngineSetupError) {
        self.slot = slot
        self.whip = whip
        startedAt = startMicros
        let config = whip?.config ?? config
        self.library = library
        self.live = live
        self.published = published
        let plan = StreamPlan(config: config)
        control = PublisherControl(layerTargets: config.layers.map(\.targetBitrate))
        let socket: UDPSocket
        if let w = whip {
            socket = w.socket
        } else {
            do { socket = try UDPSocket(for: config.destination) } catch { throw .socket(error) }
        }
        // The kernel's arrival time of each datagram: the loop reads a bot's feedback on the
        // bot's turn, after the bots before it, and the round trips the bot works out from
        // reports and transport-cc must not include that wait (100 bots into pubbot's endpoint:
        // RTT p50 0.14–0.15 ms read at the turn, 0.08 ms at arrival; ping 0.04 ms).
        try? socket.enableArrivalTimestamps()
        // Each bot's emulated uplink has its own seed: their random losses do not line up.
        io = SessionSocket(
            socket, tcp: whip?.turnTCP,
            uplink: config.uplinkImpairment.map { UplinkEmulator(schedule: $0, seed: UInt64(slot) &+ 1, startMicros: startMicros) })
        do {
            network = try PublisherSession(
                config: config, plan: plan, startMicros: startMicros,
                wallOffsetMicros: Clock.wallMicros() - Clock.monotonicMicros(),
                webrtc: whip.map { ($0.transport, $0.sessionLocal) })
        } catch { throw .srtp(error) }
        let n = config.sendVideo ? min(config.layers.count, live?.layers.count ?? library.layers.count) : 0
        liveGate = LayerGate(layers: live == nil ? 0 : n)
        if let live {
            liveNext = (0..<n).map { live.videoFrames(layer: $0, from: .max).1 }
            liveAudioNext = live.audioFrames(from: .max).1
            for i in 0..<n { liveGate.requestKeyFrame(layer: i); live.requestKeyFrame(layer: i) }
        }
        // Bots start at different points of the loop, so a fleet's key frames do not line up.
        replay = ReplayCursor(library: library, layers: live == nil ? n : 0, offset: slot * 7)
        nextVideo = Array(repeating: startMicros, count: n)
        nextAudio = config.sendAudio && !library.audio.isEmpty ? startMicros : .max
        network.begin(now: startMicros)
        network.exchange(with: control)
        io.flush(network)
    }

    /// Live mode: hands over what the shared encoder made since the last turn. The encoder is
    /// shared, so a layer waiting for a key frame asks it for one and skips frames until it comes.
    func liveTick(_ live: SharedEncoder, now: Int64) -> Int64 {
        let gen = control.targetGeneration.load(ordering: .acquiring)
        if gen != seenGeneration {
            seenGeneration = gen
            for (i, t) in control.currentTargets().enumerated() where i < liveNext.count {
                let wasSuspended = liveGate.suspended[i]
                if liveGate.setTarget(layer: i, bitrate: t) && wasSuspended { live.requestKeyFrame(layer: i) }
            }
        }
        // A PLI: the shared encoder's next frame on that layer is a key frame (throttled there).
        let requests = control.takeKeyFrameRequests()
        for i in liveNext.indices where requests & (1 << UInt64(i)) != 0 { live.requestKeyFrame(layer: i) }
        if network.config.sendAudio {
            let (frames, next) = live.audioFrames(from: liveAudioNext)
            liveAudioNext = next
            for f in frames { network.sendAudio(f) }
        }
        for i in liveNext.indices {
            let (frames, next) = live.videoFrames(layer: i, from: liveNext[i])
            liveNext[i] = next
            for f in frames {
                switch liveGate.admit(layer: i) {
                case .skip: continue
                case .keyFrame where !f.isKeyFrame: liveGate.keyFrameMissed(layer: i); continue // a decoder could not use it
                case .keyFrame, .any: break
                }
                if f.isKeyFrame { liveKeyFramesSent += 1 }
                network.sendVideo(f)
            }
        }
        return now + 5_000
    }

    /// Hands the frames due by `now` to the network loop; returns when the next one is due.
    func mediaTick(now: Int64) -> Int64 {
        if let live { return liveTick(live, now: now) }
        let gen = control.targetGeneration.load(ordering: .acquiring)
        if gen != seenGeneration {
            seenGeneration = gen
            for (i, t) in control.currentTargets().enumerated() { replay.gate.setTarget(layer: i, bitrate: t) }
        }
        let keyFrames = control.takeKeyFrameRequests()
        if keyFrames != 0 { replay.gate.requestKeyFrames(keyFrames) } // almost every turn has none
        while now >= nextAudio {
            let bytes = library.audio[Int(audioIndex) % library.audio.count]
            network.sendAudio(EncodedAudioFrame(bytes: bytes, frameNumber: audioIndex, captureMicros: nextAudio))
            audioIndex &+= 1
            nextAudio += 20_000
            if now - nextAudio > 200_000 { nextAudio = now } // far behind: skip rather than burst
        }
        var wake = nextAudio
        for i in nextVideo.indices {
            let layer = library.layers[i]
            let interval = Int64(1_000_000 / max(1, layer.config.fps))
            if now >= nextVideo[i] {
                if let f = replay.frame(layer: i, captureMicros: nextVideo[i]) { network.sendVideo(f) }
                nextVideo[i] += interval
                while nextVideo[i] + interval <= now { nextVideo[i] += interval } // a late loop skips ticks
            }
            wake = min(wake, nextVideo[i])
        }
        return wake
    }
}
