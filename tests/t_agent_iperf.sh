#!/bin/bash
# iperf3 with a fixed byte count: the data connection's bytes match what
# iperf3's own JSON report says its stream sent, within 0.5%.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd iperf3 python3

two_hosts
ip netns exec "$SRV" iperf3 -s -B "$SRV_IP" -p 5201 -1 >"$T_TMP/srv.log" 2>&1 &
bg_pid $!
wait_port "$SRV" 5201

out=$T_TMP/out
# The agent's default: bytes from the kernel's counters, no per-call program.
agent_start "$out" --hooks sampled
ip netns exec "$CLI" iperf3 -c "$SRV_IP" -p 5201 -n 64M -l 128K --json \
	>"$T_TMP/iperf.json" || fail "iperf3 failed"
sleep 0.3
agent_stop "$out" >/dev/null

sent=$(python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
print(j["end"]["sum_sent"]["bytes"])' "$T_TMP/iperf.json")
# Control connection and data connection: the larger one is the data.
got=$(python3 -c 'import json,sys
g = json.load(open(sys.argv[1])); n = {x["id"]: x for x in g["nodes"]}
print(max(e["bytes_c2s"] for e in g["edges"]
	if n[e["client"]].get("comm") == "iperf3"
	and n[e["server"]].get("comm") == "iperf3"))' "$out/edges.json")
conns=$(edge "$out" --client-comm iperf3 --server-comm iperf3 conns)
check_eq "connections (control + data)" "$conns" 2
check_within "data bytes iperf3 client -> server" "$got" "$sent" 0.5
echo ok
