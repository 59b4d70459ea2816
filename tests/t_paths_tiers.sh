#!/bin/bash
# A synthetic 3-tier service (client -> web -> app -> db, 2 ms at web and
# 5 ms at app before each call, 20% jitter, overlapping requests, a clock
# offset per node): the path comes back whole and each delay within 20%,
# in JSON and in text, which names the tier adding the most.
. "$(dirname "$0")/lib.sh"
need_cmd python3

"$CW" paths --synthetic tiers:seed=7,n=3000,rate=300,d1=2ms,d2=5ms \
	>"$T_TMP/tiers.csv" || fail "synthetic trace"
"$CW" paths --json "$T_TMP/tiers.csv" >"$T_TMP/p.json" || fail "paths --json"
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
    print("delay at %s before %s -> %s: %.0f us (want %d, within 20%%)" % (a, a, b, got, want))
    assert abs(got - want) <= 0.2 * want, "delay off by more than 20%"
    assert hops[(a, b)]["messages"] >= 2400, "too few messages explained"
' "$T_TMP/p.json" || fail "3-tier path or delays wrong"

"$CW" paths "$T_TMP/tiers.csv" >"$T_TMP/p.txt" || fail "paths (text)"
cat "$T_TMP/p.txt"
grep -q "end-to-end latency" "$T_TMP/p.txt" || fail "no end-to-end latency"
grep -q "app adds the most" "$T_TMP/p.txt" || fail "app should add the most"

# Nesting on the same trace: printed for the record.
"$CW" paths --method nesting "$T_TMP/tiers.csv" || fail "nesting failed"
