#!/bin/bash
# nginx in one test host serves files of known sizes to curl in another,
# over one keep-alive connection.  The agent must show curl -> nginx with
# the right processes and roles, bytes each way within 0.5% of what curl
# reports, and one message each way per GET (plus or minus one).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nginx curl python3

two_hosts
root=$T_TMP/www
mkdir -p "$root"
sizes="1024 65536 1048576 5000000 333"
for s in $sizes; do head -c "$s" /dev/urandom >"$root/f$s"; done
nginx_start "$SRV" "$SRV_IP" 80 "$root"

out=$T_TMP/out
agent_start "$out" --netns "$(ns_inode "$CLI")" --hooks sampled
# The agent above watches only the client host; a second one watches
# both, which is what the pairing test below needs.
AGENT1=$AGENT_PID
out2=$T_TMP/out2
agent_start "$out2"

urls=""
n=0
for rep in 1 2; do
	for s in $sizes; do urls="$urls http://$SRV_IP/f$s"; n=$((n + 1)); done
done
# One curl, many URLs: curl reuses the connection for all of them.
ip netns exec "$CLI" curl -s -o /dev/null -o /dev/null -o /dev/null \
	-o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
	-o /dev/null -o /dev/null \
	-w '%{size_request} %{size_header} %{size_download} %{num_connects}\n' \
	$urls >"$T_TMP/curl.txt" &
CURL_PID=$!
wait $CURL_PID || fail "curl failed"
read -r sent got body conns <<<"$(awk '{s += $1; r += $2 + $3; b += $3;
	c += $4} END {print s, r, b, c}' "$T_TMP/curl.txt")"
check_eq "curl connections" "$conns" 1
check_eq "bodies downloaded" "$body" "$(( 2 * (1024 + 65536 + 1048576 + 5000000 + 333) ))"
sleep 0.3

agent_stop "$out2" >/dev/null
AGENT_PID=$AGENT1
agent_stop "$out" >/dev/null

read -r c2s s2c mc2s ms2c nconn ccomm scomm cpid spid <<<"$(edge "$out2" \
	--client-comm curl --server-comm nginx bytes_c2s bytes_s2c msgs_c2s \
	msgs_s2c conns client.comm server.comm client.pid server.pid)"
check_eq "client process" "$ccomm[$cpid]" "curl[$CURL_PID]"
check_eq "server process" "$scomm[$spid]" "nginx[$NGINX_PID]"
check_eq "connections" "$nconn" 1
check_within "bytes curl -> nginx" "$c2s" "$sent" 0.5
check_within "bytes nginx -> curl" "$s2c" "$got" 0.5
[ "$mc2s" -ge $((n - 1)) ] && [ "$mc2s" -le $((n + 1)) ] ||
	fail "messages curl -> nginx: $mc2s, want $n +- 1"
[ "$ms2c" -ge $((n - 1)) ] && [ "$ms2c" -le $((n + 1)) ] ||
	fail "messages nginx -> curl: $ms2c, want $n +- 1"
note "messages: $mc2s / $ms2c for $n GETs"
# Both ends were watched, so what one sent the other received.
read -r paired d1 d2 <<<"$(edge "$out2" --client-comm curl \
	--server-comm nginx paired unreceived_c2s unreceived_s2c)"
check_eq "paired ends" "$paired" 1
check_eq "sent minus received c->s" "$d1" 0
check_eq "sent minus received s->c" "$d2" 0

# The namespace-scoped agent saw only curl's end: nginx is an address.
read -r c2s1 slabel <<<"$(edge "$out" --client-comm curl bytes_c2s server.label)"
check_eq "scoped agent: server is external" "$slabel" "$SRV_IP:80"
check_within "scoped agent: bytes curl -> nginx" "$c2s1" "$sent" 0.5
grep -q '"comm":"nginx"' "$out/conns.jsonl" &&
	fail "scoped agent recorded nginx's end from another namespace"
echo ok
