#!/bin/bash
# A short connection whose first SYN was lost: the client end is first
# touched at connect, the server end a second later (the initial RTO) at
# SYN_RECV, and both close a few ms after that.  Each end's record must
# still say it lived until its close, or the two never overlap and never
# pair.  A rule in the server's INPUT chain drops the first SYN of each
# connection, over IPv4 and IPv6, so this happens on every run.  (Over
# IPv6 the fresh link's first neighbour solicitation also tends to go
# unanswered, which sends the first SYN a second late: the gap grows to 2 s.)
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nginx curl python3 iptables ip6tables

two_hosts
root=$T_TMP/www
mkdir -p "$root"
head -c 20000 /dev/urandom >"$root/f"
# family: firewall tool, server address (as nginx and curl take it), port.
families=("iptables $SRV_IP 80" "ip6tables [$SRV_IP6] 81")
for f in "${families[@]}"; do
	read -r fw addr port <<<"$f"
	# The 1st, 3rd... SYN to the port: each connection's first try.
	ip netns exec "$SRV" "$fw" -A INPUT -p tcp --syn --dport "$port" \
		-m statistic --mode nth --every 2 --packet 0 -j DROP ||
		skip "$fw statistic match unavailable"
	nginx_start "$SRV" "$addr" "$port" "$root"
done

out=$T_TMP/out
# The agent's default: bytes from the kernel's counters, no per-call program.
agent_start "$out" --hooks sampled
# Both at once: one initial RTO for the two.
for f in "${families[@]}"; do
	read -r fw addr port <<<"$f"
	ip netns exec "$CLI" curl -s -g -o /dev/null -w \
		'%{size_request} %{size_header} %{size_download} %{time_connect}\n' \
		"http://$addr:$port/f" >"$T_TMP/$fw.curl" &
	echo $! >"$T_TMP/$fw.pid"
done
for f in "${families[@]}"; do
	wait "$(cat "$T_TMP/${f%% *}.pid")" || fail "curl failed (${f%% *})"
done
sleep 0.3
agent_stop "$out" >/dev/null

for f in "${families[@]}"; do
	read -r fw addr port <<<"$f"
	dropped=$(ip netns exec "$SRV" "$fw" -nvxL INPUT |
		awk '$3 == "DROP" {print $1}')
	check_eq "$fw: first SYNs dropped" "$dropped" 1
	read -r sent hdr body secs <"$T_TMP/$fw.curl"
	note "$fw: curl connected after ${secs}s"
	read -r c2s s2c paired <<<"$(edge "$out" --client-pid \
		"$(cat "$T_TMP/$fw.pid")" --server-comm nginx \
		bytes_c2s bytes_s2c paired)"
	check_eq "$fw: paired" "$paired" 1
	check_within "$fw: bytes curl -> nginx" "$c2s" "$sent" 0.5
	check_within "$fw: bytes nginx -> curl" "$s2c" "$((hdr + body))" 0.5
done
echo ok
