/// Per-SSRC state of one SRTP session, found by comparing SSRCs in turn while there are few of
/// them — a publisher's session carries a handful (audio, each layer, their RTX) — and through a
/// dictionary of positions past `linearLimit` (a session shared by many senders). Hashing the
/// SSRC (SipHash) for a dictionary was paid once per protected packet and twice per verified
/// one.
struct SSRCTable<Value> {
    /// Beyond this many SSRCs lookups go through `positions`.
    static var linearLimit: Int { 16 }
    private(set) var ssrcs: [UInt32] = []
    /// Each SSRC's value, at its position in `ssrcs`.
    var values: [Value] = []
    private var positions: [UInt32: Int]?

    var count: Int { ssrcs.count }

    /// The position of `ssrc`'s value, nil when it has none.
    @inline(__always)
    func position(of ssrc: UInt32) -> Int? {
        if let positions { return positions[ssrc] }
        var i = 0
        while i < ssrcs.count {
            if ssrcs[i] == ssrc { return i }
            i &+= 1
        }
        return nil
    }

    /// The position of `ssrc`'s value, added as `make()` makes it when it has none.
    @inline(__always)
    mutating func position(of ssrc: UInt32, adding make: () -> Value) -> Int {
        if let i = position(of: ssrc) { return i }
        ssrcs.append(ssrc)
        values.append(make())
        let i = ssrcs.count - 1
        if positions != nil {
            positions![ssrc] = i
        } else if ssrcs.count > Self.linearLimit {
            positions = Dictionary(uniqueKeysWithValues: zip(ssrcs, ssrcs.indices))
        }
        return i
    }

    /// `ssrc`'s value, nil when it has none.
    subscript(ssrc: UInt32) -> Value? { position(of: ssrc).map { values[$0] } }

    /// Forgets `ssrc` (the last entry takes its place).
    mutating func remove(_ ssrc: UInt32) {
        guard let i = position(of: ssrc) else { return }
        let last = ssrcs.count - 1
        if i != last {
            ssrcs[i] = ssrcs[last]
            values.swapAt(i, last)
            positions?[ssrcs[i]] = i
        }
        ssrcs.removeLast()
        values.removeLast()
        positions?[ssrc] = nil
    }
}
