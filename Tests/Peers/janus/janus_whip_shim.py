#!/usr/bin/env python3
"""WHIP (RFC 9725) in front of Janus 1.1.2's VideoRoom, which has no WHIP of its own (standard
library only). At start it creates a room (VP8, H.264 or VP9 + Opus, transport-wide CC, up to 64 publishers).
  POST /whip          a Janus session per publisher: attach janus.plugin.videoroom,
                      `joinandconfigure` as publisher with the offer (rid_order inferred from the
                      offer's a=simulcast), long-poll for Janus's answer, 201 + Location
  GET /whip/ID/stats  Janus's admin `handle_info` for that publisher (per-medium, per-substream)
  DELETE /whip/ID     prints {"event": "stats", "handle_info": …}, then detaches and destroys
                      the session. Janus drops a handle's counters on hang-up, and a publisher's
                      DTLS close_notify (before its DELETE) is one: the last handle_info taken
                      while media flowed (polled every second) is the one printed.
  POST /whep[?feed=ID&substream=N&temporal=T]
                      WHEP (draft-ietf-wish-whep) by translation: Janus's VideoRoom refuses offers
                      from subscribers ("Only publishers send offers", through 1.3.x), so the shim
                      joins as a subscriber to the feed (the last publisher when not given), takes
                      Janus's offer, answers Janus from the client's offer (its ICE credentials,
                      fingerprint, candidates; setup:active) and writes the client's answer from
                      Janus's offer (Janus's payload types, extension IDs, SSRCs, ICE and
                      fingerprint; setup:passive). substream/temporal become a `configure` (Janus
                      switches on the next key frame; it never switches on bandwidth by itself).
  PATCH /whip/ID      RFC 9725 §4.3 (application/trickle-ice-sdpfrag, If-Match): the same ufrag
                      is a trickle — Janus's `trickle` with the candidates (and `completed` at
                      end-of-candidates), 204, prints {"event": "trickle", "types", "end"}; a new
                      ufrag/pwd with If-Match: "*" is an ICE restart — the stored offer with the
                      new credentials and candidates as a `configure` jsep (Janus restarts its ICE
                      on new credentials), 200 with Janus's new credentials and candidates and a
                      new ETag, prints {"event": "restart"}. 428 without If-Match, 412 for a stale
                      one, 415 for another body type.
  PATCH /whep/ID      as for /whip; a restart is a subscriber `configure` with "restart": true —
                      Janus's new offer answered (`start`) with the client's new credentials.
  GET/DELETE /whep/ID as for /whip.
  ?room=N (both)      rooms for load tests: Janus room --room + N, created on first use; a WHEP
                      subscriber gets publisher ?publisher=K of the room (in the order they joined)
                      or, without it, the room's publishers in turn.
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
say_lock = threading.Lock()


def say(event):
    """One JSON line per event, whole: the handler threads print at once (three subscribers
    DELETE together) and print() may interleave their lines."""
    line = json.dumps(event) + "\n"
    with say_lock:
        sys.stdout.write(line)
        sys.stdout.flush()
sessions = {}  # id -> (session, handle)
last_info = {}  # id -> the last handle_info that still had the PeerConnection


def call(url, body, timeout=10):
    body = dict(body, transaction="%x" % random.getrandbits(48))
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)


feeds = []  # publisher IDs in the order they joined
room_feeds = {}  # Janus room -> publisher IDs in the order they joined
room_turn = {}  # Janus room -> subscriptions handed out (round robin over its publishers)
published = {}  # WHIP sid -> (room, feed): a DELETEd publisher is no longer handed out
whip_state = {}  # WHIP sid -> {"offer", "etag", "ufrag"}: what a PATCH is checked against
rooms_made = {opts.room}


def query(path):
    return dict(p.split("=", 1) for p in path.partition("?")[2].split("&") if "=" in p)


def room_of(q):
    """The Janus room for ?room=N (created on first use)."""
    room = opts.room + int(q.get("room", "0"))
    with lock:
        if room in rooms_made:
            return room
        rooms_made.add(room)
    call("%s/%d/%d" % (opts.janus, control_session, control), {"janus": "message", "body": {
        "request": "create", "room": room, "publishers": 64, "bitrate": 0, "videocodec": "vp8,h264,vp9,av1", "audiocodec": "opus",
        "transport_wide_cc_ext": True, "notify_joining": False, "permanent": False}})
    return room
sent = {}  # sid -> the WHIP/WHEP resource kind


def poll_for(session, handle, deadline, want=lambda e, data: "jsep" in e):
    """Long-polls the session's events until one for `handle` is wanted (by default: carries a
    JSEP) or an error. Returns (event, error)."""
    while time.time() < deadline:
        with urllib.request.urlopen("%s/%d?maxev=5" % (opts.janus, session), timeout=35) as r:
            events = json.load(r)
        for e in events if isinstance(events, list) else [events]:
            if e.get("sender") != handle:
                continue
            data = e.get("plugindata", {}).get("data", {})
            if "error" in data:
                return None, data["error"]
            if want(e, data):
                return e, None
    return None, "Janus did not answer within 10 s"


def sections(sdp):
    """SDP -> (session lines, [media sections as line lists])."""
    head, media = [], []
    for line in sdp.replace("\r\n", "\n").split("\n"):
        if not line:
            continue
        if line.startswith("m="):
            media.append([line])
        elif media:
            media[-1].append(line)
        else:
            head.append(line)
    return head, media


def attr(lines, name):
    return [l[len(name) + 3:] for l in lines if l.startswith("a=" + name + ":")]


def first_attr(head, media, name):
    for lines in [head] + media:
        v = attr(lines, name)
        if v:
            return v[0]
    return None


def codec_lines(m, kind):
    """Janus's payload types for the kind's codec (+ its RTX) and their rtpmap/fmtp/rtcp-fb lines."""
    codecs = ("opus",) if kind == "audio" else ("vp8", "h264", "vp9", "av1")
    pts = m[0].split()[3:]
    maps = {l.split()[0]: l.split()[1].split("/")[0].lower() for l in attr(m, "rtpmap")}
    main = [pt for pt in pts if maps.get(pt) in codecs][:1]
    rtx = [pt for pt in pts if maps.get(pt) == "rtx" and main and ("a=fmtp:%s apt=%s" % (pt, main[0])) in m]
    keep = main + rtx
    lines = [l for l in m if any(l.startswith("a=%s:%s " % (k, pt)) for k in ("rtpmap", "fmtp", "rtcp-fb") for pt in keep)]
    return keep, lines


def translate(offer, janus_offer):
    """(answer for Janus, answer for the WHEP client)."""
    ch, cm = sections(offer)
    jh, jm = sections(janus_offer)
    c_ice = (first_attr(ch, cm, "ice-ufrag"), first_attr(ch, cm, "ice-pwd"), first_attr(ch, cm, "fingerprint"))
    j_ice = (first_attr(jh, jm, "ice-ufrag"), first_attr(jh, jm, "ice-pwd"), first_attr(jh, jm, "fingerprint"))
    c_cands = [l for m in cm for l in m if l.startswith("a=candidate:")]
    j_cands = [l for m in jm for l in m if l.startswith("a=candidate:")]
    c_uris = {l.split()[1] for m in cm for l in attr(m, "extmap")}

    def kind(m):
        return m[0].split()[0][2:]

    def build(src_media, dst_media, ice, cands, setup, direction, extra):
        """Sections in `dst_media`'s order and mids, with `src_media`'s codecs and extensions."""
        out, mids = [], []
        for d in dst_media:
            mid = (attr(d, "mid") or [str(len(out))])[0]
            s = next((m for m in src_media if kind(m) == kind(d) and not m[0].split()[1] == "0"), None)
            keep, lines = codec_lines(s, kind(d)) if s else ([], [])
            if not keep or kind(d) not in ("audio", "video"):
                out.append(["m=%s 0 %s" % (kind(d), " ".join(d[0].split()[2:4])), "a=mid:" + mid, "a=inactive"])
                continue
            mids.append(mid)
            sec = ["m=%s 9 UDP/TLS/RTP/SAVPF %s" % (kind(d), " ".join(keep)), "c=IN IP4 0.0.0.0", "a=mid:" + mid, "a=" + direction,
                   "a=ice-ufrag:" + ice[0], "a=ice-pwd:" + ice[1], "a=fingerprint:" + ice[2], "a=setup:" + setup, "a=rtcp-mux"]
            sec += ["a=extmap:" + e for e in attr(s, "extmap") if e.split()[1] in c_uris]
            sec += lines + extra(s) + cands + ["a=end-of-candidates"]
            out.append(sec)
        head = ["v=0", "o=- %d 2 IN IP4 127.0.0.1" % random.getrandbits(40), "s=-", "t=0 0", "a=group:BUNDLE " + " ".join(mids)]
        return "\r\n".join(head + [l for sec in out for l in sec]) + "\r\n"

    to_janus = build(jm, jm, c_ice, c_cands, "active", "recvonly", lambda s: [])
    to_client = build(jm, cm, j_ice, j_cands, "passive", "sendonly",
                      lambda s: [l for l in s if l.startswith("a=ssrc:") or l.startswith("a=ssrc-group:")])
    return to_janus, to_client


def renewed(sdp, ufrag, pwd, cands):
    """`sdp` with new ICE credentials and candidates (for an ICE restart)."""
    offer = []
    for l in sdp.replace("\r\n", "\n").split("\n"):
        if l.startswith("a=ice-ufrag:"):
            l = "a=ice-ufrag:" + ufrag
        elif l.startswith("a=ice-pwd:"):
            l = "a=ice-pwd:" + (pwd or "")
        elif l.startswith("a=candidate:") or l.startswith("a=end-of-candidates"):
            continue
        if l:
            offer.append(l)
        if l.startswith("m="):
            offer += ["a=candidate:" + c for c in cands]
    return "\r\n".join(offer) + "\r\n"


def ufrag_of(sdp):
    h, m = sections(sdp)
    return first_attr(h, m, "ice-ufrag")


def new_handle():
    s = call(opts.janus, {"janus": "create"})["data"]["id"]
    h = call("%s/%d" % (opts.janus, s), {"janus": "attach", "plugin": "janus.plugin.videoroom"})["data"]["id"]
    return s, h


control_session, control = new_handle()
created = call("%s/%d/%d" % (opts.janus, control_session, control), {"janus": "message", "body": {
    "request": "create", "room": opts.room, "publishers": 64, "bitrate": 0, "videocodec": "vp8,h264,vp9,av1", "audiocodec": "opus",
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
        if self.path == "/whep" or self.path.startswith("/whep?"):
            return self.whep(offer)
        if self.path != "/whip" and not self.path.startswith("/whip?"):
            return self.reply(404)
        room = room_of(query(self.path))
        if not (self.headers.get("Content-Type") or "").startswith("application/sdp"):
            return self.reply(415, b"expected application/sdp")
        # Janus takes the first RID of a=simulcast as the highest unless told (rid_order).
        m = re.search(r"a=simulcast:send ([^\r\n]+)", offer)
        first = m.group(1).split(";")[0].split(",")[0] if m else ""
        order = "lmh" if first in ("q", "l", "low", "0") else "hml"
        try:
            s, h = new_handle()
            call("%s/%d/%d" % (opts.janus, s, h), {"janus": "message",
                 "body": {"request": "joinandconfigure", "room": room, "ptype": "publisher", "display": "pubbot", "audio": True, "video": True},
                 "jsep": {"type": "offer", "sdp": offer, "rid_order": order}})
            event, error = poll_for(s, h, time.time() + 10)
        except Exception as e:
            return self.reply(502, ("Janus: %r" % e).encode())
        if error:
            return self.reply(400, ("Janus refused the offer: %s" % error).encode())
        jsep = event["jsep"]
        sid = "%d-%d" % (s, h)
        with lock:
            sessions[sid] = (s, h)
            feed = event.get("plugindata", {}).get("data", {}).get("id")
            if feed is not None:
                feeds.append(feed)
                room_feeds.setdefault(room, []).append(feed)
                published[sid] = (room, feed)
        etag = '"%x"' % random.getrandbits(64)
        with lock:
            whip_state[sid] = {"offer": offer, "etag": etag, "ufrag": ufrag_of(offer)}
        say({"event": "published", "id": sid, "rid_order": order})
        self.reply(201, jsep["sdp"].encode(), [("Content-Type", "application/sdp"), ("Location", "/whip/" + sid), ("ETag", etag)])

    def do_PATCH(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode(errors="replace")
        m = re.fullmatch(r"/wh(?:ip|ep)/([0-9-]+)", self.path)
        with lock:
            state = whip_state.get(m.group(1)) if m else None
        if state is None:
            return self.reply(404)
        sid = m.group(1)
        s, h = sessions[sid]
        if not (self.headers.get("Content-Type") or "").startswith("application/trickle-ice-sdpfrag"):
            return self.reply(415, b"expected application/trickle-ice-sdpfrag")
        match = self.headers.get("If-Match")
        if match is None:
            return self.reply(428, b"If-Match required (RFC 9725 4.3.1)")
        lines = body.replace("\r\n", "\n").split("\n")
        ufrag = next((l[12:] for l in lines if l.startswith("a=ice-ufrag:")), None)
        pwd = next((l[10:] for l in lines if l.startswith("a=ice-pwd:")), None)
        mid = next((l[6:] for l in lines if l.startswith("a=mid:")), "0")
        cands = [l[2:] for l in lines if l.startswith("a=candidate:")]
        end = "a=end-of-candidates" in lines
        restart = ufrag is not None and ufrag != state["ufrag"]
        # RFC 9725 §4.3.3 writes the wildcard quoted ("*"); RFC 9110 §13.1.1 bare (*): both taken.
        if restart and match not in ("*", '"*"') or not restart and match != state["etag"]:
            return self.reply(412, b"stale or mismatched If-Match")
        if not restart:
            try:
                if cands:
                    call("%s/%d/%d" % (opts.janus, s, h), {"janus": "trickle", "candidates": [
                        {"sdpMid": mid, "sdpMLineIndex": 0, "candidate": c} for c in cands]})
                if end:
                    call("%s/%d/%d" % (opts.janus, s, h), {"janus": "trickle", "candidate": {"completed": True}})
            except Exception as e:
                return self.reply(502, ("Janus: %r" % e).encode())
            say({"event": "trickle", "id": sid, "types": [c.split()[7] for c in cands if len(c.split()) > 7], "end": end})
            return self.reply(204)
        # The restart: the offer again, with the new credentials and candidates.
        offer = renewed(state["offer"], ufrag, pwd, cands)
        try:
            if state.get("whep"):
                # Janus offers (a subscriber's restart is Janus's new offer); the client's new
                # credentials answer it, and Janus's offer gives the client its new ones.
                call("%s/%d/%d" % (opts.janus, s, h), {"janus": "message", "body": {"request": "configure", "restart": True}})
                event, error = poll_for(s, h, time.time() + 10)
                if not error:
                    to_janus, _ = translate(offer, event["jsep"]["sdp"])
                    call("%s/%d/%d" % (opts.janus, s, h), {"janus": "message", "body": {"request": "start"},
                                                           "jsep": {"type": "answer", "sdp": to_janus}})
            else:
                call("%s/%d/%d" % (opts.janus, s, h), {"janus": "message", "body": {"request": "configure"},
                                                       "jsep": {"type": "offer", "sdp": offer}})
                event, error = poll_for(s, h, time.time() + 10)
        except Exception as e:
            return self.reply(502, ("Janus: %r" % e).encode())
        if error:
            return self.reply(400, ("Janus refused the restart: %s" % error).encode())
        answer = event["jsep"]["sdp"]
        ah, am = sections(answer)
        frag = ["a=ice-ufrag:" + first_attr(ah, am, "ice-ufrag"), "a=ice-pwd:" + first_attr(ah, am, "ice-pwd")]
        frag += sorted({l for sec in am for l in sec if l.startswith("a=candidate:")}) + ["a=end-of-candidates"]
        etag = '"%x"' % random.getrandbits(64)
        with lock:
            state.update(offer=offer, etag=etag, ufrag=ufrag)
        say({"event": "restart", "id": sid, "candidates": len(cands)})
        self.reply(200, ("\r\n".join(frag) + "\r\n").encode(), [("Content-Type", "application/trickle-ice-sdpfrag"), ("ETag", etag)])


    def whep(self, offer):
        if not (self.headers.get("Content-Type") or "").startswith("application/sdp"):
            return self.reply(415, b"expected application/sdp")
        q = query(self.path)
        room = room_of(q)
        try:
            # Only publishers Janus still has (one killed without its DELETE is gone from the room).
            live = call("%s/%d/%d" % (opts.janus, control_session, control), {"janus": "message", "body": {"request": "listparticipants", "room": room}})
            live = {p["id"] for p in live.get("plugindata", {}).get("data", {}).get("participants", []) if p.get("publisher")}
        except Exception:
            live = None
        with lock:
            in_room = [f for f in room_feeds.get(room, []) if live is None or f in live]
            if "feed" in q:
                feed = int(q["feed"])
            elif "publisher" in q:
                k = int(q["publisher"])
                feed = in_room[k] if k < len(in_room) else None
            elif "room" in q:
                turn = room_turn.get(room, 0)
                room_turn[room] = turn + 1
                feed = in_room[turn % len(in_room)] if in_room else None
            else:
                alive = [f for f in feeds if live is None or f in live]
                feed = alive[-1] if alive else None
        if feed is None:
            return self.reply(404, b"no such publisher in the room (yet)")
        try:
            s, h = new_handle()
            call("%s/%d/%d" % (opts.janus, s, h), {"janus": "message", "body": {
                "request": "join", "ptype": "subscriber", "room": room, "streams": [{"feed": feed}]}})
            event, error = poll_for(s, h, time.time() + 10)
            if error:
                return self.reply(400, ("Janus refused the subscription: %s" % error).encode())
            to_janus, to_client = translate(offer, event["jsep"]["sdp"])
            call("%s/%d/%d" % (opts.janus, s, h), {"janus": "message", "body": {"request": "start"},
                                                   "jsep": {"type": "answer", "sdp": to_janus}})
            _, error = poll_for(s, h, time.time() + 10, lambda e, d: d.get("started") == "ok")
            if error:
                return self.reply(400, ("Janus refused the answer: %s" % error).encode())
            if "substream" in q or "temporal" in q:
                _, jm = sections(event["jsep"]["sdp"])
                vmid = next((attr(m, "mid")[0] for m in jm if m[0].startswith("m=video") and attr(m, "mid")), None)
                st = {"mid": vmid}
                if "substream" in q:
                    st["substream"] = int(q["substream"])
                if "temporal" in q:
                    st["temporal"] = int(q["temporal"])
                call("%s/%d/%d" % (opts.janus, s, h), {"janus": "message", "body": {"request": "configure", "streams": [st]}})
        except Exception as e:
            return self.reply(502, ("Janus: %r" % e).encode())
        sid = "%d-%d" % (s, h)
        with lock:
            sessions[sid] = (s, h)
        etag = '"%x"' % random.getrandbits(64)
        with lock:
            whip_state[sid] = {"offer": offer, "etag": etag, "ufrag": ufrag_of(offer), "whep": True}
        say({"event": "subscribed", "id": sid, "feed": feed, "query": q})
        self.reply(201, to_client.encode(), [("Content-Type", "application/sdp"), ("Location", "/whep/" + sid), ("ETag", etag)])

    def do_GET(self):
        m = re.fullmatch(r"/wh(?:ip|ep)/([0-9-]+)/stats", self.path)
        if not m or m.group(1) not in sessions:
            return self.reply(404)
        self.reply(200, json.dumps(handle_info(*sessions[m.group(1)])).encode(), [("Content-Type", "application/json")])

    def do_DELETE(self):
        m = re.fullmatch(r"/wh(?:ip|ep)/([0-9-]+)", self.path)
        if not m or m.group(1) not in sessions:
            return self.reply(404)
        sid = m.group(1)
        try:
            info = handle_info(*sessions[sid])
            if "webrtc" not in info.get("info", {}):
                info = last_info.get(sid, info)
        except Exception as e:
            info = last_info.get(sid, {"error": repr(e)})
        say({"event": "stats", "id": sid, "handle_info": info})
        with lock:
            s, h = sessions.pop(sid)
            if sid in published:
                room, feed = published.pop(sid)
                for lst in (feeds, room_feeds.get(room, [])):
                    if feed in lst:
                        lst.remove(feed)
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
