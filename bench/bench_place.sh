#!/bin/bash
# bench_place: placement quality and scale.  Instances from `causeway
# simulate` (the tiered fleet with --units-out/--hosts-out, and the SAC'20
# paper's Q1 and Q2 patterns) go through `causeway graph --by container`
# and `causeway place --method all`: hosts used and cross-host bytes of the
# genetic algorithm (the paper's baseline), our partitioning, and the GLPK
# integer program (60 s per phase) where it is run; also ours limited to the
# GA's host count (--max-hosts, --hosts fixed), the like-for-like
# comparison.  Scale: ~10,000 containers on 1,000 hosts, planned on one core
# (taskset -c 0).  Prints one markdown section on stdout; asserts nothing.
#
#   bench/bench_place.sh
#   BENCH_PLACE_ILP_LIMIT=10 bench/bench_place.sh   a quicker run
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CW=${CW:-$PWD/$BUILD/causeway}
LIMIT=${BENCH_PLACE_ILP_LIMIT:-60}
# On the middle instances GLPK rarely proves the optimum: a shorter limit
# keeps the run within a few minutes.
MLIMIT=${BENCH_PLACE_ILP_MIDDLE_LIMIT:-20}
T=$(mktemp -d /tmp/causeway-bench-place.XXXXXX)
trap 'rm -rf "$T"' EXIT

# instance NAME SIMULATE-ARGS...: records, graph, units and hosts in $T/NAME.*
instance() {
	local n=$1
	shift
	"$CW" simulate "$@" -o "$T/$n.cww" --units-out "$T/$n.units.csv" \
		--hosts-out "$T/$n.hosts.csv" >&2
	"$CW" graph --by container --format json --window 0 -o "$T/$n.json" \
		"$T/$n.cww" >&2
}

# field FILE METHOD KEY: a value of one method's plan
field() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
p = [p for p in d["plans"] if p["method"] == sys.argv[2]]
print(p[0][sys.argv[3]] if p else "-")' "$1" "$2" "$3"
}

# quality NAME ILP(yes/no) SIMULATE-ARGS...: one table row
quality() {
	local n=$1 ilp=$2 m=ga,partition f
	shift 2
	instance "$n" "$@"
	f=$T/$n.plan.json
	if [ "$ilp" != no ]; then
		"$CW" place -H "$T/$n.hosts.csv" -U "$T/$n.units.csv" --method all \
			--time-limit "$([ "$ilp" = yes ] && echo "$LIMIT" || echo "$MLIMIT")" \
			--format json -o "$f" "$T/$n.json" >&2
	else
		"$CW" place -H "$T/$n.hosts.csv" -U "$T/$n.units.csv" --method ga \
			--format json -o "$T/$n.ga.json" "$T/$n.json" >&2
		"$CW" place -H "$T/$n.hosts.csv" -U "$T/$n.units.csv" \
			--method partition --format json -o "$T/$n.p.json" \
			"$T/$n.json" >&2
		python3 -c 'import json,sys
a = json.load(open(sys.argv[1]))["plans"] + json.load(open(sys.argv[2]))["plans"]
json.dump({"plans": a}, open(sys.argv[3], "w"))' "$T/$n.ga.json" "$T/$n.p.json" "$f"
	fi
	local gah units
	gah=$(field "$f" ga hosts_used)
	"$CW" place -H "$T/$n.hosts.csv" -U "$T/$n.units.csv" --method partition \
		--hosts fixed --max-hosts "$gah" --format json -o "$T/$n.atga.json" \
		"$T/$n.json" >&2
	units=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["plans"][0]["units"]))' "$f")
	python3 - "$f" "$T/$n.atga.json" "$n" "$units" "$*" <<'PY'
import json, sys
plans = {p["method"]: p for p in json.load(open(sys.argv[1]))["plans"]}
atga = json.load(open(sys.argv[2]))["plans"][0]
g, o, i = plans["ga"], plans["partition"], plans.get("ilp")
def hb(p): return "%d / %d" % (p["hosts_used"], p["cross_bytes"])
ilp = "-"
vs = "-"
if i:
    ilp = hb(i) + (" (optimal, %.1f s)" % i["seconds"] if i["optimal"]
                   else " (not proved in %.0f s)" % i["seconds"])
    if i["hosts_used"] == o["hosts_used"]:
        vs = "%+.1f%%" % (100.0 * (o["cross_bytes"] - i["cross_bytes"]) / max(i["cross_bytes"], 1))
    else:
        vs = "hosts %d vs %d" % (o["hosts_used"], i["hosts_used"])
