#!/bin/bash
# causeway place end to end on simulated fleets: the plan fits every host,
# cuts the cross-host bytes the graph measured, agrees with its own
# JSON; the Kubernetes and AppGroup YAML parse and carry their fields; the
# SAC'20 Q1 pattern, placed badly on purpose, is fixed by moving workers to
# their data; bad input gives one line and a non-zero exit.
. "$(dirname "$0")/lib.sh"
cd "$T_TMP"
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed"

"$CW" simulate -H 8 -c 20 -p 4 -o f.jsonl --units-out u.csv \
	--hosts-out h.csv || fail "simulate failed"
"$CW" graph --by container --format json -o g.json f.jsonl || fail "graph failed"
"$CW" place -H h.csv -U u.csv --method all --time-limit 5 --format json \
	-o plan.json g.json || fail "place failed"

# Check each plan against the inputs: loads per host within capacity less
# 10% headroom, and the cross-host bytes recomputed from the graph edges.
python3 - <<'PY' || fail "plans do not check out"
import csv, json, sys
plans = json.load(open("plan.json"))["plans"]
hosts = {r["host"]: float(r["cpu"]) for r in csv.DictReader(open("h.csv"))}
g = json.load(open("g.json"))
units = {r["unit"]: r for r in csv.DictReader(open("u.csv"))}
assert {p["method"] for p in plans} == {"ga", "partition", "ilp"}, plans
for p in plans:
    to = {u["unit"]: u["to"] for u in p["units"]}
    load = {}
    for u in p["units"]:
        load[u["to"]] = load.get(u["to"], 0) + float(units[u["unit"]]["cpu"])
    for h, c in load.items():
        assert c <= hosts[h] * 0.9 + 1e-6, (p["method"], h, c)
    def unit(n):
        if n["kind"] != "process": return None
        return n["container"] or n["host"] + " (no container)"
    name = {n["id"]: unit(n) for n in g["nodes"]}
    cross = now = 0
    for e in g["edges"]:
        a, b = name[e["client"]], name[e["server"]]
        if a is None or b is None or a == b: continue
        by = e["bytes_c2s"] + e["bytes_s2c"]
        cross += by if to[a] != to[b] else 0
        now += by if units[a]["host"] != units[b]["host"] else 0
    assert cross == p["cross_bytes"], (p["method"], cross, p["cross_bytes"])
    assert now == p["cross_bytes_now"], (now, p["cross_bytes_now"])
    assert p["cross_bytes"] < p["cross_bytes_now"], p["method"]
    assert p["hosts_used"] <= 8
    print("--", p["method"], p["hosts_used"], "hosts", cross, "bytes, now", now)
PY

# The YAML outputs parse and carry the fields Kubernetes reads.
"$CW" place -H h.csv -U u.csv --unit workload --format k8s -o k8s.yaml g.json ||
	fail "place --format k8s failed"
"$CW" place -H h.csv -U u.csv --unit workload --format appgroup -o ag.yaml \
	g.json || fail "place --format appgroup failed"
