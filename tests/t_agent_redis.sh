#!/bin/bash
# redis-server in one test host, a client sending a known number of SET
# commands on one connection from another: bytes each way match what the
# client's socket calls returned, and N requests give N messages each way.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd redis-server python3

two_hosts
ip netns exec "$SRV" redis-server --bind "$SRV_IP" --port 6379 --save '' \
	--appendonly no --protected-mode no --daemonize no \
	--dir "$T_TMP" >"$T_TMP/redis.log" 2>&1 &
bg_pid $!
wait_port "$SRV" 6379
REDIS_PID=$(ip netns exec "$SRV" ss -Htlnp 'sport = :6379' |
	sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1)

out=$T_TMP/out
# Sampled hooks, with one window over the whole test: messages are
# counted exactly inside a window; bytes come from the kernel's counters.
agent_start "$out" --hooks sampled --window 1h
N=500
res=$(ip netns exec "$CLI" $TRAFFIC redis "$SRV_IP" 6379 $N) ||
	fail "redis client failed"
sleep 0.3
agent_stop "$out" >/dev/null

read -r c2s s2c mc2s ms2c spid <<<"$(edge "$out" --client-pid \
	"$(json_get "$res" pid)" --server-comm redis-server bytes_c2s \
	bytes_s2c msgs_c2s msgs_s2c server.pid)"
check_eq "server process" "$spid" "$REDIS_PID"
check_within "bytes client -> redis" "$c2s" "$(json_get "$res" sent)" 0.5
check_within "bytes redis -> client" "$s2c" "$(json_get "$res" received)" 0.5
for m in "$mc2s" "$ms2c"; do
	[ "$m" -ge $((N - 1)) ] && [ "$m" -le $((N + 1)) ] ||
		fail "messages: $mc2s / $ms2c, want $N +- 1 each way"
done
note "messages: $mc2s / $ms2c for $N commands"
echo ok
