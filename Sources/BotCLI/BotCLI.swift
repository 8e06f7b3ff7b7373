/// The `pubbot` command line: dispatch, help, version, usage errors (exit 64).
public enum BotCLI {
    /// Runs the command line and returns the process exit code.
    public static func main(_ arguments: [String]) -> Int32 {
        Signals.install()
        let args = arguments.dropFirst()
        guard let command = args.first else {
            Output.err(Help.overview + "\n")
            return 64
        }
        let rest = args.dropFirst()
        do throws(UsageError) {
            switch command {
            case "-h", "--help": Output.out(Help.overview + "\n"); return 0
            case "--version", "version": Output.out(Help.version + "\n"); return 0
            case "help":
                guard let sub = rest.first else { Output.out(Help.overview + "\n"); return 0 }
                guard let text = Help.help(sub) else { throw UsageError("unknown command '\(sub)'") }
                Output.out(text + "\n")
                return 0
            case "publish": return try PublishCommand.run(rest)
            case "receive": return try ReceiveCommand.run(rest)
            case "preflight": return try PreflightCommand.run(rest)
            case "load": return try LoadCommand.run(rest)
            case "simulate": return try SimulateCommand.run(rest)
            case "media": return try MediaCommand.run(rest)
            case "report": return try ReportCommand.run(rest)
            case "check": return try CheckCommand.run(rest)
            case "bench":
                throw UsageError("'\(command)' is not available in this version yet")
            default:
                throw UsageError("unknown command '\(command)'")
            }
        } catch {
            var text = "Error: \(error.message)\n"
            if let c = error.command ?? (["publish", "receive", "preflight", "load", "simulate", "check"].contains(command) ? command : nil)
            {
                text += Help.usage(c) + "\nSee 'pubbot \(c) --help'.\n"
            } else {
                text += Help.usage(nil) + "\nSee 'pubbot --help'.\n"
            }
            Output.err(text)
            return 64
        }
    }
}
