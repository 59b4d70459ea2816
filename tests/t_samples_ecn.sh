#!/bin/bash
# Ingress ECN-CE bytes: datagrams sent with the CE codepoint in the TOS byte
# are counted to the byte on the receiver's interface, ECT(0), ECT(1) and
# not-ECT are not, and a run without CE counts none.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ip python3

A=$(ns_create a)
B=$(ns_create b)
# ns_create runs in a $(...) subshell, where its registration is lost:
# register them here so that the EXIT trap removes them.
T_NETNS+=("$A" "$B")
for n in "$A" "$B"; do
	ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1
done
ns_link "$A" "$B" 10.77.2.1 10.77.2.2

# COUNT datagrams of 100 bytes to DST:9 with each TOS given.
cat >"$T_TMP/send.py" <<'PY'
import socket, sys, time
dst, count = sys.argv[1], int(sys.argv[2])
for tos in sys.argv[3:]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(tos, 0))
    for i in range(count):
        s.sendto(b"x" * 100, (dst, 9))
        time.sleep(0.002)
PY
# A receiver, so that B sends no port-unreachable errors back.
ip netns exec "$B" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.77.2.2", 9))
while True: s.recv(2048)' &
bg_pid $!
wait_port "$B" 9 udp
ip netns exec "$A" python3 "$T_TMP/send.py" 10.77.2.2 1 0
sleep 0.2

# record_with TOS...: one run on B's side while A sends; prints the run.
record_with() {
	local out=$T_TMP/rec.$RANDOM
	ip netns exec "$B" "$CW" samples record --dev "$LINK_B" \
		--interval 1ms --samples 1500 -o "$out.cws" 2>"$out.err" >/dev/null &
	local rec=$!
	for i in $(seq 100); do grep -q recording "$out.err" && break; sleep 0.05; done
	ip netns exec "$A" python3 "$T_TMP/send.py" 10.77.2.2 20 "$@"
	wait $rec || fail "record failed: $(cat "$out.err")"
	"$CW" samples export "$out.cws" --format json | python3 -c '
import json, sys
t = json.load(sys.stdin)["totals"]
print(t["ecn_in"] + t["ecn_in_x"], t["bytes_in"] + t["bytes_in_x"])'
}

frame=$((100 + 8 + 20 + 14))
read -r ecn bytes < <(record_with 0x03 0x02 0x01 0x00 0xbb)
note "CE run: ecn_in $ecn bytes_in $bytes"
check_eq "ECN-CE bytes (20 CE + 20 DSCP|CE datagrams)" "$ecn" $((40 * frame))
check_eq "bytes in (100 datagrams)" "$bytes" $((100 * frame))
read -r ecn bytes < <(record_with 0x02 0x01 0x00 0xb8)
check_eq "ECN-CE bytes without CE" "$ecn" 0
check_eq "bytes in (80 datagrams)" "$bytes" $((80 * frame))
echo "PASS"
