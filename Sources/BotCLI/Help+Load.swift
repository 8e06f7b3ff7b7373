/// `pubbot help load`: what follows its usage line.
extension Help {
    static let loadDetails = """


        Runs N publisher bots in this process on a few event loops (one per core by default, never
        a thread per bot). Each bot is a whole publisher — its own UDP socket, SSRCs, SRTP
        sessions, transport-cc feedback, estimator, pacer and allocator — sending the replay loops
        `pubbot media build` wrote (packetized and protected afresh per bot). A PLI jumps the layer
        to its next key frame; a low estimate suspends layers. Prints fleet percentiles and exits
        with a verdict.

        Options:
          --to HOST:PORT            a `pubbot receive` (default: a receiver embedded in this process);
                                    repeat it for rooms: bot n publishes to the (n mod rooms)-th
          --whip URL                a WebRTC server's WHIP endpoint: every bot POSTs its own offer
                                    and runs its own ICE and DTLS (WHIP/TURN options as for
                                    publish: each bot its own allocation and, over TCP or TLS,
                                    its own connection); the report adds ICE/DTLS times
                                    and, through TURN, allocations and the relay RTT
          --ice-restart-at D        with --whip: each bot asks its server for an ICE restart D
                                    after its own start (repeatable; RFC 9725 §4.3.3); the
                                    report counts those asked and refused and the time to a
                                    new pair (JSON: webrtc.iceRestarts, each bot's iceRestarts);
                                    with --whep each subscriber too, D after it subscribed
                                    (JSON: subscribers.iceRestarts)
          --ice-recover-after D     with --whip: each bot restarts ICE when its path has answered
                                    no consent check for D (7s…29s), again every D while silent
                                    (JSON: webrtc.iceRestarts.byConsentWatch, iceRecoveries);
                                    each subscriber too. Bots and subscribers also restart
                                    when the local interfaces change (byInterfaceChange)
          --whep URL                with --whip: subscriber bots too, each a real WHEP subscriber
                                    (socket, ICE, DTLS, feedback, reassembly) on the event
                                    loops — no thread each; they join 2 s after the ramp, 50 ms
                                    apart (all within --ramp when it is given), and leave 1 s
                                    before the end; the report adds per-room
                                    and fleet percentiles of glass-to-glass latency, freezes,
                                    frame rate and the decoded picture's PSNR-Y/SSIM-Y against the
                                    publishers' source (--content). The publishers encode live
                                    (stamps) unless --media is given
          --subscribers S           subscriber bots in all (default: as many as publishers; ≤ 5000)
          --decoders N|all          decoders (latency, decoded frame rate; default one per event
                                    loop): fewer than the subscribers rotate over them, each loop's
                                    moving on together every --decoder-rotation (a key frame asked
                                    for each time); all: every subscriber decodes all along. Every
                                    subscriber counts packets, completed frames and freezes
          --decoder-rotation D      how long a rotating decoder stays on a subscriber (default 10s)
          --publishers N            the publisher bots, as --bots
          --whep-token TOKEN        the subscribers' token (or PUBBOT_WHEP_TOKEN; default the WHIP one)
          --rooms M                 M rooms of embedded receivers, each with its own random key;
                                    with --whip, URL templates: {room} (0…M-1) and {publisher}
                                    (a publisher's index in its room) are filled in per bot;
                                    publisher n and subscriber k are in room n (k) mod M
          --key B64                 the receivers' SRTP key (needed with --to; default: random per
                                    run, or per room with --rooms)
          --bots N                  bots (default 10); with --shard, the total over all shards
          --duration D              from the first start to every bot's BYE (default 30s)
          --ramp D                  start all bots within D (default: 50 bots a second; at most 500/s)
          --loops N                 event loops (threads; default: one per core)
          --impair SPEC             emulate the link in front of the embedded receiver (as for receive);
                                    with --whip, each bot's own uplink toward the server (the
                                    totals count what the emulators dropped apart)
          --decode                  the embedded receiver also decodes video (default: reassembles
                                    every frame, decodes audio; VP8 decoding of hundreds of streams
                                    does not fit a small machine)
          --require LIST            loss<1%,rtt<200ms (fleet p95), bitrate>300kbit,estimate>500kbit
                                    (fleet p5), started>=100%,feedback>=100% (share of bots);
                                    default loss<5%,feedback>=100%. Given, it also fails
                                    when pubbot itself was saturated (its event loops or
                                    receive threads over 50 ms late at p99: the report
                                    says SATURATED and which figures that spoils)
          --report FILE             the JSON report (per bot, totals, percentiles, histograms);
                                    {shard} in FILE becomes the shard's index (shard-{shard}.json)
          --metrics [HOST:]PORT     serve the fleet to Prometheus while it runs (GET /metrics,
                                    loopback unless a host is given; rendered every second):
                                    bots by state, packets/bytes/RTX/NACK/PLI counters, one
                                    histogram per per-bot figure (bitrate, estimate, loss, RTT,
                                    join time) labelled role, codec, shard — the fleet's p95
                                    across shards is histogram_quantile(0.95, sum by (le)
                                    (pubbot_load_bot_loss_ratio_bucket)) — pubbot's own driver
                                    lag, and pubbot_load_saturated
          --progress                the live line (bots started/connected/failed, fleet
                                    bitrate, loss p95, subscribers, pubbot's own lag) once a
                                    second on stderr even when it is not a terminal (on a
                                    terminal it is always shown, rewritten in place)
          --shard I/N               run this process's slice of the bots (or JOB_COMPLETION_INDEX
                                    with PUBBOT_SHARDS=N, as in a Kubernetes Indexed Job)
          --media DIR               replay loops (default Media/replay)
          --encode                  live instead of replay: one encoder in this process, shared by
                                    every bot (a PLI or a resumed layer forces a key frame for all)
          --layers LADDER           with --encode (default 640x360 + 320x180)
          --content easy|natural|hard
                                    with --encode: the scene (default natural; as publish --content)
          --codec vp8|h264|vp9|av1  every bot's video codec (replay loops: Media/replay-h264, -vp9
                                    or -av1, or built once on demand into the cache)
          --srtp-suite SUITE        aes-cm (default) or gcm
          --json                    print the report as JSON

        Exit codes: 0 every bot started, heard back and every requirement is met; 1 a bot failed
        or never heard back, or a requirement is not met; 2 no bot heard from the receiver (or no
        replay media); 64 usage error; 130 interrupted.
        """
}
