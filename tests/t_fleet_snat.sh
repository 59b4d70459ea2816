#!/bin/bash
# Source NAT: the client host translates its connections' source on the
# way out (an iptables SNAT rule in its namespace, to a second address
# and a port range its sockets never use), so the server sees the client
# at another address and port than the client's socket has.  The client's
# agent reads where conntrack sends the replies and rewrites its records'
# local side to it (nat=true), so the two ends pair: edges go from the
# client process to the server process, never to external nodes, with the
# bytes each way as the applications counted them.  The same code path
# serves conntrack's implicit source-port remap (a translated tuple that
# clashes with one in TIME_WAIT), which cannot be made to happen on cue.
# Covered: 100 short connections and a long one; a connection to a port
# with no rule is the control (nat=false, its own address and port).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 iptables

two_hosts
NAT_IP=10.77.1.11
ip -n "$CLI" addr add $NAT_IP/24 dev "$LINK_A" ||
	fail "unable to add $NAT_IP in $CLI"
# The sockets' own ports and the translated ones cannot overlap: every
# translated connection gets a new port, on cue.
ip netns exec "$CLI" sysctl -qw net.ipv4.ip_local_port_range="50000 50999" ||
	fail "unable to set the port range in $CLI"
ip netns exec "$CLI" iptables -t nat -A POSTROUTING -d "$SRV_IP/32" -p tcp \
	--dport 7300:7301 -j SNAT --to-source $NAT_IP:40000-40999 ||
	skip "iptables cannot add a nat rule in a namespace here"
note "iptables: $(iptables --version) (rules only in $CLI)"
iptables -t nat -S 2>/dev/null | grep -q -e "$NAT_IP" &&
	fail "a rule leaked into the host's own nat table"

ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7300 &
ECHO_PID=$!
bg_pid $ECHO_PID
ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 7301 &
bg_pid $!
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7302 &
DIRECT_SRV_PID=$!
bg_pid $DIRECT_SRV_PID
for p in 7300 7301 7302; do wait_port "$SRV" $p; done

agent_start "$T_TMP/cli" --netns "$(ns_inode "$CLI")" --interval 100ms
AGENT_CLI=$AGENT_PID
agent_start "$T_TMP/srv" --netns "$(ns_inode "$SRV")" --interval 100ms
AGENT_SRV=$AGENT_PID

# The long connection: a few exchanges, collections apart, so the end has
# records before its close record.
PHASES=3 BYTES=200000
ip netns exec "$CLI" $TRAFFIC phases "$SRV_IP" 7301 "$T_TMP/go" $PHASES \
	$BYTES >"$T_TMP/long.json" &
LONG=$!
bg_pid $LONG
wait_file "$T_TMP/long.json"
LONG_PID=$(json_get "$(cat "$T_TMP/long.json")" pid)
for i in $(seq 1 $PHASES); do
	sleep 0.3
	touch "$T_TMP/go.$i"
	wait_file "$T_TMP/go.$i.done"
done
wait $LONG || fail "the long client failed"

N=100
SHORT=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7300 $N 100) ||
	fail "the short clients failed"
DIRECT=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7302 20 100) ||
	fail "the direct client failed"
sleep 0.3
AGENT_PID=$AGENT_CLI agent_stop "$T_TMP/cli" >/dev/null
AGENT_PID=$AGENT_SRV agent_stop "$T_TMP/srv" >/dev/null

# records PID: "ends records nat-records closed-records laddrs lo hi" of
# the client's own records: its local addresses and the range of its ports.
records() {
	python3 - "$T_TMP/cli/conns.jsonl" "$1" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mine = [r for r in recs if r.get("process") and
        r["process"]["pid"] == int(sys.argv[2]) and r["role"] == "client"]
ports = [r["lport"] for r in mine] or [0]
print(len({r["cookie"] for r in mine}), len(mine), sum(r["nat"] for r in mine),
      sum(r["closed"] for r in mine),
      ",".join(sorted({r["laddr"] for r in mine})), min(ports), max(ports))
PY
}
# check_ends WHAT PID ENDS NAT ADDR LO HI
check_ends() {
	local ends n nat closed addrs lo hi
	read -r ends n nat closed addrs lo hi <<<"$(records "$2")"
	check_eq "$1: ends" "$ends" "$3"
	check_eq "$1: closed" "$closed" "$3"
	if [ "$4" = yes ]; then
		check_eq "$1: records with nat=true ($n records)" "$nat" "$n"
	else
		check_eq "$1: records with nat=true" "$nat" 0
	fi
	check_eq "$1: local address" "$addrs" "$5"
	[ "$lo" -ge "$6" ] && [ "$hi" -le "$7" ] ||
		fail "$1: local ports $lo..$hi, want within $6..$7"
	note "$1: local ports $lo..$hi"
}
check_ends "long connection" "$LONG_PID" 1 yes $NAT_IP 40000 40999
[ "$(records "$LONG_PID" | cut -d' ' -f2)" -ge 2 ] ||
	fail "long connection: want periodic records and the close record"
check_ends "short connections" "$(json_get "$SHORT" pid)" $N yes $NAT_IP \
	40000 40999
check_ends "direct connections (control)" "$(json_get "$DIRECT" pid)" 20 no \
	"$CLI_IP" 50000 50999

# Both hosts' records together: every connection pairs.
"$CW" graph --format json -o "$T_TMP/graph.json" "$T_TMP/cli/conns.jsonl" \
	"$T_TMP/srv/conns.jsonl" || fail "causeway graph failed"
G=$T_TMP/graph.json
python3 - "$G" <<'PY' || fail "external nodes: some end did not pair"
import json, sys
g = json.load(open(sys.argv[1]))
bad = [n["name"] for n in g["nodes"] if n["kind"] != "process"]
sys.exit("nodes: " + ", ".join(bad) if bad else 0)
PY
# check_edge WHAT CLIENT_PID CONNS SENT RECEIVED [SERVER_PID]
check_edge() {
	local conns paired c2s s2c kind pid
	read -r conns paired c2s s2c kind pid <<<"$(python3 \
		"$CW_ROOT/tests/lib/edges.py" "$G" --client-pid "$2" conns paired \
		bytes_c2s bytes_s2c server.kind server.pid)" ||
		fail "$1: no edge from client[$2]"
	check_eq "$1: server is a process" "$kind" process
	[ $# -ge 6 ] && check_eq "$1: server process" "$pid" "$6"
	check_eq "$1: connections" "$conns" "$3"
	check_eq "$1: paired" "$paired" "$3"
	check_within "$1: bytes client -> server" "$c2s" "$4" 0.5
	check_within "$1: bytes server -> client" "$s2c" "$5" 0.5
}
check_edge "long, translated" "$LONG_PID" 1 $((PHASES * BYTES)) \
	$((PHASES * BYTES))
check_edge "short, translated" "$(json_get "$SHORT" pid)" $N \
	"$(json_get "$SHORT" sent)" "$(json_get "$SHORT" received)" $ECHO_PID
check_edge "direct" "$(json_get "$DIRECT" pid)" 20 \
	"$(json_get "$DIRECT" sent)" "$(json_get "$DIRECT" received)" \
	$DIRECT_SRV_PID
echo ok
