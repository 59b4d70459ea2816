#!/bin/bash
# The fleet pipeline on a real Apache Kafka broker (issue #30): one KRaft
# broker on loopback, two test hosts with one agent each publishing to it,
# and a correlator reading it.  The workload's bytes are known: one long
# connection moving 3 x 50,000 bytes each way and 30 short ones of 1,000
# bytes each way.  The fleet graph must have every connection paired and
# exactly those bytes, and every agent must have delivered all it
# produced.  The correlator's state topic, P.state, should be compacted on
# the broker (DESIGN.md: "On the real broker, P.state is a compacted
# topic"); it is not yet: see STATE_COMPACTED below.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/kafka.sh"
need_root
need_cmd python3
kafka_need

PHASES=3 PHASE_BYTES=50000 SHORT=30 SHORT_BYTES=1000
kafka_start 1

two_hosts
ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 7300 &
bg_pid $!
wait_port "$SRV" 7300

kafka_agent "$CLI" cli
kafka_agent "$SRV" srv

go=$T_TMP/go
ip netns exec "$CLI" $TRAFFIC phases "$SRV_IP" 7300 "$go" "$PHASES" \
	"$PHASE_BYTES" >"$T_TMP/phases.json" &
bg_pid $!
wait_file "$T_TMP/phases.json"
for i in $(seq 1 "$PHASES"); do
	touch "$go.$i"
	wait_file "$go.$i.done"
	sleep 0.5	# the agents publish between phases too
done
res=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7300 "$SHORT" \
	"$SHORT_BYTES") || fail "short connections failed"
check_eq "short connections: bytes the client sent" \
	"$(json_get "$res" sent)" $((SHORT * SHORT_BYTES))
check_eq "short connections: bytes the client received" \
	"$(json_get "$res" received)" $((SHORT * SHORT_BYTES))
sleep 2	# the last counts (and the long connection's close) published

kafka_agents_stop cli srv

kafka_check_echo_graph "$(json_get "$(cat "$T_TMP/phases.json")" pid)" \
	$((PHASES * PHASE_BYTES)) "$(json_get "$res" pid)" "$SHORT" "$SHORT_BYTES"

# The correlator's checkpoints went to the broker, in causeway.state.
state=causeway.state
parts=$(kafka_partitions "$state")
[ -n "$parts" ] || fail "the correlator made no $state topic on the broker"
note "$state: $(grep -c . <<<"$parts") partition(s)"
# KNOWN GAP (#30): the correlator does not create P.state; the broker
# makes it on the first metadata request (auto.create.topics.enable) with
# its defaults: cleanup.policy=delete, retention.ms 7 days, num.partitions
# and default.replication.factor.  Set STATE_COMPACTED=1 once causeway
# creates it compacted; until then the test insists on what it does now,
# so that a change either way is seen.
STATE_COMPACTED=0
policy=$(kafka_topic_config "$state" cleanup.policy)
if [ $STATE_COMPACTED -eq 1 ]; then
	check_eq "$state: cleanup.policy on the broker" "$policy" compact
elif [ "$policy" = compact ]; then
	fail "$state is compacted now: set STATE_COMPACTED=1 in this test"
else
	check_eq "$state: cleanup.policy (KNOWN GAP: the broker's default, not compact)" \
		"$policy" delete
fi
echo ok
