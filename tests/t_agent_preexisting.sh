#!/bin/bash
# A connection opened before the agent started is found at start (with its
# owner and role) and counted from then on.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3

two_hosts
ip netns exec "$SRV" $TRAFFIC sink-server "$SRV_IP" 7100 40000 70000 &
SRV_PID=$!
bg_pid $SRV_PID
wait_port "$SRV" 7100
go=$T_TMP/go
ip netns exec "$CLI" $TRAFFIC hold "$SRV_IP" 7100 "$go" 40000 70000 \
	>"$T_TMP/hold.txt" &
HOLD_PID=$!
bg_pid $HOLD_PID
wait_file "$T_TMP/hold.txt"

out=$T_TMP/out
# The agent's default: bytes from the kernel's counters, no per-call program.
agent_start "$out" --hooks sampled
touch "$go"
wait $HOLD_PID || fail "client failed"
sleep 0.3
agent_stop "$out" >/dev/null

read -r c2s s2c cpid spid paired <<<"$(edge "$out" --client-pid \
	"$HOLD_PID" bytes_c2s bytes_s2c client.pid server.pid paired)"
check_eq "client (pre-existing, found by the scan)" "$cpid" "$HOLD_PID"
check_eq "server (pre-existing, role from its listener)" "$spid" "$SRV_PID"
check_eq "paired" "$paired" 1
check_eq "bytes client -> server" "$c2s" 40000
check_eq "bytes server -> client" "$s2c" 70000
grep -q '"preexisting":true' "$out/conns.jsonl" ||
	fail "records do not say the connection was pre-existing"
echo ok
