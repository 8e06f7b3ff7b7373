/// Deadlines (microseconds), earliest first: a binary min-heap of (deadline, index) — the
/// subscribers of one of the fleet's loops, the publishers of a receiver. An entry whose owner
/// has since been given another deadline is stale; the owner skips it when it comes up.
package struct DeadlineHeap {
    package var items: [(Int64, Int)] = []

    package init() {}

    package func peek() -> (Int64, Int)? { items.first }

    package mutating func push(_ deadline: Int64, _ k: Int) {
        items.append((deadline, k))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i].0 < items[parent].0 else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    package mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count && items[l].0 < items[m].0 { m = l }
            if r < items.count && items[r].0 < items[m].0 { m = r }
            if m == i { return }
            items.swapAt(i, m)
            i = m
        }
    }
}
