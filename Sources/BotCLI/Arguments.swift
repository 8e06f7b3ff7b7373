/// A usage error: printed as `Error: …`, the command's usage line and `See 'pubbot <cmd> --help'`,
/// exit 64.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public var command: String?
    public init(_ message: String, command: String? = nil) { self.message = message; self.command = command }
    public var description: String { message }
}

/// The options a command accepts: flags, single values and repeatable values, in kebab-case.
struct OptionSpec {
    enum Kind { case flag, value, repeated }
    var options: [String: Kind]
    var aliases: [String: String] = [:]
    /// Options from the spec's contract that this build does not implement yet.
    var planned: [String: String] = [:]
}

/// Parsed command-line options.
struct ParsedOptions {
    var flags: Set<String> = []
    var values: [String: [String]] = [:]
    var helpRequested = false

    func has(_ f: String) -> Bool { flags.contains(f) }
    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }

    static func parse(_ args: ArraySlice<String>, spec: OptionSpec, command: String) throws(UsageError) -> ParsedOptions {
        var out = ParsedOptions()
        var i = args.startIndex
        while i < args.endIndex {
            var arg = args[i]
            i += 1
            if arg == "-h" || arg == "--help" { out.helpRequested = true; continue }
            guard arg.hasPrefix("-"), arg != "-" else { throw UsageError("unexpected argument '\(arg)'", command: command) }
            var inline: String?
            if let eq = arg.firstIndex(of: "="), arg.hasPrefix("--") {
                inline = String(arg[arg.index(after: eq)...])
                arg = String(arg[..<eq])
            }
            var name = arg.hasPrefix("--") ? String(arg.dropFirst(2)) : String(arg.dropFirst())
            if let a = spec.aliases[name] { name = a }
            if let why = spec.planned[name] {
                throw UsageError("--\(name) is not available in this version yet (\(why))", command: command)
            }
            guard let kind = spec.options[name] else { throw UsageError("unknown option '\(arg)'", command: command) }
            switch kind {
            case .flag:
                guard inline == nil else { throw UsageError("--\(name) takes no value", command: command) }
                out.flags.insert(name)
            case .value, .repeated:
                let v: String
                if let inline {
                    v = inline
                } else {
                    guard i < args.endIndex, !(args[i].hasPrefix("--") && args[i].count > 2) else {
                        throw UsageError("missing value for --\(name)", command: command)
                    }
                    v = args[i]
                    i += 1
                }
                if kind == .value, out.values[name] != nil { throw UsageError("--\(name) given more than once", command: command) }
                out.values[name, default: []].append(v)
            }
        }
        return out
    }
}
