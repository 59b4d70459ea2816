#!/bin/bash
# UDP request/response: an unconnected echo server answers N datagrams;
# bytes and datagrams each way per (socket, peer).  Then an agent scoped to
# the client's namespace: it must not report the server's socket, which the
# packet hooks (attached to the root cgroup) also see.
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

scoped=$T_TMP/scoped
agent_start "$scoped" --netns "$(ns_inode "$CLI")"
ip netns exec "$CLI" $TRAFFIC udp-client "$SRV_IP" 5353 20 300 >/dev/null ||
	fail "udp client failed"
sleep 0.3
agent_stop "$scoped" >/dev/null
read -r mine others <<<"$(python3 - "$scoped/conns.jsonl" "$(ns_inode "$CLI")" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
udp = [r for r in recs if r.get("proto") == "udp"]
mine = sum(1 for r in udp if r["netns"] == int(sys.argv[2]) and r["rport"] == 5353)
print(mine, sum(1 for r in udp if r["netns"] != int(sys.argv[2])))
PY
)"
check_eq "scoped agent: client ends seen" "$mine" 1
check_eq "scoped agent: ends of other namespaces" "$others" 0
echo ok
