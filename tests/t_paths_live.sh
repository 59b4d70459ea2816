#!/bin/bash
# The live pipeline finds where a request's time goes through a real
# three-tier stack, from the kernel's message timing alone: load (four
# concurrent clients) -> nginx -> app (2 ms of work per request) ->
# postgresql (SELECT pg_sleep(0.005)).  Both methods, on the same timing
# windows, must find nginx -> app -> database with each tier's delay within
# 20% (or 300 us) of what it adds: convolution as `causeway run --paths`
# writes it, nesting from the same windows turned into a message trace.
#
# What a tier adds is checked against the nominal figure (2000 us, 5000 us)
# and against what the tier measured itself, on the same requests: the app
# times each request from having it in hand to its query leaving (GET
# /stats), and postgres logs each statement's duration.  The database's
# figure is the sleep plus postgres's own work on the query: the sleep runs
# a little long (its latch timer), and the rest, SELECT pg_sleep(0) timed
# in the same log, is some 10 us.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nginx python3

DB_KIND=postgres APP_DELAY=2ms DB_DELAY=5ms PG_LOG_DURATIONS=1 three_tier

# Postgres's own cost of a query, without the sleep.
ip netns exec "$APP" "$APP_PYTHON" "$CW_ROOT/examples/app.py" pgtime \
	--postgres 10.77.0.13:5432 --query "SELECT pg_sleep(0)" -n 100 \
	>/dev/null || fail "unable to time a query on postgres"

out=$T_TMP/out
agent_start "$out" --paths
ip netns exec "$LOAD" python3 "$CW_ROOT/examples/load.py" \
	http://10.77.0.11/api --clients 4 --rate 40 --duration 8s \
	>"$T_TMP/load.json" || fail "load generator failed"
sleep 0.3
agent_stop "$out"
[ -s "$out/paths.json" ] || fail "no paths.json"
[ -s "$out/timing.jsonl" ] || fail "no timing.jsonl"
note "load: $(tail -n 1 "$T_TMP/load.json")"
ip netns exec "$LOAD" python3 -c '
import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
	http://10.77.0.12:8080/stats >"$T_TMP/app-stats.json" ||
	fail "unable to read the app's own timings"

# The same windows as a message trace (what cw_live_trace builds inside
# `causeway run`: nodes are comm[pid], the two ends of a connection paired
# on their addresses), with each message's connection, for nesting.
pyjson '
import collections, json, sys
conns, timing, outp = sys.argv[1:4]
ends = {}
for line in open(conns):
    r = json.loads(line)
    ends[(r["host"], r["cookie"])] = r
by_tuple = collections.defaultdict(list)
for r in ends.values():
    a, b = (r["laddr"], r["lport"]), (r["raddr"], r["rport"])
    by_tuple[(min(a, b), max(a, b))].append(r)
def label(r):
    p = r["process"]
    return "%s[%s]" % (p["comm"], p["pid"]) if p.get("pid") else "?[netns %d]" % r["netns"]
conn_id, rows = {}, []
for line in open(timing):
    w = json.loads(line)
    me = ends.get((w["host"], w["cookie"]))
    if not me:
        continue
    a, b = (me["laddr"], me["lport"]), (me["raddr"], me["rport"])
    key = (min(a, b), max(a, b))
    other = [r for r in by_tuple[key] if r is not me and r["netns"] != me["netns"]]
    peer = label(other[0]) if other else (
        "%s:%d" % b if me["role"] == "client" else me["raddr"])
    cid = conn_id.setdefault(key, len(conn_id) + 1)
    for ts, d, nbytes in w["msgs"]:
        rows.append((label(me), ts, peer, d, nbytes, cid))
rows.sort()
with open(outp, "w") as f:
    f.write("ts_ns,node,peer,dir,bytes,conn\n")
    for node, ts, peer, d, nbytes, cid in rows:
        f.write("%d,%s,%s,%s,%d,%d\n" % (ts, node, peer, d, nbytes, cid))
' "$out/conns.jsonl" "$out/timing.jsonl" "$T_TMP/trace.csv" ||
	fail "unable to turn the timing windows into a trace"
"$CW" paths --method both --json "$T_TMP/trace.csv" >"$T_TMP/both.json" ||
	fail "causeway paths on the live trace failed"
"$CW" paths --method nesting "$T_TMP/trace.csv"

python3 - "$out/paths.json" "$T_TMP/both.json" "$T_TMP/app-stats.json" \
	"$PG_LOG" "$PG_QUERY" "nginx[$NGINX_PID]" "python3[$APP_PID]" \
	<<'PY' || fail "the inferred paths are wrong"
import json, re, sys
live, both, stats, pglog, query, nginx, app = sys.argv[1:8]

def median(v):
    v = sorted(v)
    return v[len(v) // 2]

# What each tier measured itself.
durations = {}
for line in open(pglog):
    m = re.search(r"duration: ([0-9.]+) ms\s+statement: (.*)$", line)
    if m:
        durations.setdefault(m.group(2).strip(), []).append(1e3 * float(m.group(1)))
pg_us = median(durations[query])
pg0_us = median(durations["SELECT pg_sleep(0)"])
app_us = json.load(open(stats))["work_us"]
print("references: app %.0f us from request to query (its own clock); "
      "postgres %.0f us for %s, %.0f us for SELECT pg_sleep(0) (its log)"
      % (app_us, pg_us, query, pg0_us))

def check(method, doc):
    def child(p, parent, frm, to):
        return [h for h in p["hops"] if h["parent"] == parent["id"]
                and h["from"] == frm and (to(h["to"]) if callable(to) else h["to"] == to)]
    best = None
    for p in doc["paths"]:
        for h in p["hops"]:
            if h["from"] != nginx or h["to"] != app or h["reply"]:
                continue
            calls = child(p, h, app, lambda n: n.startswith("postgres["))
            if calls and (not best or h["messages"] > best[0]["messages"]):
                best = (h, p, calls)
    assert best, "%s: no path nginx -> app -> postgres" % method
    h, p, calls = best
    print("%s: nginx -> app: %d requests, nginx adds %.0f us"
          % (method, h["messages"], h["delay_us"]["median"]))
    n = 0
    ok = lambda got, want: abs(got - want) <= max(0.2 * want, 300)
    for call in calls:
        reply = child(p, call, call["to"], app)
        assert reply, "%s: no reply from %s" % (method, call["to"])
        a, d = call["delay_us"]["median"], reply[0]["delay_us"]["median"]
        print("  app -> %s: %d queries, app %.0f us (want 2000; measured %.0f), "
              "database %.0f us (want 5000; logged %.0f)"
              % (call["to"], call["messages"], a, app_us, d, pg_us))
        if call["messages"] < 0.1 * h["messages"]:
            continue  # too few to judge a median by
        n += call["messages"]
        for got, want, what in ((a, 2000, "app"), (a, app_us, "app (measured)"),
                                (d, 5000, "database"), (d, pg_us, "database (logged)")):
            assert ok(got, want), "%s: %s delay %.0f us, want %.0f" % (method, what, got, want)
    assert n >= 0.8 * h["messages"], \
        "%s: the checked database hops explain %d of %d requests" % (method, n, h["messages"])

check("convolution (causeway run --paths)", json.load(open(live)))
docs = [json.loads(line) for line in open(both)]
for d in docs:
    check("%s (same windows)" % d["method"], d)
PY
echo ok
