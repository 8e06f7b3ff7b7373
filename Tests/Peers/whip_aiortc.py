#!/usr/bin/env python3
"""A WHIP endpoint (RFC 9725) on aiortc — a full-ICE WebRTC peer pubbot did not write — for the
interop test and `scripts/interop`. It answers a POSTed offer as aiortc does (full ICE, DTLS
client `setup:active`, no simulcast, no transport-cc: REMB and receiver reports only), DECODES
what arrives (VP8 through libvpx, Opus through libopus, inside aiortc) and, when the session is
DELETEd, prints one JSON line with what it decoded:

  {"event": "stats", "videoFrames": N, "audioFrames": N, "width": W, "height": H, "pli": N, ...}

POST /whep makes it a WHEP server instead (draft-ietf-wish-whep): it answers a recvonly offer
with a sendonly VP8 track of its own (640x360 at 30 fps, a moving pattern with noise, so the
encoder uses every bit it is allowed); aiortc's sender follows the subscriber's REMB (it sets
its encoder's target bitrate to it, 250 kbit/s – 1.5 Mbit/s) — no transport-cc. At DELETE it
prints {"event": "whep-stats", "rembReceived": N, "targetBitrates": [[t, bps], ...], ...}.

Usage: whip_aiortc.py [--port 0] [--limit 120] [--token T] [--mangle fingerprint|candidate]
--mangle breaks the answer on purpose (hostile-peer tests): another certificate's fingerprint,
or a candidate port nothing listens on.
Prints "LISTENING <port>" once ready. Loopback only: aioice skips loopback addresses, so its
host candidate is pinned to 127.0.0.1 here. Never outlives its parent nor `--limit` seconds."""
import argparse, asyncio, json, os, re, sys

from aioice import ice
ice.get_host_addresses = lambda *a, **k: ["127.0.0.1"]

from aiortc import RTCPeerConnection, RTCSessionDescription, VideoStreamTrack
from aiortc.mediastreams import MediaStreamError
import av, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_watchdog import watchdog

args = argparse.ArgumentParser()
args.add_argument("--port", type=int, default=0)
args.add_argument("--limit", type=float, default=120)
args.add_argument("--token")
args.add_argument("--mangle", choices=["fingerprint", "candidate"])
opts = args.parse_args()
watchdog(opts.limit)

sessions = {}


class Session:
    def __init__(self, number):
        self.number = number
        self.pc = RTCPeerConnection()
        self.stats = {"videoFrames": 0, "audioFrames": 0, "width": 0, "height": 0, "sizes": {}}
        self.tasks = []

        @self.pc.on("track")
        def on_track(track):
            self.tasks.append(asyncio.ensure_future(self.consume(track)))

    async def consume(self, track):
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            if track.kind == "video":
                self.stats["videoFrames"] += 1
                self.stats["width"], self.stats["height"] = frame.width, frame.height
                key = "%dx%d" % (frame.width, frame.height)
                self.stats["sizes"][key] = self.stats["sizes"].get(key, 0) + 1
            else:
                self.stats["audioFrames"] += 1

    async def close(self):
        # What the connection negotiated, as aiortc saw it.
        transport = None
        for t in self.pc.getTransceivers():
            if t.receiver and t.receiver.transport:
                transport = t.receiver.transport
                break
        if transport is not None:
            self.stats["dtlsRole"] = transport._role
            self.stats["srtpProfile"] = getattr(transport, "_srtp_profile", None) and str(transport._srtp_profile)
        await self.pc.close()
        for t in self.tasks:
            t.cancel()
        print(json.dumps({"event": "stats", "session": self.number, **self.stats}), flush=True)


class Pattern(VideoStreamTrack):
    """640x360: a bar that moves and noise over part of the picture (hard to compress)."""
    def __init__(self):
        super().__init__()
        self.n = 0

    async def recv(self):
        pts, time_base = await self.next_timestamp()
        frame = av.VideoFrame(640, 360, "yuv420p")
        y = bytearray(b"\x10" * (640 * 360))
        x = (self.n * 8) % 600
        for row in range(360):
            y[row * 640 + x:row * 640 + x + 40] = b"\xe0" * 40
        y[160 * 640:176 * 640] = os.urandom(16 * 640)
        self.n += 1
        frame.planes[0].update(bytes(y))
        frame.planes[1].update(b"\x80" * (320 * 180))
        frame.planes[2].update(b"\x80" * (320 * 180))
        frame.pts, frame.time_base = pts, time_base
        return frame


