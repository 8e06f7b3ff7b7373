import Synchronization
public import HTTPSignaling
public import Signalling
public import DTLS
public import Transport
public import ReceiverEngine
import RTPCore
public import ICE
import Platform
public import PublisherEngine

/// One WHEP subscription set up (draft-ietf-wish-whep §4.2, the same HTTP rules as WHIP, RFC
/// 9725): a `recvonly` offer (Opus, VP8 with RTX, the feedback and header extensions the
/// receiver reads, the receiver socket's host candidate) POSTed, the answer read — the server's
/// payload types, extension IDs and SSRCs, ICE credentials and candidates, DTLS role and
/// fingerprint — into the spec a `ReceiverSession` runs the transport and media from. `end()`
/// DELETEs the session.
public final class WHEPSubscription: @unchecked Sendable {
    public let resource: WHIPSession
    public let negotiated: NegotiatedSession
    public let spec: WebRTCPublisherSpec
    /// What the answer decided, for the summary (name → value, in order).
    public let summary: [(String, String)]
    let ending: SessionEnd

    /// Offers `local` (the receiver's bound socket); blocks for the HTTP exchange (≤ 10 s, one
    /// retry after a 429/503 Retry-After) and the STUN/TURN queries.
    ///   - socket: the receive socket, not yet read by its thread. The subscriber's own servers
    ///     (`options.iceServers`) are asked from it: with trickle (RFC 9725 §4.3.2) while the POST
    ///     is in flight — the offer carries the host candidate, the rest follows in one PATCH —
    ///     else before the offer (`--no-trickle`, `--ice-policy relay`). The servers the 201
    ///     announces (§4.6) are asked after the answer and trickled too. nil: the host candidate.
    public static func open(
        _ options: WHIPOptions, local: STUNAddress, hosts: [ICECandidate]? = nil, plan: HostPlan? = nil, certificate: DTLSCertificate,
        audio: Bool = true,
        video: Bool = true, socket: UDPSocket? = nil, sleep: (Int64) -> Void
    ) throws(WHIPConnectError) -> WHEPSubscription {
        let credentials = ICEAgent.Credentials(random: SecureRandom.bytes(32))
        let hosts = hosts ?? [.host(local)]
        var candidates: [ICECandidate] = hosts
        var turn: TURNClient?
        // What a gathering on the receive socket gave; TURN over TCP/TLS is not taken here (the
        // receive thread reads one UDP socket).
        func gathered(_ socket: UDPSocket) throws(WHIPConnectError) -> (candidates: [ICECandidate], turn: TURNClient?) {
            let g = try WHIPConnection.gather(options, socket: socket, local: local, hosts: hosts)
            guard g.turnTCP == nil else {
                g.turn?.close()
                throw WHIPConnectError("a WHEP subscriber relays over UDP TURN only (turn:HOST:PORT?transport=udp), not TCP or TLS")
            }
            return (g.candidates, g.turn)
        }
        let trickling = options.trickle && options.policy == .all && !options.iceServers.isEmpty && socket != nil
        if let socket, !options.iceServers.isEmpty, !trickling { (candidates, turn) = try gathered(socket) }
        var offer = WHIPOffer(
            iceUfrag: credentials.ufrag, icePassword: credentials.password, fingerprint: certificate.sdpFingerprint,
            candidates: candidates)
        offer.direction = .receive
        offer.audio = audio
        offer.receiveVideo = video
        // The subscriber decodes every codec pubbot knows; the server picks (RFC 3264 §6.1).
        offer.codecs = VideoCodec.allCases
        offer.sessionID = UInt64(SecureRandom.uint32()) << 16 | 1
        let resource: WHIPSession
        var trickled: [ICECandidate] = []
        var gatherError: WHIPConnectError?
        if trickling, let socket {
            // The POST on a thread of its own; this one gathers on the receive socket meanwhile.
            let posted = Mutex<Result<WHIPSession, WHIPError>?>(nil)
            let (endpoint, sdp, token, strict) = (options.endpoint, offer.sdp, options.token, options.strict)
            // The thread is joined before `sleep` goes out of scope.
            withoutActuallyEscaping(sleep) { sleep in
                nonisolated(unsafe) let wait = sleep
                let post = JoinableThread(name: "pubbot-whep-post") {
                    let r = Result { () throws(WHIPError) in
                        try SignalingClient.publish(
                            endpoint: endpoint, offer: sdp, token: token, exchange: .whep, strict: strict, sleep: wait)
                    }
                    posted.withLock { $0 = r }
                }
                do throws(WHIPConnectError) {
                    let g = try gathered(socket)
                    trickled = g.candidates.filter { $0.kind != .host }
                    turn = g.turn
                } catch { gatherError = error }
                post.join()
            }
            switch posted.withLock({ $0 }) {
            case let .success(r)?: resource = r
            case let .failure(e)?:
                turn?.close()
                throw WHIPConnectError(e.description)
            case nil: throw WHIPConnectError("the POST did not finish")
            }
        } else {
            do {
                resource = try SignalingClient.publish(
                    endpoint: options.endpoint, offer: offer.sdp, token: options.token, exchange: .whep, strict: options.strict,
                    sleep: sleep)
            } catch {
                turn?.close()
                throw WHIPConnectError(error.description)
            }
        }
        func refuse(_ message: String) -> WHIPConnectError {
            _ = try? SignalingClient.delete(resource, token: options.token, exchange: .whep)
            return WHIPConnectError(message)
        }
        if let gatherError { throw refuse(gatherError.description) }
        let counter = resource.counterOffer
        let n: NegotiatedSession
        do { n = try NegotiatedSession.from(answer: resource.answer, offer: offer, counterOffer: counter) } catch {
            throw refuse((counter ? "the WHEP counter-offer (406): " : "") + error.description)
        }
        let a = n.audio.flatMap { $0.sends ? $0 : nil }, v = n.video.flatMap { $0.sends ? $0 : nil }
        guard a != nil || v != nil else {
            throw refuse(
                "the WHEP \(counter ? "counter-offer" : "answer") sends neither Opus audio nor video pubbot decodes (no common codec, or the sections are not sendonly): nothing to receive"
            )
        }
        guard let fingerprint = DTLSCertificate.parseFingerprint(n.fingerprint) else {
            throw refuse("the \(counter ? "counter-offer" : "answer")'s a=fingerprint is malformed")
        }
        let families = Set(hosts.map(\.address.ip.count))
        let remotes = n.candidates.filter { families.contains($0.address.ip.count) }
        guard !remotes.isEmpty else {
            throw refuse(
                "the \(counter ? "counter-offer" : "answer") has no ICE candidate pubbot can reach from \(local.ipText) (trickle ICE by PATCH is not supported)"
            )
        }
        var summary: [(String, String)] = []
        // Everything gathered after the offer went: in one PATCH (RFC 9725 §4.3.2), or in the
        // answer to a counter-offer.
        var fresh = trickled
        let announced = WHIPConnection.serverICEServers(resource.iceServers, options: options)
        if let socket, !announced.isEmpty {
            var turnTCP: (any TURNStream)?
            var failures: [String] = []
            var announcedFresh = WHIPConnection.gatherAnnounced(
                announced, options: options, socket: socket, local: local, hosts: hosts, existing: candidates + trickled, turn: &turn,
                turnTCP: &turnTCP, turnFailures: &failures, summary: &summary)
            if turnTCP != nil {
                // The receive thread reads one UDP socket: a relay over TCP or TLS is not taken.
                turnTCP = nil
                turn?.close()
                turn = nil
                announcedFresh.removeAll { $0.kind == .relay }
                summary.append(("relayNotUsed", "the announced TURN is over TCP/TLS; a WHEP subscriber relays over UDP only"))
            }
            fresh += announcedFresh
        }
        var resourceNow = resource
        if counter {
            // draft-ietf-wish-whep-04: the server's offer answered by PATCH, as pubbot's endpoint
            // answers a publisher (the same codec choice `n` made) but a full ICE agent, with
            // every candidate gathered.
            candidates += fresh
            let answer: WHIPAnswer
            do {
                answer = try WHIPAnswer.answer(
                    offer: resource.answer, iceUfrag: credentials.ufrag, icePassword: credentials.password,
                    fingerprint: certificate.sdpFingerprint, candidates: candidates, sessionID: offer.sessionID, lite: false)
            } catch {
                turn?.close()
                throw refuse("the WHEP counter-offer (406): " + error.description)
            }
            do { resourceNow.etag = try SignalingClient.answerCounterOffer(resource, answer: answer.sdp, token: options.token) } catch {
                turn?.close()
                throw refuse(error.description)
            }
            summary.append(("offer", "the server's (406 counter-offer, answered by PATCH; draft-ietf-wish-whep-04)"))
        } else if !fresh.isEmpty {
            candidates += fresh
            let t = WHIPConnection.trickle(fresh, resource: resource, offer: offer, n: n, token: options.token, exchange: .whep)
            summary.append(("trickle", t.text))
        }
        if let turn, options.policy != .relay { turn.permit(remotes[0].address) }
        // One extension numbering for the bundle: a server uses the same IDs on every section
        // (RFC 8285 §6 forbids one ID meaning two URIs in a bundle).
        var ext: [String: Int] = [:]
        for s in [a, v].compactMap({ $0 }) { ext.merge(s.extensions) { old, _ in old } }
        if counter {
            // Only what the answer kept: the extensions the receiver reads.
            ext = ext.filter { WHIPAnswer.understood.contains($0.key) }
        }
        var spec = WebRTCPublisherSpec(
            resource: SignalingClient.redacted(resourceNow.resourceURL), localUfrag: credentials.ufrag,
            localPassword: credentials.password,
            remoteUfrag: n.iceUfrag, remotePassword: n.icePassword, remoteFingerprint: fingerprint,
            audioPayloadTypes: a.map { [$0.payloadType] } ?? [], videoPayloadTypes: v.map { [$0.payloadType] } ?? [],
            rtxPayloadTypes: v?.rtxPayloadType.map { [$0] } ?? [], extensions: RTPExtensionIDs(negotiated: ext))
        spec.offerer = !counter
        spec.counterOffered = counter
        spec.remoteLite = n.iceLite
        spec.localCandidates = candidates
        spec.relay = turn.map(TURNRelay.init)
        spec.relayOnly = options.policy == .relay
        spec.dtlsServer = n.dtlsServer
        spec.remoteCandidates = remotes
        spec.rtxToMedia = v?.rtxSSRCs ?? [:]
        if let v, let codec = v.codec { spec.videoCodecs[v.payloadType] = codec }
        spec.reducedSizeRTCP = [a, v].compactMap { $0 }.allSatisfy(\.reducedSizeRTCP)
        let transportCC = [a, v].contains { $0?.transportCC == true } && ext[RTPExtension.transportSequenceNumber.uri] != nil
        // REMB only where transport-cc is not negotiated (the server then estimates itself), and
        // only with abs-send-time to time the packets by (libwebrtc's receive-side estimator); not
        // in an answer to a counter-offer, which offers none.
        let remb = !counter && !transportCC && [a, v].contains { $0?.remb == true } && ext[RTPExtension.absSendTime.uri] != nil
        spec.feedback = NegotiatedFeedback(nack: v?.nack ?? false, pli: v?.pli ?? false, transportCC: transportCC, remb: remb)
        let announcedSummary = summary
        summary = []
        summary.append(("audio", a.map { "opus/\($0.payloadType)" } ?? "not sent"))
        summary.append(
            (
                "video",
                v.map { "\($0.codec?.sdpName ?? "VP8")/\($0.payloadType)" + ($0.rtxPayloadType.map { " rtx/\($0)" } ?? " no rtx") }
                    ?? "not sent"
            ))
        let kinds = [
            transportCC ? "transport-cc" : nil, remb ? "goog-remb (receive-side estimate)" : nil,
            v?.nack == true ? "nack" : nil, v?.pli == true ? "pli" : nil
        ].compactMap { $0 }
        summary.append(("feedback", kinds.isEmpty ? "none negotiated (receiver reports only)" : kinds.joined(separator: ", ")))
        summary.append(("rtcp", spec.reducedSizeRTCP ? "reduced-size (RFC 5506)" : "compound"))
        if let turn, let relay = turn.relay, !announcedSummary.contains(where: { $0.0 == "relay" }) {
            summary.append(("relay", "\(relay) via TURN \(turn.server)" + (options.policy == .relay ? " (icePolicy relay)" : "")))
        }
        summary += announcedSummary
        let reflexive = candidates.filter { $0.kind == .srflx }.map(\.address.description)
        if !reflexive.isEmpty { summary.append(("srflx", reflexive.joined(separator: ", "))) }
        summary.append(("iceLite", n.iceLite ? "yes" : "no"))
        summary.append(
            (
                "dtlsRole",
                counter
                    ? "client (pubbot answered setup:active)"
                    : n.dtlsServer ? "server (answer setup:active)" : "client (answer setup:passive)"
            ))
        return WHEPSubscription(
            resource: resourceNow, negotiated: n, spec: spec, summary: summary, token: options.token,
            hosts: HostWatch(plan: plan, offered: spec.localCandidates, options: options, port: Int(local.port)))
    }

