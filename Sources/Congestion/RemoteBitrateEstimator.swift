/// The receive-side delay-based estimate a subscriber reports in REMB when the server negotiated
/// `goog-remb` but not transport-cc (libwebrtc `remote_bitrate_estimator_abs_send_time.cc`):
/// packets grouped by their abs-send-time, the delay gradient through the same trendline
/// detector the send side uses, AIMD bounded by the incoming rate of the last second. Sans-IO:
/// packets and the time come in, an estimate (bits/s) goes out; `remb(now:)` says when one is
/// due (libwebrtc `remb_throttler.cc`: a drop goes out at once, a rise at most every 200 ms).
public struct RemoteBitrateEstimator: Sendable {
    var interArrival = InterArrival()
    public private(set) var trendline = TrendlineEstimator()
    var aimd: AimdRateControl
    /// (arrival µs, bytes) of the last second, for the incoming rate: entries before `windowStart`
    /// have left it (dropped in bulk now and then, not shifted on every packet).
    var window: [(Int64, Int)] = []
    var windowStart = 0
    var windowBytes = 0
    var lastSendMicros: Int64?
    var sendBase: Int64 = 0
    var firstArrival: Int64?
    /// The estimate (nil until a second of packets gave an incoming rate to start from).
    public private(set) var estimate: Int?
    var lastSent: (bitrate: Int, micros: Int64)?

    /// abs-send-time is 6.18 fixed-point seconds in 24 bits: it wraps every 64 s.
    static let wrapMicros: Int64 = 64_000_000

    public init(minBitrate: Int = 30_000, maxBitrate: Int = 30_000_000) {
        aimd = AimdRateControl(startBitrate: 300_000)
        aimd.minBitrate = minBitrate
        aimd.maxBitrate = maxBitrate
    }

    /// One RTP packet (media, RTX or padding) as it arrived: its 24-bit abs-send-time, its size on the wire.
    public mutating func onPacket(absSendTime: UInt32, arrivalMicros: Int64, size: Int) {
        var send = (Int64(absSendTime & 0xFF_FFFF) * 1_000_000) >> 18 // (in Swift `>>` binds tighter than `*`)
        // Unwrap: a jump back of more than half the range is the next lap.
        if let last = lastSendMicros {
            send += sendBase
            if send < last - Self.wrapMicros / 2 {
                sendBase += Self.wrapMicros; send += Self.wrapMicros
            } else if send > last + Self.wrapMicros / 2 {
                send -= Self.wrapMicros
            } // a late packet from the previous lap
        }
        lastSendMicros = max(lastSendMicros ?? send, send)
        if firstArrival == nil { firstArrival = arrivalMicros }
        window.append((arrivalMicros, size))
        windowBytes += size
        while windowStart < window.count, window[windowStart].0 <= arrivalMicros - 1_000_000 {
            windowBytes -= window[windowStart].1
            windowStart += 1
        }
        if windowStart >= 1024 && windowStart * 2 >= window.count {
            window.removeFirst(windowStart)
            windowStart = 0
        }
        if let d = interArrival.add(sendMicros: send, arrivalMicros: arrivalMicros, size: size) {
            trendline.update(deltas: d, arrivalMicros: arrivalMicros)
        }
        update(now: arrivalMicros)
    }

    /// Bits per second received over the last second (nil before a second has passed).
    func incomingBitrate(now: Int64) -> Int? {
        guard let f = firstArrival, now - f >= 1_000_000 else { return nil }
        return windowBytes * 8
    }

    mutating func update(now: Int64) {
        guard let incoming = incomingBitrate(now: now) else { return }
        if estimate == nil {
            aimd.set(incoming, now: now) // start from what arrives (libwebrtc: the first incoming-rate sample)
        }
        estimate = aimd.update(usage: trendline.state, acknowledged: incoming, now: now)
    }

    /// The REMB to send now, if one is due: at once when the estimate fell by 3 % or more since
    /// the last one, otherwise at most every 200 ms.
    public mutating func remb(now: Int64) -> Int? {
        guard let e = estimate else { return nil }
        if let last = lastSent, e * 103 / 100 > last.bitrate, now - last.micros < 200_000 { return nil }
        lastSent = (e, now)
        return e
    }
}