class Publisher:
    """One WHEP session: aiortc sends, the subscriber's REMB steers its encoder."""
    def __init__(self, number):
        self.number = number
        self.pc = RTCPeerConnection()
        self.sender = None
        self.targets = []
        self.started = time.time()
        self.task = None

    async def watch(self):
        last = None
        while True:
            await asyncio.sleep(0.25)
            enc = getattr(self.sender, "_RTCRtpSender__encoder", None) if self.sender else None
            bps = getattr(enc, "target_bitrate", None)
            if bps is not None and bps != last:
                self.targets.append([round(time.time() - self.started, 2), bps])
                last = bps

    async def close(self):
        stats = {"targetBitrates": self.targets}
        try:
            report = await self.sender.getStats()
            for v in report.values():
                if v.type == "outbound-rtp":
                    stats.update(packetsSent=v.packetsSent, bytesSent=v.bytesSent)
        except Exception:
            pass
        if self.task:
            self.task.cancel()
        await self.pc.close()
        print(json.dumps({"event": "whep-stats", "session": self.number, **stats}), flush=True)


async def respond(writer, status, reason, headers=(), body=b""):
    head = "HTTP/1.1 %d %s\r\nContent-Length: %d\r\nConnection: close\r\n" % (status, reason, len(body))
    for k, v in headers:
        head += "%s: %s\r\n" % (k, v)
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()
    writer.close()


async def handle(reader, writer):
    try:
        request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        lines = request.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        if opts.token and headers.get("authorization") != "Bearer " + opts.token:
            return await respond(writer, 401, "Unauthorized", body=b"token refused")
        if method == "POST" and path == "/whip":
            if not headers.get("content-type", "").startswith("application/sdp"):
                return await respond(writer, 415, "Unsupported Media Type")
            number = len(sessions) + 1
            s = Session(number)
            sessions["/whip/session/%d" % number] = s
            await s.pc.setRemoteDescription(RTCSessionDescription(sdp=body.decode(), type="offer"))
            answer = await s.pc.createAnswer()
            await s.pc.setLocalDescription(answer)
            print(json.dumps({"event": "answered", "session": number}), flush=True)
            sdp = s.pc.localDescription.sdp
            if opts.mangle == "fingerprint":
                sdp = re.sub(r"a=fingerprint:sha-256 [0-9A-F:]+", "a=fingerprint:sha-256 " + ":".join(["AB"] * 32), sdp)
            elif opts.mangle == "candidate":
                sdp = re.sub(r"(a=candidate:\S+ \d+ \S+ \d+ \S+) \d+ typ", r"\1 9 typ", sdp)
            return await respond(writer, 201, "Created", [("Content-Type", "application/sdp"), ("Location", "/whip/session/%d" % number)],
                                 sdp.encode())
        if method == "POST" and path == "/whep":
            if not headers.get("content-type", "").startswith("application/sdp"):
                return await respond(writer, 415, "Unsupported Media Type")
            number = len(sessions) + 1
            p = Publisher(number)
            sessions["/whep/session/%d" % number] = p
            await p.pc.setRemoteDescription(RTCSessionDescription(sdp=body.decode(), type="offer"))
            for t in p.pc.getTransceivers():
                if t.kind == "video":
                    t.direction = "sendonly"
                    t.sender.replaceTrack(Pattern())
                    p.sender = t.sender
            answer = await p.pc.createAnswer()
            await p.pc.setLocalDescription(answer)
            p.task = asyncio.ensure_future(p.watch())
            print(json.dumps({"event": "whep-answered", "session": number}), flush=True)
            return await respond(writer, 201, "Created", [("Content-Type", "application/sdp"), ("Location", "/whep/session/%d" % number)],
                                 p.pc.localDescription.sdp.encode())
        if method == "DELETE" and path in sessions:
            await sessions.pop(path).close()
            return await respond(writer, 200, "OK")
        return await respond(writer, 404, "Not Found", body=b"no such WHIP endpoint or session")
    except Exception as e:  # a test peer: say what broke, keep serving
        print(json.dumps({"event": "error", "error": repr(e)}), flush=True)
        try:
            await respond(writer, 500, "Internal Server Error", body=repr(e).encode())
        except Exception:
            pass


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", opts.port)
    print("LISTENING %d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
