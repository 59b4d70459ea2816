#!/bin/bash
# One agent's host cut off from three KRaft brokers and healed, on real
# Apache Kafka (issue #30).  The client host's agent runs in a test host
# of its own that reaches the brokers only across a veth
# (kafka_uplink); every packet arriving at either end of that veth is
# dropped while the workload goes on: a phase of the long connection and
# short connections opening and closing.  The cut agent's records time
# out (its message.timeout.ms is 4 s here) into its spool while the other
# agent keeps delivering; the veth is healed and the agent replays.  At
# the end the cut agent spooled, replayed all it spooled, lost and
# evicted none; the other delivered all it produced without spooling;
# and the graphs of a member that read live through the cut and of a new
# reader of everything the brokers hold have exactly the bytes the
# clients wrote and read, every connection paired.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/kafka.sh"
need_root
need_cmd python3 iptables nsenter
kafka_need

PHASES=4 PHASE_BYTES=30000 SHORT=20 SHORT_BYTES=1000
kafka_start 3
kafka_topic_create causeway.conns --partitions 4 --replication-factor 3
kafka_uplink cliup
KAFKA_IN_cli=$UPLINK_NS
echo "message.timeout.ms=4000" >"$T_TMP/agent-cli.properties"

kafka_echo_start "$PHASES" "$PHASE_BYTES"
# The cut agent's ends reach P.conns after the other host's by the cut
# and the replay: a lateness over both keeps every pair (see
# docs/causeway-correlate.md, "The brokers' settings").
kafka_member live live 600s --lateness 5m
LIVE=$KAFKA_LAST
kafka_member_owns live 4
kafka_phase 1

kafka_cut
note "agent cli's host cut off from the brokers"
before=$(kafka_end_offset causeway.conns)
res=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7300 "$SHORT" \
	"$SHORT_BYTES") || fail "short connections failed"
kafka_short_check "$res" "$SHORT" "$SHORT_BYTES"
kafka_phase 2
# Until the cut agent's records have timed out into its spool.
for _ in $(seq 1 600); do
	[ -n "$(find "$T_TMP/spool-cli" -name 'seg-*' -size +8c 2>/dev/null)" ] && break
	sleep 0.1
done
[ -n "$(find "$T_TMP/spool-cli" -name 'seg-*' -size +8c 2>/dev/null)" ] ||
	fail "agent cli spooled nothing while cut off: $(cat "$T_TMP/agent-cli.log")"
kafka_phase 3
[ "$(kafka_end_offset causeway.conns)" -gt "$before" ] ||
	fail "agent srv delivered nothing while cli was cut off"
dropped=$(kafka_heal)
note "healed: the cut dropped $dropped packets; agent cli's spool: $(du -sh "$T_TMP/spool-cli" | awk '{print $1}')"
[ "$dropped" -gt 0 ] || fail "the cut dropped no packet"
kafka_phase 4
# Until the spool is replayed: nothing left in it.
for _ in $(seq 1 900); do
	[ -z "$(find "$T_TMP/spool-cli" -name 'seg-*' -size +8c 2>/dev/null)" ] && break
	sleep 0.1
done
sleep 2	# the last counts (and the long connection's close) published
kafka_agents_stop cli srv
grep -q "kafka: [0-9]* produced, [0-9]* delivered, [1-9][0-9]* spooled" \
	"$T_TMP/agent-cli.log" || fail "agent cli spooled nothing"
grep -q "kafka: \([0-9]*\) produced, \1 delivered, 0 spooled" \
	"$T_TMP/agent-srv.log" || fail "agent srv spooled or lost records"

# In order: in each partition of P.conns, the cut agent's records come in
# the order it made them: no record comes after one it made later, but
# for a record sent again (the brokers took it, its acknowledgement was
# lost in the cut: it was spooled and replayed), which repeats a seq
# already there and is counted, not failed (docs/agent.md: counters are
# cumulative, consumers keep an end's highest).
for p in $(kafka_partitions causeway.conns | awk '{print $1}'); do
	kcat -C -m 5 -b "$KAFKA_BOOT" -t causeway.conns -p "$p" -o beginning -e \
		-q -f '%R%s' 2>>"$T_TMP/kcat.log"
done >"$T_TMP/conns.bin" || fail "kcat could not read causeway.conns"
python3 - "$T_TMP/conns.bin" "$T_TMP/conns.cww" <<'PY' || fail "no wire file"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
out = open(sys.argv[2], "wb")
out.write(b"CWWIRE1\n")
i = 0
while i < len(data):
    (size,) = struct.unpack(">i", data[i:i + 4])
    rec = data[i + 4:i + 4 + size]
    i += 4 + size
    out.write(struct.pack("<II", len(rec), zlib.crc32(rec)) + rec)
PY
# (Partition by partition, so the records' key says where one ends.)
"$CW" dump "$T_TMP/conns.cww" >"$T_TMP/conns.jsonl" 2>"$T_TMP/dump.log" ||
	fail "dump failed: $(cat "$T_TMP/dump.log")"
order=$(python3 - "$T_TMP/conns.jsonl" <<'PY'
import json, sys
seen = {}	# an end's 4-tuple (its partition is fixed) -> seqs so far
n = back = again = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("host") != "cli":
        continue
    n += 1
    k = tuple(sorted([(r["laddr"], r["lport"]), (r["raddr"], r["rport"])]))
    s = seen.setdefault(k, set())
    if r["seq"] in s:
        again += 1
    elif s and r["seq"] < max(s):
        back += 1
        print("back:", k, "seq", r["seq"], "after", max(s), file=sys.stderr)
    s.add(r["seq"])
print(n, back, again)
PY
)
read -r n back again <<<"$order"
note "agent cli's records in causeway.conns: $n, sent again: $again, out of order: $back"
[ "$n" -gt 0 ] || fail "no record of agent cli in causeway.conns"
check_eq "agent cli's records out of order in their partitions" "$back" 0

# The live member, once it has applied every record P.conns holds.
kafka_member_settle live $LIVE
kafka_check_echo_edges "$T_TMP/live" "live: " "$KAFKA_LONG_PID" \
	$((PHASES * PHASE_BYTES)) "$(json_get "$res" pid)" "$SHORT" "$SHORT_BYTES"

# And a new reader of everything the brokers hold.
KAFKA_CORRELATE_OPTS="--lateness 5m"
kafka_check_echo_graph "$KAFKA_LONG_PID" \
	$((PHASES * PHASE_BYTES)) "$(json_get "$res" pid)" "$SHORT" "$SHORT_BYTES"
echo ok
