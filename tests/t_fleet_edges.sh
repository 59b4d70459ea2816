#!/bin/bash
# One fleet graph across correlator members: real agents on four test
# hosts (load -> nginx -> app -> redis) publish to the embedded broker;
# two correlators of one group share the partitions and write their time
# buckets to causeway.edges, while a single correlator of another group
# reads the same stream alone.  `causeway graph --kafka --group` of the
# two-member group must equal that of the single run (the members' buckets
# merged: per bucket and input partition the whole set of the highest
# offset), the edges must carry the kernel's byte counts (ss -ti), and the
# member that stops last must have written that fleet graph to its -o
# folder, not the graph of its own partitions.  One member is killed
# mid-run: the other restores its partitions and writes their buckets
# again, and the merged graph still counts everything once.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nginx redis-server python3

three_tier

# One agent per host, a broker of their own: the agents are stopped
# before the single correlator starts, so that every member reads the same
# whole stream (connections that linger on would otherwise close while one
# correlator still reads and another has stopped).
broker_start
note "broker at $BOOT"
AGENTS=()
for h in load:$LOAD web:$WEB app:$APP db:$DB; do
	fleet_agent "$T_TMP" "${h#*:}" "${h%%:*}" --kafka "$BOOT"
	AGENTS+=("$FLEET_AGENT_PID:$T_TMP/agent-${h%%:*}.log")
done
printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' \
	>"$T_TMP/kafka.properties"

# correlate NAME GROUP: a member in the background, pid in $LAST; 1 s
# buckets sealed 3 s late, so buckets are sealed during the 7 s load.  Not
# sooner: an end whose partner's first record is later than the lateness
# (agents starved on a busy machine) is sealed as unpaired, and its bytes
# go to an edge to the bare address.
correlate() {
	"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
		--group "$2" --from-beginning --no-paths --idle 12s \
		--snapshot-every 300ms --bucket 1s --lateness 3s \
		-o "$T_TMP/$1" >/dev/null 2>"$T_TMP/$1.log" &
	LAST=$!
	bg_pid $LAST
}
on_exit "mkdir -p '$CW_ROOT/$BUILD/test-logs/t_fleet_edges.d' &&" \
	"cp '$T_TMP'/*.log '$CW_ROOT/$BUILD/test-logs/t_fleet_edges.d/'"

owns() {	# NAME: partitions NAME was given so far
	grep -c 'causeway.conns \[[0-9]*\]: \(restored\|no checkpoint\)' \
		"$T_TMP/$1.log"
}
wait_owns() {	# NAME: until NAME owns a partition
	for _ in $(seq 1 600); do
		[ "$(owns "$1")" -gt 0 ] && return 0
		sleep 0.05
	done
	fail "correlator $1 got no partitions: $(cat "$T_TMP/$1.log")"
}
# The load's connections linger long enough for the members to share the
# partitions (the topic exists once its first records are in) and for ss
# to read the kernel's counters after.
ip netns exec "$LOAD" python3 "$CW_ROOT/examples/load.py" \
	http://10.77.0.11/api --clients 3 --duration 7s --linger 40 \
	--done "$T_TMP/load.done" >"$T_TMP/load.json" &
bg_pid $!
sleep 0.5
correlate a fleet
A=$LAST
wait_owns a
correlate b fleet
B=$LAST
wait_owns b
for _ in $(seq 1 600); do
	[ -e "$T_TMP/load.done" ] && break
	sleep 0.1
done
[ -e "$T_TMP/load.done" ] || fail "the load did not finish in 60 s"
read -r lw_s lw_r <<<"$(ss_bytes "$LOAD" 10.77.0.11 80)"
read -r wa_s wa_r <<<"$(ss_bytes "$WEB" 10.77.0.12 8080)"
read -r ad_s ad_r <<<"$(ss_bytes "$APP" 10.77.0.13 6379)"
note "ss: load->web $lw_s/$lw_r web->app $wa_s/$wa_r app->db $ad_s/$ad_r"
[ "$lw_s" -gt 0 ] && [ "$wa_s" -gt 0 ] && [ "$ad_s" -gt 0 ] ||
	fail "the workload made no traffic"
