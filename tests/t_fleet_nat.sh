#!/bin/bash
# NAT: the client host reaches its servers through virtual addresses (an
# iptables DNAT rule in its namespace, as kube-proxy does for a ClusterIP).
# The client's agent undoes the DNAT from conntrack's reply tuple, so its
# records name the real server (nat=true) and the two ends pair: edges go
# from the client process to the real server process, never to an external
# node for the virtual address, with bytes each way as the applications
# counted them.  Covered: a long connection (records every interval, then
# its close record) and 200 short ones (opened and closed between two
# collections: resolved from the close record), over IPv4 and IPv6; a
# direct connection is the control (nat=false).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 iptables ip6tables

two_hosts
VIP=10.77.99.1 VIP6=fd77:99::1
# Only the client namespace's tables: the host's are never touched.
nat_rule() {	# VPORT RPORT
	ip netns exec "$CLI" iptables -t nat -A OUTPUT -d $VIP/32 -p tcp \
		--dport "$1" -j DNAT --to-destination "$SRV_IP:$2"
}
ip -n "$CLI" route add $VIP/32 via "$SRV_IP" ||
	fail "unable to route $VIP in $CLI"
nat_rule 80 8080 || skip "iptables cannot add a nat rule in a namespace here"
nat_rule 70 7000 || fail "unable to add the second DNAT rule"
ip -n "$CLI" -6 route add $VIP6/128 via "$SRV_IP6" &&
	ip netns exec "$CLI" ip6tables -t nat -A OUTPUT -d $VIP6/128 -p tcp \
		--dport 70 -j DNAT --to-destination "[$SRV_IP6]:7001" ||
	fail "unable to add the IPv6 DNAT rule"
note "iptables: $(iptables --version) (rules only in $CLI)"
{ iptables -t nat -S; ip6tables -t nat -S; } 2>/dev/null |
	grep -q -e "$VIP" -e "$VIP6" &&
	fail "a rule leaked into the host's own nat table"

ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 8080 &
bg_pid $!
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7000 &
ECHO_PID=$!
bg_pid $ECHO_PID
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP6" 7001 &
ECHO6_PID=$!
bg_pid $ECHO6_PID
# The control has a port of its own: a direct connection to 7000 can take
# the client port of a translated one still in TIME_WAIT, and conntrack
# then remaps its source port on the wire, which is NAT of another kind.
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7002 &
DIRECT_SRV_PID=$!
bg_pid $DIRECT_SRV_PID
wait_port "$SRV" 8080
wait_port "$SRV" 7000
wait_port "$SRV" 7001
wait_port "$SRV" 7002

# One agent per host, each scoped to its namespace.
agent_start "$T_TMP/cli" --netns "$(ns_inode "$CLI")" --interval 100ms
AGENT_CLI=$AGENT_PID
agent_start "$T_TMP/srv" --netns "$(ns_inode "$SRV")" --interval 100ms
AGENT_SRV=$AGENT_PID

# The long connection: PHASES exchanges of BYTES each way, a few
# collections apart, so the end has records before its close record.
PHASES=4 BYTES=250000
ip netns exec "$CLI" $TRAFFIC phases $VIP 80 "$T_TMP/go" $PHASES $BYTES \
	>"$T_TMP/long.json" &
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

N=200
SHORT=$(ip netns exec "$CLI" $TRAFFIC short $VIP 70 $N 100) ||
	fail "the short clients failed"
SHORT6=$(ip netns exec "$CLI" $TRAFFIC short $VIP6 70 20 100) ||
	fail "the IPv6 short clients failed"
DIRECT=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7002 20 100) ||
	fail "the direct client failed"
sleep 0.3
AGENT_PID=$AGENT_CLI agent_stop "$T_TMP/cli" >/dev/null
AGENT_PID=$AGENT_SRV agent_stop "$T_TMP/srv" >/dev/null

