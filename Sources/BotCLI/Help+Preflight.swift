/// `pubbot help preflight`: what follows its usage line.
extension Help {
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

        What a browser would send on this link (`browserEquivalent` in JSON): libwebrtc's rules
        applied to the settled estimate — one encoding (its quality scaler walked with the QP
        pubbot's own encoder reaches on the content at each size, and the PSNR-Y there) and
        simulcast (the layers the estimate turns on); never above the camera:
          --camera 720p|1080p|WxH   the camera a browser would capture from (default 720p)
          --content easy|natural|hard
                                    the scene pubbot's camera draws (sent and probed; default
                                    natural, the content the tiers were calibrated on): a still
                                    desk, a panning camera, a hand-held street

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
}
