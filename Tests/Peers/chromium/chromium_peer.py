#!/usr/bin/env python3
"""Chromium (Debian's `chromium`, libwebrtc) as a test peer — the reference implementation and the
strictest judge. A small HTTP server (standard library, 127.0.0.1, port 0) serves page.html to a
headless Chromium it starts, hands the page work by long polling and prints what the page reports,
one JSON line each. Chromium's own getStats() is the count.

  chromium_peer.py endpoint [--limit S] [--bind ADDRESS]
      A WHIP endpoint in front of Chromium: POST /whip with an offer → the page answers it
      (recvonly; Chromium refuses rid simulcast as an answerer, so a simulcast publisher falls back
      to one encoding) → 201 with the answer and Location /whip/N. Every second the page reports
      inbound-rtp/candidate-pair stats: {"event": "stats", "session": N, ...}; at DELETE one
      final line {"event": "final", ...}. PATCH /whip/N (RFC 9725 §4.3): a trickle goes to the page's
      addIceCandidate ({"event": "trickled", "added", "failed"}); an ICE restart is the stored offer
      with the new credentials, answered by Chromium (200 with its new ones, a new ETag).
  chromium_peer.py publish URL [--simulcast] [--codec NAME] [--seconds S] [--limit S] [--trust-cert PEM] [--trickle] [--restart-at S]
      Chromium publishes its fake camera and microphone (30 fps) by WHIP to URL — q/h/f simulcast
      (scaleResolutionDownBy 4/2/1) with --simulcast — by fetch() from the page, i.e. from another
      origin than URL's (CORS); --codec puts that video codec first in its offer
      (setCodecPreferences); --trickle offers at once and PATCHes its candidates after the 201
      ({"event": "trickle", "status"}), --restart-at S restarts ICE by PATCH ({"event": "restart"}). Every second: {"event": "stats", "layers": {rid: {...}},
      "availableOutgoingBitrate": …}; after S seconds it DELETEs and prints {"event": "done"}.
  Every inbound/outbound entry names its codec ("codec": "video/H264 level-asymmetry-allowed=1;…").
  chromium_peer.py endpoint (also) serves WHEP: POST /whep with a recvonly offer → Chromium answers
      sendonly with its fake camera and microphone (the source of the subscription; its
      encoder follows the subscriber's transport-cc); stats and DELETE as for /whip.

Prints "LISTENING <port>" once the HTTP server runs and "READY" once Chromium's page asked for
work. Exit 77 when Chromium is not installed. Never outlives its parent nor --limit seconds, and
takes Chromium (its own process group) with it.
"""
import argparse, ctypes, http.server, json, os, queue, signal, shutil, socketserver, subprocess, sys, tempfile, threading, time

here = os.path.dirname(os.path.abspath(__file__))
args = argparse.ArgumentParser()
args.add_argument("mode", choices=["endpoint", "publish"])
args.add_argument("url", nargs="?")
args.add_argument("--simulcast", action="store_true")
args.add_argument("--codec", help="publish: the video codec Chromium puts first (VP8, H264, VP9, AV1)")
args.add_argument("--seconds", type=float, default=10)
args.add_argument("--trickle", action="store_true", help="publish: offer at once, trickle the candidates in one PATCH after the 201")
args.add_argument("--restart-at", type=float, help="publish: an ICE restart by PATCH this many seconds after the 201")
args.add_argument("--limit", type=float, default=120)
args.add_argument("--end-on-stdin-eof", action="store_true", help="stop the browser and exit when stdin closes (PeerProcess)")
args.add_argument("--field-trials", help="libwebrtc field trials (--force-fieldtrials), e.g. WebRTC-DependencyDescriptorAdvertised/Enabled/")
args.add_argument("--video-file", help="publish: the fake camera plays this Y4M (pubbot media export --y4m) instead of "
                  "Chromium's own pattern (--use-file-for-fake-video-capture)")
args.add_argument("--bind", default="127.0.0.1", help="the HTTP server's address (0.0.0.0: reachable from another network namespace)")
args.add_argument("--trust-cert", help="publish to an https URL whose server certificate (PEM) a test CA signed: Chromium "
                  "trusts that certificate's key (--ignore-certificate-errors-spki-list), nothing else")
opts = args.parse_args()

chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if chromium is None:
    print("chromium_peer: chromium is not installed (apt-get install chromium)", file=sys.stderr, flush=True)
    sys.exit(77)

