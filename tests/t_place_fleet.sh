#!/bin/bash
# causeway place on a live fleet, placed badly on purpose and fixed by its
# plan.  Four test hosts on one switch, one agent each (the embedded broker
# in the first), run a small stack of "containers": processes in cgroups
# laid out as containerd's Kubernetes containers (systemd driver:
# kubepods.slice/...-pod<uid>.slice/cri-containerd-<id>.scope, in the v1
# cpu, cpuacct and memory hierarchies and the v2 one), each holding 64 MiB.
# The load is the SAC'20 paper's two patterns: Q1, workers scanning from
# storage servers; Q2, workers shuffling among themselves; plus one process
# outside containers, which must stay where it is.  Hosts hold 200 MiB, so
# two containers each at most (10% headroom).
#
# Phase 1 runs the load as placed; 'causeway place --kafka --until T' plans
# from what the agents measured (units, CPU and memory from the agents,
# placement as observed).  The test applies the plan: every unit is
# restarted on its new host (same container id and cgroup, as a pod
# rescheduled).  Phase 2 runs the same load; 'causeway place --kafka
# --since T' measures it.  The drop in cross-host bytes, as causeway
# measures it and as the hosts' veth counters count it, is the drop the
# plan predicted (within 10%), and no host holds more CPU or memory than
# its capacity less headroom, as the agents measured them.  The AppGroup
# and Kubernetes YAML of the live plan parse.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 ip
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed"

MB=1000000
MIB=$((1 << 20))
HOST_MEM=$((200 * MIB))

# ---- cgroups as containerd lays out Kubernetes containers --------------
# v1 cpu and cpuacct at their roots, v1 memory under this shell's own
# memory cgroup (its limits stay in force), v2 at the unified root.
MEM_BASE=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
CG_BASES=()
for b in /sys/fs/cgroup/cpu /sys/fs/cgroup/cpuacct "$MEM_BASE" \
	/sys/fs/cgroup/unified; do
	[ -w "$b" ] && [ -e "$b/cgroup.procs" ] && CG_BASES+=("$b")
