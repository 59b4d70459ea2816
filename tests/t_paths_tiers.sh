#!/bin/bash
# A synthetic 3-tier service (client -> web -> app -> db, 2 ms at web and
# 5 ms at app before each call, 20% jitter, overlapping requests, a clock
# offset per node): with either method the path comes back whole and each
# delay within 20%, in JSON and in text, which names the tier adding the
# most.  (The trace names no connections, so nesting pairs calls with
# replies first in, first out, which jitter reorders.)
. "$(dirname "$0")/lib.sh"
need_cmd python3

"$CW" paths --synthetic tiers:seed=7,n=3000,rate=300,d1=2ms,d2=5ms \
	>"$T_TMP/tiers.csv" || fail "synthetic trace"
for m in convolution nesting; do
	"$CW" paths --method $m --json "$T_TMP/tiers.csv" >"$T_TMP/p.json" ||
		fail "paths --method $m --json"
	pyjson '
import json, sys
doc = json.load(open(sys.argv[1]))
assert len(doc["paths"]) == 1, "want one path, got %d" % len(doc["paths"])
p = doc["paths"][0]
assert p["root"] == "client", p["root"]
hops = {(h["from"], h["to"]): h for h in p["hops"]}
for want in [("client", "web"), ("web", "app"), ("app", "db"),
             ("db", "app"), ("app", "web"), ("web", "client")]:
    assert want in hops, "hop %s -> %s missing" % want
ids = {h["id"]: h for h in p["hops"]}
assert ids[hops[("app", "db")]["parent"]] is hops[("web", "app")], "app->db not under web->app"
for (a, b), want in [(("web", "app"), 2000), (("app", "db"), 5000)]:
    got = hops[(a, b)]["delay_us"]["median"]
    print("%s: delay at %s before %s -> %s: %.0f us (want %d, within 20%%)" % (sys.argv[2], a, a, b, got, want))
    assert abs(got - want) <= 0.2 * want, "delay off by more than 20%"
    assert hops[(a, b)]["messages"] >= 2400, "too few messages explained"
' "$T_TMP/p.json" $m || fail "$m: 3-tier path or delays wrong"

	"$CW" paths --method $m "$T_TMP/tiers.csv" >"$T_TMP/p.txt" ||
		fail "paths --method $m (text)"
	cat "$T_TMP/p.txt"
	grep -q "end-to-end latency" "$T_TMP/p.txt" ||
		fail "$m: no end-to-end latency"
	grep -q "app adds the most" "$T_TMP/p.txt" ||
		fail "$m: app should add the most"
done