jobs = queue.Queue()
answers = {}          # session → answer SDP (filled by the page)
offers = {}           # session → the offer it answered (a restart renews it)
etags = {}            # session → its ICE session's entity-tag (RFC 9725 §4.3.1)
ufrags = {}           # session → the client's current ICE ufrag
answer_ready = {}     # session → threading.Event
state = {"sessions": 0, "ready": False}
lock = threading.Lock()
browser = None


def emit(obj):
    with lock:
        print(json.dumps(obj), flush=True)


def stop_browser():
    if browser is not None and browser.poll() is None:
        try:
            os.killpg(browser.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def watchdog(limit):
    parent, started = os.getppid(), time.time()
    def watch():
        while os.getppid() == parent and time.time() - started < limit:
            time.sleep(0.2)
        stop_browser()
        os._exit(0)
    threading.Thread(target=watch, daemon=True).start()
    # --end-on-stdin-eof: the harness (PeerProcess) ends its peer by closing the pipe to its
    # stdin, then SIGKILL: the browser goes first, or its processes outlive the test (five
    # Chromiums were found still running 15 minutes after a suite). Opt-in: a peer run by a
    # script may have a stdin that is already at its end.
    if opts.end_on_stdin_eof:
        def on_eof():
            while sys.stdin.buffer.read(4096):
                pass
            stop_browser()
            os._exit(0)
        threading.Thread(target=on_eof, daemon=True).start()


def die_with_parent():
    """In the browser's child before exec: SIGKILL when this peer dies, however it dies
    (prctl PR_SET_PDEATHSIG, Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body=b"", headers=(), content_type="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Expose-Headers", "Location")
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/page":
            with open(os.path.join(here, "page.html"), "rb") as f:
                return self.reply(200, f.read(), content_type="text/html")
        if self.path == "/next":
            # Long poll: the page's next job (or a no-op after 10 s).
            if not state["ready"]:
                state["ready"] = True
                emit({"event": "ready"})
                print("READY", flush=True)
            try:
                job = jobs.get(timeout=10)
            except queue.Empty:
                job = {"type": "none"}
            return self.reply(200, json.dumps(job).encode(), content_type="application/json")
        return self.reply(404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.startswith("/report"):
            # The page's results: answers, stats lines, errors.
            msg = json.loads(body)
            if msg.get("type") == "answer":
                answers[msg["session"]] = msg["sdp"]
                answer_ready[msg["session"]].set()
            else:
                emit(msg)
            return self.reply(204)
        if self.path in ("/whip", "/whep") and opts.mode == "endpoint":
            with lock:
                state["sessions"] += 1
                n = state["sessions"]
            answer_ready[n] = threading.Event()
            offers[n], etags[n] = body.decode(), '"%d"' % n
            ufrags[n] = next((l[12:] for l in offers[n].splitlines() if l.startswith("a=ice-ufrag:")), None)
            jobs.put({"type": "answer", "session": n, "offer": offers[n], "send": self.path == "/whep"})
            if not answer_ready[n].wait(15) or answers.get(n, "").startswith("ERROR"):
                return self.reply(500, ("Chromium did not answer: " + answers.get(n, "timeout")).encode())
            return self.reply(201, answers[n].encode(), [("Location", "%s/%d" % (self.path, n)), ("ETag", etags[n])], "application/sdp")
        return self.reply(404)

    def do_PATCH(self):
        """RFC 9725 §4.3: a trickle (the same ufrag, If-Match the ETag) goes to the page's
        addIceCandidate, 204; an ICE restart (a new ufrag, If-Match "*") is the stored offer with
        the new credentials and candidates, answered by Chromium (an answerer cannot restartIce()
        itself), 200 with its new credentials and candidates and a new ETag."""
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode(errors="replace")
        try:
            n = int(self.path.split("/")[-1])
        except ValueError:
            return self.reply(404)
        if not (self.path.startswith("/whip/") or self.path.startswith("/whep/")) or n not in offers:
            return self.reply(404)
        if not (self.headers.get("Content-Type") or "").startswith("application/trickle-ice-sdpfrag"):
            return self.reply(415)
        match = self.headers.get("If-Match")
        if match is None:
            return self.reply(428)
        lines = body.replace("\r\n", "\n").split("\n")
        ufrag = next((l[12:] for l in lines if l.startswith("a=ice-ufrag:")), None)
        pwd = next((l[10:] for l in lines if l.startswith("a=ice-pwd:")), None)
        mid = next((l[6:] for l in lines if l.startswith("a=mid:")), "0")
        cands = [l[2:] for l in lines if l.startswith("a=candidate:")]
        restart = ufrag is not None and ufrag != ufrags[n]
        if restart and match not in ("*", '"*"') or not restart and match != etags[n]:
            return self.reply(412)
        if not restart:
            jobs.put({"type": "trickle", "session": n, "candidates": cands, "mid": mid, "ufrag": ufrags[n], "end": "a=end-of-candidates" in lines})
            return self.reply(204)
        offer = []
        for l in offers[n].replace("\r\n", "\n").split("\n"):
            if l.startswith("a=candidate:") or l.startswith("a=end-of-candidates"):
                continue
            if l.startswith("a=ice-ufrag:"):
                l = "a=ice-ufrag:" + ufrag
            elif l.startswith("a=ice-pwd:"):
                l = "a=ice-pwd:" + (pwd or "")
            if l:
                offer.append(l)
            if l.startswith("m="):
                offer += ["a=" + c for c in cands]
        offers[n], ufrags[n] = "\r\n".join(offer) + "\r\n", ufrag
        answer_ready[n] = threading.Event()
        answers.pop(n, None)
        jobs.put({"type": "restart", "session": n, "offer": offers[n]})
        if not answer_ready[n].wait(15) or answers.get(n, "").startswith("ERROR"):
            return self.reply(500, ("Chromium did not answer the restart: " + answers.get(n, "timeout")).encode())
        answer = answers[n].replace("\r\n", "\n").split("\n")
        first = answer.index(next(l for l in answer if l.startswith("m=")))
        frag = [next(l for l in answer if l.startswith("a=ice-ufrag:")), next(l for l in answer if l.startswith("a=ice-pwd:"))]
        section = answer[first + 1:]
        section = section[:next((i for i, l in enumerate(section) if l.startswith("m=")), len(section))]
        frag += [l for l in section if l.startswith("a=candidate:")] + ["a=end-of-candidates"]
        etags[n] = '"%d-%s"' % (n, ufrag)
        emit({"event": "restarted", "session": n})
        return self.reply(200, ("\r\n".join(frag) + "\r\n").encode(), [("ETag", etags[n])], "application/trickle-ice-sdpfrag")

    def do_DELETE(self):
        if self.path.startswith("/whip/") or self.path.startswith("/whep/"):
            jobs.put({"type": "close", "session": int(self.path.split("/")[-1])})
            return self.reply(200)
        return self.reply(404)

    def do_OPTIONS(self):
        self.reply(204, headers=[("Access-Control-Allow-Methods", "POST, PATCH, DELETE"), ("Access-Control-Allow-Headers", "Content-Type, Authorization")])


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


watchdog(opts.limit)
server = Server((opts.bind, 0), Handler)
port = server.server_address[1]
print("LISTENING %d" % port, flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
if opts.mode == "publish":
    jobs.put({"type": "publish", "url": opts.url, "simulcast": opts.simulcast, "seconds": opts.seconds, "codec": opts.codec,
              "trickle": opts.trickle, "restartAt": opts.restart_at})

profile = tempfile.mkdtemp(prefix="pubbot-chromium-")
flags = ["--headless=new", "--disable-gpu", "--user-data-dir=" + profile, "--use-fake-ui-for-media-stream",
         "--use-fake-device-for-media-stream=fps=30", "--allow-loopback-in-peer-connection",
         "--disable-features=WebRtcHideLocalIpsWithMdns", "--no-first-run", "--no-default-browser-check",
         "--autoplay-policy=no-user-gesture-required"]
if os.getuid() == 0:
    flags.append("--no-sandbox")
if opts.field_trials:
    flags.append("--force-fieldtrials=" + opts.field_trials)
if opts.video_file:
    flags.append("--use-file-for-fake-video-capture=" + os.path.abspath(opts.video_file))
if opts.trust_cert:
    # The base64 SHA-256 of the certificate's SubjectPublicKeyInfo, as Chromium's flag wants it.
    spki = subprocess.run("openssl x509 -in '%s' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary "
                          "| base64" % opts.trust_cert, shell=True, check=True, capture_output=True, text=True).stdout.strip()
    flags.append("--ignore-certificate-errors-spki-list=" + spki)
browser = subprocess.Popen([chromium] + flags + ["http://127.0.0.1:%d/page" % port], stdout=subprocess.DEVNULL,
                           stderr=open(os.path.join(profile, "chromium.log"), "w"), start_new_session=True,
                           preexec_fn=die_with_parent)
try:
    while browser.poll() is None:
        time.sleep(0.2)
    emit({"event": "exited", "code": browser.returncode})
finally:
    stop_browser()
    shutil.rmtree(profile, ignore_errors=True)
