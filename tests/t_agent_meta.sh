#!/bin/bash
# Host and process metadata on causeway.meta: an agent in a test host,
# publishing to its embedded broker with --meta-every 1s, while a client
# there keeps a connection open and alive.  `causeway dump --topic meta` reads back
# host records (at start and then every second) whose cores, memory and
# kernel are this machine's, and process records for the client every
# interval while it lives, with its pid, start time and resident memory as
# /proc gives them (it is in no container), its CPU time never going back.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3

two_hosts
ip netns exec "$CLI" "$CW" agent --kafka embedded --spool "$T_TMP/spool" \
	--netns "$(ns_inode "$CLI")" --host cli-host --interval 200ms \
	--samples-every 0 --meta-every 1s 2>"$T_TMP/agent.log" &
AGENT=$!
bg_pid $AGENT
for _ in $(seq 1 200); do
	grep -qs "agent on host" "$T_TMP/agent.log" && break
	kill -0 $AGENT 2>/dev/null || fail "agent exited: $(cat "$T_TMP/agent.log")"
	sleep 0.05
done
BOOT=$(sed -n 's/.*embedded broker at //p' "$T_TMP/agent.log")
[ -n "$BOOT" ] || fail "no embedded broker: $(cat "$T_TMP/agent.log")"

ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 7500 &
bg_pid $!
wait_port "$SRV" 7500
# One connection, traffic in two phases: the client lives on between them.
ip netns exec "$CLI" $TRAFFIC phases "$SRV_IP" 7500 "$T_TMP/go" 2 5000 \
	>"$T_TMP/client.out" &
bg_pid $!
wait_file "$T_TMP/client.out"
PID=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["pid"])' "$T_TMP/client.out")
[ -n "$PID" ] || fail "the client printed no pid"
touch "$T_TMP/go.1"
wait_file "$T_TMP/go.1.done"
# The client's own numbers while it waits (idle: they stand still).
TICK=$(getconf CLK_TCK)
START=$(python3 -c 'import sys
s = open("/proc/%s/stat" % sys.argv[1]).read()
print(int(s[s.rindex(")") + 2:].split()[19]) * (10**9 // int(sys.argv[2])))' "$PID" "$TICK")
RSS=$(($(awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status") * 1024))
note "client pid $PID, start $START ns, rss $RSS bytes"

# The broker lives in the agent: read the topic while it runs, until the
# agent stops (then nothing more comes; the wait is long because a loaded
# machine can keep a new group member waiting for seconds).
ip netns exec "$CLI" "$CW" dump --kafka "$BOOT" --topic meta \
	--from-beginning --timeout 15s >"$T_TMP/meta.jsonl" 2>"$T_TMP/dump.log" &
DUMP=$!
bg_pid $DUMP
# Each phase changes the connection: two records name the client, one
# process record must come of them.  A few host periods meanwhile.
sleep 3
touch "$T_TMP/go.2"
wait_file "$T_TMP/go.2.done"
sleep 0.5
kill -TERM $AGENT
wait $AGENT || fail "agent exit status $?: $(cat "$T_TMP/agent.log")"
wait $DUMP || fail "dump exit status $?: $(cat "$T_TMP/dump.log")"
STATS=$(sed -n 's/.*meta: \([0-9]*\) host and \([0-9]*\) process records published, \([0-9]*\) failed.*/\1 \2 \3/p' "$T_TMP/agent.log")
[ -n "$STATS" ] || fail "the agent reported no metadata: $(tail -n 5 "$T_TMP/agent.log")"

python3 - "$T_TMP/meta.jsonl" "$PID" "$START" "$RSS" "$(nproc)" \
	"$(($(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024))" \
	"$(uname -r)" "$(hostname)" "$("$CW" --version)" "$TICK" <<'PY' ||
import json, sys
path, pid, start, rss, cpus, mem, kernel, hostname, version, tick_hz = sys.argv[1:]
recs = [json.loads(l) for l in open(path)]
hosts = [r for r in recs if r["kind"] == "host"]
procs = [r for r in recs if r["kind"] == "process"]
assert len(hosts) + len(procs) == len(recs), [r["kind"] for r in recs]
# At start and every second for about four seconds.
assert len(hosts) >= 3, "%d host records" % len(hosts)
for h in hosts:
    assert h["host"] == "cli-host", h
    assert h["cpus"] == int(cpus), (h["cpus"], cpus)
    assert h["mem_bytes"] == int(mem), (h["mem_bytes"], mem)
    assert h["kernel"] == kernel and h["hostname"] == hostname, h
    assert "causeway " + h["agent_version"] == version, h
seqs = [r["seq"] for r in recs]
assert len(seqs) == len(set(seqs)) and min(seqs) == 1, seqs
ids = [(p["process"]["pid"], p["process"]["start_ns"]) for p in procs]
# A sample of each live process every interval: the client's, over the
# seconds it lived.  Metadata has no key, so partitions interleave: in the
# agent's order (seq), the samples' times rise and the CPU time never goes
# back.
mine = sorted((p for p in procs if p["process"]["pid"] == int(pid)),
              key=lambda p: p["seq"])
assert len(mine) >= 3, "client %s: %d records in %s" % (pid, len(mine), ids)
times = [p["time_ns"] for p in mine]
assert times == sorted(times) and len(set(times)) == len(times), times
cpus = [p["cpu_ns"] for p in mine]
assert cpus == sorted(cpus), cpus
assert len(set(p["process"]["start_ns"] for p in mine)) == 1, mine
# Outside any container: its own figures.
assert all(p["source"] == "proc" for p in mine), [p["source"] for p in mine]
p = mine[-1]
assert p["host"] == "cli-host" and p["process"]["comm"] == "python3", p
# /proc gives the start in clock ticks, the kernel's record in ns.
tick = 10**9 // int(tick_hz)
assert p["process"]["start_ns"] // tick * tick == int(start), (p["process"], start)
# Read a moment apart from ours, by the same kernel counters.
assert abs(p["rss_bytes"] - int(rss)) <= int(rss) // 10, (p["rss_bytes"], rss)
assert p["cpu_ns"] > 0, p
print("%d host records, %d process records; client rss %d (proc %s)" %
      (len(hosts), len(procs), p["rss_bytes"], rss))
open(path + ".counts", "w").write("%d %d\n" % (len(hosts), len(procs)))
PY
	fail "metadata differs from the machine's: $(head -c 2000 "$T_TMP/meta.jsonl")"
read -r NHOST NPROC NFAIL <<<"$STATS"
check_eq "meta records failed" "$NFAIL" 0
# The last ones may go out as the broker stops: the agent's counts can
# only be larger than what the dump read.
read -r DHOST DPROC <"$T_TMP/meta.jsonl.counts"
[ "$NHOST" -ge "$DHOST" ] || fail "agent published $NHOST host records, dump read $DHOST"
[ "$NPROC" -ge "$DPROC" ] || fail "agent published $NPROC process records, dump read $DPROC"
echo ok
