#!/usr/bin/env python3
"""A scripted WHIP endpoint (RFC 9725) for pubbot's client tests: standard library only,
127.0.0.1, port 0; prints its port, then serves until killed. Paths choose the behaviour:
  /whip      201 + SDP answer, relative Location, ETag, two Link ice-server headers
  /redirect  307 to /whip (the client must POST again)
  /auth      401 unless "Authorization: Bearer s3cret", then as /whip
  /busy      503 with Retry-After: 1 the first time, then as /whip
  /missing   404
  /bad       400 with a reason in the body
  /noloc     201 without Location
  /ok200, /ok202  200 or 202 with the SDP answer, Location and ETag (a lenient server's reply)
  /textplain 201 whose SDP answer comes as text/plain
  /busy2     503 with Retry-After: 1 twice, then as /whip
  /conflict  409 with Retry-After: 1 (nobody publishes yet, WHEP-04), then as /whip
  /silent200 as /silent, answered 200
  /stall     reads the request, never answers
  /silent    a complete answer (ICE-lite, DTLS, Opus + VP8) whose only candidate never answers
  /nocodec   a complete answer offering only PCMU audio (no codec in common)
  /whep-silent  a WHEP server's answer (sendonly, full ICE, setup:passive) whose candidate never answers
  /echo      403 whose body echoes the request line and every header (Authorization included) with
             a terminal escape: what a careless server does; the client must not print the secrets
  /ftp       307 to an ftp: URL (the client must not follow it)
  /extmap    a complete answer whose video section has `a=extmap:/ …` (once a client crash)
  /counter   a WHEP server's 406 with its own offer (sendonly, full ICE, setup:actpass; a candidate
             that never answers), Location and ETag (draft-ietf-wish-whep-04)
  /counter-noloc  that 406 without Location
  /counter-refused  that 406, whose answer's PATCH is refused 400
DELETE /session/N answers 200 and is logged to stdout as "DELETE /session/N". PATCH /session/N
with application/sdp is logged as one line "PATCH /session/N <If-Match> <the body, lines joined
by |>" and answered 204 (400 for a /counter-refused session)."""
import http.server, os, socketserver, sys, time

ANSWER = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 127.0.0.1\r\na=mid:0\r\n"
FP = ":".join(["AB"] * 32)
def full_answer(audio_pt, audio_codec, direction="recvonly", setup="active"):
    common = ("c=IN IP4 127.0.0.1\r\na=ice-ufrag:mock\r\na=ice-pwd:mock-ice-password-0123456\r\n"
              "a=fingerprint:sha-256 " + FP + "\r\na=setup:" + setup + "\r\na=rtcp-mux\r\na=" + direction + "\r\n"
              "a=candidate:1 1 udp 2130706431 127.0.0.1 9 typ host\r\n")
    return ("v=0\r\no=- 2 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\na=ice-lite\r\n"
            "m=audio 9 UDP/TLS/RTP/SAVPF %d\r\n" % audio_pt + common + "a=mid:0\r\na=rtpmap:%d %s\r\n" % (audio_pt, audio_codec)
            + ("m=video 9 UDP/TLS/RTP/SAVPF 96\r\n" + common + "a=mid:1\r\na=rtpmap:96 VP8/90000\r\n" if audio_codec.startswith("opus") else ""))
