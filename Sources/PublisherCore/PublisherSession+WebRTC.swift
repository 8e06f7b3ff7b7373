import RTPCore
import Net
import SRTP
import WebRTC
public import ICE
import DTLS

extension PublisherSession {
    /// The transport's timers; what it sends goes into the outbox. Returns its next deadline.
    @discardableResult
    func stepTransport(now: Int64) -> Int64? {
        guard let t = webrtc else { return nil }
        // ICE, TURN and DTLS are sans-IO: between their timers only a datagram changes them. A
        // turn with neither leaves them be (stepping all three on every media turn was 5 % of a
        // replay fleet's CPU by perf). Through a relay they are stepped every turn, as before.
        if let due = transportDue, now < due, relayServer == nil {
            refreshTransportStats(t, now: now, changed: false)
            return due == .max ? nil : due
        }
        let wake = t.step(now: now)
        transportDue = wake ?? .max
        afterTransport(now: now)
        return wake
    }

    /// An ICE restart the server answered (RFC 9725 §4.3.3): ICE checks again on the new
    /// credentials while media stays on the current path, then moves to the new pair.
    /// `localCandidates`, when given, replace the session's own (its interfaces changed).
    public func restartICE(
        local: ICEAgent.Credentials, remote: ICEAgent.Credentials, remoteCandidates: [ICECandidate],
        localCandidates: [ICECandidate]? = nil, now: Int64
    ) {
        guard let t = webrtc, !stopRequested else { return }
        t.restartICE(local: local, remote: remote, remoteCandidates: remoteCandidates, localCandidates: localCandidates, now: now)
        transportDue = nil
        afterTransport(now: now)
    }

