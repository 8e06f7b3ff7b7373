import RTPCore
import MediaCodecs
import Stats
public import Net
import SRTP
import Congestion

/// The outbox: protected datagrams in order until the driver's socket takes them.
extension PublisherSession {
    /// Puts a protected datagram in the outbox (the arena has a slot for each, so it has room).
    /// Control datagrams (`control`: RTCP, STUN, DTLS) go behind the control already waiting but
    /// ahead of media the socket deferred: a sender report that waited behind a backlog would
    /// carry that wait into every RTT computed from it (RFC 3550 §6.4.1 times the report from
    /// its NTP stamp, taken here).
    func enqueueOut(_ slot: Int, length: Int, to destination: SocketAddress, from source: SocketAddress? = nil, control: Bool = false) {
        var length = length, destination = destination
        if relayServer != nil && destination == connectedRemote {
            guard let (l, d) = wrapForRelay(slot, length: length) else { arena.release(slot); counters.sendErrors += 1; return }
            (length, destination) = (l, d)
        }
        var at = outCount
        if control && outControlCount < outCount {
            at = outControlCount
            for k in stride(from: outCount, to: at, by: -1) {
                outSlots[k] = outSlots[k - 1]
                outPointers[k] = outPointers[k - 1]
                outLengths[k] = outLengths[k - 1]
                outDestinations[k] = outDestinations[k - 1]
                if namesSources { outSources[k] = outSources[k - 1] }
            }
        }
        if control { outControlCount += 1 }
        outSlots[at] = slot
        outPointers[at] = arena.pointer(slot)
        outLengths[at] = UInt32(length)
        outDestinations[at] = destination
        if namesSources { outSources[at] = source ?? mediaSource }
        outCount += 1
    }

    /// Hands the outbox to `send` in order, in runs of up to 64 datagrams for one destination;
    /// `send` returns how many of a run went out or throws (counted by cause; that run is
    /// dropped). A full socket buffer (fewer sent, EAGAIN or ENOBUFS from a full qdisc) is
    /// back-pressure, not loss: what did not go stays in the outbox, in order, for the next call —
    /// never dropped by the session, never sent twice — and is counted as deferred. The slots
    /// of what went are free again afterwards. The driver owns the socket: this is the
    /// session's only way out.
    public func pollTransmit(
        _ send: (UnsafePointer<UnsafeMutableRawPointer?>, UnsafePointer<UInt32>, Int, SocketAddress) throws(SocketError) -> Int
    ) {
        pollTransmit { p, l, n, to, _ throws(SocketError) in try send(p, l, n, to) }
    }

    /// `pollTransmit`, runs also split by source: `send` gets the source each run leaves from
    /// (nil: the socket's own address, when the session does not name sources).
    public func pollTransmit(
        _ send: (UnsafePointer<UnsafeMutableRawPointer?>, UnsafePointer<UInt32>, Int, SocketAddress, SocketAddress?) throws(SocketError)
            -> Int
    ) {
        var i = 0
        var blocked = false
        while i < outCount {
            let destination = outDestinations[i]
            let source = namesSources ? outSources[i] : nil
            var n = 1
            while i + n < outCount && n < 64 && outDestinations[i + n] == destination && (!namesSources || outSources[i + n] == source) {
                n += 1
            }
            do {
                let sent = try send(outPointers + i, outLengths + i, n, destination, source)
                if sent < n {
                    i += max(0, sent)
                    blocked = true
                    break
                }
            } catch {
                record(error)
            }
            i += n
        }
        for k in 0..<i { arena.release(outSlots[k]) }
        let left = outCount - i
        if left > 0 {
            // Keep the rest, in order, at the front of the outbox.
            for k in 0..<left {
                outSlots[k] = outSlots[i + k]
                outPointers[k] = outPointers[i + k]
                outLengths[k] = outLengths[i + k]
                outDestinations[k] = outDestinations[i + k]
                if namesSources { outSources[k] = outSources[i + k] }
            }
            counters.sendDeferred += left
            if blocked { counters.sendBlocked += 1 }
        }
        outCount = left
        outControlCount = max(0, outControlCount - i)
    }

    /// Datagrams wait in the outbox for the socket (it refused them last time).
    public var hasDeferredTransmit: Bool { outCount > 0 }

    func record(_ error: SocketError) {
        if error.isConnectionRefused { counters.portUnreachable += 1 } else { counters.sendErrors += 1 }
        counters.lastError = error.description
    }
}
