#!/usr/bin/env python3
"""A WHIP endpoint (RFC 9725) on aiortc — a full-ICE WebRTC peer pubbot did not write — for the
interop test and `scripts/interop`. It answers a POSTed offer as aiortc does (full ICE, DTLS
client `setup:active`, no simulcast, no transport-cc: REMB and receiver reports only), DECODES
what arrives (VP8 through libvpx, Opus through libopus, inside aiortc) and, when the session is
DELETEd, prints one JSON line with what it decoded:

  {"event": "stats", "videoFrames": N, "audioFrames": N, "width": W, "height": H, "pli": N, ...}

Usage: whip_aiortc.py [--port 0] [--limit 120] [--token T] [--mangle fingerprint|candidate]
--mangle breaks the answer on purpose (hostile-peer tests): another certificate's fingerprint,
or a candidate port nothing listens on.
Prints "LISTENING <port>" once ready. Loopback only: aioice skips loopback addresses, so its
host candidate is pinned to 127.0.0.1 here. Never outlives its parent nor `--limit` seconds."""
import argparse, asyncio, json, os, re, sys

from aioice import ice
ice.get_host_addresses = lambda *a, **k: ["127.0.0.1"]

from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError

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
