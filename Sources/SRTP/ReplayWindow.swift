/// The receiver's replay list (RFC 3711 §3.3.2): the highest index accepted and which of the
/// `size` indices up to it have been seen. A ring of bits addressed by index mod size (a power
/// of two); moving the top forward clears the bits it passes.
struct ReplayWindow {
    private(set) var highest: Int64 = 0
    private var words: [UInt64]
    let size: Int64

    /// - Parameter size: indices remembered, rounded up to a power of two (at least 64).
    init(size: Int) {
        var s = 64
        while s < size { s <<= 1 }
        self.size = Int64(s)
        words = [UInt64](repeating: 0, count: s / 64)
    }

    enum Verdict { case fresh, replayed, tooOld }

    func check(_ index: Int64) -> Verdict {
        if index > highest { return .fresh }
        if highest - index >= size { return .tooOld }
        return bit(index) ? .replayed : .fresh
    }

    /// Throws when `index` was seen or fell behind the list.
    func admit(_ index: Int64) throws(SRTPError) {
        switch check(index) {
        case .fresh: return
        case .replayed: throw .replayed
        case .tooOld: throw .tooOld
        }
    }

    /// Records `index` (after its packet authenticated).
    mutating func add(_ index: Int64) {
        if index > highest {
            let step = index - highest
            if step >= size {
                for w in words.indices { words[w] = 0 }
            } else {
                var i = highest + 1
                while i <= index {
                    let slot = Int(i & (size - 1))
                    // Whole words at a time once aligned.
                    if slot & 63 == 0 && index - i >= 63 {
                        words[slot >> 6] = 0
                        i += 64
                    } else {
                        words[slot >> 6] &= ~(1 << UInt64(slot & 63))
                        i += 1
                    }
                }
            }
            highest = index
        }
        let slot = Int(index & (size - 1))
        words[slot >> 6] |= 1 << UInt64(slot & 63)
    }

    /// Where the list's words live (tests: recording a packet must not move them).
    var storage: UnsafeRawPointer? { words.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } }

    private func bit(_ index: Int64) -> Bool {
        let slot = Int(index & (size - 1))
        return words[slot >> 6] & (1 << UInt64(slot & 63)) != 0
    }
}

/// An RTP stream's rollover counter and highest sequence number, and the index a new sequence
/// number stands for (RFC 3711 §3.3.1 and Appendix A, as libsrtp2 estimates it in `rdbx.c`:
/// while the index is still within the first half of the sequence space, a sequence number is
/// taken as is — a stream may start anywhere).
struct RTPIndex {
    /// ROC ‖ s_l, 48 bits.
    var index: Int64 = 0

    /// The index `seq` most probably stands for, and how far it is from the highest so far.
    func estimate(_ seq: UInt16) -> (index: Int64, delta: Int64) {
        let s = Int64(seq)
        let local = index & 0xFFFF
        let roc = index >> 16
        if index <= 0x8000 { return (s, s - local) }
        if local < 0x8000 {
            if s - local > 0x8000 { return ((roc - 1) << 16 | s, s - local - 0x1_0000) }
        } else if local - 0x8000 > s {
            return ((roc + 1) << 16 | s, s - local + 0x1_0000)
        }
        return (roc << 16 | s, s - local)
    }

    mutating func advance(to estimated: Int64) { if estimated > index { index = estimated } }

    /// The sender's side: the index of `seq`, kept as the receiver will estimate it.
    mutating func advance(estimating seq: UInt16) -> Int64 {
        let i = estimate(seq).index
        advance(to: i)
        return i
    }
}
