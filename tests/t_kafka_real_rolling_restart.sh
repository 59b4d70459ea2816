#!/bin/bash
# A rolling restart of three KRaft brokers under load, on real Apache
# Kafka (issue #30): the agents of two test hosts publish while each
# broker in turn is stopped cleanly (SIGTERM: it hands its leaderships
# on), a phase of traffic and short connections run without it, it is
# started again, and the next one is stopped only once every partition of
# every topic has all three replicas in sync again.  A correlator member
# reads live through all three restarts (its group coordinator, its
# partitions' leaders and those of P.state and P.edges move under it).
# At the end every agent delivered all it produced and lost none, and the
# live member's graph and that of a new reader of everything the brokers
# hold have exactly the bytes the clients wrote and read, every
# connection paired.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/kafka.sh"
need_root
need_cmd python3
kafka_need

PHASES=5 PHASE_BYTES=30000 SHORT=10 SHORT_BYTES=1000
kafka_start 3
kafka_topic_create causeway.conns --partitions 4 --replication-factor 3

kafka_echo_start "$PHASES" "$PHASE_BYTES"
kafka_member live live 600s
LIVE=$KAFKA_LAST
kafka_member_owns live 4
kafka_phase 1

# Broker i out: short connections and a phase of the long one while it is
# away, then back, and all replicas in sync before the next.
short_pids=()
for i in 1 2 3; do
	before=$(kafka_end_offset causeway.conns)
	# Clean: however long its shutdown takes on a busy machine, never a
	# SIGKILL (which would be t_kafka_real_broker_fault's crash).
	kafka_stop "$i" 600
	grep -q "\[BrokerServer id=$i\] shut down completed" \
		"$KAFKA_DIR/$i/server.log" ||
		fail "broker $i did not shut down cleanly: $(tail -n 20 "$KAFKA_DIR/$i/server.log")"
	note "kafka broker $i stopped (SIGTERM, shut down completed)"
	res=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7300 "$SHORT" \
		"$SHORT_BYTES") || fail "short connections failed"
	kafka_short_check "$res" "$SHORT" "$SHORT_BYTES"
	short_pids+=("$(json_get "$res" pid)")
	kafka_phase $((i + 1))
	# The agents published through the restart, not around it: while it
	# is still down (their last records may still be on their way).
	deadline=$((SECONDS + 30))
	until [ "$(kafka_end_offset causeway.conns)" -gt "$before" ]; do
		[ "$SECONDS" -lt "$deadline" ] ||
			fail "no record reached causeway.conns in 30 s while broker $i was down"
		sleep 0.5
	done
	kafka_restart "$i"
	kafka_wait_all_isr
	note "every replica in sync again"
done
kafka_phase $((PHASES))
sleep 2	# the last counts (and the long connection's close) published
kafka_agents_stop cli srv
check_eq "records spooled (two of three replicas were always in sync)" \
	"$KAFKA_SPOOLED" 0

# check_graph OUT LABEL: OUT's graph is the workload's.
check_graph() {
	local pid
	kafka_check_edge "$1" "${2}long connection" "$KAFKA_LONG_PID" 1 \
		$((PHASES * PHASE_BYTES)) $((PHASES * PHASE_BYTES))
	for pid in "${short_pids[@]}"; do
		kafka_check_edge "$1" "${2}short connections of $pid" "$pid" \
			"$SHORT" $((SHORT * SHORT_BYTES)) $((SHORT * SHORT_BYTES))
	done
}

# The live member, once it has applied every record P.conns holds.
kafka_member_settle live $LIVE
check_graph "$T_TMP/live" "live: "

# And a new reader of everything the brokers hold.
kafka_correlate "$T_TMP/corr"
check_graph "$T_TMP/corr" ""
echo ok
