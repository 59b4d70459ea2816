#!/bin/bash
# The README's main job, `make demo`, end to end: examples/demo.sh as a
# user runs it (four test hosts, nginx, the app, redis, one agent per host,
# the embedded broker, a correlator), then its summary checked: the three
# tiers' edges, every connection paired, every byte one end sent received
# at the other, every agent's records delivered and read back, the same
# bytes in the correlator's graph and in `causeway graph`'s.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nginx redis-server redis-cli python3

out=$T_TMP/demo
DEMO_SECS=4 DEMO_OUT=$out BUILD=${BUILD:-build} CW=$CW \
	bash "$CW_ROOT/examples/demo.sh" >"$T_TMP/demo.txt" 2>&1 ||
	fail "the demo failed: $(tail -n 20 "$T_TMP/demo.txt")"
cat "$out/summary.txt"
for f in edges.json graph.json graph.svg hosts.csv records.jsonl table.txt; do
	[ -s "$out/$f" ] || fail "the demo wrote no $f"
done
grep -q 'See it live:' "$T_TMP/demo.txt" || fail "no closing lines"

python3 - "$out" <<'PY' || fail "the demo's summary is wrong (above)"
import json, os, re, sys

out = sys.argv[1]
summary = open(os.path.join(out, "summary.txt")).read()
corr = json.load(open(os.path.join(out, "edges.json")))
graph = json.load(open(os.path.join(out, "graph.json")))
bad = []


def tiers(g, client_key, server_key):
    nodes = {n["id"]: n for n in g["nodes"]}
    got = {}
    for e in g["edges"]:
        c, s = nodes[e[client_key]], nodes[e[server_key]]
        got[(c.get("host"), c.get("comm"), s.get("host"), s.get("comm"))] = e
    return got


want = [("load", "python3", "web", "nginx"), ("web", "nginx", "app", "python3"),
        ("app", "python3", "db", "redis-server")]
for name, g in (("correlator", corr), ("graph", graph)):
    got = tiers(g, "client", "server")
    for t in want:
        e = got.get(t)
        if not e:
            bad.append("%s: no edge %s@%s -> %s@%s" % (name, t[1], t[0],
                                                      t[3], t[2]))
            continue
        if e["conns"] <= 0 or e.get("paired", e["conns"]) != e["conns"]:
            bad.append("%s: %s: %d of %d connections paired" % (
                name, t, e.get("paired", 0), e["conns"]))
        if e["bytes_c2s"] <= 0 or e["bytes_s2c"] <= 0:
            bad.append("%s: %s: no bytes" % (name, t))
    print("%s: %d edges, the three tiers present" % (name, len(g["edges"])))
for e in corr["edges"]:
    if e.get("unreceived_c2s") or e.get("unreceived_s2c"):
        bad.append("correlator: edge %d -> %d: %d/%d bytes unreceived" % (
            e["client"], e["server"], e["unreceived_c2s"],
            e["unreceived_s2c"]))
st = corr["stats"]
if st["unpaired"] or st["paired"] * 2 != st["ends"]:
    bad.append("correlator: %(ends)d ends, %(paired)d paired, "
               "%(unpaired)d unpaired" % st)
for line, why in (
        (r"bytes .* \(equal\)", "the two graphs' bytes differ"),
        (r"both ends +every byte one end sent, the other end received",
         "bytes lost between the two ends"),
        (r"pairing +(\d+) of \1 connections paired", "unpaired connections")):
    if not re.search(line, summary):
        bad.append("summary: " + why)
agents = re.findall(r"kafka (\d+) produced, (\d+) delivered, (\d+) spooled, "
                    r"(\d+) lost", summary)
if len(agents) != 4:
    bad.append("summary: %d agent lines, want 4" % len(agents))
for p, d, s, l in agents:
    if p != d or l != "0":
        bad.append("an agent produced %s, delivered %s, lost %s" % (p, d, l))
for b in bad:
    print("WRONG " + b)
sys.exit(1 if bad else 0)
PY
echo ok
