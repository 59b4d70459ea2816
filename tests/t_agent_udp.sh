#!/bin/bash
# UDP request/response: an unconnected echo server answers N datagrams;
# bytes and datagrams each way per (socket, peer).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3

two_hosts
ip netns exec "$SRV" $TRAFFIC udp-server "$SRV_IP" 5353 &
SRV_PID=$!
bg_pid $SRV_PID
wait_port "$SRV" 5353 udp

out=$T_TMP/out
agent_start "$out"
N=200
res=$(ip netns exec "$CLI" $TRAFFIC udp-client "$SRV_IP" 5353 $N 300) ||
	fail "udp client failed"
sleep 0.3
agent_stop "$out" >/dev/null

read -r c2s s2c mc2s ms2c paired spid <<<"$(edge "$out" --proto udp \
	--client-pid "$(json_get "$res" pid)" bytes_c2s bytes_s2c msgs_c2s \
	msgs_s2c paired server.pid)"
check_eq "server process" "$spid" "$SRV_PID"
check_eq "paired" "$paired" 1
check_eq "bytes client -> server" "$c2s" "$(json_get "$res" sent)"
check_eq "bytes server -> client" "$s2c" "$(json_get "$res" received)"
check_eq "datagrams client -> server" "$mc2s" $N
check_eq "datagrams server -> client" "$ms2c" $N
echo ok
