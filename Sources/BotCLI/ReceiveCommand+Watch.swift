#if canImport(Glibc)
    import HTTPSignaling
    import Glibc
#endif
import ReceiverEngine
import Transport
import Stats
import RTPCore
import Signalling
import Platform
import WHIPEndpoint
import HTTPServer
import DTLS
import ICE
import WebRTCClient

extension ReceiveCommand {
    /// The 100 ms loop while receiving: the progress line, the stats stream, the WHEP
    /// connection line and its failure, the key-mismatch error (once).
    final class Watch {
        let plan: Plan
        let receiver: ReceiverEngine
        let whep: Bool
        var warned = false
        var whepFailure: String?
        var whepConnected = false
        var firstAuthFailure: Int64?

        init(plan: Plan, receiver: ReceiverEngine, whep: Bool) {
            self.plan = plan
            self.receiver = receiver
            self.whep = whep
        }

        func run() {
            let start = Clock.monotonicMicros()
            var nextStats = start + (plan.stats?.1 ?? 0)
            while !Signals.isInterrupted {
                let now = Clock.monotonicMicros()
                if let duration = plan.duration, now - start >= duration { break }
                Clock.sleep(micros: 100_000)
                let r = receiver.snapshot()
                if whep, let t = r.webrtcPublishers.first, !followWHEP(t) { break }
                if let (stream, interval) = plan.stats, Clock.monotonicMicros() >= nextStats { stream.emit(r); nextStats += interval }
                if r.rejected.authenticationFailed > 0 && firstAuthFailure == nil { firstAuthFailure = now }
                if let f = firstAuthFailure, !warned, r.keyMismatchSuspected, Clock.monotonicMicros() - f >= 500_000 {
                    warned = true
                    Output.endProgress()
                    Output.err("Error: \(r.keyMismatchMessage)\n")
                }
                let bytes = r.streams.reduce(0) { $0 + $1.payloadBytesReceived }
                Output.progress(
                    "receive \(Units.fixed(Double(Clock.monotonicMicros() - start) / 1e6, 1))s  \(r.packetsAccepted) pkts  \(bytes) bytes  \(r.streams.count) streams"
                )
            }
        }

        /// Says when the WHEP transport connected; false when it failed or the server closed it.
        func followWHEP(_ t: WebRTCPublisherState) -> Bool {
            if t.state == .failed { whepFailure = t.failure?.reason ?? "the transport failed"; return false }
            if t.state == .closed { whepFailure = "the server closed the session (DTLS close_notify)"; return false }
            if t.state == .connected && !whepConnected {
                whepConnected = true
                Output.endProgress()
                Output.err(
                    "connected: ICE \(t.transport?.iceMillis.map { Units.fixed($0, 1) } ?? "?") ms (\(t.transport?.iceRole.rawValue ?? "?")), DTLS \(t.transport?.dtlsMillis.map { Units.fixed($0, 1) } ?? "?") ms, \(t.transport?.srtpCipher ?? "?"), server \(t.remote ?? "?")"
                        + (t.transport?.localCandidateType.map { " from \($0) \(t.transport?.localAddress ?? "?")" } ?? "") + "\n"
                )
            }
            return true
        }
    }
}
