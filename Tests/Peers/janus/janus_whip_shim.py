#!/usr/bin/env python3
"""WHIP (RFC 9725) in front of Janus 1.1.2's VideoRoom, which has no WHIP of its own (standard
library only). At start it creates a room (VP8 + Opus, transport-wide CC, up to 64 publishers).
  POST /whip          a Janus session per publisher: attach janus.plugin.videoroom,
                      `joinandconfigure` as publisher with the offer (rid_order inferred from the
                      offer's a=simulcast), long-poll for Janus's answer, 201 + Location
  GET /whip/ID/stats  Janus's admin `handle_info` for that publisher (per-medium, per-substream)
  DELETE /whip/ID     prints {"event": "stats", "handle_info": …}, then detaches and destroys
                      the session. Janus drops a handle's counters on hang-up, and a publisher's
                      DTLS close_notify (before its DELETE) is one: the last handle_info taken
                      while media flowed (polled every second) is the one printed.
Keepalives every 15 s (Janus ends sessions after 60 s without). Prints "LISTENING <port>".
Usage: janus_whip_shim.py --janus URL --admin URL [--listen ADDR] [--port 8080] [--limit 600]"""
import argparse, http.server, json, os, random, re, socketserver, sys, threading, time, urllib.request

args = argparse.ArgumentParser()
args.add_argument("--janus", required=True)
args.add_argument("--admin", required=True)
args.add_argument("--listen", default="127.0.0.1")
args.add_argument("--port", type=int, default=8080)
args.add_argument("--limit", type=float, default=600)
args.add_argument("--room", type=int, default=4321)
opts = args.parse_args()

lock = threading.Lock()
sessions = {}  # id -> (session, handle)
last_info = {}  # id -> the last handle_info that still had the PeerConnection


def call(url, body, timeout=10):
    body = dict(body, transaction="%x" % random.getrandbits(48))
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)


def poll_for(session, handle, deadline):
    """Long-polls the session's events until one for `handle` carries a JSEP or an error."""
    while time.time() < deadline:
        with urllib.request.urlopen("%s/%d?maxev=5" % (opts.janus, session), timeout=35) as r:
            events = json.load(r)
        for e in events if isinstance(events, list) else [events]:
            if e.get("sender") != handle:
                continue
            data = e.get("plugindata", {}).get("data", {})
            if "error" in data:
                return None, data["error"]
            if "jsep" in e:
                return e["jsep"], None
    return None, "Janus did not answer within 10 s"


def new_handle():
    s = call(opts.janus, {"janus": "create"})["data"]["id"]
    h = call("%s/%d" % (opts.janus, s), {"janus": "attach", "plugin": "janus.plugin.videoroom"})["data"]["id"]
    return s, h


control_session, control = new_handle()
created = call("%s/%d/%d" % (opts.janus, control_session, control), {"janus": "message", "body": {
    "request": "create", "room": opts.room, "publishers": 64, "bitrate": 0, "videocodec": "vp8", "audiocodec": "opus",
    "transport_wide_cc_ext": True, "notify_joining": False, "permanent": False}})
sessions["control"] = (control_session, control)


def handle_info(s, h):
    return call("%s/%d/%d" % (opts.admin, s, h), {"janus": "handle_info", "admin_secret": "janusoverlord"})


def keepalive():
    n = 0
    while True:
        time.sleep(1)
        n += 1
        with lock:
            ids = list(sessions.items())
        for sid, (s, h) in ids:
            try:
                if n % 15 == 0:
                    call("%s/%d" % (opts.janus, s), {"janus": "keepalive"})
                if sid != "control":
                    info = handle_info(s, h)
                    if "webrtc" in info.get("info", {}):
                        last_info[sid] = info
            except Exception:
                pass


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


    def do_POST(self):
        offer = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        if self.path != "/whip":
            return self.reply(404)
        if not (self.headers.get("Content-Type") or "").startswith("application/sdp"):
            return self.reply(415, b"expected application/sdp")
        # Janus takes the first RID of a=simulcast as the highest unless told (rid_order).
        m = re.search(r"a=simulcast:send ([^\r\n]+)", offer)
        first = m.group(1).split(";")[0].split(",")[0] if m else ""
        order = "lmh" if first in ("q", "l", "low", "0") else "hml"
        try:
            s, h = new_handle()
            call("%s/%d/%d" % (opts.janus, s, h), {"janus": "message",
                 "body": {"request": "joinandconfigure", "room": opts.room, "ptype": "publisher", "display": "pubbot", "audio": True, "video": True},
                 "jsep": {"type": "offer", "sdp": offer, "rid_order": order}})
            jsep, error = poll_for(s, h, time.time() + 10)
        except Exception as e:
            return self.reply(502, ("Janus: %r" % e).encode())
        if error:
            return self.reply(400, ("Janus refused the offer: %s" % error).encode())
        sid = "%d-%d" % (s, h)
        with lock:
            sessions[sid] = (s, h)
        print(json.dumps({"event": "published", "id": sid, "rid_order": order}), flush=True)
        self.reply(201, jsep["sdp"].encode(), [("Content-Type", "application/sdp"), ("Location", "/whip/" + sid)])

    def do_GET(self):
        m = re.fullmatch(r"/whip/([0-9-]+)/stats", self.path)
        if not m or m.group(1) not in sessions:
            return self.reply(404)
        self.reply(200, json.dumps(handle_info(*sessions[m.group(1)])).encode(), [("Content-Type", "application/json")])

    def do_DELETE(self):
        m = re.fullmatch(r"/whip/([0-9-]+)", self.path)
        if not m or m.group(1) not in sessions:
            return self.reply(404)
        sid = m.group(1)
        try:
            info = handle_info(*sessions[sid])
            if "webrtc" not in info.get("info", {}):
                info = last_info.get(sid, info)
        except Exception as e:
            info = last_info.get(sid, {"error": repr(e)})
        print(json.dumps({"event": "stats", "id": sid, "handle_info": info}), flush=True)
        with lock:
            s, h = sessions.pop(sid)
        try:
            call("%s/%d/%d" % (opts.janus, s, h), {"janus": "detach"})
            call("%s/%d" % (opts.janus, s), {"janus": "destroy"})
        except Exception:
            pass
        self.reply(200)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from peer_watchdog import watchdog
watchdog(opts.limit, follow_parent=False) # started by janus_netns.sh, which returns at once
threading.Thread(target=keepalive, daemon=True).start()
server = Server((opts.listen, opts.port), Handler)
print("LISTENING %d" % server.server_address[1], flush=True)
server.serve_forever()
