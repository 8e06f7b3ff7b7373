/// Session vitals (`--vitals`; the Session Vitals seed document): a timeline of the bot's own health next to its media stats —
/// resource samples on a fixed tick, stats samples and custom entries — buffered and flushed in
/// chunks of at most 64 KB. Pure: samples and time are passed in; the CLI reads the process.
public struct VitalsRecorder: Sendable {
    public static let maxEntryBytes = 2_048
    public static let maxChunkBytes = 65_536

    public struct Sample: Sendable, Equatable {
        public var wallMillis: Int64
        public var cpuPercent: Double
        public var rssBytes: Int
        public init(wallMillis: Int64, cpuPercent: Double, rssBytes: Int) {
            self.wallMillis = wallMillis
            self.cpuPercent = cpuPercent
            self.rssBytes = rssBytes
        }
    }

    /// Local sampling interval; a remote setting can only lower the rate (min of the two rates,
    /// i.e. the longer interval), and local settings can only opt out or lower.
    public private(set) var intervalMicros: Int64
    public private(set) var sessionActive = false
    public var keepURLQueries = false
    var pending: [String] = []
    var pendingBytes = 0
    public private(set) var entriesDropped = 0
    public private(set) var entriesTruncated = 0
    public private(set) var samples = 0
    var cpuMax = 0.0, cpuSum = 0.0, rssMax = 0

    public init(intervalMicros: Int64 = 1_000_000) { self.intervalMicros = max(100_000, intervalMicros) }

    /// Applies a remote sample-rate setting: the effective rate is the lower of the two.
    public mutating func applyRemote(intervalMicros remote: Int64) { intervalMicros = max(intervalMicros, remote) }

    public mutating func startSession() { sessionActive = true }
    public mutating func endSession() { sessionActive = false }

    public mutating func add(_ s: Sample) {
        guard sessionActive else { entriesDropped += 1; return }
        samples += 1
        cpuMax = max(cpuMax, s.cpuPercent)
        cpuSum += s.cpuPercent
        rssMax = max(rssMax, s.rssBytes)
        append(
            .object([
                ("type", .string("vitals")), ("timestamp", .int(s.wallMillis)), ("kind", .string("sample")),
                ("cpuPercent", .double((s.cpuPercent * 10).rounded() / 10)), ("rssBytes", .int(Int64(s.rssBytes)))
            ]))
    }

    /// A stats snapshot (any JSON) on the same timeline.
    mutating func addStats(_ stats: JSONValue, wallMillis: Int64) {
        guard sessionActive else { entriesDropped += 1; return }
        append(.object([("type", .string("vitals")), ("timestamp", .int(wallMillis)), ("kind", .string("stats")), ("stats", stats)]))
    }

    /// A custom entry: any JSON, capped at 2 KB serialised — over the cap it is truncated (as a
    /// string) and flagged, never dropped; while no session runs it is dropped (and counted).
    public mutating func log(_ name: String, _ value: JSONValue, wallMillis: Int64) {
        guard sessionActive else { entriesDropped += 1; return }
        var v = value
        var truncated = false
        let text = value.serialized()
        if text.utf8.count > Self.maxEntryBytes {
            v = .string(String(decoding: Array(text.utf8.prefix(Self.maxEntryBytes - 64)), as: UTF8.self))
            truncated = true
            entriesTruncated += 1
        }
        append(
            .object([
                ("type", .string("vitals")), ("timestamp", .int(wallMillis)), ("kind", .string("custom")),
                ("name", .string(name)), ("value", v), ("truncated", .bool(truncated))
            ]))
    }

    /// A URL as it may be recorded: without its query string (signed URLs carry tokens).
    public func recordable(url: String) -> String {
        guard !keepURLQueries, let q = url.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return url }
        return String(url[..<q])
    }

    mutating func append(_ v: JSONValue) {
        let line = v.serialized()
        pending.append(line)
        pendingBytes += line.utf8.count + 1
    }

    /// Takes buffered lines as chunks of at most 64 KB each (a line is never split).
    public mutating func flush() -> [String] {
        var chunks: [String] = [], current = "", size = 0
        for line in pending {
            let n = line.utf8.count + 1
            if size + n > Self.maxChunkBytes && !current.isEmpty { chunks.append(current); current = ""; size = 0 }
            current += line + "\n"
            size += n
        }
        if !current.isEmpty { chunks.append(current) }
        pending.removeAll()
        pendingBytes = 0
        return chunks
    }

    /// The final summary line (emitted once, at the end).
    public func summary(wallMillis: Int64) -> JSONValue {
        .object([
            ("type", .string("vitals")), ("timestamp", .int(wallMillis)), ("kind", .string("summary")), ("samples", .int(Int64(samples))),
            ("cpuPercentMean", .double(samples > 0 ? (cpuSum / Double(samples) * 10).rounded() / 10 : 0)),
            ("cpuPercentMax", .double((cpuMax * 10).rounded() / 10)), ("rssBytesMax", .int(Int64(rssMax))),
            ("entriesTruncated", .int(Int64(entriesTruncated))), ("entriesDropped", .int(Int64(entriesDropped)))
        ])
    }
}
