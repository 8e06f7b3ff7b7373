/// `pubbot help publish`: what follows its usage line.
extension Help {
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
          --ice-interface NAME      offer this interface's addresses only (repeatable; default:
                                    a host candidate per usable interface and family, the one
                                    routed toward the endpoint first, with network-id and
                                    network-cost; a loopback endpoint gets loopback alone).
                                    A change of the interfaces restarts ICE on the new ones
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
          --content easy|natural|hard
                                    the synthetic scene (default natural): a still desk (few bits
                                    per QP), a panning camera, a hand-held street (several times more)
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
}
