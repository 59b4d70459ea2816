#!/bin/bash
# Edge health through the whole fleet path, from records whose every
# figure is known: a Python writer makes the agents' records of two hosts
# (app on web calls postgres on db: 40 connections, two reset by the
# server; 5 connects refused by db:5433, 3 that timed out to 10.0.0.9),
# each end in two cumulative records, as ConnRecord envelopes with the
# health fields 30-37 (docs/edge-health.md).  They go to the embedded
# broker with kcat (keyed per connection, over 4 partitions), a correlator
# buckets them (1 s buckets: many buckets and partitions to sum), and
# `graph --kafka --since` reads the buckets back.  The same records as a
# wire file read by `graph` (no buckets, every end kept) must give the
# same health, and both must match what was written: counts exactly,
# quantiles within a histogram bin (1/32) of the exact ones, the network
# time (client minus server, the rule in docs/edge-health.md) within a
# bin of the 50 us written, each failed connect an edge of its own to the
# address it tried, marked failed.  Why synthetic records: the kernel
# and exchange sides fill these fields (t_health_graph.sh checks real
# connections); this test pins the carrying of them, figure for figure.
. "$(dirname "$0")/lib.sh"
need_cmd python3 kcat

broker_start -t causeway.conns:4 -t causeway.edges:4
NOW=$(date +%s)
mkdir -p "$T_TMP/recs"
python3 - "$T_TMP/recs" "$T_TMP/health.cww" "$NOW" >"$T_TMP/truth.json" <<'EOF' ||
import json, os, struct, sys, zlib

out, cww, now = sys.argv[1], sys.argv[2], int(sys.argv[3])
T0 = (now - 40) * 10**9


def varint(v):
    b = bytearray()
    while v >= 0x80:
        b.append((v & 0x7f) | 0x80)
        v >>= 7
    b.append(v)
    return bytes(b)


def fu(f, v):
    return varint(f << 3) + varint(v) if v else b""


def fb(f, b):
    return varint(f << 3 | 2) + varint(len(b)) + b if b else b""


def f64(f, v):
    return varint(f << 3 | 1) + struct.pack("<Q", v) if v else b""


def hidx(v):  # common/hist.c cw_hist_index
    if v < 32:
        return v
    e = v.bit_length() - 1
    return ((e - 4) << 5) | ((v >> (e - 5)) & 31)


def hist(samples):  # cw_hist_encode
    bins = {}
    for s in samples:
        bins[hidx(s)] = bins.get(hidx(s), 0) + 1
    b, prev = varint(len(bins)), 0
    for i in sorted(bins):
        b += varint(i - prev) + varint(bins[i])
        prev = i
    return b if bins else b""


def ip(s):
    return bytes(int(x) for x in s.split("."))


def record(host, comm, tgid, cookie, role, laddr, lport, raddr, rport,
           first, last, closed, seq, h):
    proc = fu(1, tgid) + fu(2, 1000 + tgid) + fb(4, comm.encode())
    c = (fb(1, host.encode()) + fu(2, 4026531840) + fu(3, cookie) +
         fu(4, 6) + fu(5, role) + fu(6, 1 if closed else 0) +
         fb(7, ip(laddr)) + fu(8, lport) + fb(9, ip(raddr)) +
         fu(10, rport) + fu(11, h.get("out", 0)) + fu(12, h.get("in", 0)) +
         f64(17, first) + f64(18, last) + fu(21, seq) + fb(22, proc) +
         fb(23, b"boot-" + host.encode()) +
         fu(30, h.get("connect_us", 0)) + fu(31, h.get("fail", 0)) +
         fu(32, h.get("resets_in", 0)) + fu(33, h.get("resets_out", 0)) +
         fb(34, hist(h.get("rtt", []))) + fb(35, hist(h.get("xchg", []))) +
         fb(36, hist(h.get("first", []))) +
         fu(37, h.get("pipelined", 0)))
    return fu(1, 1) + fb(10, c)


recs, seq = [], [0]


def put(key, *a, **h):
    seq[0] += 1
    recs.append((key, record(*a, seq[0], h)))


truth = {"xchg_client": [], "xchg_server": [], "connect": [], "rtt": [],
         "first": [], "conns": 40, "resets_by_server": 2,
         "refused": 5, "timeout": 3}
