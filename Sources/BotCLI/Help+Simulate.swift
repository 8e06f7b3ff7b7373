/// `pubbot help simulate`: what follows its usage line.
extension Help {
    static let simulateDetails = """


        Runs a publisher and a receiver over an emulated link in virtual time: the same sessions
        `publish` and `receive --impair` run (packetizer, pacer, SRTP, bandwidth estimator,
        allocator, condition scoring; feedback, NACK/RTX, PLI, reassembly, decoding), with a
        manual clock instead of sockets and sleeps. Writes the same JSON Lines as both sides
        (timestamps on a simulated clock starting 2026-01-01T00:00:00Z) and a summary. The same
        arguments and seed give byte-identical output. Uses: reproduce a field trace as a
        schedule, tune --condition-thresholds and alerts, regression-test the congestion
        controller, see what a network does to the stats before deploying.

        Options:
          --impair SPEC|SCHEDULE    the uplink, as for receive: rate=800kbit,loss=2%,delay=40ms
                                    or 0s:rate=4mbit;20s:rate=800kbit;40s:rate=4mbit
          --downlink-impair SPEC    the subscriber's own downlink (as for receive)
          --duration D              simulated time (default 60s)
          --layers LADDER, --fps N, --temporal-layers MODE, --scalability MODE, --codec vp8|h264|vp9|av1, --keyframe-interval D, --no-audio,
          --condition-thresholds LIST, --audio-fallback   as for publish
          --media encode|replay|sized
                                    encode (default): live VP8 (H.264, VP9)/Opus encoders at simulated time,
                                    real rate control (≈ 8× real time for the default ladder);
                                    replay: 4 s loops encoded once, replayed (≈ 40×; frames keep
                                    their sizes whatever the targets, as fleet bots' do); sized:
                                    frames exactly the targets, not decodable (fastest)
          --one-encoding            one video encoding instead of simulcast, as toward a server
                                    that refuses simulcast (it moves between the ladder's sizes)
          --seed N                  seeds the link emulator and the sessions (default 1)
          --no-decode               reassemble video without VP8-decoding it (faster)
          --preflight               a pre-flight in virtual time: the publisher pads up to its
                                    estimate as `preflight` does, stops when the estimate is
                                    steady (--duration is the limit, default 15s) and prints the
                                    verdict exactly as `preflight` does (--json, --require,
                                    --verdict-thresholds, --junit as for preflight)
          --stats FILE|-            both sides' stats as JSON Lines every --stats-interval
          --json                    print the summary (or the verdict) as JSON

        Exit codes: 0 media arrived (with --preflight: verdict given, --require met), 1 --require
        not met, 2 nothing arrived, 64 usage error.
        """
}
