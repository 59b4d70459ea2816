#!/bin/bash
# causeway simulate, graph and render on a small synthetic fleet: the same
# seed gives the same file; the graph's views agree with each other (edge
# totals, windows, host matrix, GraphML); the SVG names the fleet's nodes.
. "$(dirname "$0")/lib.sh"
need_cmd python3
cd "$T_TMP"

"$CW" simulate --hosts 8 --conns 40 --seed 3 -o fleet.jsonl || fail "simulate failed"
"$CW" simulate --hosts 8 --conns 40 --seed 3 -o again.jsonl || fail "simulate failed"
cmp -s fleet.jsonl again.jsonl || fail "the same seed gave different records"
"$CW" simulate --hosts 8 --conns 40 --seed 4 >other.jsonl || fail "simulate to stdout failed"
cmp -s fleet.jsonl other.jsonl && fail "another seed gave the same records"
note "records: $(wc -l <fleet.jsonl)"

"$CW" graph --format json -o g.json fleet.jsonl || fail "graph --format json failed"
pyjson '
import json, sys
g = json.load(open("g.json"))
st = g["stats"]
assert st["paired"] > 0 and st["unpaired"] > 0, st
assert g["by"] == "process" and g["edges"], g["by"]
tot = sum(e["bytes_c2s"] + e["bytes_s2c"] for e in g["edges"])
win = sum(w["bytes_c2s"] + w["bytes_s2c"] for w in g["windows"])
assert g["window_ns"] == 60 * 10**9
assert win + g["unattributed_bytes"] == tot, (win, g["unattributed_bytes"], tot)
assert len({w["start_ns"] for w in g["windows"]}) > 1
print("-- edges %d, bytes %d, windows %d" % (len(g["edges"]), tot, len(g["windows"])))
open("total", "w").write(str(tot))
open("name", "w").write(g["edges"][0]["client_name"])
' || fail "graph JSON is inconsistent"

"$CW" graph --by host --matrix -o m.csv fleet.jsonl || fail "graph --matrix failed"
pyjson '
import csv
rows = list(csv.reader(open("m.csv")))
hdr = rows[0][1:]
assert all(len(r) == len(hdr) + 1 for r in rows), "not square"
assert [r[0] for r in rows[1:]] == hdr, "rows and columns differ"
total = sum(int(x) for r in rows[1:] for x in r[1:])
assert total == int(open("total").read()), (total, open("total").read())
diag = sum(int(rows[i + 1][i + 1]) for i in range(len(hdr)))
assert diag > 0, "no intra-host traffic"
print("-- matrix %dx%d, diagonal %d of %d bytes" % (len(hdr), len(hdr), diag, total))
' || fail "host matrix is inconsistent"

"$CW" graph --by cmdline fleet.jsonl >cmd.txt || fail "graph --by cmdline failed"
grep -q "nginx: worker process" cmd.txt || fail "no nginx in the cmdline view"
grep -q "python3 /srv/app/server.py" cmd.txt || fail "no app in the cmdline view"

for by in process cmdline container host; do
	"$CW" graph --by $by -o g-$by.graphml fleet.jsonl || fail "graphml --by $by failed"
	"$CW" graph --by $by --format json fleet.jsonl >g-$by.json || fail "json --by $by failed"
	pyjson '
import json, sys, xml.etree.ElementTree as ET
ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
root = ET.parse(sys.argv[1]).getroot()
j = json.load(open(sys.argv[2]))
n = len(root.findall(".//g:node", ns)); e = len(root.findall(".//g:edge", ns))
assert (n, e) == (len(j["nodes"]), len(j["edges"])), (n, e)
print("-- %s: %d vertices, %d edges" % (j["by"], n, e))
' g-$by.graphml g-$by.json || fail "GraphML and JSON differ (--by $by)"
done

"$CW" graph --top 5 --format csv fleet.jsonl >top.csv || fail "--top failed"
check_eq "top 5 rows" "$(($(wc -l <top.csv) - 1))" 5
name=$(cat name)
"$CW" graph --neighbours "$name" --format json fleet.jsonl >nb.json ||
	fail "--neighbours '$name' failed"
pyjson '
import json, sys
j = json.load(open("nb.json"))
assert j["edges"]
assert all(sys.argv[1] in (e["client_name"], e["server_name"]) for e in j["edges"])
ids = {e["id"] for e in j["edges"]}
assert all(w["edge"] in ids for w in j["windows"]), "windows of other edges"
' "$name" || fail "--neighbours gave edges not touching '$name'"
"$CW" graph --format dot fleet.jsonl | grep -q "^digraph" || fail "no DOT"

