#!/bin/bash
# causeway place moves no more than it must, end to end, on instances
# whose optimum and fewest moves are known by construction:
#  - clusters: three clusters of three containers that talk only inside,
#    spread over four hosts of room for three (a1 a2 b1 | b2 b3 c1 | c2 c3
#    | a3): every method's plan, and the one --method all chooses, moves 3
#    (b1, c1, a3), with fewest or fixed hosts;
#  - pairs: four pairs that talk a lot inside and a little round a ring,
#    a pair per host: by default no move and the bytes kept; with --hosts
#    consolidate three hosts, a pair split, and the first line of the
#    table, the JSON and the Kubernetes YAML says what that costs;
#  - a graph with nodes and no traffic is refused in one line.
. "$(dirname "$0")/lib.sh"
cd "$T_TMP"

# instance NAME: NAME.json (graph), NAME.units.csv, NAME.hosts.csv
instance() {
	python3 - "$1" <<'PY' || fail "unable to write instance $1"
import json, sys
name = sys.argv[1]
if name == "clusters":
    at = {"a1": 0, "a2": 0, "b1": 0, "b2": 1, "b3": 1, "c1": 1, "c2": 2,
          "c3": 2, "a3": 3}
    links = [("a1", "a2", 500), ("a2", "a3", 400), ("a1", "a3", 300),
             ("b1", "b2", 200), ("b2", "b3", 700), ("b1", "b3", 100),
             ("c1", "c2", 900), ("c2", "c3", 50), ("c1", "c3", 60)]
elif name == "pairs":
    at = {}
    links = []
    for i, p in enumerate("abcd"):
        at[p + "1"] = at[p + "2"] = i
        links.append((p + "1", p + "2", 100000000))
        links.append((p + "2", "abcd"[(i + 1) % 4] + "1", 1000000))
else:   # idle: the pairs, no traffic
    at = {p + s: i for i, p in enumerate("abcd") for s in "12"}
    links = []
cid = {u: (u * 32)[:24] for u in at}
nodes = [{"kind": "process", "host": "node-%d" % h, "container": cid[u]}
         for u, h in at.items()]
idx = {u: i for i, u in enumerate(at)}
edges = [{"client": idx[a], "server": idx[b], "bytes_c2s": n,
          "bytes_s2c": 0} for a, b, n in links]
json.dump({"nodes": nodes, "edges": edges}, open(name + ".json", "w"))
with open(name + ".units.csv", "w") as f:
    f.write("unit,cpu,memory,host\n")
    for u, h in at.items():
        f.write("%s,1,1Gi,node-%d\n" % (cid[u], h))
with open(name + ".hosts.csv", "w") as f:
    f.write("host,cpu,memory\n")
    for h in range(4):
        f.write("node-%d,3.4,16Gi\n" % h)
PY
}
place() {	# NAME ARGS...
	local n=$1
	shift
	"$CW" place -H "$n.hosts.csv" -U "$n.units.csv" "$@" "$n.json"
}

# ---- clusters: 3 moves, whoever plans -----------------------------------
instance clusters
for hosts in fewest fixed; do
	place clusters --method all --hosts $hosts --time-limit 20 \
		--format json -o clusters.$hosts.json ||
		fail "place clusters --hosts $hosts failed"
	python3 - clusters.$hosts.json <<'PY' || fail "clusters --hosts $hosts"
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["plans"]:
    assert p["cross_bytes"] == 0 and p["hosts_used"] == 3, p["method"]
    moved = sorted(m["unit"][:2] for m in p["moves"])
    assert moved == ["a3", "b1", "c1"], (p["method"], moved)
    print("-- %s: 3 moves (%d saved by relabelling)" % (p["method"],
                                                        p["moves_saved"]))
assert {p["method"] for p in d["plans"]} == {"ga", "partition", "ilp"}
# every plan ties on hosts, bytes and moves: ours is chosen
assert d["chosen"] == "partition", d["chosen"]
PY
done

# ---- pairs: the bytes kept unless consolidation is asked for ------------
instance pairs
place pairs --method all --time-limit 20 >pairs.txt ||
	fail "place pairs failed"
head -n 1 pairs.txt | grep -q "raises" && fail "a default plan raises bytes: $(head -n 1 pairs.txt)"
grep -q "^# partition: 4 of 4 hosts in use (4 now); .* 0 moves" pairs.txt ||
	fail "default plan: $(grep '^#' pairs.txt)"

want="^# this plan raises cross-host bytes from 3.8 MiB to 97.3 MiB (+2450.0%) to use 3 hosts instead of 4 (--hosts consolidate)$"
place pairs --hosts consolidate --method ilp --time-limit 20 >cons.txt ||
	fail "place --hosts consolidate failed"
head -n 1 cons.txt | grep -q "$want" || fail "first line: $(head -n 1 cons.txt)"
note "$(head -n 1 cons.txt)"
grep -q "^# ilp: 3 of 4 hosts in use (4 now); .* (optimal)$" cons.txt ||
	fail "consolidated plan: $(sed -n 2p cons.txt)"
place pairs --hosts consolidate --method ilp --format k8s -o cons.yaml ||
	fail "place --format k8s failed"
head -n 1 cons.yaml | grep -q "$want" || fail "k8s first line: $(head -n 1 cons.yaml)"
place pairs --hosts consolidate --method ilp --format json -o cons.json ||
	fail "place --format json failed"
python3 - <<'PY' || fail "consolidation in JSON"
import json
d = json.load(open("cons.json"))
assert list(d)[0] == "trade", list(d)
assert d["trade"].startswith("this plan raises cross-host bytes"), d["trade"]
p = d["plans"][0]
assert p["hosts_used"] == 3 and p["cross_bytes_now"] == 4000000, p
# one pair split (100 MB), the ring cut twice
assert p["cross_bytes"] == 102000000, p["cross_bytes"]
assert p["trade"] == d["trade"]
PY

# ---- no traffic: refused in one line, nothing written --------------------
instance idle
place idle -o idle.out 2>idle.err
rc=$?
[ $rc -eq 1 ] || fail "a graph with no traffic: exit $rc, want 1"
[ "$(wc -l <idle.err)" -eq 1 ] || fail "want one line, got: $(cat idle.err)"
grep -q "^causeway: error: graph 'idle.json' has no traffic between its 8 units: nothing to plan from$" idle.err ||
	fail "got: $(cat idle.err)"
[ -e idle.out ] && fail "left idle.out behind"
note "$(cat idle.err)"
echo PASS