SILENT = full_answer(111, "opus/48000/2")
NOCODEC = full_answer(0, "PCMU/8000")
WHEP_SILENT = full_answer(111, "opus/48000/2", "sendonly", "passive").replace("a=ice-lite\r\n", "")
COUNTER = full_answer(111, "opus/48000/2", "sendonly", "actpass").replace("a=ice-lite\r\n", "")
state = {"busy": 0, "busy2": 0, "conflict": 0, "sessions": 0, "refused": set(), "counter": set()}

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def created(self, answer=None, status=201, content_type="application/sdp"):
        state["sessions"] += 1
        n = state["sessions"]
        self.reply(status, (answer or ANSWER).encode(), [("Content-Type", content_type), ("Location", f"/session/{n}"), ("ETag", f'"e{n}"'),
                                          ("Link", '<stun:stun.example.net:3478>; rel="ice-server"'),
                                          ("Link", '<turn:turn.example.net:3478?transport=udp>; rel="ice-server"; username="u1"; credential="c1"; credential-type="password"')])

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        offer = self.rfile.read(length)
        if self.headers.get("Content-Type") != "application/sdp" or not offer.startswith(b"v=0"):
            return self.reply(415, b"expected application/sdp")
        p = self.path
        if p.split("?")[0] == "/whip":
            return self.created()
        if p.split("?")[0] == "/echo":
            echoed = self.requestline + "\n" + "".join(f"{k}: {v}\n" for k, v in self.headers.items())
            return self.reply(403, ("\x1b[31myou sent:\x1b[0m " + echoed).encode())
        if p == "/ftp":
            return self.reply(307, b"", [("Location", "ftp://127.0.0.1/whip")])
        if p == "/extmap":
            return self.created(SILENT.replace("a=mid:1\r\n", "a=mid:1\r\na=extmap:/ urn:ietf:params:rtp-hdrext:sdes:mid\r\n"))
        if p == "/redirect":
            return self.reply(307, b"", [("Location", "/whip")])
        if p == "/auth":
            if self.headers.get("Authorization") == "Bearer s3cret":
                return self.created()
            return self.reply(401, b"bad token")
        if p == "/busy":
            state["busy"] += 1
            if state["busy"] == 1:
                return self.reply(503, b"", [("Retry-After", "1")])
            return self.created()
        if p == "/bad":
            return self.reply(400, b"simulcast refused: too many layers")
        if p == "/noloc":
            return self.reply(201, ANSWER.encode(), [("Content-Type", "application/sdp")])
        if p == "/silent":
            return self.created(SILENT)
        if p == "/silent200":
            return self.created(SILENT, status=200)
        if p in ("/ok200", "/ok202"):
            return self.created(status=int(p[3:]))
        if p == "/textplain":
            return self.created(content_type="text/plain")
        if p == "/busy2":
            state["busy2"] += 1
            if state["busy2"] <= 2:
                return self.reply(503, b"", [("Retry-After", "1")])
            return self.created()
        if p == "/conflict":
            state["conflict"] += 1
            if state["conflict"] == 1:
                return self.reply(409, b"no publisher yet", [("Retry-After", "1")])
            return self.created()
        if p == "/nocodec":
            return self.created(NOCODEC)
        if p == "/whep-silent":
            return self.created(WHEP_SILENT)
        if p in ("/counter", "/counter-refused"):
            state["sessions"] += 1
            n = state["sessions"]
            state["counter"].add(f"/session/{n}")
            if p == "/counter-refused":
                state["refused"].add(f"/session/{n}")
            return self.reply(406, COUNTER.encode(), [("Content-Type", "application/sdp"), ("Location", f"/session/{n}"), ("ETag", f'"e{n}"')])
        if p == "/counter-noloc":
            return self.reply(406, COUNTER.encode(), [("Content-Type", "application/sdp")])
        if p == "/stall":
            time.sleep(30)
            return
        return self.reply(404, b"")

    def do_PATCH(self):
        # Only a counter-offer's session takes PATCH (its answer); elsewhere the mock is a
        # server that does not know the method, as http.server answers one (501).
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode()
        if self.path not in state["counter"]:
            return self.reply(501, b"Unsupported method ('PATCH')")
        if self.headers.get("Content-Type") != "application/sdp":
            return self.reply(415, b"expected application/sdp")
        print(f"PATCH {self.path} {self.headers.get('If-Match')} " + "|".join(body.splitlines()), flush=True)
        self.reply(400 if self.path in state["refused"] else 204, b"answer refused" if self.path in state["refused"] else b"")

    def do_DELETE(self):
        print(f"DELETE {self.path}", flush=True)
        self.reply(200 if self.path.startswith("/session/") else 404)

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_watchdog import watchdog
watchdog(300)
server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