"$CW" render --format svg --min-share 0 -o g.svg fleet.jsonl || fail "render svg failed"
grep -q "<svg" g.svg || fail "g.svg is no SVG"
grep -q "nginx\[" g.svg || fail "g.svg lacks nginx nodes"
grep -q "redis&#45;server\[" g.svg || fail "g.svg lacks redis nodes"
grep -q "<title>cluster_host" g.svg || fail "g.svg lacks per-host clusters"
"$CW" render --by cmdline --min-share 0.02 -o tiers.svg fleet.jsonl || fail "render --by cmdline failed"
grep -q "nginx: worker process" tiers.svg || fail "tiers.svg lacks nginx"
grep -q "python3 /srv/app/server.py" tiers.svg || fail "tiers.svg lacks the app"
"$CW" render --by host -o hosts.png fleet.jsonl || fail "render png failed"
head -c 4 hosts.png | od -c | grep -q "P   N   G" || fail "hosts.png is no PNG"
"$CW" render --by container --format dot -o c.dot fleet.jsonl || fail "render dot failed"
grep -q "digraph" c.dot || fail "c.dot is no DOT"
# Without --min-share, a fleet of many even edges is drawn from its 40
# heaviest edges, not as an empty picture; a small graph is drawn whole,
# however uneven (two of 21 edges carry over half of the bytes: once the
# only ones drawn); given, the share is kept and the empty picture said.
"$CW" render -f dot -o heavy.dot fleet.jsonl 2>stderr || fail "render, default share, failed"
grep -q "drawing the 40 heaviest of 176 edges" stderr || fail "no note of the heaviest edges: $(cat stderr)"
[ "$(grep -c -- ' -> ' heavy.dot)" -eq 40 ] || fail "want 40 edges drawn, got $(grep -c -- ' -> ' heavy.dot)"
"$CW" simulate --hosts 3 --conns 12 --seed 5 -o small.jsonl || fail "simulate small failed"
"$CW" graph --format json -o small.json small.jsonl || fail "graph small failed"
n=$(python3 -c 'import json; print(len(json.load(open("small.json"))["edges"]))')
"$CW" render -f dot -o small.dot small.jsonl 2>stderr || fail "render small failed"
grep -q heaviest stderr && fail "a small graph was cut: $(cat stderr)"
[ "$n" -gt 2 ] && [ "$(grep -c -- ' -> ' small.dot)" -eq "$n" ] ||
	fail "want all $n edges of the small graph, got $(grep -c -- ' -> ' small.dot)"
# Edges that carried no byte are not among the heaviest: the fleet with
# only host-00000's clients' bytes kept draws just the edges with bytes.
python3 - <<'PY' || fail "no zero-byte fleet"
import json
with open("zero.jsonl", "w") as out:
    for line in open("fleet.jsonl"):
        r = json.loads(line)
        if r["host"] != "host-00000" or r["role"] != "client":
            r["bytes_out"] = r["bytes_in"] = 0
        out.write(json.dumps(r) + "\n")
PY
"$CW" graph --format json -o zero.json zero.jsonl || fail "graph zero failed"
n=$(python3 -c 'import json; print(sum(1 for e in json.load(open("zero.json"))["edges"] if e["bytes_c2s"] + e["bytes_s2c"]))')
"$CW" render -f dot -o zero.dot zero.jsonl 2>stderr || fail "render zero failed"
[ "$n" -gt 2 ] && [ "$n" -lt 40 ] && [ "$(grep -c -- ' -> ' zero.dot)" -eq "$n" ] ||
	fail "want the $n edges with bytes, got $(grep -c -- ' -> ' zero.dot)"
grep -q "drawing the $n heaviest of 176 edges" stderr || fail "zero: $(cat stderr)"
"$CW" render -s 0.10 -f dot -o none.dot fleet.jsonl 2>stderr || fail "render -s 0.10 failed"
grep -q "is empty (try a lower --min-share)" stderr || fail "no warning of an empty picture: $(cat stderr)"
grep -q -- ' -> ' none.dot && fail "-s 0.10 drew edges no edge carries"
# The same fleet as a wire stream file (what the correlator reads from
# Kafka): the same bytes for the same seed, the same records as 'causeway
# dump' prints, and the same graph, byte for byte, as from JSON lines.
"$CW" simulate --hosts 8 --conns 40 --seed 3 --format wire -o fleet.cww ||
	fail "simulate --format wire failed"
"$CW" simulate --hosts 8 --conns 40 --seed 3 >again.cww || fail "simulate to stdout failed"
cmp -s fleet.jsonl again.cww || fail "without --format or .cww, stdout is not JSON lines"
"$CW" simulate --hosts 8 --conns 40 --seed 3 --format wire >again.cww ||
	fail "simulate --format wire to stdout failed"
cmp -s fleet.cww again.cww || fail "the same seed gave different wire files"
[ "$(head -c 8 fleet.cww)" = "CWWIRE1" ] || fail "fleet.cww lacks the wire magic"
"$CW" dump fleet.cww >dumped.jsonl || fail "dump of fleet.cww failed"
check_eq "records in fleet.cww" "$(wc -l <dumped.jsonl)" "$(wc -l <fleet.jsonl)"
for by in process host; do
	"$CW" graph --by $by --format json fleet.jsonl >j-$by.json || fail "graph of JSON failed"
	"$CW" graph --by $by --format json fleet.cww >w-$by.json || fail "graph of wire failed"
	cmp -s j-$by.json w-$by.json || fail "--by $by: the wire file gave another graph"
done
# Both files at once: each record comes twice, to the same end.
"$CW" graph --format json fleet.cww fleet.jsonl >both.json || fail "graph of wire and JSON together failed"
pyjson '
import json, sys
g = json.load(open("both.json"))
st = g["stats"]
assert st["files"] == 2 and st["records"] == 2 * int(sys.argv[1]), st
assert st["ends"] == int(sys.argv[1]), st
tot = sum(e["bytes_c2s"] + e["bytes_s2c"] for e in g["edges"])
assert tot == int(open("total").read()), (tot, open("total").read())
' "$(wc -l <fleet.jsonl)" || fail "wire + JSON input counted twice"
"$CW" render --by host --min-share 0 -o w.svg fleet.cww || fail "render of wire failed"
grep -q "host&#45;00001" w.svg || fail "w.svg lacks the hosts"
"$CW" graph --bench --window 0 --top 1 fleet.cww >/dev/null 2>bench.txt || fail "--bench failed"
grep -q "^bench: records $(wc -l <fleet.jsonl) read .* records/s) .* build+project " bench.txt ||
	fail "--bench line: $(cat bench.txt)"
ls | grep -q "\.tmp\." && fail "temporary files left: $(ls)"
note "ok"
