#!/bin/bash
# Members come and go while the records stream in: a group of two
# correlators, a third joins, one leaves, and one is paused (SIGSTOP) past
# its session timeout, so its partitions move to the others, then resumed
# (it may still write checkpoints of partitions it no longer owns).  Every
# partition's state passes from member to member through the checkpoints
# in causeway.state.  When all have stopped, a new member of the group
# restores every partition and must write the graph of one uninterrupted
# reader, byte for byte: nothing lost or counted twice across handovers,
# and no stale checkpoint of the paused member wins.
. "$(dirname "$0")/lib.sh"
need_cmd python3

broker_start
note "embedded broker at $BOOT"
printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' \
	>"$T_TMP/kafka.properties"

correlate() {	# NAME GROUP IDLE [options]: in the background; pid in $LAST
	local name=$1 group=$2 idle=$3
	shift 3
	"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
		--group "$group" --no-paths --idle "$idle" --snapshot-every 300ms \
		-o "$T_TMP/$name" "$@" >/dev/null 2>"$T_TMP/$name.log" &
	LAST=$!
	bg_pid $LAST
}
owns() {	# NAME: partitions NAME was given so far
	grep -c 'causeway.conns \[[0-9]*\]: \(restored\|no checkpoint\)' \
		"$T_TMP/$1.log"
}
holds() {	# NAME: how many partitions NAME holds now, by its log
	awk '/causeway.conns \[[0-9]+\]: (restored|no checkpoint)/ {
		p = $0; sub(/.*\[/, "", p); sub(/\].*/, "", p); h[p] = 1 }
	/causeway.conns \[[0-9]+\]: (handed over|lost) at/ {
		p = $0; sub(/.*\[/, "", p); sub(/\].*/, "", p); delete h[p] }
	END { n = 0; for (p in h) n++; print n }' "$T_TMP/$1.log"
}
# settled A B: until A and B hold all 4 partitions between them, the same
# for 2 s (the rebalance after a member left is over).
settled() {
	local i ok=0
	for i in $(seq 1 600); do
		if [ $(($(holds "$1") + $(holds "$2"))) -eq 4 ]; then
			ok=$((ok + 1))
			[ $ok -ge 40 ] && return 0
		else
			ok=0
		fi
		sleep 0.05
	done
	fail "$1 and $2 do not hold the 4 partitions: $(cat "$T_TMP/$1.log" "$T_TMP/$2.log")"
}
wait_holds() {	# NAME N SECS: until NAME holds N partitions
	local i
	for i in $(seq 1 $(($3 * 20))); do
		[ "$(holds "$1")" -eq "$2" ] && return 0
		sleep 0.05
	done
	fail "correlator $1 does not hold $2 partitions in $3 s: $(cat "$T_TMP/$1.log")"
}
wait_owns() {	# NAME N
	local i
	for i in $(seq 1 400); do
		[ "$(owns "$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	fail "correlator $1 got no partitions: $(cat "$T_TMP/$1.log")"
}

# wait_log NAME PATTERN N SECS: until NAME's log has N lines matching.
wait_log() {
	local i
	for i in $(seq 1 $(($4 * 20))); do
		[ "$(grep -c "$2" "$T_TMP/$1.log")" -ge "$3" ] && return 0
		sleep 0.05
	done
	fail "correlator $1: no $3 lines of '$2' in $4 s: $(cat "$T_TMP/$1.log")"
}
# What the members said, kept for a failure's post-mortem.
on_exit "mkdir -p '$CW_ROOT/$BUILD/test-logs/t_fleet_members.d' &&" \
	"cp '$T_TMP'/*.log '$CW_ROOT/$BUILD/test-logs/t_fleet_members.d/'"

"$CW" simulate -H 1 -c 1 -s 99 --kafka "$BOOT" 2>"$T_TMP/sim0.log" ||
	fail "simulate failed: $(cat "$T_TMP/sim0.log")"
correlate a fleet 120s
A=$LAST
wait_owns a 1
correlate b fleet 120s
B=$LAST
wait_owns b 1
note "a and b own partitions"
# About 60 s of records: a's leaving, the group settling, b's pause past
# its session and its return all happen while they flow, even on a slow
# machine (at 400 a second, 38 s was once too short beside a CPU hog).
"$CW" simulate -H 40 -c 200 -s 4 --kafka "$BOOT" --rate 250 \
	2>"$T_TMP/sim.log" &
SIM=$!
bg_pid $SIM
correlate c fleet 120s
C=$LAST
wait_owns c 1
note "c joined and owns partitions"
kill -INT $A
wait $A || fail "member a failed: $(cat "$T_TMP/a.log")"
note "a left"
# The rebalance after a left must be over before b stops: else c's share
# of it (all four, while b is slow to rejoin) passes for b's expiry.
settled b c
kill -STOP $B
note "b paused"
# Past session.timeout.ms the group drops b: c takes every partition.
wait_holds c 4 30
kill -CONT $B
note "b resumed after c took its partitions"
wait_log b ': lost at offset' 1 30
kill -0 $SIM || fail "the stream ended before b came back: make it longer"
wait $SIM || fail "simulate failed: $(cat "$T_TMP/sim.log")"
produced=$(( $(sed -n 's/.* \([0-9]*\) records published.*/\1/p' \
	"$T_TMP/sim0.log" "$T_TMP/sim.log" | paste -sd+) ))
note "records published: $produced"
kill -INT $B $C
stacks_after 120 t_fleet_members $B $C
wait $B || fail "member b failed: $(cat "$T_TMP/b.log")"
wait $C || fail "member c failed: $(cat "$T_TMP/c.log")"
for m in a b c; do
	note "member $m: $(owns $m) partitions given, $(grep -c ': handed over at' \
		"$T_TMP/$m.log") handed over, $(grep -c ': lost at' \
		"$T_TMP/$m.log") lost"
done

correlate d fleet 15s
D=$LAST
correlate ref ref 8s
wait $D || fail "member d failed: $(cat "$T_TMP/d.log")"
wait $LAST || fail "the reference failed: $(cat "$T_TMP/ref.log")"
grep "restored\|no checkpoint\|records applied" "$T_TMP/d.log"
check_eq "d: partitions restored" \
	"$(grep -c ': restored at offset' "$T_TMP/d.log")" 4
stat_of() {	# NAME KEY
	python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["stats"][sys.argv[2]])' \
		"$T_TMP/$1/edges.json" "$2"
}
check_eq "reference: records applied" "$(stat_of ref applied)" "$produced"
check_eq "d: records in its graph" "$(stat_of d applied)" "$produced"
cmp "$T_TMP/ref/edges.json" "$T_TMP/d/edges.json" ||
	fail "the group's graph after the churn differs from the reference"
note "edges.json after the churn and of the reference: identical" \
	"($(stat -c %s "$T_TMP/ref/edges.json") bytes)"
kill -INT $BROKER
wait $BROKER
echo ok
