import HTTPSignaling
import ReceiverEngine
import WebRTCClient
import Transport
import DTLS
import RTPCore
import ICE
import Stats
import Platform

/// A WHEP subscriber: the receiver on a socket bound toward the server, the subscription
/// offered from it, the transport added once the receive thread runs.
enum WHEPReceiver {
    /// A subscriber's receiver: every stream decoded (its address is set by `open`, its keys by DTLS).
    static var defaultConfig: ReceiverConfig {
        var rc = ReceiverConfig(listen: SocketAddress(STUNAddress(ip: [0, 0, 0, 0], port: 0))!, key: .random(suite: .gcm))
        rc.decodedPublishers = Int.max
        return rc
    }

    /// `config`'s listen address is replaced by the one routed toward the server.
    static func open(_ options: WHIPOptions, config: ReceiverConfig = defaultConfig) throws(WHIPConnectError) -> (
        ReceiverEngine, WHEPSubscription
    ) {
        // A host candidate per usable interface and family, as the publisher offers (`HostPlan`).
        let plan = try WHIPConnection.hostPlan(options)
        var rc = config
        rc.listen = plan.bind
        rc.maxPublishers = 1
        let certificate: DTLSCertificate
        do { certificate = try DTLSCertificate() } catch { throw WHIPConnectError("\(error)") }
        // The receive socket, bound now: STUN and TURN servers (--ice-server, and those the 201
        // announces) are asked from it by the subscription, as the publisher does.
        let (socket, hosts): (UDPSocket, [ICECandidate])
        do { (socket, hosts) = try plan.openSocket(receiveBuffer: 32 << 20) } catch {
            throw WHIPConnectError("cannot open the receive socket on \(plan.bind): \(error)")
        }
        let base = hosts[0].address
        rc.webrtc = WebRTCListenConfig(certificate: certificate, locals: hosts.map(\.address))
        let receiver: ReceiverEngine
        do { receiver = try ReceiverEngine(config: rc, socket: socket) } catch { throw WHIPConnectError("\(error)") }
        let subscription = try WHEPSubscription.open(
            options, local: base, hosts: hosts, plan: plan, certificate: certificate, socket: socket, sleep: { Clock.sleep(micros: $0) })
        receiver.start()
        receiver.addPublisher(subscription.spec)
        return (receiver, subscription)
    }
}

/// The subscriber half of `preflight --whip URL --whep URL`: pubbot subscribes to itself
/// through the server (as opentok-network-test does with a routed session) once its publisher
/// is connected, and reports what arrived — resolution, frame rate, freezes, glass-to-glass
/// latency, layer changes the server made.
final class WHEPProbe: @unchecked Sendable {
    struct Result {
        var snapshot: ReceiverSnapshot?
        var subscription: WHEPSubscription?
        var error: String?
        /// The subscribing leg's paths, each tried on its own (`WHEPConnectivity`).
        var connectivity: [PathResult] = []
    }

    let options: WHIPOptions
    let state = Locked<
        (receiver: ReceiverEngine?, subscription: WHEPSubscription?, error: String?, stopped: Bool, connectivity: [PathResult])
    >((nil, nil, nil, false, []))
    let thread = Locked<JoinableThread?>(nil)

    init(_ options: WHIPOptions) { self.options = options }

    /// Subscribes after `delayMicros` (the publisher's media has reached the server), on a
    /// thread of its own (the HTTP exchange blocks); then, beside that subscription, tries each
    /// path of the subscribing leg on its own (while the server has a publisher to serve).
    func start(delayMicros: Int64) {
        let options = self.options, state = self.state
        thread.value = JoinableThread(name: "pubbot-whep") {
            let until = Clock.monotonicMicros() + delayMicros
            while Clock.monotonicMicros() < until && !state.value.stopped { Clock.sleep(micros: 20_000) }
            if state.value.stopped { return }
            do throws(WHIPConnectError) {
                let (receiver, subscription) = try WHEPReceiver.open(options)
                state.withLock {
                    $0.receiver = receiver; $0.subscription = subscription
                }
            } catch {
                state.withLock { $0.error = error.description }
            }
            let paths = WHEPConnectivity.run(options, stopped: { state.value.stopped })
            state.withLock { $0.connectivity = paths }
        }
    }