print("| %s | %s | %d / %d | %s (%.2f s) | %s (%.3f s) | %d | %s | %s |" % (
    sys.argv[3], sys.argv[4], g["hosts_used_now"], g["cross_bytes_now"],
    hb(g), g["seconds"], hb(o), o["seconds"], atga["cross_bytes"], ilp, vs))
PY
}

# scale NAME SIMULATE-ARGS...: one row, planned on one core
scale() {
	local n=$1 t0 t1
	shift
	instance "$n" "$@"
	t0=$(date +%s.%N)
	taskset -c 0 "$CW" place -H "$T/$n.hosts.csv" -U "$T/$n.units.csv" \
		--format json -o "$T/$n.plan.json" "$T/$n.json" >&2
	t1=$(date +%s.%N)
	python3 - "$T/$n.plan.json" "$n" "$t0" "$t1" "$*" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["plans"][0]
mv = sum(1 for u in p["units"] if u["movable"])
print("| %s | %d (%d movable) | %d | %d -> %d | %d -> %d | %.2f s | %.2f s |" % (
    sys.argv[2], len(p["units"]), mv, p["hosts"], p["hosts_used_now"],
    p["hosts_used"], p["cross_bytes_now"], p["cross_bytes"], p["seconds"],
    float(sys.argv[4]) - float(sys.argv[3])))
PY
}

echo "<!-- bench_place -->"
echo "## Placement"
echo
echo "Made by \`bench/run.sh bench_place\` on $(uname -r), $(nproc) cores."
echo "Each instance: \`causeway simulate ARGS --units-out U --hosts-out H\`,"
echo "\`causeway graph --by container --format json\`, then \`causeway place"
echo "-H H -U U --method all --time-limit $LIMIT --format json\` (GLPK limit"
echo "$MLIMIT s per phase on the 18- and 30-unit instances; headroom"
echo "10%; hosts 3 cpu and 8 GiB per simulated process).  Cells are hosts"
echo "used / cross-host bytes; \"ours @GA hosts\" is our method on the GA's"
echo "host count (\`--hosts fixed --max-hosts K\`); \"ours vs ILP\" is our"
echo "bytes over the optimum's at the same host count.  Units outside"
echo "containers are pinned to their host."
echo
echo "| instance | units | now | GA (paper) | ours (partition) | ours @GA hosts | GLPK | ours vs ILP |"
echo "|---|---|---|---|---|---|---|---|"
quality "tiers-4x3" yes -H 4 -c 10 -p 3 -s 1
quality "tiers-5x3" yes -H 5 -c 10 -p 3 -s 2
quality "tiers-6x3" yes -H 6 -c 10 -p 3 -s 3
quality "q1-4x3" yes -H 4 -c 3 -p 3 --pattern q1
quality "q2-4x3" yes -H 4 -c 3 -p 3 --pattern q2
quality "q1-6x3" middle -H 6 -c 3 -p 3 --pattern q1
quality "q2-6x3" middle -H 6 -c 3 -p 3 --pattern q2
quality "tiers-8x4" middle -H 8 -c 20 -p 4 -s 1
quality "tiers-100x6" no -H 100 -c 20 -p 6
quality "q1-100x5" no -H 100 -c 3 -p 5 --pattern q1
quality "q2-100x5" no -H 100 -c 3 -p 5 --pattern q2
echo
echo "Scale: our method alone, pinned to one core (\`taskset -c 0\`); plan"
echo "is the method's CPU time, whole is the command's wall time (reading"
echo "the graph JSON and CSVs, checking, planning, scoring, writing JSON)."
echo
echo "| instance | units | hosts | hosts now -> plan | cross-host bytes now -> plan | plan | whole |"
echo "|---|---|---|---|---|---|---|"
scale "tiers-1000x15" -H 1000 -c 20 -p 15
scale "q1-1000x10" -H 1000 -c 2 -p 10 --pattern q1
scale "q2-1000x10" -H 1000 -c 2 -p 10 --pattern q2
echo "<!-- /bench_place -->"