python3 - <<'PY' || fail "YAML does not check out"
import yaml
docs = [d for d in yaml.safe_load_all(open("k8s.yaml")) if d]
assert docs, "no documents"
for d in docs:
    assert d["kind"] in ("Deployment", "StatefulSet"), d["kind"]
    assert d["apiVersion"] == "apps/v1"
    aff = d["spec"]["template"]["spec"]["affinity"]
    term = aff["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    e = term["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert e["key"] == "kubernetes.io/hostname" and e["operator"] == "In"
    assert e["values"][0].startswith("host-")
    for w in aff.get("podAffinity", {}).get(
            "preferredDuringSchedulingIgnoredDuringExecution", []):
        assert 1 <= w["weight"] <= 100
        assert w["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
ag = yaml.safe_load(open("ag.yaml"))
assert ag["apiVersion"] == "appgroup.diktyo.x-k8s.io/v1alpha1"
assert ag["kind"] == "AppGroup"
s = ag["spec"]
assert s["numMembers"] == len(s["workloads"]) == len(docs), s["numMembers"]
assert s["topologySortingAlgorithm"] == "KahnSort"
deps = 0
for w in s["workloads"]:
    wl = w["workload"]
    assert set(wl) == {"kind", "name", "selector", "apiVersion", "namespace"}, wl
    for d in w["dependencies"]:
        deps += 1
        assert set(d["workload"]) == set(wl)
        assert str(d["minBandwidth"])[0].isdigit()
        assert 1 <= d["maxNetworkCost"] <= 100
assert deps > 0
print("--", len(docs), "workloads,", deps, "dependencies")
PY

# Q1: every worker reads mostly from the next host's storage server.  The
# plan brings workers to their data: most bytes stay local afterwards.
"$CW" simulate -H 4 -c 3 -p 3 --pattern q1 -o q1.jsonl --units-out qu.csv \
	--hosts-out qh.csv || fail "simulate --pattern q1 failed"
"$CW" graph --by container --format json -o q1.json q1.jsonl || fail "graph q1"
for m in partition ilp ga; do
	"$CW" place -H qh.csv -U qu.csv --hosts fixed --method $m --format json \
		-o q1.$m.json q1.json || fail "place q1 $m failed"
done
python3 - <<'PY' || fail "Q1 plans"
import json
r = {m: json.load(open("q1.%s.json" % m))["plans"][0] for m in ("partition", "ilp", "ga")}
now = r["ilp"]["cross_bytes_now"]
assert r["ilp"]["optimal"], "ilp not proved optimal"
opt = r["ilp"]["cross_bytes"]
assert opt < now * 0.35, (opt, now)
assert r["partition"]["cross_bytes"] <= opt * 1.05, (r["partition"]["cross_bytes"], opt)
print("-- q1 bytes now", now, "ilp", opt, "partition", r["partition"]["cross_bytes"],
      "ga", r["ga"]["cross_bytes"])
PY

# --max-moves: at most that many moves, each with its gain, summing up.
# --max-hosts below the hosts whose units cannot move (simulate's
# "HOST (no container)" units, one a host) is said, not silently raised.
"$CW" place -H h.csv -U u.csv --max-hosts 1 -o mh.txt g.json 2>stderr ||
	fail "place --max-hosts 1 failed: $(cat stderr)"
grep -q "warning: the host limit (1) is below the [0-9]* hosts that hold units which cannot move" stderr ||
	fail "--max-hosts 1 raised without a word: $(cat stderr)"
"$CW" place -H h.csv -U u.csv --max-moves 2 --format json -o mm.json g.json ||
	fail "place --max-moves failed"
python3 - <<'PY' || fail "max moves"
import json
p = json.load(open("mm.json"))["plans"][0]
assert 1 <= len(p["moves"]) <= 2, p["moves"]
assert all(m["gain"] > 0 for m in p["moves"])
assert p["cross_bytes_now"] - p["cross_bytes"] == sum(m["gain"] for m in p["moves"])
PY

# Bad input: one line each, non-zero exit, no output file.
expect() {
	local rc=$1 pat=$2 got
	shift 2
	rm -f out.txt
	"$@" >stdout 2>stderr
	got=$?
	[ $got -eq "$rc" ] || fail "$*: exit $got, want $rc: $(cat stderr)"
	[ "$(wc -l <stderr)" -eq 1 ] || fail "$*: want one line, got: $(cat stderr)"
	grep -q "^causeway: error: $pat" stderr || fail "$*: got '$(cat stderr)', want '$pat'"
	[ -e out.txt ] && fail "$*: left out.txt behind"
	note "$(cat stderr)"
}
grep -v host-00003 h.csv >h_missing.csv
expect 1 "unknown host 'host-00003': unit '.*' runs there but hosts file 'h_missing.csv' does not list it" \
	"$CW" place -H h_missing.csv -U u.csv -o out.txt g.json
awk -F, 'NR==2{$2="40"} 1' OFS=, u.csv >u_big.csv
expect 1 "unit '.*' fits no host: it needs 40.00 cpu" \
	"$CW" place -H h.csv -U u_big.csv -o out.txt g.json
echo '{"nodes":[],"edges":[]}' >empty.json
expect 1 "graph 'empty.json' is empty" "$CW" place -H h.csv -U u.csv -o out.txt empty.json
printf 'host,cpu\nn1,4\n' >h_bad.csv
expect 1 "hosts file 'h_bad.csv': line 1: no 'memory' column" \
	"$CW" place -H h_bad.csv -U u.csv -o out.txt g.json
printf 'host,cpu,memory\nhost-00000,four,1G\n' >h_bad2.csv
expect 1 "hosts file 'h_bad2.csv': line 2: 'host-00000': bad cpu 'four'" \
	"$CW" place -H h_bad2.csv -U u.csv -o out.txt g.json
expect 2 "--method 'best'" "$CW" place -H h.csv -U u.csv --method best g.json
expect 2 "--hosts 'some': want fewest, consolidate or fixed" \
	"$CW" place -H h.csv -U u.csv --hosts some g.json
expect 2 "no input: give a GRAPH.json" "$CW" place -H h.csv -U u.csv
expect 2 "--kafka reads the topics" "$CW" place --kafka 127.0.0.1:1 g.json
expect 2 "--since is not before --until" "$CW" place --since 2000000000 \
	--until 1900000000 g.json
expect 2 "'g.json' is not a record file" "$CW" place f.jsonl g.json

# Without the files: hosts from the agents' HostMeta and units from the
# measured nodes, which a simulated graph does not have.
expect 1 "no hosts file (-H) and graph 'g.json' has no host capacities" \
	"$CW" place -U u.csv -o out.txt g.json
expect 1 "graph 'g.json' has no CPU or memory per node" \
	"$CW" place -H h.csv -o out.txt g.json

# The records route: the same plan as from their graph; its bad inputs.
"$CW" place -H h.csv -U u.csv --format json -o rec.json f.jsonl ||
	fail "place from records failed"
"$CW" place -H h.csv -U u.csv --format json -o gra.json g.json ||
	fail "place from the graph failed"
python3 - <<'PY2' || fail "records and graph plans differ"
import json
a, b = (json.load(open(f))["plans"][0] for f in ("rec.json", "gra.json"))
assert a["cross_bytes_now"] == b["cross_bytes_now"], (a["cross_bytes_now"], b["cross_bytes_now"])
assert a["cross_bytes"] == b["cross_bytes"] and a["units"] == b["units"]
print("-- records and graph: the same plan, cross-host bytes", a["cross_bytes"])
PY2
: >empty.jsonl
expect 1 "the graph of 'empty.jsonl' is empty" \
	"$CW" place -H h.csv -U u.csv -o out.txt empty.jsonl
expect 1 "the graph of 'f.jsonl': none of the .* connection records falls in the time range" \
	"$CW" place -H h.csv -U u.csv --until 1000000000 -o out.txt f.jsonl
expect 1 "unknown host 'host-00003': unit '.*' runs there but hosts file 'h_missing.csv' does not list it" \
	"$CW" place -H h_missing.csv -U u.csv -o out.txt f.jsonl
echo PASS
