/// Help and usage texts (the CLI contract of SPEC §7).
enum Help {
    static let version = "pubbot 0.1.0"

    static let overview = """
    pubbot — a headless test publisher for real-time video (VP8 simulcast + Opus over SRTP/UDP).

    Usage: pubbot <command> [options]

    Commands:
      preflight   publish to the embedded loopback receiver (or a remote one) and report per layer
      publish     publish synthetic VP8 simulcast + Opus to a receiver
      receive     receive, decrypt, reassemble and decode what a publisher sends
      help        show help for a command

    Options:
      -h, --help  show help
      --version   print the version

    See 'pubbot help <command>' or 'pubbot <command> --help'.
    """

    static func usage(_ command: String?) -> String {
        switch command {
        case "publish": "Usage: pubbot publish --to HOST:PORT [--key B64] [--srtp-suite aes-cm|gcm] [--sdp-out FILE] [--no-bundle] [--duration D] [--layers LADDER] [--no-audio | --no-video] [--fps N] [--temporal-layers L1T1|L1T2|L1T3] [--keyframe-interval D] [--no-congestion-control] [--stats FILE|-] [--json]"
        case "receive": "Usage: pubbot receive --listen HOST:PORT (--key B64 | --sdp FILE) [--impair SPEC] [--downlink-impair SPEC] [--srtp-suite aes-cm|gcm] [--duration D] [--stats FILE|-] [--json]"
        case "preflight": "Usage: pubbot preflight [--duration D] [--layers LADDER] [--audio-only] [--impair SPEC] [--srtp-suite aes-cm|gcm] [--temporal-layers L1T1|L1T2|L1T3] [--fps N] [--json]"
        default: "Usage: pubbot <command> [options]"
        }
    }

    static func help(_ command: String) -> String? {
        switch command {
        case "publish": return usage(command) + """


        Publishes synthetic video (VP8, one SSRC per simulcast layer) and audio (Opus 48 kHz, 20 ms,
        in-band FEC) over SRTP to HOST:PORT. By default everything is BUNDLEd on one port with
        rtcp-mux and MID/RID header extensions; --no-bundle sends audio to PORT and video layer i
        to PORT+2(i+1), RTCP on the next port up, so that `ffmpeg -i x.sdp` can open it.

        Options:
          --to HOST:PORT            destination (required)
          --key B64                 SRTP master key‖salt, base64 (default: a random key per run)
          --srtp-suite SUITE        aes-cm (AES_CM_128_HMAC_SHA1_80, default) or gcm (AEAD_AES_128_GCM)
          --sdp-out FILE            write an SDP describing exactly what is sent (contains the key)
          --no-bundle               one port per stream (for stock players)
          --duration D              stop after D (500ms, 15s, 2m); default: until Ctrl-C
          --layers LADDER           e.g. 1280x720@30:2500k,640x360@30:700k,320x180@15:150k
                                    (default: 1280x720, 640x360, 320x180 at 30 fps)
          --fps N                   frame rate of layers that do not give one (default 30)
          --temporal-layers MODE    L1T1 (default), L1T2 or L1T3 on every layer
          --keyframe-interval D     automatic key frames every D (default: only at start)
          --no-audio / --no-video   send only one kind of media
          --cname NAME              RTCP CNAME (default pubbot)
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
          --json                    print the final summary as JSON

        Exit codes: 0 done, 2 runtime failure, 64 usage error, 130 interrupted.
        """
        case "receive": return usage(command) + """


        Listens on HOST:PORT for a BUNDLEd pubbot (or compatible) SRTP stream, decrypts it,
        reassembles and decodes every layer and the audio, reads the video stamps back and reports
        per stream: packets/bytes received, lost, frames decoded, resolution, decode errors,
        latency. Packets that fail authentication are counted; if nothing authenticates within a
        second, it says the key does not match.

        Options:
          --listen HOST:PORT        where to listen (required), e.g. 127.0.0.1:5004
          --key B64                 SRTP master key‖salt, base64
          --sdp FILE                read the key and suite from the publisher's --sdp-out file
          --srtp-suite SUITE        aes-cm (default) or gcm, with --key
          --downlink-impair SPEC    emulate the subscriber's own downlink (after the router
                                    has answered the publisher), same syntax as --impair
          --stats FILE|-            subscriber stats as JSON Lines every --stats-interval (1s)
          --impair SPEC             emulate the uplink on arriving packets, no root needed:
                                    loss=2%,burst=4,delay=40ms,jitter=10ms,rate=800kbit,queue=200ms
                                    or a schedule 0s:rate=3mbit;10s:rate=600kbit;20s:loss=100%
          --duration D              stop after D; default: until Ctrl-C
          --json                    print the final summary as JSON

        Exit codes: 0 media received, 2 no media (or wrong key), 64 usage error, 130 interrupted.
        """
        case "preflight": return usage(command) + """


        Runs the embedded loopback receiver in this process, publishes to it over 127.0.0.1 for a
        bounded time (a progress line on a terminal), then prints per layer: packets and frames
        sent vs received/decoded, resolution, bitrate, stamps read back and latency.

        Options:
          --duration D              how long to publish (default 5s)
          --layers LADDER           simulcast ladder (as for publish)
          --audio-only              no video
          --impair SPEC             emulate the uplink on arriving packets, no root needed:
                                    loss=2%,burst=4,delay=40ms,jitter=10ms,rate=800kbit,queue=200ms
                                    or a schedule 0s:rate=3mbit;10s:rate=600kbit;20s:loss=100%
          --srtp-suite SUITE        aes-cm (default) or gcm
          --temporal-layers MODE    L1T1 (default), L1T2 or L1T3
          --fps N                   default frame rate (30)
          --json                    print the result as JSON

        Exit codes: 0 every stream decoded, 2 a stream missing or undecodable, 64 usage error, 130 interrupted.
        """
        default: return nil
        }
    }
}
