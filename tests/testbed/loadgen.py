#!/usr/bin/env python3
"""HTTP/1.1 load for the testbed, over kept-alive connections.

  loadgen.py --target A:P --rate R --duration S [--conns N]   open loop
  loadgen.py --target A:P --closed C --duration S             capacity

Open loop: requests arrive as a Poisson process at R per second; each
takes a free connection (waiting for one if all N are busy).  Closed
loop: C clients each send their next request when the last is answered,
which finds the capacity.  Prints one JSON line: requests sent, answered
(200), errors, achieved rate, latency median and 99th percentile (ms).
"""
import argparse
import asyncio
import json
import random
import time

REQ = b"GET / HTTP/1.1\r\nHost: testbed\r\n\r\n"


async def one(conn, lat):
    r, w = conn
    t = time.perf_counter()
    w.write(REQ)
    head = await r.readuntil(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    if n:
        await r.readexactly(n)
    lat.append(time.perf_counter() - t)
    return head.startswith(b"HTTP/1.1 200")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--rate", type=float)
    ap.add_argument("--closed", type=int)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--conns", type=int, default=48)
    a = ap.parse_args()
    host, port = a.target.rsplit(":", 1)
    n = a.closed or a.conns
    free = asyncio.Queue()
    for _ in range(n):
        free.put_nowait(await asyncio.open_connection(host, int(port)))
    st = {"sent": 0, "ok": 0, "errors": 0}
    lat = []

    async def fire():
        c = await free.get()
        st["sent"] += 1
        try:
            ok = await one(c, lat)
            st["ok" if ok else "errors"] += 1
            free.put_nowait(c)
        except (OSError, asyncio.IncompleteReadError):
            st["errors"] += 1
            free.put_nowait(await asyncio.open_connection(host, int(port)))

    t0 = time.perf_counter()
    end = t0 + a.duration
    tasks = set()
    if a.closed:
        async def client():
            while time.perf_counter() < end:
                await fire()
        await asyncio.gather(*(client() for _ in range(a.closed)))
    else:
        rng = random.Random()
        at = t0
        while True:
            at += rng.expovariate(a.rate)
            if at >= end:
                break
            d = at - time.perf_counter()
            if d > 0:
                await asyncio.sleep(d)
            tk = asyncio.ensure_future(fire())
            tasks.add(tk)
            tk.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.wait(tasks)
    took = time.perf_counter() - t0
    lat.sort()
    q = lambda p: 1000 * lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0
    print(json.dumps({"sent": st["sent"], "ok": st["ok"],
                      "errors": st["errors"], "seconds": round(took, 3),
                      "rate": round(st["ok"] / took, 1),
                      "p50_ms": round(q(0.5), 2), "p99_ms": round(q(0.99), 2)}))
    while not free.empty():
        free.get_nowait()[1].close()


asyncio.run(main())
