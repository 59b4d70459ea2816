#!/bin/bash
# Names of external peers in the fleet path (issue 31): an agent with --dns
# publishes DnsName records to <prefix>.meta of a broker, a correlator
# writes the edges to <prefix>.edges, and both its snapshot (-o) and
# `causeway graph --kafka` name the external node from the meta topic.  Two more DnsName records for
# the same address, as other hosts would send them (produced with kcat),
# check the rule when hosts disagree: the newest answer wins whatever the
# order, an older one from another host does not, and a malformed record
# on the topic is skipped.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 dnsmasq kcat

two_hosts
mkdir -p "/etc/netns/$CLI"
on_exit rm -rf "/etc/netns/$CLI"
echo "nameserver $SRV_IP" >"/etc/netns/$CLI/resolv.conf"
ip netns exec "$SRV" dnsmasq --keep-in-foreground --no-resolv --no-hosts \
	--bind-interfaces --listen-address="$SRV_IP" --user=root \
	--pid-file="$T_TMP/dnsmasq.pid" \
	--host-record=api.example.test,10.77.1.2,300 &
bg_pid $!
wait_port "$SRV" 53 udp
ip netns exec "$SRV" $TRAFFIC echo-server 0.0.0.0 8080 &
bg_pid $!
wait_port "$SRV" 8080

broker_start
note "broker at $BOOT"
fleet_agent "$T_TMP" "$CLI" cli --kafka "$BOOT" --dns
ip netns exec "$CLI" python3 - <<'PY' || fail "unable to reach api.example.test"
import socket
s = socket.create_connection(("api.example.test", 8080), timeout=5)
s.sendall(b"q" * 100)
s.recv(100)
PY
sleep 1
fleet_agent_stop "$FLEET_AGENT_PID" "$T_TMP/agent-cli.log"

# DnsName records as hosts h-old (an hour before) and h-new (an hour
# after the agent's) would send them, and bytes that are no record.
now=$(date +%s%N)
cat >"$T_TMP/dnsname.py" <<'PY'
import struct, sys
def varint(n):
    b = b""
    while True:
        x, n = n & 0x7f, n >> 7
        if not n:
            return b + bytes([x])
        b += bytes([x | 0x80])
ld = lambda f, d: varint(f << 3 | 2) + varint(len(d)) + d
host, name, t = sys.argv[1], sys.argv[2], int(sys.argv[3])
r = (ld(1, host.encode()) + ld(3, bytes([10, 77, 1, 2])) +
     ld(4, name.encode()) + varint(5 << 3) + varint(60) +
     varint(6 << 3 | 1) + struct.pack("<Q", t))
sys.stdout.buffer.write(varint(1 << 3) + varint(1) + ld(18, r))
PY
produce() {	# KEY FILE
	kcat -P -b "$BOOT" -t causeway.meta -k "$1" "$2" ||
		fail "kcat could not produce to causeway.meta"
}
python3 "$T_TMP/dnsname.py" h-old old.example.test \
	$((now - 3600000000000)) >"$T_TMP/old.bin"
produce h-old "$T_TMP/old.bin"
printf 'not a record' >"$T_TMP/bad.bin"
produce h-bad "$T_TMP/bad.bin"

"$CW" correlate --kafka "$BOOT" --group g --from-beginning --no-paths \
	--idle 4s --snapshot-every 500ms -o "$T_TMP/member" >/dev/null \
	2>"$T_TMP/correlate.log" ||
	fail "correlate failed: $(cat "$T_TMP/correlate.log")"
# The member's own snapshot of the fleet graph names it too.
check_eq "the member's edges.json" "$(python3 - "$T_TMP/member/edges.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
print(" ".join(n.get("dns_name", "-") for n in g["nodes"]
               if n["kind"] == "external" and n["addr"] == "10.77.1.2"
               and n["port"] == 8080))
PY
)" api.example.test

# name_of: the dns_name of the external vertex 10.77.1.2 in the graph.
name_of() {
	"$CW" graph --kafka "$BOOT" --group g --format json \
		>"$T_TMP/graph.json" 2>"$T_TMP/graph.err" ||
		fail "graph --kafka failed: $(cat "$T_TMP/graph.err")"
	python3 - "$T_TMP/graph.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
ext = [n for n in v["nodes"] if n["kind"] == "external" and
       n.get("addr") == "10.77.1.2"]
assert ext, v["nodes"]
print(ext[0].get("dns_name", ""))
PY
}
check_eq "the agent's name, over an older host's" "$(name_of)" \
	api.example.test
grep -q "causeway.meta': skipped 1 keyed records" "$T_TMP/graph.err" ||
	fail "the record that is none was not counted: $(cat "$T_TMP/graph.err")"
python3 "$T_TMP/dnsname.py" h-new new.example.test \
	$((now + 3600000000000)) >"$T_TMP/new.bin"
produce h-new "$T_TMP/new.bin"
check_eq "a newer host's name" "$(name_of)" new.example.test
echo ok