    /// A STUN or DTLS datagram (RFC 7983 first byte 0–3 or 20–63) from `from`, to `to` (the
    /// local address it reached, on a wildcard socket; else the socket's).
    func handleTransportDatagram(_ p: UnsafeMutableRawPointer, length: Int, from: SocketAddress?, to: SocketAddress?, now: Int64) {
        guard let t = webrtc, let socketLocal = webrtcLocal, let from, let source = STUNAddress(from) else {
            counters.rtcpRejected += 1
            return
        }
        let local = to.flatMap { STUNAddress($0) } ?? socketLocal
        let bytes = [UInt8](UnsafeRawBufferPointer(start: p, count: length))
        let media = t.handle(bytes, from: source, to: local, now: now)
        transportDue = nil
        afterTransport(now: now)
        // Media the TURN server relayed: SRTCP from the receiver, unwrapped (it fits where it came).
        if var m = media, mediaStarted, m.count <= length, (128...191).contains(m[0]) {
            m.withUnsafeMutableBytes { p.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            handleSRTCP(p, length: m.count, now: now)
        }
    }

    /// Through a TURN relay, a datagram for the selected remote goes to the TURN server inside
    /// ChannelData (4 bytes in front, moved in place: a slot has room) or, until the channel is
    /// bound, a Send indication. Returns the length and destination to send, nil to drop.
    func wrapForRelay(_ slot: Int, length: Int) -> (Int, SocketAddress)? {
        guard let t = webrtc, let turn = t.turn, let peer = t.selectedPath?.remote, let server = relayServer else { return nil }
        let p = arena.pointer(slot)
        if let channel = turn.channel(for: peer) {
            let padded = turn.overTCP ? (length + 3) & ~3 : length // over TCP ChannelData is padded (RFC 8656 §12.5)
            guard padded + 4 <= PacketArena.slotSize else { return nil }
            (p + 4).copyMemory(from: p, byteCount: length)
            p.storeBytes(of: channel.bigEndian, as: UInt16.self)
            p.storeBytes(of: UInt16(length).bigEndian, toByteOffset: 2, as: UInt16.self)
            if padded > length { (p + 4 + length).initializeMemory(as: UInt8.self, repeating: 0, count: padded - length) }
            return (padded + 4, server)
        }
        guard let wrapped = turn.send([UInt8](UnsafeRawBufferPointer(start: p, count: length)), to: peer),
            wrapped.count <= PacketArena.slotSize
        else { return nil }
        drainTransport() // the permission request, if this is the first datagram
        wrapped.withUnsafeBytes { p.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return (wrapped.count, server)
    }

    /// Sends what the transport queued and acts on its events: connected → SRTP from DTLS's
    /// keys, media to the selected remote; failed or closed → the session stops.
    func afterTransport(now: Int64) {
        guard let t = webrtc else { return }
        drainTransport()
        var changed = false
        while let e = t.pollEvent() {
            changed = true
            switch e {
            case let .connected(_, remote, _, send, receive):
                guard let destination = SocketAddress(remote) else {
                    fail(TransportFailure(.ice, "the selected remote \(remote) is not a usable address")); break
                }
                do throws(SRTPError) {
                    srtpOut = try SRTPSession(key: send, direction: .outbound)
                    srtpIn = try SRTPSession(key: receive, direction: .inbound)
                } catch {
                    fail(TransportFailure(.srtp, "SRTP could not be set up with the keys DTLS exported: \(error)"))
                    break
                }
                connectedRemote = destination
                if namesSources { mediaSource = t.selectedBase.flatMap { SocketAddress($0) } }
                if t.isRelayed, let turn = t.turn { relayServer = SocketAddress(turn.server) }
                if !mediaStarted && !stopRequested { startMedia(now: now) }
            case let .pathChanged(_, remote):
                // After an ICE restart: media to the newly selected remote (DTLS and SRTP go on).
                guard let destination = SocketAddress(remote) else {
                    fail(TransportFailure(.ice, "the selected remote \(remote) is not a usable address")); break
                }
                connectedRemote = destination
                if namesSources { mediaSource = t.selectedBase.flatMap { SocketAddress($0) } }
                relayServer = t.isRelayed ? t.turn.flatMap { SocketAddress($0.server) } : nil
            case let .failed(reason): fail(reason)
            case .closed:
                if !stopRequested { fail(TransportFailure(.peer, "the server closed the DTLS connection (close_notify)")) }
            }
        }
        refreshTransportStats(t, now: now, changed: changed)
    }

    /// The transport's figures are text (addresses): refreshed on its events and once a second
    /// (every 20 ms while media has not started), not per turn.
    func refreshTransportStats(_ t: WebRTCTransport, now: Int64, changed: Bool) {
        let period: Int64 = mediaStarted ? 1_000_000 : 20_000
        guard changed || now - transportStatusMicros >= period else { return }
        transportStatusMicros = now
        updateTransportStats(t)
    }

    /// The transport's statistics into the snapshot, keeping a failure the session added.
    func updateTransportStats(_ t: WebRTCTransport) {
        let failure = counters.transport?.failure
        counters.transport = t.stats
        if counters.transport?.failure == nil { counters.transport?.failure = failure }
    }

    func fail(_ failure: TransportFailure) {
        if counters.transport != nil && counters.transport!.failure == nil { counters.transport!.failure = failure }
        counters.lastError = failure.reason
        stop()
    }

    /// The transport's datagrams into arena slots, queued in order with the media.
    func drainTransport() {
        guard let t = webrtc else { return }
        while let x = t.pollTransmit() {
            guard x.bytes.count <= PacketArena.slotSize, let to = SocketAddress(x.to), let slot = arena.allocate() else {
                counters.sendErrors += 1
                continue
            }
            x.bytes.withUnsafeBytes { arena.pointer(slot).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            enqueueOut(slot, length: x.bytes.count, to: to, from: namesSources ? SocketAddress(x.from) : nil, control: true)
        }
    }
}

extension PublisherSession {
    /// Since the selected path last answered a consent check (µs; nil without WebRTC or before
    /// ICE connected): a fleet's consent watch reads it without building the statistics.
    public var consentAgeMicros: Int64? { webrtc?.ice.consentAgeMicros }
    /// The consent age at the caller's `now` (the agent's own clock is its last step's).
    public func consentAge(now: Int64) -> Int64? { webrtc?.ice.consentAge(at: now) }
}
