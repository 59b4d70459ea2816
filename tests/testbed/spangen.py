#!/usr/bin/env python3
"""Synthetic span CSVs for the --truth tests, and a reshuffler.

  spangen.py gen N SEED [--quantum NS] [--no-client-share P] [--reuse-ids]
                        [--names A B]
  spangen.py shuffle IN OUT SEED

gen: N requests to `web` (one pod), each calling the two callees (the
second 60% of the time) one after another, each call over a client span
of web's, as OpenTelemetry records it.  --quantum: start times cut to a
multiple of NS (many rows tie, as in traces stamped in milliseconds);
ends stay exact.  --no-client-share: that share of the traces records no
client spans (the callee's span hangs off web's server span, as in Jaeger
data where the caller's side is not instrumented).  --reuse-ids: span ids
1, 2, ... in every trace.  --names: the callees' pod names.

shuffle: the same spans with rows in another order and every trace and
span id renamed (one to one).
"""
import csv
import hashlib
import random
import sys

HEAD = ["TraceID", "SpanID", "ParentID", "PodName", "OperationName",
        "StartTimeUnixNano", "EndTimeUnixNano", "Duration"]


def gen(argv):
    n, seed = int(argv[0]), int(argv[1])
    opt = {"--quantum": "1", "--no-client-share": "0"}
    names = ["db-7c9f8d4b6-x2k8p", "cache-5d4f6c8b9-q9w8z"]
    reuse, i = False, 2
    while i < len(argv):
        if argv[i] == "--reuse-ids":
            reuse, i = True, i + 1
        elif argv[i] == "--names":
            names, i = argv[i + 1:i + 3], i + 3
        else:
            opt[argv[i]], i = argv[i + 1], i + 2
    q, share = int(opt["--quantum"]), float(opt["--no-client-share"])
    rnd = random.Random(seed)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(HEAD)
    at, serial = 10**18, [0]

    def fresh():
        serial[0] += 1
        return "%016x" % serial[0]
    for k in range(n):
        at += rnd.randint(0, 400000)
        tid = "%032x" % (k + 1)
        local = iter(range(1, 100))
        new = (lambda: str(next(local))) if reuse else fresh
        client = rnd.random() >= share
        dur = rnd.randint(800000, 2000000)
        root = new()
        rows = [[tid, root, "root", "web-6b7c8d9f5-x7tqz", "GET",
                 at // q * q, at + dur]]
        t = at + rnd.randint(20000, 200000)
        for callee in names:
            if callee == names[1] and rnd.random() < 0.4:
                continue
            d = rnd.randint(100000, 300000)
            if t + d + 20000 > at + dur:
                break
            parent = root
            if client:
                parent = new()
                rows.append([tid, parent, root, "web-6b7c8d9f5-x7tqz",
                             "call", t // q * q, t + d])
            rows.append([tid, new(), parent, callee, "serve",
                         (t + 5000) // q * q, t + d - 5000])
            t += d + rnd.randint(10000, 100000)
        for r in rows:
            out.writerow(r + [(r[6] - r[5]) // 1000])


def shuffle(argv):
    src, dst, seed = argv[0], argv[1], int(argv[2])
    rows = list(csv.reader(open(src, newline="")))
    head, body = rows[0], rows[1:]
    ti, si, pi = (head.index(c) for c in ("TraceID", "SpanID", "ParentID"))
    ids = {}

    def rename(x):
        if x not in ids:
            ids[x] = hashlib.sha1(("%d:%s" % (seed, x)).encode()).hexdigest()
        return ids[x][:16]
    for r in body:
        trace = r[ti]
        r[ti] = rename("t" + trace) * 2
        r[si] = rename("s" + trace + "/" + r[si])
        if r[pi] != "root":
            r[pi] = rename("s" + trace + "/" + r[pi])
    random.Random(seed).shuffle(body)
    w = csv.writer(open(dst, "w", newline=""), lineterminator="\n")
    w.writerow(head)
    w.writerows(body)


if __name__ == "__main__":
    {"gen": gen, "shuffle": shuffle}[sys.argv[1]](sys.argv[2:])