for a in "${AGENTS[@]}"; do
	fleet_agent_stop "${a%%:*}" "${a#*:}"
done
correlate ref ref
REF=$LAST
# Member a dies mid-run: b restores its partitions from their checkpoints,
# reads on from there and writes their buckets again (a replay: the sets
# a wrote at lower offsets lose).
n=$(owns a)
kill -9 $A
wait $A 2>/dev/null
note "member a (owner of $n partitions) killed with SIGKILL"
wait $B || fail "member b failed: $(cat "$T_TMP/b.log")"
wait $REF || fail "the single correlator failed: $(cat "$T_TMP/ref.log")"
n=$(grep -c 'causeway.conns \[[0-9]*\]: restored' "$T_TMP/b.log")
note "member b restored $n partitions from checkpoints"
[ "$n" -gt 0 ] || fail "member b took over nothing: $(cat "$T_TMP/b.log")"
grep 'buckets:' "$T_TMP/b.log" "$T_TMP/ref.log"
grep -q 'buckets: .*sealed up to [1-9]' "$T_TMP/ref.log" ||
	fail "no bucket was sealed during the run"

graph() {	# GROUP [options]: the group's merged graph as JSON
	local g=$1
	shift
	"$CW" graph --kafka "$BOOT" --group "$g" --format json "$@" 2>>"$T_TMP/graph.log"
}
graph fleet >"$T_TMP/fleet.json" || fail "graph --kafka: $(cat "$T_TMP/graph.log")"
graph ref >"$T_TMP/ref.json" || fail "graph --kafka: $(cat "$T_TMP/graph.log")"
python3 - "$T_TMP/fleet.json" "$T_TMP/ref.json" <<'EOF' || fail "the fleet graph differs from the single run's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
if a["edges"] != b["edges"] or a["nodes"] != b["nodes"]:
    print("fleet:", json.dumps(a["edges"])[:2000])
    print("ref:  ", json.dumps(b["edges"])[:2000])
    sys.exit(1)
print("fleet graph == single run: %d vertices, %d edges" %
      (len(a["nodes"]), len(a["edges"])))
EOF

# The bytes of each tier, as the merged buckets tell, against ss.
tier() {	# CLIENT-COMM SERVER-COMM KEY
	python3 - "$T_TMP/fleet.json" "$@" <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))
name = {v["id"]: v["label"] for v in g["nodes"]}
tot = 0
for e in g["edges"]:
    if name[e["client"]].startswith(sys.argv[2] + "[") and \
       name[e["server"]].startswith(sys.argv[3] + "["):
        tot += e[sys.argv[4]]
print(tot)
EOF
}
check_within "load -> nginx, client to server" \
	"$(tier python3 nginx bytes_c2s)" "$lw_s" 0.5
check_within "load -> nginx, server to client" \
	"$(tier python3 nginx bytes_s2c)" "$lw_r" 0.5
check_within "nginx -> app, client to server" \
	"$(tier nginx python3 bytes_c2s)" "$wa_s" 0.5
check_within "app -> redis, client to server" \
	"$(tier python3 redis-server bytes_c2s)" "$ad_s" 0.5

# A time range with nothing in it, and one around the run.
graph fleet --since '@1' --until '@2' >"$T_TMP/empty.json" ||
	fail "graph --kafka --since --until failed"
check_eq "edges in 1970" "$(python3 -c 'import json, sys
print(len(json.load(open(sys.argv[1]))["edges"]))' "$T_TMP/empty.json")" 0
graph fleet --since 1h >"$T_TMP/hour.json" || fail "graph --since 1h failed"
cmp -s "$T_TMP/hour.json" "$T_TMP/fleet.json" ||
	fail "the last hour's graph differs from the whole topic's"

# The member that stopped last wrote the fleet graph to its folder.
last=b
python3 - "$T_TMP/$last/edges.json" "$T_TMP/ref/edges.json" <<'EOF' ||
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if a["edges"] == b["edges"] and a["nodes"] == b["nodes"] else 1)
EOF
	fail "member $last's edges.json is not the fleet graph"
note "member $last's edges.json: the fleet graph"
echo ok
