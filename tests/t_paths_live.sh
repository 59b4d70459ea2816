#!/bin/bash
# The live pipeline finds where a request's time goes: load -> nginx ->
# app (5 ms of work) -> database (10 ms), under concurrent load from four
# clients, from the kernel's message timing alone.  Each tier's delay must
# be within 20% (or 300 us) of what it adds.  (The app is Python: its HTTP
# parsing adds a few hundred microseconds to the configured sleep, which is
# why the delays are not smaller.)
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nginx python3

APP_DELAY=5ms DB_DELAY=10ms three_tier
out=$T_TMP/out
agent_start "$out" --paths
ip netns exec "$LOAD" python3 "$CW_ROOT/examples/load.py" \
	http://10.77.0.11/api --clients 4 --rate 10 --duration 8s \
	>"$T_TMP/load.json" || fail "load generator failed"
sleep 0.3
agent_stop "$out"
[ -s "$out/paths.json" ] || fail "no paths.json"

python3 - "$out/paths.json" "nginx[$NGINX_PID]" "python3[$APP_PID]" \
	"python3[$DB_PID]" <<'PY' || fail "the inferred paths are wrong"
import json, sys
ps = json.load(open(sys.argv[1]))["paths"]
nginx, app, db = sys.argv[2:5]
def child(p, parent, frm, to):
    hs = [h for h in p["hops"] if h["parent"] == parent["id"]
          and h["from"] == frm and h["to"] == to]
    return max(hs, key=lambda h: h["messages"]) if hs else None
best = None
for p in ps:
    for h in p["hops"]:
        if h["from"] != nginx or h["to"] != app:
            continue
        call = child(p, h, app, db)
        reply = call and child(p, call, db, app)
        if reply and (not best or h["messages"] > best[0]["messages"]):
            best = (h, call, reply)
assert best, "no path nginx -> app -> database"
h, call, reply = best
a, d = call["delay_us"]["median"], reply["delay_us"]["median"]
print("nginx -> app -> database: nginx adds %.0f us, app %.0f us (want "
      "5000), database %.0f us (want 10000); %d requests"
      % (h["delay_us"]["median"], a, d, h["messages"]))
ok = lambda got, want: abs(got - want) <= max(0.2 * want, 300)
assert ok(a, 5000), "app delay %.0f us" % a
assert ok(d, 10000), "database delay %.0f us" % d
PY
echo ok