done
[ ${#CG_BASES[@]} -eq 4 ] ||
	skip "needs cgroup hierarchies cpu, cpuacct, memory (v1) and unified (v2)"
SLICE="$T_PREFIX-kubepods.slice"

cg_cleanup() {
	local b d
	for b in "${CG_BASES[@]}"; do
		[ -d "$b/$SLICE" ] || continue
		find "$b/$SLICE" -name cgroup.procs -exec cat {} + 2>/dev/null |
			xargs -r kill -9 2>/dev/null
		sleep 0.1
		find "$b/$SLICE" -depth -type d | while read -r d; do
			rmdir "$d" 2>/dev/null
		done
	done
}
on_exit cg_cleanup

# Each unit: a pod uid, a container id, its cgroup folder (relative).
declare -A CID CGDIR PORT HOST_OF
UNITS=(s1 s2 w1 w2 x1 x2 x3)
i=0
for u in "${UNITS[@]}"; do
	i=$((i + 1))
	CID[$u]=$(printf 'cw%s-%s' "$$" "$u" | sha256sum | cut -c1-64)
	uid=$(python3 -c 'import uuid; print(uuid.uuid4())')
	CGDIR[$u]="$SLICE/kubepods-besteffort.slice/kubepods-besteffort-pod${uid//-/_}.slice/cri-containerd-${CID[$u]}.scope"
	PORT[$u]=$((7000 + i))
	for b in "${CG_BASES[@]}"; do
		mkdir -p "$b/${CGDIR[$u]}" || fail "unable to make cgroup $b/${CGDIR[$u]}"
	done
done

# ---- hosts, agents ------------------------------------------------------
declare -A NS IP
H=(node-a node-b node-c node-d)
i=20
for h in "${H[@]}"; do
	i=$((i + 1))
	NS[$h]=$(ns_create "${h#node-}")
	IP[$h]=10.77.0.$i
	switch_attach "${NS[$h]}" "${IP[$h]}"
done

fleet_agent "$T_TMP" "${NS[node-a]}" node-a --kafka embedded
BOOT=$(sed -n 's/.*embedded broker at //p' "$T_TMP/agent-node-a.log")
[ -n "$BOOT" ] || fail "no embedded broker address"
for h in node-b node-c node-d; do
	fleet_agent "$T_TMP" "${NS[$h]}" "$h" --kafka "$BOOT"
done

{
	echo "host,cpu,memory"
	for h in "${H[@]}"; do echo "$h,2,$HOST_MEM"; done
} >"$T_TMP/hosts.csv"

# ---- the stack ----------------------------------------------------------
# Q1: w1 scans 12 MB from s1 and 2 MB from s2, w2 the reverse.  Q2: x1, x2,
# x3 each push 4 MB to each other.  mon (outside containers, node-d) reads
# 1 MB from x3.
declare -A WORK=(
	[s1]="" [s2]=""
	[w1]="s1:0:$((12 * MB)) s2:0:$((2 * MB))"
	[w2]="s2:0:$((12 * MB)) s1:0:$((2 * MB))"
	[x1]="x2:$((4 * MB)):0 x3:$((4 * MB)):0"
	[x2]="x1:$((4 * MB)):0 x3:$((4 * MB)):0"
	[x3]="x1:$((4 * MB)):0 x2:$((4 * MB)):0"
	[mon]="x3:0:$MB"
)
PORT[mon]=7100
declare -A PID GROUP=([s1]=q1 [s2]=q1 [w1]=q1 [w2]=q1 [x1]=q2 [x2]=q2
	[x3]=q2 [mon]=q2)

write_map() {
	local u
	for u in "${UNITS[@]}" mon; do
		echo "$u ${IP[${HOST_OF[$u]}]} ${PORT[$u]}"
	done >"$T_TMP/map"
}

unit_start() {	# UNIT PHASE: in its cgroups (none for mon) on HOST_OF
	local u=$1 phase=$2 dirs="" b
	if [ "$u" != mon ]; then
		for b in "${CG_BASES[@]}"; do dirs+=" $b/${CGDIR[$u]}"; done
	fi
	# Into the cgroups first: 'ip netns exec' mounts a sysfs of its own,
	# with no cgroup hierarchies under it.  The pid stays through execs.
	# shellcheck disable=SC2086
	sh -c 'for d in '"$dirs"'; do echo $$ >"$d/cgroup.procs" || exit 1; done
		exec "$@"' unit ip netns exec "${NS[${HOST_OF[$u]}]}" \
		python3 "$CW_ROOT/tests/lib/place_unit.py" \
		--port "${PORT[$u]}" --mem "$([ "$u" = mon ] && echo 0 || echo 64)" \
		--map "$T_TMP/map" --go "$T_TMP/go-$phase-${GROUP[$u]}" \
		--done "$T_TMP/done-$u-$phase" ${WORK[$u]} \
		2>"$T_TMP/unit-$u-$phase.log" &
	PID[$u]=$!
	bg_pid $!
}

veth_tx() {	# bytes sent by all test hosts on their veths
	local h sum=0 n
	for h in "${H[@]}"; do
		n=$(ip netns exec "${NS[$h]}" sh -c \
			'cat /sys/class/net/v*/statistics/tx_bytes' | awk '{s += $1} END {print s}')
		sum=$((sum + n))
	done
	echo $sum
}

run_phase() {	# PHASE: start every unit, wait until listening, go, wait
	local p=$1 u
	write_map
	for u in "${UNITS[@]}" mon; do unit_start "$u" "$p"; done
	for u in "${UNITS[@]}" mon; do
		kill -0 "${PID[$u]}" 2>/dev/null ||
			fail "$u exited: $(cat "$T_TMP/unit-$u-$p.log")"
		wait_port "${NS[${HOST_OF[$u]}]}" "${PORT[$u]}"
	done
	for u in "${UNITS[@]}"; do
		grep -q "${CID[$u]}" "/proc/${PID[$u]}/cgroup" ||
			fail "$u is not in its cgroup: $(cat "/proc/${PID[$u]}/cgroup")"
	done
	sleep 1	# the agents see every process's metadata at least twice
	# Q1, then Q2: apart in time, so each can be placed alone (bench).
	T_START=$(date +%s.%N)
	go_wait "$p" q1
	T_Q1=$(date +%s.%N)
	sleep 1
	go_wait "$p" q2
}

go_wait() {	# PHASE GROUP: start the group's transfers, wait for them
	local u
	touch "$T_TMP/go-$1-$2"
	for u in "${UNITS[@]}" mon; do
		[ "${GROUP[$u]}" = "$2" ] && wait_file "$T_TMP/done-$u-$1" 30
	done
	sleep 1.5	# final counts published (interval 300ms)
}

stop_units() {
	local u
	for u in "${UNITS[@]}" mon; do
		kill "${PID[$u]}" 2>/dev/null
		wait "${PID[$u]}" 2>/dev/null
	done
}

# Placed badly: storage together, each worker away from its data, the
# shufflers spread.
HOST_OF=([s1]=node-a [s2]=node-a [w1]=node-b [x1]=node-b [w2]=node-c
	[x2]=node-c [x3]=node-d [mon]=node-d)
tx0=$(veth_tx)
run_phase 1
tx1=$(veth_tx)
stop_units
sleep 1
TMID=$(date +%s.%N)
sleep 1

# Bounded: a hung read fails the test instead of holding it.
PLACE=(timeout 120 "$CW" place --kafka "$BOOT" --idle 8s)
T1_START=$T_START T1_Q1=$T_Q1
"${PLACE[@]}" --until "$TMID" -H "$T_TMP/hosts.csv" --method all \
	--time-limit 20 --format json -o "$T_TMP/plan.json" \
	2>"$T_TMP/plan.log" || fail "place failed: $(cat "$T_TMP/plan.log")"
grep -q "no CPU or memory per node" "$T_TMP/plan.log" &&
	skip "the agents publish no per-process CPU and memory"

# Units by container id: back to our names; the plan's hosts.
python3 - "$T_TMP/plan.json" "$T_TMP/applied" \
	$(for u in "${UNITS[@]}"; do echo "$u=${CID[$u]}"; done) <<'PY' ||
import json, sys
plan_path, out = sys.argv[1], sys.argv[2]
cid = dict(a.split("=", 1) for a in sys.argv[3:])
name = {v: k for k, v in cid.items()}
doc = json.load(open(plan_path))
best = [p for p in doc["plans"] if p["method"] == doc.get("chosen", p["method"])][0]
seen = set()
with open(out, "w") as f:
    for u in best["units"]:
        if u["unit"] in name:
            f.write("%s %s %s\n" % (name[u["unit"]], u["from"], u["to"]))
            seen.add(name[u["unit"]])
        else:
            assert u["unit"] == "node-d (no container)", u["unit"]
            assert not u["movable"] and u["to"] == "node-d", u
    print("-- plan (%s): %d hosts, cross-host bytes %d, now %d" % (
        best["method"], best["hosts_used"], best["cross_bytes"],
        best["cross_bytes_now"]))
assert seen == set(cid), (seen, set(cid))
PY
	fail "the plan does not name every unit"
while read -r u from to; do
	[ "$from" = "${HOST_OF[$u]}" ] ||
		fail "$u observed on $from, but it ran on ${HOST_OF[$u]}"
	HOST_OF[$u]=$to
done <"$T_TMP/applied"
note "applied: $(awk '$2 != $3 {printf "%s %s->%s  ", $1, $2, $3}' "$T_TMP/applied")"

run_phase 2
tx2=$(veth_tx)
"${PLACE[@]}" --since "$TMID" -H "$T_TMP/hosts.csv" --hosts fixed \
	--format json -o "$T_TMP/after.json" 2>"$T_TMP/after.log" ||
	fail "place (after) failed: $(cat "$T_TMP/after.log")"

# The drops, the capacities.
if ! python3 - "$T_TMP/plan.json" "$T_TMP/after.json" "$((tx1 - tx0))" \
	"$((tx2 - tx1))" "$HOST_MEM" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
best = [p for p in plan["plans"] if p["method"] == plan.get("chosen", p["method"])][0]
after = json.load(open(sys.argv[2]))["plans"][0]
wire1, wire2, host_mem = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
predicted = best["cross_bytes_now"] - best["cross_bytes"]
measured = best["cross_bytes_now"] - after["cross_bytes_now"]
wire = wire1 - wire2
print("-- cross-host bytes: before %d, planned %d, after %d" % (
    best["cross_bytes_now"], best["cross_bytes"], after["cross_bytes_now"]))
print("-- drop predicted %d, measured by causeway %d (%+.2f%%), on the veths "
      "%d (%d -> %d, %+.2f%%)" % (predicted, measured,
      100.0 * (measured - predicted) / predicted, wire, wire1, wire2,
      100.0 * (wire - predicted) / predicted))
assert predicted > 0.5 * best["cross_bytes_now"], "the plan saves little"
assert abs(measured - predicted) <= 0.1 * predicted, "causeway's drop"
assert abs(wire - predicted) <= 0.1 * predicted, "the veths' drop"
# What the agents measured after the moves, per host, against capacity
# less the 10% headroom.
load = {}
for u in after["units"]:
    c, m = load.get(u["from"], (0.0, 0))
    load[u["from"]] = (c + u["cpu"], m + u["memory"])
    assert u["memory"] > 0, u
for h, (c, m) in sorted(load.items()):
    print("-- %s: cpu %.3f of 1.8, memory %.1f MiB of %.1f" % (
        h, c, m / 2**20, 0.9 * host_mem / 2**20))
    assert c <= 1.8 and m <= 0.9 * host_mem, (h, c, m)
assert after["fits"]
import os
if os.environ.get("PLACE_FLEET_BENCH"):
    with open(os.environ["PLACE_FLEET_BENCH"], "a") as f:
        f.write(json.dumps({"instance": "applied", "method": best["method"],
            "now": best["cross_bytes_now"], "planned": best["cross_bytes"],
            "after": after["cross_bytes_now"], "wire_before": wire1,
            "wire_after": wire2, "moves": len(best["moves"])}) + "\n")
PY
then
	# Was the plan's read of Kafka short, or did a record never come?
	"${PLACE[@]}" --until "$TMID" -H "$T_TMP/hosts.csv" --format json \
		-o "$T_TMP/again.json" 2>/dev/null &&
		note "read again: cross-host bytes before $(python3 -c 'import json,sys
print(json.load(open(sys.argv[1]))["plans"][0]["cross_bytes_now"])' "$T_TMP/again.json")"
	fail "the plan did not do what it said"
fi

# Hosts and capacities from the agents' own metadata when no file is given.
"${PLACE[@]}" --until "$TMID" --format json -o "$T_TMP/meta.json" \
	2>"$T_TMP/meta.log" || fail "place without -H failed: $(cat "$T_TMP/meta.log")"
python3 - "$T_TMP/meta.json" "$(nproc)" <<'PY' || fail "hosts from HostMeta"
import json, sys
p = json.load(open(sys.argv[1]))["plans"][0]
hosts = {u["from"] for u in p["units"]} | {u["to"] for u in p["units"]}
assert hosts <= {"node-a", "node-b", "node-c", "node-d"}, hosts
assert p["hosts"] == 4, p["hosts"]
print("-- from HostMeta: %d hosts, plan uses %d" % (p["hosts"], p["hosts_used"]))
PY

# The live plan as an AppGroup and as Kubernetes affinities: YAML that
# parses, with the fields the scheduler reads.
"${PLACE[@]}" --until "$TMID" -H "$T_TMP/hosts.csv" --unit pod \
	--format appgroup -o "$T_TMP/ag.yaml" 2>"$T_TMP/ag.log" ||
	fail "place --format appgroup failed: $(cat "$T_TMP/ag.log")"
"${PLACE[@]}" --until "$TMID" -H "$T_TMP/hosts.csv" --unit pod \
	--format k8s -o "$T_TMP/k8s.yaml" 2>"$T_TMP/k8s.log" ||
	fail "place --format k8s failed: $(cat "$T_TMP/k8s.log")"
python3 - "$T_TMP/ag.yaml" "$T_TMP/k8s.yaml" <<'PY' || fail "the YAML"
import sys, yaml
ag = yaml.safe_load(open(sys.argv[1]))
assert ag["apiVersion"] == "appgroup.diktyo.x-k8s.io/v1alpha1", ag["apiVersion"]
s = ag["spec"]
assert s["numMembers"] == len(s["workloads"]) == 7, s["numMembers"]
deps = [d for w in s["workloads"] for d in w["dependencies"]]
assert len(deps) >= 7, deps
for d in deps:
    assert str(d["minBandwidth"])[0].isdigit() and 1 <= d["maxNetworkCost"] <= 100
docs = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
assert len(docs) == 7, len(docs)
print("-- appgroup: %d workloads, %d dependencies; k8s: %d documents" % (
    len(s["workloads"]), len(deps), len(docs)))
PY

# Bad input through Kafka: one line each, exit 1, nothing written.
expect() {	# PATTERN PLACE-ARGS...
	local pat=$1 got
	shift
	"${PLACE[@]}" --until "$TMID" "$@" -o "$T_TMP/bad.out" >/dev/null \
		2>"$T_TMP/bad.err"
	got=$?
	[ $got -eq 1 ] || fail "place $*: exit $got, want 1: $(cat "$T_TMP/bad.err")"
	[ "$(wc -l <"$T_TMP/bad.err")" -eq 1 ] ||
		fail "place $*: want one line, got: $(cat "$T_TMP/bad.err")"
	grep -q "^causeway: error: $pat" "$T_TMP/bad.err" ||
		fail "place $*: got '$(cat "$T_TMP/bad.err")', want '$pat'"
	[ -e "$T_TMP/bad.out" ] && fail "place $*: left its output behind"
	note "$(cat "$T_TMP/bad.err")"
}
grep -v node-d "$T_TMP/hosts.csv" >"$T_TMP/hosts-abc.csv"
expect "unknown host 'node-d': unit '.*' runs there but hosts file" \
	-H "$T_TMP/hosts-abc.csv"
{
	echo "host,cpu,memory"
	for h in "${H[@]}"; do echo "$h,2,50Mi"; done
} >"$T_TMP/hosts-small.csv"
expect "unit '[0-9a-f]*' fits no host: it needs .* bytes of memory" \
	-H "$T_TMP/hosts-small.csv"
expect "no connection records on 'nothing.conns'" --topic-prefix nothing \
	-H "$T_TMP/hosts.csv"

# Bench (bench/bench_place_live.sh): each pattern alone and both, by each
# method, from what phase 1 measured.
if [ -n "${PLACE_FLEET_BENCH:-}" ]; then
	for r in "q1 $T1_START $T1_Q1" "q2 $T1_Q1 $TMID" "q1+q2 $T1_START $TMID"; do
		set -- $r
		"${PLACE[@]}" --since "$2" --until "$3" -H "$T_TMP/hosts.csv" \
			--method all --time-limit 60 --format json \
			-o "$T_TMP/bench-$1.json" ||
			fail "place (bench $1) failed"
		python3 -c 'import json, sys
d = json.load(open(sys.argv[2])); d["instance"] = sys.argv[1]
print(json.dumps(d))' "$1" "$T_TMP/bench-$1.json" >>"$PLACE_FLEET_BENCH"
	done
fi

stop_units
echo ok
