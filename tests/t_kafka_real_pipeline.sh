#!/bin/bash
# The fleet pipeline on a real Apache Kafka broker (issue #30): one KRaft
# broker on loopback, two test hosts with one agent each publishing to it,
# and a correlator reading it.  The workload's bytes are known: one long
# connection moving 3 x 50,000 bytes each way and 30 short ones of 1,000
# bytes each way.  The fleet graph must have every connection paired and
# exactly those bytes, and every agent must have delivered all it
# produced.  The correlator makes its state topic, P.state, compacted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/kafka.sh"
need_root
need_cmd python3
kafka_need

PHASES=3 PHASE_BYTES=50000 SHORT=30 SHORT_BYTES=1000
kafka_start 1

kafka_echo_start "$PHASES" "$PHASE_BYTES"
for i in $(seq 1 "$PHASES"); do
	kafka_phase "$i" 0.5	# the agents publish between phases too
done
res=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7300 "$SHORT" \
	"$SHORT_BYTES") || fail "short connections failed"
kafka_short_check "$res" "$SHORT" "$SHORT_BYTES"
sleep 2	# the last counts (and the long connection's close) published

kafka_agents_stop cli srv

kafka_check_echo_graph "$KAFKA_LONG_PID" \
	$((PHASES * PHASE_BYTES)) "$(json_get "$res" pid)" "$SHORT" "$SHORT_BYTES"

# The correlator's checkpoints went to the broker, in causeway.state.
state=causeway.state
parts=$(kafka_partitions "$state")
[ -n "$parts" ] || fail "the correlator made no $state topic on the broker"
note "$state: $(grep -c . <<<"$parts") partition(s)"
# Made by the correlator, compacted (the newest record of each chunk key
# kept), with the brokers' default partitions; P.edges keeps what the
# operator's retention says (the broker's default policy).
check_eq "$state: cleanup.policy on the broker" \
	"$(kafka_topic_config "$state" cleanup.policy)" compact
check_eq "$state: partitions (the broker's num.partitions)" \
	"$(grep -c . <<<"$parts")" 4
check_eq "causeway.edges: cleanup.policy on the broker" \
	"$(kafka_topic_config causeway.edges cleanup.policy)" delete
echo ok
