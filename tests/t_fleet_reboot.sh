#!/bin/bash
# A reboot of one test host, faked: the client host's agent is restarted
# with another boot id (CAUSEWAY_TEST_BOOT_ID, for tests only).  Records
# must carry the boot id they were made in (ConnRecord 23, as `causeway
# dump` shows), and the correlator must pair the connections made before
# and after with the server's ends and give each batch to its own process
# with its exact bytes (from the client's own socket counts).  The socket
# cookies a real reboot reuses are covered by test_correlator_boot; the
# kernel here keeps counting.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3

two_hosts
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7400 &
bg_pid $!
wait_port "$SRV" 7400

broker_start
note "embedded broker at $BOOT"
BOOT_A=11111111-2222-4333-8444-000000000001
BOOT_B=11111111-2222-4333-8444-000000000002

# The client's two boots each have a folder of their own (log, spool).
fleet_agent "$T_TMP" "$SRV" srv --kafka "$BOOT"
CAUSEWAY_TEST_BOOT_ID=$BOOT_A fleet_agent "$T_TMP/a" "$CLI" cli --kafka "$BOOT"
CLI_A=$FLEET_AGENT_PID
b1=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7400 12 900) ||
	fail "batch 1 failed"
note "before the reboot: $b1"
sleep 1	# three agent intervals: the batch's records are out
kill -INT $CLI_A
wait $CLI_A || fail "the client's agent failed: $(cat "$T_TMP/a/agent-cli.log")"

CAUSEWAY_TEST_BOOT_ID=$BOOT_B fleet_agent "$T_TMP/b" "$CLI" cli --kafka "$BOOT"
CLI_B=$FLEET_AGENT_PID
b2=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7400 17 600) ||
	fail "batch 2 failed"
note "after the reboot: $b2"
sleep 1
kill -INT $CLI_B
wait $CLI_B || fail "the client's agent failed: $(cat "$T_TMP/b/agent-cli.log")"

# The client's records name their boot; the server's, the real one.
"$CW" dump --kafka "$BOOT" --topic causeway.conns --from-beginning --timeout 6s \
	>"$T_TMP/dump.jsonl" 2>"$T_TMP/dump.log" ||
	fail "dump failed: $(cat "$T_TMP/dump.log")"
boots() {	# HOST: the boot ids of HOST's records, counted
	python3 -c 'import json, sys, collections
c = collections.Counter()
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("host") == sys.argv[2]:
        c[r.get("boot_id", "")] += 1
print(" ".join("%s=%d" % (k, v) for k, v in sorted(c.items())))' \
		"$T_TMP/dump.jsonl" "$1"
}
note "client records by boot: $(boots cli)"
case "$(boots cli)" in
"$BOOT_A="[0-9]*" $BOOT_B="[0-9]*) ;;
*) fail "client records do not carry their boots: $(boots cli)" ;;
esac
real=$(cat /proc/sys/kernel/random/boot_id)
case "$(boots srv)" in
"$real="[0-9]*) ;;
*) fail "server records do not carry the host's boot id: $(boots srv)" ;;
esac

"$CW" correlate --kafka "$BOOT" --group reboot --from-beginning --no-paths \
	--idle 5s -o "$T_TMP/corr" >/dev/null 2>"$T_TMP/corr.log" ||
	fail "correlate failed: $(cat "$T_TMP/corr.log")"
check_batch() {	# RESULT CONNS: the batch's edge, by its client process
	local pid c2s s2c conns paired
	pid=$(json_get "$1" pid)
	read -r conns paired c2s s2c <<<"$(edge "$T_TMP/corr" --client-pid "$pid" \
		conns paired bytes_c2s bytes_s2c)"
	check_eq "pid $pid: connections" "$conns" "$2"
	check_eq "pid $pid: every connection paired" "$paired" "$2"
	check_eq "pid $pid: bytes client -> server" "$c2s" "$(json_get "$1" sent)"
	check_eq "pid $pid: bytes server -> client" "$s2c" "$(json_get "$1" received)"
}
check_batch "$b1" 12
check_batch "$b2" 17
kill -INT $BROKER
wait $BROKER
echo ok
