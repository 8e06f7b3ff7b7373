/// `pubbot help receive`: what follows its usage line.
extension Help {
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
          --ice-interface IF        with --whep: offer this interface's addresses only
                                    (repeatable; default: a host candidate per usable interface
                                    and family, as for publish)
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
          --content easy|natural|hard
                                    the scene the publisher draws (its own --content; default
                                    natural): what decoded frames are measured against
          --capture-size WxH|720p   the publisher captures at this size and scales each layer
                                    down from it (a browser fed `pubbot media export`): frames
                                    are measured against the source scaled as libwebrtc scales
                                    it, and every fourth also at the capture size (the decoded
                                    picture scaled up, as libwebrtc's I420PSNR compares)
          --decode-publishers N     decode the video and audio of the first N publishers only
                                    (default 4; `all`); everyone's frames are still reassembled,
                                    counted and checked
          --max-publishers N        publishers served on this port, by source address (default 1024)
          --json                    print the final summary as JSON

        Exit codes: 0 media received, 2 no media (or wrong key), 64 usage error, 130 interrupted.
        """
}
