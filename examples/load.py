#!/usr/bin/env python3
"""Load generator: C concurrent keep-alive clients sending GETs to URL for
a duration; prints a JSON summary with latencies and the number of
answers that were not 200 OK (errors).

  load.py http://ADDR:PORT/path --clients 4 --duration 10s [--rate 50]
"""
import argparse
import http.client
import json
import os
import random
import threading
import time
import urllib.parse


def seconds(s):
    for suffix, mult in (("ms", 1e-3), ("s", 1.0), ("m", 60.0)):
        if s.endswith(suffix):
            return float(s[: -len(suffix)]) * mult
    return float(s)


def client(url, stop_at, rate, out, failed, lock, seed, linger, done):
    rnd = random.Random(seed)
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=10)
    lat, errors = [], 0
    while time.monotonic() < stop_at:
        t0 = time.monotonic()
        conn.request("GET", "%s?i=%d" % (u.path or "/", rnd.randrange(1000)))
        resp = conn.getresponse()
        resp.read()
        lat.append(time.monotonic() - t0)
        errors += resp.status != 200
        if rate:
            time.sleep(rnd.expovariate(rate))
    done()
    time.sleep(linger)  # keep the connection for ss-based ground truth
    conn.close()
    with lock:
        out.extend(lat)
        failed.append(errors)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--linger", type=float, default=0,
                    help="seconds to keep connections open at the end")
    ap.add_argument("--done", metavar="FILE",
                    help="create FILE once every client has stopped "
                    "sending (before lingering)")
    ap.add_argument("--rate", type=float, default=0,
                    help="per-client request rate (Poisson); 0: closed loop")
    a = ap.parse_args()
    print(json.dumps({"pid": os.getpid()}), flush=True)
    stop_at = time.monotonic() + seconds(a.duration)
    out, failed, lock = [], [], threading.Lock()
    finished = []

    def done():
        with lock:
            finished.append(1)
            if len(finished) == a.clients and a.done:
                open(a.done, "w").close()
    threads = [threading.Thread(target=client,
                                args=(a.url, stop_at, a.rate, out, failed,
                                      lock, i, a.linger, done))
               for i in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.sort()
    n = len(out)
    print(json.dumps({
        "requests": n,
        "errors": sum(failed),
        "p50_ms": round(out[n // 2] * 1000, 3) if n else None,
        "p90_ms": round(out[int(n * 0.9)] * 1000, 3) if n else None,
    }))


if __name__ == "__main__":
    main()
