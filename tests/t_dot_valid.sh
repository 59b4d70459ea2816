#!/bin/bash
# Every DOT causeway writes is read by Graphviz's dot: `graph --format dot`
# (every projection) over a fleet with IPv4 addresses and external peers
# (10.0.0.1:80 as names), the same fleet moved to IPv6, and records whose
# host, command, command line and container carry hostile names (quotes,
# backslashes, braces, "->", ";", newlines, escapes, UTF-8); `render
# --format dot` of each; and the correlator's graph.dot snapshot, fed
# through an embedded broker.  `dot -Tsvg` must take each with no error
# and no warning (it used to refuse "10.0.0.1:80" unquoted and
# rss_bytes=1.56467e+06), and the DOT must still name every vertex.
. "$(dirname "$0")/lib.sh"
need_cmd python3 dot
cd "$T_TMP"

"$CW" simulate --hosts 4 --conns 20 --seed 7 -o v4.jsonl 2>/dev/null || fail "simulate failed"

# The same fleet with every address moved into IPv6 (one to one, so the
# ends still pair), and one with hostile names.
python3 - <<'EOF' || fail "unable to make the inputs"
import ipaddress, json
recs = [json.loads(l) for l in open("v4.jsonl")]
def v6(a):
    return str(ipaddress.IPv6Address("fd00::") + int(ipaddress.IPv4Address(a)))
with open("v6.jsonl", "w") as f:
    for r in recs:
        r = dict(r, laddr=v6(r["laddr"]), raddr=v6(r["raddr"]))
        f.write(json.dumps(r) + "\n")
hostile = {
    "host-00001": 'h"o\\st {a->b; c}\n',
}
comms = ['a"b\\c', "x->y;z", "{ }", "na\u00efve\u2603", 'q\\"q', "e\u001b[31m"]
with open("hostile.jsonl", "w") as f:
    for i, r in enumerate(recs):
        r = json.loads(json.dumps(r))
        r["host"] = hostile.get(r["host"], r["host"])
        p = r.get("process")
        if p:
            p["comm"] = comms[p["pid"] % len(comms)]
            p["cmdline"] = p["comm"] + ' --opt "a b" \\N \\n & <x> ]; graph [x=1'
            if p.get("container"):
                p["container"] = 'c"on\\tainer\n'
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
EOF

checked=0
# check_dot FILE WHAT: dot reads FILE without a word on stderr.
check_dot() {
	[ -s "$1" ] || fail "$2: no DOT written"
	dot -Tsvg "$1" >"$1.svg" 2>"$1.err" || fail "$2: dot refuses it: $(head -3 "$1.err")"
	[ -s "$1.err" ] && fail "$2: dot warns: $(head -3 "$1.err")"
	grep -q "<svg" "$1.svg" || fail "$2: no SVG from dot"
	checked=$((checked + 1))
}

for input in v4 v6 hostile; do
	for by in process cmdline container host pod workload; do
		"$CW" graph --by "$by" --format dot -o "g-$input-$by.dot" "$input.jsonl" ||
			fail "graph --by $by --format dot on $input failed"
		check_dot "g-$input-$by.dot" "graph --by $by --format dot ($input)"
		"$CW" graph --by "$by" --format json -o "g-$input-$by.json" "$input.jsonl" ||
			fail "graph --by $by --format json on $input failed"
		# Every vertex of the view is a node of the DOT, under its name.
		python3 - "g-$input-$by.json" "g-$input-$by.dot.svg" <<'EOF' ||
import json, sys, xml.etree.ElementTree as ET
g = json.load(open(sys.argv[1]))
ns = {"s": "http://www.w3.org/2000/svg"}
titles = [t.text for t in ET.parse(sys.argv[2]).getroot().iterfind(".//s:g[@class='node']/s:title", ns)]
assert len(titles) == len(g["nodes"]), (len(titles), len(g["nodes"]))
EOF
			fail "the DOT of graph --by $by ($input) lost vertices"
		"$CW" render --by "$by" --min-share 0 --format dot -o "r-$input-$by.dot" "$input.jsonl" ||
			fail "render --by $by --format dot on $input failed"
		check_dot "r-$input-$by.dot" "render --by $by --format dot ($input)"
	done
done
grep -Eq 'name="[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+(:[0-9]+)?"' g-v4-process.dot ||
	fail "no quoted IPv4 address in the DOT"
grep -Eq 'name="\[?fd00::[0-9a-f:]*(\]:[0-9]+)?"' g-v6-process.dot ||
	fail "no quoted IPv6 address in the DOT"
grep -q 'e+0' g-*-process.dot && fail "a number in exponent notation in the DOT"

# The correlator's snapshot (graph.dot in -o), from an embedded broker.
broker_start
"$CW" simulate --hosts 4 --conns 20 --seed 7 --kafka "$(cat boot)" 2>sim.log ||
	fail "simulate --kafka failed: $(cat sim.log)"
"$CW" correlate --kafka "$(cat boot)" --from-beginning --no-paths --idle 2s \
	-o out >correlate.txt 2>correlate.log || fail "correlate failed: $(tail -3 correlate.log)"
check_dot out/graph.dot "correlate's graph.dot"
note "$checked DOT files read by dot with no error or warning"