# records PID: "ends records nat-records closed-records addr:port,..." of
# the client's own records (an end may have several: cumulative counters).
records() {
	python3 - "$T_TMP/cli/conns.jsonl" "$1" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mine = [r for r in recs if r.get("process") and
        r["process"]["pid"] == int(sys.argv[2]) and r["role"] == "client"]
peers = sorted({"%s:%d" % (r["raddr"], r["rport"]) for r in mine})
print(len({r["cookie"] for r in mine}), len(mine), sum(r["nat"] for r in mine),
      sum(r["closed"] for r in mine), ",".join(peers))
PY
}
read -r ends n nat closed peers <<<"$(records "$LONG_PID")"
check_eq "long connection: ends" "$ends" 1
[ "$n" -ge 2 ] || fail "long connection: $n records, want periodic ones and the close record"
check_eq "long connection: records with nat=true ($n records)" "$nat" "$n"
check_eq "long connection: close record" "$closed" 1
check_eq "long connection: remote end" "$peers" "$SRV_IP:8080"
read -r ends n nat closed peers <<<"$(records "$(json_get "$SHORT" pid)")"
check_eq "short connections: ends" "$ends" $N
check_eq "short connections: closed" "$closed" $N
check_eq "short connections: records with nat=true ($n records)" "$nat" "$n"
check_eq "short connections: remote end" "$peers" "$SRV_IP:7000"
read -r ends n nat closed peers <<<"$(records "$(json_get "$SHORT6" pid)")"
check_eq "IPv6 short connections: ends" "$ends" 20
check_eq "IPv6 short connections: records with nat=true ($n records)" "$nat" "$n"
check_eq "IPv6 short connections: remote end" "$peers" "$SRV_IP6:7001"
read -r ends n nat closed peers <<<"$(records "$(json_get "$DIRECT" pid)")"
check_eq "direct connections (control): ends" "$ends" 20
check_eq "direct connections (control): nat=true" "$nat" 0
check_eq "direct connections (control): remote end" "$peers" "$SRV_IP:7002"

# Both hosts' records together: every connection pairs to the real server.
"$CW" graph --format json -o "$T_TMP/graph.json" "$T_TMP/cli/conns.jsonl" \
	"$T_TMP/srv/conns.jsonl" || fail "causeway graph failed"
G=$T_TMP/graph.json
python3 - "$G" <<'PY' || fail "external nodes: some end did not pair"
import json, sys
g = json.load(open(sys.argv[1]))
bad = [n["name"] for n in g["nodes"] if n["kind"] != "process"]
sys.exit("nodes: " + ", ".join(bad) if bad else 0)
PY
# check_edge WHAT CLIENT_PID SERVER_PID CONNS SENT RECEIVED: the edge from
# the client process to the server process (SERVER_PID, or with "-" the
# echo-stream child that served port 8080, as the server's agent saw it).
check_edge() {
	local conns paired c2s s2c kind pid want
	read -r conns paired c2s s2c kind pid <<<"$(python3 \
		"$CW_ROOT/tests/lib/edges.py" "$G" --client-pid "$2" conns paired \
		bytes_c2s bytes_s2c server.kind server.pid)" ||
		fail "$1: no edge from client[$2]"
	check_eq "$1: server is a process" "$kind" process
	want=$3
	[ "$want" = - ] && want=$(python3 - "$T_TMP/srv/conns.jsonl" <<'PY'
import json, sys
print(",".join(sorted({str(r["process"]["pid"]) for r in map(json.loads, open(sys.argv[1]))
                       if r["lport"] == 8080 and r.get("process")})))
PY
)
	check_eq "$1: server process" "$pid" "$want"
	check_eq "$1: connections" "$conns" "$4"
	check_eq "$1: paired" "$paired" "$4"
	check_within "$1: bytes client -> server" "$c2s" "$5" 0.5
	check_within "$1: bytes server -> client" "$s2c" "$6" 0.5
}
check_edge "long via $VIP:80" "$LONG_PID" - 1 $((PHASES * BYTES)) \
	$((PHASES * BYTES))
check_edge "short via $VIP:70" "$(json_get "$SHORT" pid)" $ECHO_PID $N \
	"$(json_get "$SHORT" sent)" "$(json_get "$SHORT" received)"
check_edge "IPv6 short via [$VIP6]:70" "$(json_get "$SHORT6" pid)" $ECHO6_PID \
	20 "$(json_get "$SHORT6" sent)" "$(json_get "$SHORT6" received)"
check_edge "direct" "$(json_get "$DIRECT" pid)" $DIRECT_SRV_PID 20 \
	"$(json_get "$DIRECT" sent)" "$(json_get "$DIRECT" received)"
echo ok