    /// Ends the subscription (DELETE) and returns what the subscriber saw.
    func stop() -> Result {
        state.withLock { $0.stopped = true }
        thread.withLock { t in
            let taken = t
            t = nil
            return taken
        }?.join()
        let s = state.value
        guard let receiver = s.receiver else {
            return Result(error: s.error ?? "the subscriber did not start", connectivity: s.connectivity)
        }
        receiver.stop()
        receiver.wait()
        s.subscription?.end()
        let snapshot = receiver.snapshot()
        var error = s.error
        if let t = snapshot.webrtcPublishers.first, t.state == .failed {
            error = t.failure?.reason ?? "the transport failed"
        } else if snapshot.streams.isEmpty {
            error = "connected (\(snapshot.webrtcPublishers.first?.state.rawValue ?? "new")) but no media arrived from the server"
        }
        return Result(snapshot: snapshot, subscription: s.subscription, error: error, connectivity: s.connectivity)
    }

    /// The report's `subscriber` object.
    static func json(_ r: Result) -> JSONValue {
        func ms(_ v: Double?) -> JSONValue { v.map { .double(($0 * 10).rounded() / 10) } ?? .null }
        var f: [(String, JSONValue)] = []
        if let w = r.subscription {
            f.append(("endpoint", .string(SignalingClient.redacted(w.resource.resourceURL))))
            f.append(("negotiated", .object(w.summary.map { ($0.0, .string($0.1)) })))
        }
        if let e = r.error { f.append(("error", .string(e))) }
        if !r.connectivity.isEmpty { f.append(("connectivity", .array(r.connectivity.map(PreflightCommand.pathJSON)))) }
        if let snap = r.snapshot {
            let t = snap.webrtcPublishers.first
            f += [
                ("iceDurationMs", ms(t?.transport?.iceMillis)), ("dtlsDurationMs", ms(t?.transport?.dtlsMillis)),
                ("iceRole", (t?.transport?.iceRole).map { .string($0.rawValue) } ?? .null)
            ]
            if let v = snap.streams.first(where: { $0.kind == .video }) {
                f += [
                    ("width", .int(Int64(v.width))), ("height", .int(Int64(v.height))), ("framesDecoded", .int(Int64(v.framesDecoded))),
                    ("decodedFrameRate", .double((v.receivedFrameRate * 10).rounded() / 10)),
                    ("freezeCount", .int(Int64(v.freezeCount))),
                    ("totalFreezesDurationMs", .double(v.totalFreezesDurationMillis.rounded())),
                    ("latencyMeanMs", ms(v.latencyMeanMillis)), ("latencyP95Ms", ms(v.latencyP95Millis)),
                    ("resolutionChanges", .int(Int64(v.resolutionChanges))), ("packetsReceived", .int(Int64(v.packetsReceived))),
                    ("packetsLost", .int(Int64(max(0, v.packetsLost))))
                ]
            }
            if let a = snap.streams.first(where: { $0.kind == .audio }) {
                f += [("audioPacketsReceived", .int(Int64(a.packetsReceived))), ("audioPacketsLost", .int(Int64(max(0, a.packetsLost))))]
            }
        }
        return .object(f)
    }

    /// One paragraph for the human report.
    static func text(_ r: Result) -> String {
        var out = ""
        if !r.connectivity.isEmpty {
            out += "\nsubscriber connectivity (each path of the WHEP leg on its own):\n" + PreflightCommand.pathTable(r.connectivity)
        }
        out += "\nThrough the server (WHEP subscriber):"
        if let e = r.error { out += " FAILED — \(e)\n"; if r.snapshot?.streams.isEmpty ?? true { return out } } else { out += "\n" }
        guard let snap = r.snapshot, let v = snap.streams.first(where: { $0.kind == .video }) else { return out + "  no video received\n" }
        out += "  video \(v.width)x\(v.height) at \(Units.fixed(v.receivedFrameRate, 1)) fps decoded, \(v.freezeCount) freezes"
        if v.freezeCount > 0 { out += " (\(Units.fixed(v.totalFreezesDurationMillis / 1000, 1)) s)" }
        out +=
            ", \(v.resolutionChanges) layer changes, \(max(0, v.packetsLost)) of \(v.packetsReceived + max(0, v.packetsLost)) packets lost\n"
        if let mean = v.latencyMeanMillis {
            out +=
                "  glass-to-glass latency \(Units.fixed(mean, 1)) ms mean, \(Units.fixed(v.latencyP95Millis ?? mean, 1)) ms p95 (capture → decoded, through the server)\n"
        }
        return out
    }
}

extension InboundStreamStats {
    /// Frames decoded per second over the time the stream was received (first to last packet).
    var receivedFrameRate: Double {
        Double(framesDecoded) / max(0.001, Double((lastPacketMicros ?? 0) - (firstPacketMicros ?? 0)) / 1e6)
    }

    /// Frames completed (reassembled) per second over the same time: what a subscriber that does
    /// not decode still measures.
    var completedFrameRate: Double {
        Double(framesAssembled) / max(0.001, Double((lastPacketMicros ?? 0) - (firstPacketMicros ?? 0)) / 1e6)
    }
}
