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
            "Usage: pubbot publish (--to HOST:PORT [--key B64] | --whip URL [--token T] [--ice-server stun:HOST:PORT] [--ice-interface IF] [--no-ipv6] [--strict] [--no-trickle] [--ice-restart-at D…] [--ice-recover-after D]) [--srtp-suite aes-cm|gcm] [--sdp-out FILE] [--no-bundle] [--duration D] [--layers LADDER] [--no-audio | --no-video] [--fps N] [--temporal-layers L1T1|L1T2|L1T3 | --scalability MODE] [--codec vp8|h264|vp9|av1|LIST] [--keyframe-interval D] [--no-congestion-control] [--impair SPEC] [--stats FILE|-] [--json]"
        case "receive":
            "Usage: pubbot receive (--listen HOST:PORT (--key B64 | --sdp FILE) | --whip-listen HOST:PORT [--token T] [--tls-cert FILE --tls-key FILE] [--ice-server URL… [--turn-username U --turn-credential C]] | --whep URL [--token T] [--ice-interface IF] [--no-ipv6] [--ice-server URL… [--turn-username U --turn-credential C] [--ice-policy all|relay] [--no-trickle]] [--strict] [--ice-restart-at D…] [--ice-recover-after D] [--ca-file FILE]) [--impair SPEC] [--downlink-impair SPEC] [--srtp-suite aes-cm|gcm] [--duration D] [--no-decode | --decode-publishers N] [--max-publishers N] [--dump-frames DIR] [--stats FILE|-] [--json]"
        case "preflight":
            "Usage: pubbot preflight [--to HOST:PORT --key KEY | --sdp FILE | --whip URL [--token T] [--ice-server stun:H:P] [--ice-interface IF] [--no-ipv6] [--strict] [--ice-restart-at D…] [--ice-recover-after D] [--whep URL [--whep-token T]]] [--impair SPEC] [--require TIER] [--duration D] [--json] [--junit FILE] [--stats FILE|-] [--verdict-thresholds LIST] [--dump-frames DIR] [media options]"
        case "load":
            "Usage: pubbot load [--to HOST:PORT… --key B64 | --rooms M | --whip URL [--token T] [--ice-server stun:H:P] [--ice-interface IF] [--no-ipv6] [--strict] [--rooms M] [--whep URL --subscribers S [--decoders N|all] [--decoder-rotation D] [--whep-token T]] [--ice-restart-at D…] [--ice-recover-after D]] [--bots N | --publishers N] [--duration D] [--ramp D] [--loops N] [--impair SPEC] [--require LIST] [--report FILE] [--metrics [HOST:]PORT] [--progress] [--shard I/N] [--media DIR | --encode [--layers LADDER]] [--codec vp8|h264|vp9|av1] [--srtp-suite aes-cm|gcm] [--json]"
        case "simulate":
            "Usage: pubbot simulate [--impair SPEC|SCHEDULE] [--downlink-impair SPEC] [--duration 60s] [--layers LADDER] [--fps N] [--temporal-layers MODE | --scalability MODE] [--codec vp8|h264|vp9|av1] [--media encode|replay|sized] [--one-encoding] [--seed N] [--preflight [--require TIER] [--verdict-thresholds LIST] [--junit FILE]] [--stats FILE|-] [--stats-interval 1s] [--json]"
        case "media":
            "Usage: pubbot media build [--out DIR] [--codec vp8|h264|vp9|av1] [--seconds N] [--keyframe-interval D] [--layers LADDER] [--fps N]\n       pubbot media export --y4m FILE [--size WxH] [--seconds N] [--fps N]"
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

    static let publishDetails = """


        Publishes synthetic video (VP8, H.264 or VP9, one SSRC per simulcast layer) and audio (Opus 48 kHz, 20 ms,
        in-band FEC) over SRTP to HOST:PORT. By default everything is BUNDLEd on one port with
        rtcp-mux and MID/RID header extensions; --no-bundle sends audio to PORT and video layer i
        to PORT+2(i+1), RTCP on the next port up, so that `ffmpeg -i x.sdp` can open it.

        With --whip URL it publishes to a WebRTC server instead (WHIP, RFC 9725): the offer is
        POSTed, ICE (full agent, controlling) and DTLS-SRTP run on the media socket, and the answer
        decides payload types, header-extension IDs, RTX, simulcast (refused: one encoding) and
        the congestion control (transport-cc, else REMB, else receiver-report loss). The session
        is DELETEd on every way out. Exit 2 with one message if the server refuses, ICE or DTLS
        fail, or consent is lost.

        Options:
          --to HOST:PORT            destination (SDES-SRTP; repeat for a relayed session)
          --whip URL                WHIP endpoint (http:// or https://)
          --token TOKEN             WHIP bearer token (or PUBBOT_WHIP_TOKEN; never printed)
          --ice-server URL          stun:HOST[:PORT] (a server-reflexive candidate),
                                    turn:HOST[:PORT][?transport=udp|tcp] or turns:HOST[:PORT]
                                    (a relayed candidate, TURN over UDP, TCP or TLS); repeatable
          --turn-username U         TURN long-term credentials (the credential also from
          --turn-credential C       PUBBOT_TURN_CREDENTIAL; never printed)
          --turn-ca FILE            CA certificates (PEM) for a turns: server (default: the
                                    system's store)
          --ca-file FILE            CA certificates (PEM) an https:// endpoint is verified with
                                    (a private CA; default: the system's store)
          --ice-policy POLICY       all (default), relay (only the TURN relay) or no-host (keep
                                    the host address out of the offer)
          --ice-interface NAME      offer this interface's address (default: the one routed
                                    toward the endpoint)
          --no-ipv6                 IPv4 only: names resolve to IPv4 (endpoint, STUN, TURN), the
                                    HTTP exchanges and the media go over IPv4 (default: the
                                    first address the resolver gives, IPv6 first, RFC 6724)
          --strict                  an answer that departs from RFC 9725 §4.2 (HTTP 200 or 202
                                    for 201, no Location, another Content-Type) is exit 2,
                                    not a warning
          --no-trickle              gather every candidate before the offer goes (default: trickle
                                    ICE, RFC 9725 §4.3.2 — the offer carries the host candidate,
                                    the server-reflexive and relayed ones gathered during the
                                    POST follow in one PATCH; a refused PATCH is one warning)
          --ice-restart-at D        restart ICE at D into the run (repeatable): a PATCH with new
                                    credentials (RFC 9725 §4.3.3), the server's answer applied,
                                    media moved to the new pair without a new session; a refusal
                                    is a warning and the session goes on (JSON: iceRestarts)
          --ice-recover-after D     restart ICE the same way when the path has answered no
                                    consent check for D (7s…29s; checks go every 4–6 s, consent
                                    is lost at 30 s), again every D while it stays silent; a
                                    restart whose checks fail no longer ends the session
          --key B64                 SRTP master key‖salt, base64 (default: a random key per run)
          --srtp-suite SUITE        aes-cm (AES_CM_128_HMAC_SHA1_80, default) or gcm (AEAD_AES_128_GCM)
          --sdp-out FILE            write an SDP describing exactly what is sent (contains the key)
          --no-bundle               one port per stream (for stock players)
          --duration D              stop after D (500ms, 15s, 2m); default: until Ctrl-C
          --layers LADDER           e.g. 1280x720@30:2500k,640x360@30:700k,320x180@15:150k
                                    (default: 1280x720, 640x360, 320x180 at 30 fps)
          --fps N                   frame rate of layers that do not give one (default 30)
          --temporal-layers MODE    L1T1 (default), L1T2 or L1T3 on every layer
          --scalability MODE        L1T1-L1T3 as --temporal-layers, or spatial layers in one
                                    stream: L2T1_KEY … L3T3_KEY (L3T3_KEY at 1280x720 is 320x180,
                                    640x360 and 1280x720, each predicted from the one below on key
                                    pictures only, as libwebrtc sends VP9 SVC); --codec vp9 or av1
          --codec C|LIST            vp8 (default), h264 (openh264, Constrained Baseline, RFC 6184
                                    packetization mode 1), vp9 (libvpx, profile 0, RFC 9628
                                    flexible mode, L1T1-L1T3) or av1 (libaom, main profile,
                                    AOM RTP format, L1T1-L1T3); a list (h264,vp8) is offered in that
                                    order over WHIP and the answer picks
          --keyframe-interval D     automatic key frames every D (default: only at start)
          --no-audio / --no-video   send only one kind of media
          --cname NAME              RTCP CNAME (default pubbot; with --whip a random one)
          --rtc-stats FILE          write a W3C webrtc-stats report (JSON) at the end, and on SIGUSR1
          --sender-stats            send the sender-side stats track (RTCP APP "SSTS")
          --audio-fallback          drop video while the network condition is critical
          --vitals                  add process CPU, RSS and encoder time per layer to the
                                    stats stream (type "vitals"), with a final summary
          --metrics [HOST:]PORT     Prometheus text exposition at /metrics (loopback unless a
                                    host is given)
          --stats FILE|-            publisher stats as JSON Lines every --stats-interval (1s)
          --no-congestion-control   send every layer at its target, no estimation or probing
                                    (for receivers that send no transport-cc feedback;
                                    --no-bundle implies it)
          --impair SPEC|SCHEDULE    emulate the uplink on pubbot's own send path (after the
                                    pacer, before the socket; no root needed, any receiver or
                                    server): loss=2%,burst=4,delay=40ms,jitter=10ms,rate=800kbit,
                                    queue=200ms, or 0s:rate=3mbit;10s:rate=600kbit;20s:loss=100%;
                                    what it dropped is reported apart (JSON: uplinkEmulator)
          --json                    print the final summary as JSON

        Exit codes: 0 media sent, 2 runtime failure or no media sent (a WebRTC transport that never
        connected before the duration ended, whatever the duration), 64 usage error, 130 interrupted.
        """

    static let receiveDetails = """


        Listens on HOST:PORT for a BUNDLEd pubbot (or compatible) SRTP stream, decrypts it,
        reassembles and decodes every layer and the audio, reads the video stamps back and reports
        per stream: packets/bytes received, lost, frames decoded, resolution, decode errors,
        latency. Packets that fail authentication are counted; if nothing authenticates within a
        second, it says the key does not match.

        With --whip-listen it is a WHIP endpoint (RFC 9725) instead: POST /whip with an SDP offer
        creates a session (ICE-lite, DTLS client, the offer's payload types and extension IDs,
        simulcast as offered, the offer's first video codec pubbot decodes: VP8, H.264 in
        packetization mode 1 or VP9 profile 0), DELETE /whip/<id> ends it; media arrives on UDP at the same port
        number, each publisher with its own DTLS keys. OPTIONS (CORS) needs no token. A session
        whose ICE has not connected 15 s after the answer, or whose publisher stops its consent
        checks for 30 s, is closed and its slot freed. The HTTP server serves every connection at
        once: 10 s for a whole request (408), 512 connections, 64 per source address (503).
        HOST is IPv4 or IPv6 in brackets: [::1], or [::] for both families (one dual-stack
        socket; the answer offers every usable address of each, IPv6 first). PATCH takes trickled
        candidates (204) and ICE restarts (200, a new ETag); the summary counts them.

        With --whep URL it is a WHEP subscriber (draft-ietf-wish-whep) to a media server: it POSTs
        a recvonly offer, follows the server's answer (its payload types, extension IDs and RTX
        SSRCs; it offers VP8, H.264 and VP9, the server picks), runs full ICE (controlling; a role conflict is settled by tie-breaker) and DTLS
        in the role the answer left, sends NACK, PLI, receiver reports and transport-cc, decodes
        what the server forwards and reports it: resolution, frame rate, freezes, layer changes the
        server made (videoQualityChanged events), glass-to-glass latency from the video stamps
        (publisher and subscriber on one clock), and the local link's condition
        (networkDegradationSource). DELETEs the session on every way out.

        Options:
          --listen HOST:PORT        where to listen (SDES), e.g. 127.0.0.1:5004
          --whip-listen HOST:PORT   serve WHIP (HTTP) and WebRTC media (UDP) on HOST:PORT
                                    (0.0.0.0:8080, [::]:8080, [::1]:0, …)
          --tls-cert FILE           with --whip-listen: serve HTTPS (TLS 1.2+, OpenSSL) with this
          --tls-key FILE            certificate chain and key (PEM); without them a --token on
                                    an address other hosts reach is a warning (sent in clear)
          --ca-file FILE            with --whep: CA certificates (PEM) for an https:// server
          --token TOKEN             with --whip-listen: require this bearer token (or
                                    PUBBOT_WHIP_TOKEN); with --whep: send it (or PUBBOT_WHEP_TOKEN)
          --ice-server URL          with --whip-listen: a STUN/TURN server announced to every
                                    publisher in the 201's Link header (RFC 9725 §4.6; repeatable);
                                    a turn: one with --turn-username and --turn-credential (or
                                    PUBBOT_TURN_CREDENTIAL), sent to publishers, never printed;
                                    with --whep: the subscriber's own STUN/TURN servers (UDP),
                                    asked before the offer (srflx, a relayed candidate)
          --ice-policy all|relay    with --whep: relay checks from the TURN relay only
          --no-trickle              with --whep: gather before the offer, no PATCH (default:
                                    the offer at once, the rest trickled after the 201)
          --whep URL                subscribe through a server's WHEP endpoint (http:// or https://);
                                    STUN/TURN servers its 201 announces (Link) are used too
          --ice-interface IF        with --whep: the host candidate from this interface
          --no-ipv6                 with --whep: IPv4 only, HTTP and media (as for publish)
          --ice-restart-at D        with --whep: restart the subscription's ICE at D (repeatable;
                                    a PATCH as for publish, RFC 9725 §4.3.3; JSON: iceRestarts)
          --ice-recover-after D     with --whep: restart when the server's path has answered no
                                    consent check for D (7s…29s), as publish does
          --strict                  with --whep: an answer that departs from the WHEP/WHIP
                                    exchange (HTTP 200 or 202, no Location, another
                                    Content-Type, a 406 counter-offer) is exit 2, not a
                                    warning
          --key B64                 SRTP master key‖salt, base64
          --sdp FILE                read the key and suite from the publisher's --sdp-out file
          --srtp-suite SUITE        aes-cm (default) or gcm, with --key
          --downlink-impair SPEC    emulate the subscriber's own downlink (after the router
                                    has answered the publisher; with --whep: everything from the
                                    server), same syntax as --impair
          --stats FILE|-            subscriber stats as JSON Lines every --stats-interval (1s)
          --impair SPEC             emulate the uplink on arriving packets, no root needed:
                                    loss=2%,burst=4,delay=40ms,jitter=10ms,rate=800kbit,queue=200ms
                                    or a schedule 0s:rate=3mbit;10s:rate=600kbit;20s:loss=100%;
                                    bucket=20kb adds a token bucket at the rate (tbf's burst)
          --duration D              stop after D; default: until Ctrl-C
          --no-decode               reassemble video frames without decoding them (fleets)
          --dump-frames DIR         write each measured frame's decoded and reference luma as Y4M
                                    (DIR/<ssrc>-<W>x<H>-decoded.y4m, …-reference.y4m) to check the
                                    PSNR-Y with another tool (ffmpeg's psnr filter)
          --decode-publishers N     decode the video and audio of the first N publishers only
                                    (default 4; `all`); everyone's frames are still reassembled,
                                    counted and checked
          --max-publishers N        publishers served on this port, by source address (default 1024)
          --json                    print the final summary as JSON

        Exit codes: 0 media received, 2 no media (or wrong key), 64 usage error, 130 interrupted.
        """

    static let preflightDetails = """


        Answers "can this network publish, and at what quality?": publishes simulcast video and
        audio, probes and fills the link up to the estimate, stops when the estimate is steady (or
        at --duration), and prints a verdict for audio and video with the measured cause, MOS,
        the recommended tier and the per-layer results (a progress bar on a terminal). When video
        is not supported, a short audio-only phase follows.

        Target (default: the embedded loopback receiver in this process):
          --to HOST:PORT            a remote `pubbot receive` (its feedback crosses the real network)
          --key KEY                 its SRTP key (base64 master key+salt), with --to
          --sdp FILE                or read destination and key from the SDP `receive --sdp-out` wrote
          --whip URL                a WebRTC server's WHIP endpoint: first each path on its own
                                    (host-udp, srflx-udp per STUN server, relay-udp/-tcp/-tls
                                    per TURN server: reachable, connect time, RTT, turnRequired),
                                    then the verdict from the server's feedback over ICE/DTLS;
                                    WHIP/TURN options as for publish; --require also takes a path
          --whep URL                with --whip: also subscribe to itself through the server (WHEP)
                                    and report what arrived: resolution, frame rate, freezes,
                                    glass-to-glass latency, layer changes
          --whep-token TOKEN        its bearer token (or PUBBOT_WHEP_TOKEN; default: the WHIP one)
          --ice-restart-at D        with --whip: restart the main phase's ICE at D (repeatable; a
                                    PATCH as publish makes it; the report lists each)
          --ice-recover-after D     with --whip: restart when the path has answered no consent
                                    check for D (7s…29s), as publish does
          --impair SPEC             emulate the uplink at the embedded receiver (rehearsal):
                                    loss=2%,burst=4,delay=40ms,jitter=10ms,rate=800kbit,queue=200ms;
                                    with --whip, on pubbot's own send path toward the server (after
                                    the pacer, before the socket; its drops reported apart)

        Verdict:
          --require TIER            1080p, 720p, 540p, 360p, 270p, 180p or audio; sets the exit code
          --verdict-thresholds LIST share=75%,audio-mos=2.4,audio-bitrate=40kbit,video-loss=10%,simulcast=on
          --duration D              hard limit (default 15s; 2s…10m)

        Output:
          --json                    one JSON document (schema: Sources/BotCLI/preflight.schema.json)
          --junit FILE              JUnit XML, one test case per requirement
          --dump-frames DIR         the embedded receiver's measured frames as Y4M (decoded and
                                    reference luma; see receive --dump-frames)
          --stats FILE|-            the publisher stats stream while it runs (JSON lines)
          --stats-interval D        default 1s

        Media options: --layers LADDER, --srtp-suite aes-cm|gcm, --temporal-layers L1T1|L1T2|L1T3,
        --codec vp8|h264|vp9|av1|LIST, --fps N, --audio-only (as for publish).

        Exit codes: 0 verdict given (and --require met), 1 --require not met, 2 no answer from the
        receiver within 3 s or no media (check address, port, key, firewall), 64 usage error,
        130 interrupted.
        """

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
                                    new pair (JSON: webrtc.iceRestarts, each bot's iceRestarts)
          --ice-recover-after D     with --whip: each bot restarts ICE when its path has answered
                                    no consent check for D (7s…29s), again every D while silent
                                    (JSON: webrtc.iceRestarts.byConsentWatch, iceRecoveries)
          --whep URL                with --whip: subscriber bots too, each a real WHEP subscriber
                                    (socket, ICE, DTLS, feedback, reassembly) on the event
                                    loops — no thread each; they join 2 s after the ramp, 50 ms
                                    apart (all within --ramp when it is given), and leave 1 s
                                    before the end; the report adds per-room
                                    and fleet percentiles of glass-to-glass latency, freezes and
                                    frame rate. The publishers encode live (stamps) unless --media is given
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
          --report FILE             the JSON report (per bot, totals, percentiles, histograms)
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
          --codec vp8|h264|vp9|av1  every bot's video codec (replay loops: Media/replay-h264, -vp9
                                    or -av1, or built once on demand into the cache)
          --srtp-suite SUITE        aes-cm (default) or gcm
          --json                    print the report as JSON

        Exit codes: 0 every bot started, heard back and every requirement is met; 1 a bot failed
        or never heard back, or a requirement is not met; 2 no bot heard from the receiver (or no
        replay media); 64 usage error; 130 interrupted.
        """

    static let mediaDetails = """


        Encodes the synthetic video (each simulcast layer) and audio once with the project's own
        VP8 (or H.264, VP9) and Opus encoders into DIR (default Media/replay, Media/replay-h264):
        manifest.txt, one IVF file per layer and the Opus frames. Load bots replay these loops.

        Options:
          --out DIR                 where to write (default Media/replay, Media/replay-h264)
          --codec vp8|h264|vp9|av1  the video codec of the loops (default vp8)
          --seconds N               loop length (default 4)
          --keyframe-interval D     a key frame every D (default 1s; PLIs are answered at the next one)
          --layers LADDER           simulcast ladder (default 640x360 + 320x180, the usual load-test
                                    publisher; e.g. 1280x720@30:2500k,640x360@30:500k,320x180@30:150k)
          --fps N                   frame rate (default 30)

        media export writes the synthetic source itself (what pubbot encodes, stamps included) as
        YUV4MPEG2 — for Chromium's fake camera (--use-file-for-fake-video-capture=FILE), ffmpeg or
        another sender. pubbot's receiver measures what they send against the source drawn at the
        decoded size: a true figure while they send the exported size; a sender that scales it
        down sends its own downscale, which pubbot does not draw (the figure is then too low).
          --y4m FILE                where to write
          --size WxH                picture size (default 1280x720)
          --seconds N               length (default 10; 1…600)
          --fps N                   frame rate (default 30)
        """

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

    static let reportDetails = """


        Merges the JSON reports of load shards: bot counts and totals add up, histograms merge
        bucket by bucket, and the percentiles are recomputed from the merged buckets (never
        averaged). Requirements are those of the shards unless --require is given.

        Options:
          --report OUT              write the merged report
          --require LIST            requirements to check (as for load)
          --json                    print the merged report as JSON

        Exit codes as for load.
        """

    static let checkDetails = """


        Exercises a WHIP endpoint (RFC 9725) and/or a WHEP endpoint (draft-ietf-wish-whep, which
        keeps WHIP's HTTP rules) as the RFC's clients use them, and says for each requirement,
        with its section and keyword (MUST, SHOULD, MAY; "-" where the RFC states the behaviour
        without one), whether the server met it, broke it, does not support the optional feature,
        or could not be tried: OPTIONS for CORS and Accept-Post, GET, the 4xx owed to a POST that
        is not SDP or not valid SDP, the 201 with application/sdp, Location and an answer by
        JSEP's rules (its direction, its candidates), the STUN/TURN servers in its Link headers
        (each asked for a Binding or an Allocation), trickle ICE and ICE restart by PATCH with
        their status and entity-tag rules (204, 200 with new credentials and a new ETag, 422,
        428, 412), DELETE and the session gone after it. No media is sent; each session made is
        DELETEd. A WHEP endpoint needs a publisher there first (it may answer 409 until then).

        Options:
          --whip URL                the WHIP endpoint to check
          --token TOKEN             its bearer token (or PUBBOT_WHIP_TOKEN; never printed); with a
                                    token, an offer without it is tried too (401 expected)
          --whep URL                the WHEP endpoint to check
          --whep-token TOKEN        its bearer token (or PUBBOT_WHEP_TOKEN)
          --timeout D               each HTTP request's limit (default 10s)
          --ca-file FILE            CA certificates (PEM) for https:// endpoints (a private CA)
          --no-ipv6                 reach the endpoints over IPv4 only
          --json                    the findings as JSON

        Exit codes: 0 no MUST broken, 1 a MUST broken, 2 an endpoint could not be checked
        (unreachable, nobody publishing at a WHEP endpoint), 64 usage error.
        """
}
