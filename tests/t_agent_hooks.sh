#!/bin/bash
# --hooks sampled: the per-call programs (sock_send_length,
# sock_recv_length) are not attached outside a timing window, so they never
# run while traffic flows (their links are absent and, with bpf_stats on,
# their run counts stay zero), yet the bytes are exact (from the kernel's
# TCP counters) and the server end has its owner; inside a window they are
# attached, run, and count N requests as N messages each way.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd redis-server python3 bpftool

stats0=$(cat /proc/sys/kernel/bpf_stats_enabled)
on_exit "echo $stats0 >/proc/sys/kernel/bpf_stats_enabled"
echo 1 >/proc/sys/kernel/bpf_stats_enabled

two_hosts
ip netns exec "$SRV" redis-server --bind "$SRV_IP" --port 6379 --save '' \
	--appendonly no --protected-mode no --daemonize no \
	--dir "$T_TMP" >"$T_TMP/redis.log" 2>&1 &
bg_pid $!
wait_port "$SRV" 6379
REDIS_PID=$(ip netns exec "$SRV" ss -Htlnp 'sport = :6379' |
	sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1)

# io_state PID: "LINKS RUNS": per-call links the agent PID holds, and the
# summed run count of its per-call programs (their ids from its fdinfo).
io_state() {
	python3 - "$1" <<'PY'
import glob, json, re, subprocess, sys
pid = sys.argv[1]
held, linked = set(), []
for f in glob.glob("/proc/%s/fdinfo/*" % pid):
    try:
        t = open(f).read()
    except OSError:
        continue
    m = re.search(r"^prog_id:\s*(\d+)", t, re.M)
    if not m:
        continue
    (linked if "link_id:" in t else []).append(int(m.group(1)))
    held.add(int(m.group(1)))
progs = json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))
io = {p["id"]: p for p in progs
      if p.get("name") in ("cw_tp_send", "cw_tp_recv") and p["id"] in held}
if len(io) != 2:
    print("agent %s holds %d per-call programs, want 2" % (pid, len(io)))
    sys.exit(1)
print(sum(1 for i in linked if i in io),
      sum(p.get("run_cnt", 0) for p in io.values()))
PY
}

# one_run TAG ARGS...: agent with ARGS, N redis commands; sets links and
# runs (the io state after the traffic) and mc2s, ms2c (the messages).
N=300
one_run() {
	local out=$T_TMP/out$1 res st
	shift
	agent_start "$out" "$@"
	res=$(ip netns exec "$CLI" $TRAFFIC redis "$SRV_IP" 6379 $N) ||
		fail "redis client failed"
	st=$(io_state "$AGENT_PID") || fail "$st"
	sleep 0.3
	agent_stop "$out" >/dev/null
	read -r c2s s2c mc2s ms2c spid <<<"$(edge "$out" --client-pid \
		"$(json_get "$res" pid)" --server-comm redis-server bytes_c2s \
		bytes_s2c msgs_c2s msgs_s2c server.pid)"
	check_eq "server process" "$spid" "$REDIS_PID"
	check_within "bytes client -> redis" "$c2s" "$(json_get "$res" sent)" 0.5
	check_within "bytes redis -> client" "$s2c" \
		"$(json_get "$res" received)" 0.5
	read -r links runs <<<"$st"
}

# Outside any window: no link, no run, no message counted; bytes exact.
one_run A --hooks sampled
note "sampled, no window: links $links runs $runs msgs $mc2s/$ms2c"
check_eq "per-call links outside a window" "$links" 0
check_eq "per-call runs outside a window" "$runs" 0
check_eq "messages counted outside a window" "$mc2s/$ms2c" "0/0"

# Inside a window: attached, running, every message counted.
one_run B --hooks sampled --window 1h
note "sampled, in a window: links $links runs $runs msgs $mc2s/$ms2c"
check_eq "per-call links inside a window" "$links" 2
[ "$runs" -ge $((2 * N)) ] || fail "per-call runs inside a window: $runs"
for m in "$mc2s" "$ms2c"; do
	[ "$m" -ge $((N - 1)) ] && [ "$m" -le $((N + 1)) ] ||
		fail "messages in a window: $mc2s / $ms2c, want $N +- 1"
done

# --hooks always: attached with no window, every message counted.
one_run C --hooks always
note "always: links $links runs $runs msgs $mc2s/$ms2c"
check_eq "per-call links with --hooks always" "$links" 2
for m in "$mc2s" "$ms2c"; do
	[ "$m" -ge $((N - 1)) ] && [ "$m" -le $((N + 1)) ] ||
		fail "messages with --hooks always: $mc2s / $ms2c, want $N +- 1"
done
echo ok
