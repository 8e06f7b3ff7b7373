#if canImport(Glibc)
    import Glibc
#endif

/// Which slice of the fleet this process runs: `--shard`, a Kubernetes Indexed Job, or a pod's ordinal.
extension LoadCommand {
    struct Shard: Equatable {
        var index: Int
        var count: Int

        /// This shard's bots: an even split of 0..<total (the first shards take the remainder).
        func range(of total: Int) -> Range<Int> {
            let base = total / count, extra = total % count
            let lo = index * base + min(index, extra)
            return lo..<(lo + base + (index < extra ? 1 : 0))
        }
    }

    /// `--shard I/N`, or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) with PUBBOT_SHARDS.
    /// This host's name (a pod's: its name), nil when it cannot be read.
    static func hostName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, 255) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `--shard I/N`; else `JOB_COMPLETION_INDEX` with `PUBBOT_SHARDS` (a Kubernetes Indexed
    /// Job); else, with `PUBBOT_SHARDS` alone, the pod's ordinal: the number its host name ends
    /// with (`…-3`: a StatefulSet's pods, or the pods `podman kube play` makes of a Deployment's
    /// replicas); else the whole fleet.
    static func shardOption(_ text: String?, environment index: String?, total: String?, hostname: String? = nil) throws(UsageError)
        -> Shard
    {
        if let text {
            let parts = text.split(separator: "/")
            guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, n <= 10_000, i >= 0, i < n else {
                throw UsageError("invalid --shard '\(text)' (I/N with 0 ≤ I < N, e.g. 0/4)")
            }
            return Shard(index: i, count: n)
        }
        if let index, let total {
            guard let i = Int(index), let n = Int(total), n >= 1, i >= 0, i < n else {
                throw UsageError("JOB_COMPLETION_INDEX=\(index) and PUBBOT_SHARDS=\(total) do not make a shard (0 ≤ index < shards)")
            }
            return Shard(index: i, count: n)
        }
        if let total {
            let digits = String((hostname ?? "").reversed().prefix { $0.isASCII && $0.isNumber }.reversed())
            guard let n = Int(total), n >= 1, n <= 10_000, !digits.isEmpty, digits.count <= 5, let i = Int(digits), i < n else {
                throw UsageError(
                    "PUBBOT_SHARDS=\(total) without JOB_COMPLETION_INDEX: the shard is the number the host name ends with "
                        + "(a pod's ordinal), and '\(hostname ?? "")' does not end with one below \(total)")
            }
            return Shard(index: i, count: n)
        }
        return Shard(index: 0, count: 1)
    }
}
