public import ICE
public import DTLS

/// What a WebRTC transport reports about itself, under the W3C names where there is one
/// (webrtc-stats: `RTCTransportStats` — `iceState`, `dtlsState`, `iceRole`, `dtlsRole`,
/// `srtpCipher`, `selectedCandidatePairId`; `RTCIceCandidateStats` — `candidateType`, `address`;
/// `RTCIceCandidatePairStats.currentRoundTripTime`). Made by `WebRTCTransport.stats`; the
/// publisher's snapshot and the receiver's per-publisher state both carry it.
public struct TransportStats: Sendable, Equatable {
    public var iceState: ICETransportState
    public var dtlsState: DTLSTransportState
    public var iceRole: ICEAgent.Role
    /// W3C `RTCDtlsRole` (the answer's a=setup decided).
    public var dtlsRole: DTLSEndpoint.Role?
    /// `AEAD_AES_128_GCM` or `AES_CM_128_HMAC_SHA1_80` once DTLS exported the keys.
    public var srtpCipher: String?
    /// The selected pair's candidates: type (`host`, `srflx`, `relay` …) and address.
    public var localCandidateType: String?
    public var localAddress: String?
    public var remoteCandidateType: String?
    public var remoteAddress: String?
    /// From the first check to the selected pair, and from there to DTLS done (µs).
    public var iceDurationMicros: Int64?
    public var dtlsDurationMicros: Int64?
    /// The selected pair's round trip from ICE checks and consent requests (µs).
    public var roundTripMicros: Int64?
    /// TURN: how long the allocation took (µs) and how many refreshes the server accepted.
    public var turnAllocateMicros: Int64?
    public var turnRefreshes = 0
    /// The peer sent close_notify.
    public var closedByPeer = false
    /// ICE restarts applied, the selected-pair changes they brought (W3C
    /// `RTCTransportStats.selectedCandidatePairChanges` counts the first selection too: this
    /// counts the ones after a restart), and how long the last restart took to select a new
    /// pair (µs; nil while it has not).
    public var iceRestarts = 0
    public var selectedPairChangesAfterRestart = 0
    public var lastRestartRecoveryMicros: Int64?
    /// Since the selected path last answered a consent check (µs; a full ICE agent once
    /// connected): what `--ice-recover-after` watches.
    public var consentAgeMicros: Int64?
    /// Why the transport failed (ICE, DTLS, TURN, consent), once it has; its owner may add a
    /// failure of its own (the keys refused by SRTP, the peer gone).
    public var failure: TransportFailure?

    public var iceDurationMs: Int? { iceDurationMicros.map { Int($0 / 1000) } }
    public var dtlsDurationMs: Int? { dtlsDurationMicros.map { Int($0 / 1000) } }
    public var iceMillis: Double? { iceDurationMicros.map { Double($0) / 1000 } }
    public var dtlsMillis: Double? { dtlsDurationMicros.map { Double($0) / 1000 } }
    public var roundTripMillis: Double? { roundTripMicros.map { Double($0) / 1000 } }
}

extension WebRTCTransport {
    /// The transport's statistics now.
    public var stats: TransportStats {
        var s = TransportStats(iceState: iceState, dtlsState: dtlsState, iceRole: ice.role, dtlsRole: dtls.role)
        s.srtpCipher = srtpSuite?.sdesName
        if let (l, r) = ice.selectedPair {
            s.localCandidateType = l.kind.rawValue
            s.localAddress = l.address.description
            s.remoteCandidateType = r.kind.rawValue
            s.remoteAddress = r.address.description
        }
        if let start = startedMicros, let i = iceConnectedMicros { s.iceDurationMicros = i - start }
        if let i = iceConnectedMicros, let d = dtlsConnectedMicros { s.dtlsDurationMicros = d - i }
        s.roundTripMicros = ice.roundTripMicros
        if let turn, let a = turn.allocatedMicros, let start = turn.startedMicros {
            s.turnAllocateMicros = a - start
            s.turnRefreshes = turn.refreshes
        }
        s.closedByPeer = closedByPeer
        s.iceRestarts = iceRestarts
        s.selectedPairChangesAfterRestart = ice.selectedPairChanges
        s.lastRestartRecoveryMicros = lastRestartRecoveryMicros
        s.consentAgeMicros = ice.consentAgeMicros
        s.failure = failure
        return s
    }
}
