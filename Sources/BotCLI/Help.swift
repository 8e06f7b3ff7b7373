/// Help and usage texts (the command-line contract; the Commands article explains it).
enum Help {
    static let version = "pubbot 0.1.0"

    static let overview = """
        pubbot — a headless test publisher for real-time video (VP8 simulcast + Opus over SRTP/UDP).

        Usage: pubbot <command> [options]

        Commands:
          preflight   can this network publish, and at what quality? a verdict, tiers, MOS, exit code
          publish     publish synthetic VP8 simulcast + Opus to a receiver
          receive     receive, decrypt, reassemble and decode what publishers send
          load        many replay bots in one process: fleet percentiles, requirements, exit code
          simulate    publisher + receiver over an emulated link in virtual time: same stats, seconds
          media       media build: encode the replay loops the load bots send (Media/replay/);
                      media export: the synthetic source as Y4M for other senders
          report      report merge: combine the reports of load shards exactly
          check       a WHIP/WHEP server against RFC 9725, requirement by requirement
          help        show help for a command

        Options:
          -h, --help  show help
          --version   print the version

        See 'pubbot help <command>' or 'pubbot <command> --help'.
        """

    static func usage(_ command: String?) -> String {
        switch command {
        case "publish":
            "Usage: pubbot publish (--to HOST:PORT [--key B64] | --whip URL [--token T] [--ice-server stun:HOST:PORT] [--ice-interface IF…] [--no-ipv6] [--strict] [--no-trickle] [--ice-restart-at D…] [--ice-recover-after D]) [--srtp-suite aes-cm|gcm] [--sdp-out FILE] [--no-bundle] [--duration D] [--layers LADDER] [--no-audio | --no-video] [--fps N] [--temporal-layers L1T1|L1T2|L1T3 | --scalability MODE] [--codec vp8|h264|vp9|av1|LIST] [--keyframe-interval D] [--no-congestion-control] [--impair SPEC] [--stats FILE|-] [--json]"
        case "receive":
            "Usage: pubbot receive (--listen HOST:PORT (--key B64 | --sdp FILE) | --whip-listen HOST:PORT [--token T] [--tls-cert FILE --tls-key FILE] [--ice-server URL… [--turn-username U --turn-credential C]] | --whep URL [--token T] [--ice-interface IF…] [--no-ipv6] [--ice-server URL… [--turn-username U --turn-credential C] [--ice-policy all|relay] [--no-trickle]] [--strict] [--ice-restart-at D…] [--ice-recover-after D] [--ca-file FILE]) [--impair SPEC] [--downlink-impair SPEC] [--srtp-suite aes-cm|gcm] [--duration D] [--no-decode | --decode-publishers N] [--max-publishers N] [--dump-frames DIR] [--stats FILE|-] [--json]"
        case "preflight":
            "Usage: pubbot preflight [--to HOST:PORT --key KEY | --sdp FILE | --whip URL [--token T] [--ice-server stun:H:P] [--ice-interface IF…] [--no-ipv6] [--strict] [--ice-restart-at D…] [--ice-recover-after D] [--whep URL [--whep-token T]]] [--impair SPEC] [--require TIER] [--duration D] [--json] [--junit FILE] [--stats FILE|-] [--verdict-thresholds LIST] [--dump-frames DIR] [--camera 720p|1080p|WxH] [--content easy|natural|hard] [media options]"
        case "load":
            "Usage: pubbot load [--to HOST:PORT… --key B64 | --rooms M | --whip URL [--token T] [--ice-server stun:H:P] [--ice-interface IF…] [--no-ipv6] [--strict] [--rooms M] [--whep URL --subscribers S [--decoders N|all] [--decoder-rotation D] [--whep-token T]] [--ice-restart-at D…] [--ice-recover-after D]] [--bots N | --publishers N] [--duration D] [--ramp D] [--loops N] [--impair SPEC] [--require LIST] [--report FILE] [--metrics [HOST:]PORT] [--progress] [--shard I/N] [--media DIR | --encode [--layers LADDER] [--content C]] [--codec vp8|h264|vp9|av1] [--srtp-suite aes-cm|gcm] [--json]"
        case "simulate":
            "Usage: pubbot simulate [--impair SPEC|SCHEDULE] [--downlink-impair SPEC] [--duration 60s] [--layers LADDER] [--fps N] [--temporal-layers MODE | --scalability MODE] [--codec vp8|h264|vp9|av1] [--media encode|replay|sized] [--one-encoding] [--seed N] [--preflight [--require TIER] [--verdict-thresholds LIST] [--junit FILE]] [--stats FILE|-] [--stats-interval 1s] [--json]"
        case "media":
            "Usage: pubbot media build [--out DIR] [--codec vp8|h264|vp9|av1] [--seconds N] [--keyframe-interval D] [--layers LADDER] [--fps N]\n       pubbot media export --y4m FILE [--content C] [--size WxH] [--seconds N] [--fps N]"
        case "report": "Usage: pubbot report merge FILE… [--report OUT] [--require LIST] [--json]"
        case "check":
            "Usage: pubbot check (--whip URL [--token T] | --whep URL [--whep-token T] | both) [--timeout D] [--ca-file FILE] [--no-ipv6] [--json]"
        default: "Usage: pubbot <command> [options]"
        }
    }

    static func help(_ command: String) -> String? { details[command].map { usage(command) + $0 } }

    /// What follows each command's usage line in `pubbot help <command>`.
    static let details: [String: String] = [
        "publish": publishDetails,
        "receive": receiveDetails,
        "preflight": preflightDetails,
        "load": loadDetails,
        "media": mediaDetails,
        "simulate": simulateDetails,
        "report": reportDetails,
        "check": checkDetails
    ]

}
