#!/usr/bin/env python3
"""A full ICE agent that pubbot did not write (aioice, aiortc's ICE) for pubbot's ICE interop
test. Controlled role, host candidate on 127.0.0.1 only. Protocol on stdin/stdout, one JSON
line each way: it prints {"ufrag", "pwd", "candidates"}; reads the same from pubbot; connects;
prints "CONNECTED <local> <remote>"; echoes every datagram it receives, prefixed "echo:",
until stdin closes. Never outlives its parent, never runs more than 60 s."""
import asyncio, json, os, sys

import aioice
from aioice import ice

ice.get_host_addresses = lambda *args, **kwargs: ["127.0.0.1"]  # aioice skips loopback otherwise

async def main():
    loop = asyncio.get_running_loop()
    conn = aioice.Connection(ice_controlling=False, use_ipv6=False)
    await conn.gather_candidates()
    print(json.dumps({"ufrag": conn.local_username, "pwd": conn.local_password,
                      "candidates": [c.to_sdp() for c in conn.local_candidates]}), flush=True)
    remote = json.loads(await loop.run_in_executor(None, sys.stdin.readline))
    conn.remote_username = remote["ufrag"]
    conn.remote_password = remote["pwd"]
    for c in remote["candidates"]:
        await conn.add_remote_candidate(aioice.Candidate.from_sdp(c))
    await conn.add_remote_candidate(None)
    await asyncio.wait_for(conn.connect(), 10)
    pair = conn._nominated.get(1) if hasattr(conn, "_nominated") else None
    print("CONNECTED", pair.local_candidate.host if pair else "?", pair.remote_candidate.port if pair else "?", flush=True)
    done = loop.run_in_executor(None, sys.stdin.read)
    while not done.done():
        try:
            data = await asyncio.wait_for(conn.recv(), 0.2)
        except asyncio.TimeoutError:
            continue
        await conn.send(b"echo:" + data)
    await conn.close()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_watchdog import watchdog
watchdog(60)
asyncio.run(main())
