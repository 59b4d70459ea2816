#!/bin/bash
# A correlator killed with SIGKILL in the middle of a stream and restarted
# ends with the graph of an uninterrupted run, byte for byte: its
# partitions' pairing state comes back from the checkpoints in
# causeway.state and it reads on from the offsets they reflect, so nothing
# is lost or applied twice.  The stream is `causeway simulate` published
# through the agents' producer to the embedded broker, paced so the kill
# lands while records still arrive.  A control run with --no-checkpoints
# shows what the test guards against: its restart reads nothing and writes
# an empty graph.
. "$(dirname "$0")/lib.sh"
need_cmd python3

broker_start
note "embedded broker at $BOOT"
# The mock broker admits a group's next member session.timeout.ms - 1 s
# after the last one left (docs/causeway-broker.md, NOT A REAL BROKER).
printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' \
	>"$T_TMP/kafka.properties"

# correlate NAME GROUP IDLE [options]: a correlator in the background,
# its graph in $T_TMP/NAME, its log in $T_TMP/NAME.log; pid in $LAST.
correlate() {
	local name=$1 group=$2 idle=$3
	shift 3
	"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
		--group "$group" --no-paths --idle "$idle" --snapshot-every 300ms \
		-o "$T_TMP/$name" "$@" >/dev/null 2>"$T_TMP/$name.log" &
	LAST=$!
	bg_pid $LAST
}
# assigned NAME N: wait until correlator NAME owns N partitions.
assigned() {
	local i
	for i in $(seq 1 300); do
		[ "$(grep -c 'causeway.conns \[[0-9]*\]: \(restored\|no checkpoint\)' \
			"$T_TMP/$1.log")" -ge "$2" ] && return 0
		sleep 0.05
	done
	fail "correlator $1 got no partitions: $(cat "$T_TMP/$1.log")"
}
stat_of() {	# NAME KEY: a counter of NAME's edges.json
	python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["stats"][sys.argv[2]])' \
		"$T_TMP/$1/edges.json" "$2"
}

# The topic exists once the first record is in: one record of a fleet of
# its own, so the correlator has partitions to own before the stream.
"$CW" simulate -H 1 -c 1 -s 99 --kafka "$BOOT" 2>"$T_TMP/sim0.log" ||
	fail "simulate failed: $(cat "$T_TMP/sim0.log")"

correlate crash1 crash 120s
CRASH=$LAST
assigned crash1 4
"$CW" simulate -H 40 -c 60 -s 3 --kafka "$BOOT" --rate 1500 \
	2>"$T_TMP/sim.log" &
SIM=$!
bg_pid $SIM
sleep 2.5	# a few snapshots and checkpoints into the stream
kill -0 $SIM || fail "the stream ended before the kill: make it longer"
kill -9 $CRASH
wait $CRASH 2>/dev/null
note "killed the correlator with SIGKILL mid-stream"
wait $SIM || fail "simulate failed: $(cat "$T_TMP/sim.log")"
produced=$(( $(sed -n 's/.* \([0-9]*\) records published.*/\1/p' \
	"$T_TMP/sim0.log" "$T_TMP/sim.log" | paste -sd+) ))
note "records published: $produced"

# The successor (once the group expires the dead member) and a reference
# that read the whole stream uninterrupted, side by side.
correlate crash2 crash 15s
RESTART=$LAST
correlate ref ref 8s
wait $RESTART || fail "the restarted correlator failed: $(cat "$T_TMP/crash2.log")"
wait $LAST || fail "the reference correlator failed: $(cat "$T_TMP/ref.log")"
grep "restored\|no checkpoint\|records applied\|state:" "$T_TMP/crash2.log"

restored=$(sed -n 's/.*: restored at offset \([0-9]*\) .*/\1/p' \
	"$T_TMP/crash2.log" | paste -sd+)
[ -n "$restored" ] || fail "the restart restored no checkpoint"
restored=$((restored))
applied=$(sed -n 's/.* \([0-9]*\) records applied.*/\1/p' "$T_TMP/crash2.log")
note "restart: checkpoints reflect $restored records, $applied read after them"
[ "$restored" -gt 0 ] && [ "$restored" -lt "$produced" ] ||
	fail "the checkpoints do not cut the stream: $restored of $produced"
check_eq "restart: checkpointed + read after = published" \
	$((restored + applied)) "$produced"
check_eq "reference: records applied" "$(stat_of ref applied)" "$produced"
check_eq "restart: records in its graph" "$(stat_of crash2 applied)" "$produced"
[ "$(stat_of ref paired)" -gt 1000 ] || fail "the reference graph is too small"
cmp "$T_TMP/ref/edges.json" "$T_TMP/crash2/edges.json" ||
	fail "the restarted correlator's graph differs from the reference"
note "edges.json of the restart and of the reference: identical" \
	"($(stat -c %s "$T_TMP/ref/edges.json") bytes)"

# The control: without checkpoints a restart starts from the committed
# offsets with nothing, and overwrites the graph with an empty one.
correlate nock1 nock 8s --no-checkpoints --from-beginning
wait $LAST || fail "control run 1 failed: $(cat "$T_TMP/nock1.log")"
correlate nock2 nock 15s --no-checkpoints --from-beginning
wait $LAST || fail "control run 2 failed: $(cat "$T_TMP/nock2.log")"
check_eq "control: first run's records" "$(stat_of nock1 applied)" "$produced"
check_eq "control: records in the restarted graph" \
	"$(stat_of nock2 applied)" 0
kill -INT $BROKER
wait $BROKER
echo ok