for i in range(40):
    port = 40000 + i
    key = "web:%d-db:5432" % port
    start = T0 + i * 500 * 10**6
    cx = [800000 + 7919 * ((i * 3 + k) % 50) for k in range(6)]
    sx = [x - 50000 for x in cx]
    cf = [x // 3 for x in cx]
    rt = [200000 + 1000 * ((i + k) % 30) for k in range(2)]
    conn_us = 150 + (i * 7) % 100
    reset = i in (5, 17)
    for n, cut in ((1, 3), (2, 6)):
        last = start + n * 2 * 10**9
        put(key, "web", "app", 100, i + 1, 1, "10.0.0.1", port, "10.0.0.2",
            5432, start, last, n == 2, connect_us=conn_us, rtt=rt[:n],
            xchg=cx[:cut], first=cf[:cut], out=300 * cut, **{"in": 900 * cut},
            resets_in=1 if reset and n == 2 else 0)
        put(key, "db", "postgres", 900, 1000 + i, 2, "10.0.0.2", 5432,
            "10.0.0.1", port, start + 10**5, last + 10**5, n == 2,
            rtt=rt[:n], xchg=sx[:cut], out=900 * cut, **{"in": 300 * cut},
            resets_out=1 if reset and n == 2 else 0, pipelined=n)
    truth["xchg_client"] += cx
    truth["xchg_server"] += sx
    truth["first"] += cf
    truth["connect"].append(conn_us * 1000)
    truth["rtt"] += rt + rt
truth["pipelined"] = 2 * 40
# Failed connects: a client end only, closed, published once.
for i in range(8):
    refused = i < 5
    port, dst = 41000 + i, "10.0.0.2" if refused else "10.0.0.9"
    dport = 5433 if refused else 5432
    start = T0 + i * 10**9
    put("web:%d-%s:%d" % (port, dst, dport), "web", "app", 100, 500 + i, 1,
        "10.0.0.1", port, dst, dport, start, start + 10**9, True,
        fail=1 if refused else 2)
frames = b"CWWIRE1\n"
for n, (key, env) in enumerate(recs):
    with open(os.path.join(out, "%04d" % n), "wb") as f:
        f.write(env)
    with open(os.path.join(out, "%04d.key" % n), "w") as f:
        f.write(key)
    frames += struct.pack("<II", len(env), zlib.crc32(env)) + env
with open(cww, "wb") as f:
    f.write(frames)
json.dump(truth, sys.stdout)
EOF
	fail "the record writer failed"
n=0
for f in "$T_TMP"/recs/[0-9][0-9][0-9][0-9]; do
	kcat -P -b "$BOOT" -t causeway.conns -k "$(cat "$f.key")" "$f" ||
		fail "kcat could not publish $f"
	n=$((n + 1))
done
note "$n records published with kcat"

"$CW" correlate --kafka "$BOOT" --group hg --from-beginning --no-paths \
	--idle 4s --snapshot-every 200ms --bucket 1s --lateness 2s --view 0 \
	-o "$T_TMP/out" >/dev/null 2>"$T_TMP/corr.log" ||
	fail "correlate failed: $(cat "$T_TMP/corr.log")"
"$CW" graph --kafka "$BOOT" --group hg --since "@$((NOW - 3600))" \
	--format json >"$T_TMP/kafka.json" 2>"$T_TMP/graph.log" ||
	fail "graph --kafka failed: $(cat "$T_TMP/graph.log")"
"$CW" graph "$T_TMP/health.cww" --window 0 --format json \
	>"$T_TMP/file.json" 2>"$T_TMP/graph-file.log" ||
	fail "graph of the file failed: $(cat "$T_TMP/graph-file.log")"

python3 - "$T_TMP/truth.json" "$T_TMP/kafka.json" "$T_TMP/file.json" <<'EOF' ||
import json, math, sys

truth = json.load(open(sys.argv[1]))


def q(vals, p):  # nearest rank, as cw_hist_quantile
    v = sorted(vals)
    return v[max(1, math.ceil(p * len(v))) - 1]


def close(got, want, what):
    # within the bin: 1/32 of the value (plus the bin's middle)
    assert abs(got - want) <= want / 32 + 1, "%s: %d, want %d" % (
        what, got, want)


def edges(path):
    g = json.load(open(path))
    node = {n["id"]: n for n in g["nodes"]}
    out = {}
    for e in g["edges"]:
        s = node[e["server"]]
        key = s.get("comm") or s["label"]
        for want in ("10.0.0.2:5433", "10.0.0.9:5432"):
            if s.get("comm") is None and want in key:
                key = want
        out[key] = e
    return out


HEALTH = ("conns", "failed", "conns_refused", "conns_timeout",
          "resets_by_client", "resets_by_server", "xchg_pipelined")
QS = ("count", "p50_ns", "p90_ns", "p99_ns")
NAMES = ("connect", "rtt", "client", "client_first", "server", "network")
kafka, file = edges(sys.argv[2]), edges(sys.argv[3])
assert sorted(kafka) == sorted(file) == sorted(
    ["postgres", "10.0.0.2:5433", "10.0.0.9:5432"]), (sorted(kafka),
                                                      sorted(file))
for k in kafka:
    for f in HEALTH + tuple("%s_%s" % (n, s) for n in NAMES for s in QS):
        assert kafka[k].get(f) == file[k].get(f), \
            "%s %s: kafka %s, file %s" % (k, f, kafka[k].get(f),
                                          file[k].get(f))
pg = kafka["postgres"]
assert (pg["conns"], pg["paired"], pg["failed"]) == (40, 40, False), pg
assert pg["conns_refused"] == pg["conns_timeout"] == 0, pg
assert (pg["resets_by_server"], pg["resets_by_client"]) == (2, 0), pg
assert pg["xchg_pipelined"] == truth["pipelined"], pg
for name, t in (("client", "xchg_client"), ("server", "xchg_server"),
                ("client_first", "first"), ("connect", "connect"),
                ("rtt", "rtt")):
    assert pg[name + "_count"] == len(truth[t]), (name, pg[name + "_count"])
    for p in (0.5, 0.9, 0.99):
        close(pg["%s_p%d_ns" % (name, round(p * 100))], q(truth[t], p),
              "%s p%d" % (name, round(p * 100)))
assert pg["network_count"] == len(truth["xchg_server"])
for p in (50, 90, 99):
    got = pg["network_p%d_ns" % p]
    # client less server: each within half a bin (16 us at 1 ms)
    assert abs(got - 50000) <= 32768, ("network", p, got)
ref, tmo = kafka["10.0.0.2:5433"], kafka["10.0.0.9:5432"]
assert (ref["conns"], ref["conns_refused"], ref["failed"]) == (5, 5, True), ref
assert (tmo["conns"], tmo["conns_timeout"], tmo["failed"]) == (3, 3, True), tmo
print("postgres: %d conns, resets by server %d, client p50/p90/p99 "
      "%d/%d/%d ns, server p50 %d, network p50/p90/p99 %d/%d/%d ns, "
      "connect p50 %d ns; refused edge %d/%d failed, timed-out edge %d/%d "
      "failed; graph --kafka == graph of the file" % (
          pg["conns"], pg["resets_by_server"], pg["client_p50_ns"],
          pg["client_p90_ns"], pg["client_p99_ns"], pg["server_p50_ns"],
          pg["network_p50_ns"], pg["network_p90_ns"], pg["network_p99_ns"],
          pg["connect_p50_ns"], ref["conns_refused"], ref["conns"],
          tmo["conns_timeout"], tmo["conns"]))
EOF
	fail "the graph's edge health is not what was written"
# The buckets as `causeway dump` shows them: the health in each record.
"$CW" dump --kafka "$BOOT" --topic causeway.edges --from-beginning \
	--timeout 3s >"$T_TMP/edges.jsonl" 2>"$T_TMP/dump.log" ||
	fail "dump of the edges failed: $(cat "$T_TMP/dump.log")"
python3 - "$T_TMP/edges.jsonl" <<'EOF' ||
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
best = {}
for r in recs:  # the newest offset per key, summed over partitions
    k = (r["bucket_ns"], json.dumps(r["client"]), json.dumps(r["server"]),
         r["partition"])
    if k not in best or r["offset"] > best[k]["offset"]:
        best[k] = r
ref = sum(r.get("conns_refused", 0) for r in best.values())
tmo = sum(r.get("conns_timeout", 0) for r in best.values())
srv = sum(r.get("server_count", 0) for r in best.values())
assert (ref, tmo, srv) == (5, 3, 240), (ref, tmo, srv)
print("dump of the edge buckets: %d refused, %d timed out, %d server "
      "exchanges" % (ref, tmo, srv))
EOF
	fail "the edge buckets' health as dump shows it is not what was written"

# GraphML: the same figures as edge attributes (docs/edge-health.md).
"$CW" graph --kafka "$BOOT" --group hg --since "@$((NOW - 3600))" \
	--format graphml >"$T_TMP/kafka.graphml" 2>>"$T_TMP/graph.log" ||
	fail "graph --kafka --format graphml failed: $(cat "$T_TMP/graph.log")"
python3 - "$T_TMP/kafka.graphml" "$T_TMP/kafka.json" <<'EOF' ||
import json, sys
import xml.etree.ElementTree as ET

ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
root = ET.parse(sys.argv[1]).getroot()
keys = {k.get("id"): k.get("attr.name")
        for k in root.findall("g:key", ns) if k.get("for") == "edge"}
rows = []
for e in root.iter("{%s}edge" % ns["g"]):
    rows.append({keys[d.get("key")]: float(d.text)
                 for d in e.findall("g:data", ns) if d.get("key") in keys})
want = sorted((e["conns"], e["failed"], e["conns_refused"],
               e["conns_timeout"], e.get("client_p99_ns", 0),
               e.get("network_p50_ns", 0), e.get("server_count", 0))
              for e in json.load(open(sys.argv[2]))["edges"])
got = sorted((r["conns"], bool(r["failed"]), r["conns_refused"],
              r["conns_timeout"], r["client_p99_ns"], r["network_p50_ns"],
              r["server_count"]) for r in rows)
assert got == want, (got, want)
print("GraphML: %d edges with the JSON's health" % len(rows))
EOF
	fail "the GraphML edge attributes are not the JSON's"
echo ok
