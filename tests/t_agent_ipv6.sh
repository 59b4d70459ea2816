#!/bin/bash
# The same over IPv6: nginx on [fd77:1::2]:80, curl from fd77:1::1.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd nginx curl python3

two_hosts
root=$T_TMP/www
mkdir -p "$root"
head -c 200000 /dev/urandom >"$root/f"
nginx_start "$SRV" "[$SRV_IP6]" 80 "$root"

out=$T_TMP/out
# The agent's default: bytes from the kernel's counters, no per-call program.
agent_start "$out" --hooks sampled
ip netns exec "$CLI" curl -s -g -o /dev/null -o /dev/null \
	-w '%{size_request} %{size_header} %{size_download}\n' \
	"http://[$SRV_IP6]/f" "http://[$SRV_IP6]/f" >"$T_TMP/curl.txt" ||
	fail "curl failed"
read -r sent got <<<"$(awk '{s += $1; r += $2 + $3} END {print s, r}' "$T_TMP/curl.txt")"
sleep 0.3
agent_stop "$out" >/dev/null

read -r c2s s2c paired <<<"$(edge "$out" --client-comm curl \
	--server-comm nginx bytes_c2s bytes_s2c paired)"
check_eq "paired over IPv6" "$paired" 1
check_within "bytes curl -> nginx" "$c2s" "$sent" 0.5
check_within "bytes nginx -> curl" "$s2c" "$got" 0.5
grep -q "\"laddr\":\"$CLI_IP6\"" "$out/conns.jsonl" ||
	fail "no record with the client's IPv6 address"
echo ok
