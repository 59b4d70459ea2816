#!/bin/bash
# 1,000 short-lived connections (each under 5 ms): every one is counted,
# with its bytes, though most open and close between two collections.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3

two_hosts
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7000 &
SRV_PID=$!
bg_pid $SRV_PID
wait_port "$SRV" 7000

out=$T_TMP/out
# The agent's default: bytes from the kernel's counters, no per-call program.
agent_start "$out" --hooks sampled
N=1000
res=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7000 $N 100) ||
	fail "client failed"
note "longest connection: $(json_get "$res" longest_ms) ms"
sleep 0.3
agent_stop "$out" >/dev/null

read -r conns paired c2s s2c spid <<<"$(edge "$out" --client-pid \
	"$(json_get "$res" pid)" conns paired bytes_c2s bytes_s2c server.pid)"
check_eq "connections counted" "$conns" $N
# With no per-call program, the server ends' owner comes from their own
# close(): FIN_WAIT1 when the server closes first, LAST_ACK when the
# client did (both happen here).
check_eq "server process (every end owned)" "$spid" "$SRV_PID"
check_eq "connections paired" "$paired" $N
check_eq "bytes client -> server" "$c2s" "$(json_get "$res" sent)"
check_eq "bytes server -> client" "$s2c" "$(json_get "$res" received)"
lost=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"]["close_lost"])' "$out/edges.json")
check_eq "close records lost" "$lost" 0
unowned=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"]["no_owner"])' "$out/edges.json")
check_eq "ends closed with no owner" "$unowned" 0
echo ok