    init(
        resource: WHIPSession, negotiated: NegotiatedSession, spec: WebRTCPublisherSpec, summary: [(String, String)], token: String?,
        hosts: HostWatch
    ) {
        self.resource = resource
        self.negotiated = negotiated
        self.spec = spec
        self.summary = summary
        self.hosts = hosts
        ending = SessionEnd(resource, token: token, exchange: .whep)
    }

    /// The host candidates' plan and the candidates offered (replaced when the interfaces
    /// change and ICE restarts on the new ones).
    let hosts: HostWatch

    /// `HostWatch.change` for this subscription (its TURN allocation, if any).
    public func interfaceChange(list: [LocalInterface] = LocalInterfaces.list()) -> (what: String, candidates: [ICECandidate])? {
        hosts.change(list: list, relayBase: spec.relay?.client.base)
    }

    /// Ends the session on the server (DELETE); once. Returns the failure, if any.
    @discardableResult
    public func end() -> WHIPError? { ending.end() }

    /// Asks the server for an ICE restart of this subscription (RFC 9725 §4.3.3, as WHEP keeps
    /// it); the answer is for the receiver to apply (`ReceiverEngine.restartPublisher` with
    /// `spec.resource`). Blocks for the HTTP exchange; a refusal is an error, the session goes on.
    public func requestICERestart(timeoutMillis: Int = 5_000) -> Result<PublisherControl.ICERestart, WHIPConnectError> {
        WHIPConnection.requestICERestart(
            resource: resource, localCandidates: hosts.offered, negotiated: negotiated, token: ending.token, exchange: .whep,
            families: Set(hosts.offered.map(\.address.ip.count)), timeoutMillis: timeoutMillis)
    }
}
