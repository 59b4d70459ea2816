#!/bin/bash
# P.state is a compacted topic on real Apache Kafka (issue #30), and a
# member restores exactly from what the log cleaner left of it.  The
# correlator makes causeway.state itself with cleanup.policy=compact.  A
# member checkpoints through a paced churn of `causeway simulate --churn`
# (checkpoints of more than 500 ends, so several chunks each) and is
# SIGKILLed mid-stream; the test then gives P.state short segments and a
# low dirty ratio so the cleaner works within seconds, the cleaner shrinks
# P.state to the newest records of each chunk key, and a successor of the
# same group restores every partition from that and reads on: its graph
# is byte for byte the graph of a reference member that read the whole
# stream, and checkpointed + read after = published.  (With one key per
# partition, as before, compaction kept one chunk of each checkpoint and
# the successor found no whole one.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/kafka.sh"
need_cmd python3
kafka_need

STATE=causeway.state
kafka_start 1
printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' \
	>"$T_TMP/kafka.properties"

# One record first, so P.conns exists before the member subscribes.
"$CW" simulate -H 1 -c 1 -s 99 --kafka "$KAFKA_BOOT" 2>"$T_TMP/sim0.log" ||
	fail "simulate failed: $(cat "$T_TMP/sim0.log")"
kafka_member crash1 crash 120s
CRASH=$KAFKA_LAST
kafka_member_owns crash1 4

# Made by the member, compacted.
check_eq "$STATE: cleanup.policy, as the correlator made it" \
	"$(kafka_topic_config "$STATE" cleanup.policy)" compact

# A churning fleet: every end publishes each simulated minute, so each
# partition's checkpoints (600 ends, two chunks) come every 150 records.
"$CW" simulate --churn -H 40 -L 30 --lifetime 1h -i 1m -d 12m -s 3 \
	--kafka "$KAFKA_BOOT" --speedup 60 2>"$T_TMP/sim.log" &
SIM=$!
bg_pid $SIM
sleep 8	# checkpoints of several chunks into the stream
kill -0 $SIM || fail "the stream ended before the kill: make it longer"
kill -9 $CRASH
wait $CRASH 2>/dev/null
note "killed the member with SIGKILL mid-stream"
wait $SIM || fail "simulate failed: $(cat "$T_TMP/sim.log")"
produced=$(( $(sed -n 's/.* \([0-9]*\) records published.*/\1/p' \
	"$T_TMP/sim0.log") + $(sed -n 's/.*churn: .* \([0-9]*\) records over.*/\1/p' \
	"$T_TMP/sim.log") ))
note "records published: $produced"

# Now the cleaner's turn: short segments, a low dirty ratio.  It keeps
# the newest record of each key, so of the dead member's checkpoint
# chunks (keys "crash/...") the two slots' of each partition are left.
# The reference member's checkpoints roll the segment that held them.
written=$(kafka_records "$STATE" crash/)
kafka_topic_alter "$STATE" \
	segment.ms=300,min.cleanable.dirty.ratio=0.01,delete.retention.ms=1000
kafka_member ref ref 8s
REF=$KAFKA_LAST
for _ in $(seq 1 100); do
	kept=$(kafka_records "$STATE" crash/)
	[ $((kept * 4)) -lt "$written" ] && break
	sleep 0.5
done
note "$STATE: the dead member's $written checkpoint records, $kept kept by the cleaner"
[ $((kept * 4)) -lt "$written" ] ||
	fail "the log cleaner did not shrink $STATE: $kept of $written kept"
wait $REF || fail "the reference member failed: $(cat "$T_TMP/ref.log")"

# The successor restores every partition from the compacted log.
kafka_member crash2 crash 15s
wait $KAFKA_LAST || fail "the restarted member failed: $(cat "$T_TMP/crash2.log")"
grep "restored\|no checkpoint\|records applied\|state:" "$T_TMP/crash2.log"
check_eq "restart: partitions restored from $STATE" \
	"$(grep -c 'causeway.conns \[[0-9]*\]: restored at offset' \
		"$T_TMP/crash2.log")" 4
ends=$(sed -n 's/.*: restored at offset [0-9]* (\([0-9]*\) ends).*/\1/p' \
	"$T_TMP/crash2.log" | sort -n | tail -n 1)
[ "${ends:-0}" -gt 500 ] ||
	fail "no restored checkpoint had more than one chunk (most ends: $ends)"
restored=$(( $(sed -n 's/.*: restored at offset \([0-9]*\) .*/\1/p' \
	"$T_TMP/crash2.log" | paste -sd+) ))
applied=$(sed -n 's/.* \([0-9]*\) records applied.*/\1/p' "$T_TMP/crash2.log")
note "restart: checkpoints reflect $restored records ($ends ends in the largest), $applied read after them"
[ "$restored" -gt 0 ] && [ "$restored" -lt "$produced" ] ||
	fail "the checkpoints do not cut the stream: $restored of $produced"
check_eq "restart: checkpointed + read after = published" \
	$((restored + applied)) "$produced"
check_eq "reference: records applied" "$(kafka_member_stat ref applied)" "$produced"
check_eq "restart: records in its graph" "$(kafka_member_stat crash2 applied)" "$produced"
[ "$(kafka_member_stat ref paired)" -gt 1000 ] || fail "the reference graph is too small"
cmp "$T_TMP/ref/edges.json" "$T_TMP/crash2/edges.json" ||
	fail "the restarted member's graph differs from the reference"
note "edges.json of the restart and of the reference: identical" \
	"($(stat -c %s "$T_TMP/ref/edges.json") bytes)"
echo ok
