/// `pubbot help check`: what follows its usage line.
extension Help {
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
