#!/bin/bash
# Soak: an agent and a correlator under steady churn for SOAK_SECS
# (default 600).  In a test host, bench/churn.c makes RATE short TCP
# connections a second (100 bytes each way) and holds LONG connections
# that exchange 512 bytes every 100 ms; `causeway agent --kafka` watches
# the host and publishes to `causeway broker` (the embedded broker), and
# `causeway correlate` consumes, pairs and infers paths from the timing
# windows.  Every EVERY seconds: resident memory and open files of the
# agent and the correlator, the TCP sockets in the host (what the agent's
# socket storage holds at most) and the entries of the agent's BPF hash
# maps (bpftool map dump).  At the end, from the processes' own counters:
# records made = produced = delivered (none spooled or lost) = applied by
# the correlator, for connection and timing records alike.
#
#   bench/run.sh bench_soak     (SOAK_SECS=600 RATE=2000 LONG=200 EVERY=10)
. "$(dirname "$0")/../tests/lib.sh"
need_root
need_cmd python3 bpftool gcc
SOAK_SECS=${SOAK_SECS:-600}
RATE=${RATE:-2000}
LONG=${LONG:-200}
EVERY=${EVERY:-10}
INTERVAL=${INTERVAL:-1s}

gcc -O2 -Wall -o "$T_TMP/churn" "$CW_ROOT/bench/churn.c" ||
	fail "unable to build bench/churn.c"
NS=$(ns_create soak)
# Client ends close first: TIME_WAIT ports come back after a second.
ip netns exec "$NS" sysctl -qw net.ipv4.tcp_tw_reuse=1 \
	net.ipv4.ip_local_port_range="10000 65000" net.core.somaxconn=4096
ip netns exec "$NS" "$T_TMP/churn" server 127.0.0.1 7700 &
bg_pid $!
wait_port "$NS" 7700

"$CW" broker >"$T_TMP/boot" 2>"$T_TMP/broker.log" &
bg_pid $!
wait_file "$T_TMP/boot"
BOOT=$(cat "$T_TMP/boot")
echo "embedded broker at $BOOT" >&2

"$CW" agent --kafka "$BOOT" --netns "$(ns_inode "$NS")" --host soak \
	--interval "$INTERVAL" --samples-every 0 --meta-every 0 \
	--spool "$T_TMP/spool" 2>"$T_TMP/agent.log" &
AGENT=$!
bg_pid $AGENT
for _ in $(seq 1 200); do
	grep -q "agent on host" "$T_TMP/agent.log" && break
	kill -0 $AGENT 2>/dev/null || fail "agent exited: $(cat "$T_TMP/agent.log")"
	sleep 0.05
done
"$CW" correlate --kafka "$BOOT" --from-beginning --idle 20s \
	-o "$T_TMP/corr" >"$T_TMP/corr.out" 2>"$T_TMP/corr.log" &
CORR=$!
bg_pid $CORR

# The BPF maps the agent holds: their ids, from its file descriptors.
map_ids() {
	grep -h '^map_id:' /proc/$AGENT/fdinfo/* 2>/dev/null | awk '{print $2}' |
		sort -un
}
# map_fill: "name=entries/max" for the agent's hash maps, the ones that
# fill with traffic (arrays are fixed, ring buffers drain, and bpftool
# cannot list socket storage: the sockets column stands in for it).
map_fill() {
	local id
	for id in $(map_ids); do
		bpftool -j map show id "$id"
		echo
	done | python3 -c '
import json, subprocess, sys
for line in sys.stdin:
    if not line.strip():
        continue
    m = json.loads(line)
    if "hash" not in m.get("type", ""):
        continue
    out = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(m["id"])],
                         capture_output=True, text=True).stdout
    n = len(json.loads(out)) if out.strip() else 0
    print("%s=%d/%d" % (m["name"], n, m["max_entries"]), end=" ")'
}
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
nfds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
# Full sockets only: a TIME_WAIT one is a minisock with no storage.
sockets() { ip netns exec "$NS" ss -tanH exclude time-wait | wc -l; }

ip netns exec "$NS" "$T_TMP/churn" client 127.0.0.1 7700 "$RATE" "$LONG" \
	"$SOAK_SECS" >"$T_TMP/churn.out" &
CHURN=$!
bg_pid $CHURN
samples=$T_TMP/samples
: >"$samples"
t0=$(date +%s)
while kill -0 $CHURN 2>/dev/null; do
	t=$(($(date +%s) - t0))
	kill -0 $AGENT 2>/dev/null || fail "agent died: $(tail -5 "$T_TMP/agent.log")"
	kill -0 $CORR 2>/dev/null || fail "correlator died: $(tail -5 "$T_TMP/corr.log")"
	echo "$t $(rss_kib $AGENT) $(nfds $AGENT) $(rss_kib $CORR) $(nfds $CORR)" \
		"$(sockets) $(map_fill)" >>"$samples"
	echo "sample: $(tail -n 1 "$samples")" >&2
	# The next sample EVERY seconds after this one began.
	while kill -0 $CHURN 2>/dev/null &&
		[ $(($(date +%s) - t0)) -lt $((t + EVERY)) ]; do
		sleep 0.5
	done
done
wait $CHURN || fail "churn failed"
sleep 3	# the last intervals' records go out
kill -INT $AGENT
wait $AGENT || fail "agent exit status $?: $(tail -5 "$T_TMP/agent.log")"
wait $CORR || fail "correlator exit status $?: $(tail -5 "$T_TMP/corr.log")"
cat "$T_TMP/churn.out" >&2
grep -E "stopped:|timing:|kafka:|meta:|records applied|paths:" \
	"$T_TMP/agent.log" "$T_TMP/corr.log" >&2

# The processes' own counters, from their report lines at exit.
counters=$T_TMP/counters
cat >"$T_TMP/counters.py" <<'EOF'
import re, sys
agent, corr = open(sys.argv[1]).read(), open(sys.argv[2]).read()
pats = {
    "conn_records": (agent, r"stopped: (\d+) records in \d+ collections; "
                     r"lost (\d+) close records, (\d+) storage failures"),
    "timing": (agent, r"timing: \d+ windows, (\d+) records .*?(\d+) lost in"),
    "kafka": (agent, r"kafka: (\d+) produced, (\d+) delivered, (\d+) "
              r"spooled, \d+ replayed, (\d+) lost"),
    "meta": (agent, r"meta: (\d+) host and (\d+) process records"),
    "applied": (corr, r"(\d+) records applied, (\d+) ends \((\d+) paired"),
    "paths": (corr, r"from (\d+) timing records"),
}
for k, (text, p) in pats.items():
    m = re.findall(p, text)
    v = m[-1] if m else "0"
    print(k, " ".join(v) if isinstance(v, tuple) else v)
EOF
python3 "$T_TMP/counters.py" "$T_TMP/agent.log" "$T_TMP/corr.log" \
	>"$counters" || fail "no counters in the logs"

cat <<EOF
<!-- bench_soak -->
## Soak: agent and correlator under churn (\`bench/bench_soak.sh\`)

Command: \`make bench\` (or \`SOAK_SECS=$SOAK_SECS bench/run.sh bench_soak\`),
run $(date -u +%Y-%m-%d) on $(uname -r), $(nproc) shared cores.
One test host: \`bench/churn.c\` makes $RATE short TCP connections a
second (100 bytes each way, client closes) and holds $LONG connections
exchanging 512 bytes each way every 100 ms, for ${SOAK_SECS} s.
\`causeway agent --kafka --interval $INTERVAL\` (default hooks: sampled,
1 s timing windows every 10 s) watches the host and publishes to
\`causeway broker\`; \`causeway correlate\` consumes, pairs and infers
paths.  Sampled every ${EVERY} s: resident memory (VmRSS) and open files
of each process, TCP sockets in the host other than TIME_WAIT (the
agent's socket storage holds at most one entry each; bpftool cannot list
that map type) and the entries of the agent's BPF hash maps
(entries/capacity; conn_hash and inflight serve only the kprobe
variant).

EOF
python3 - "$samples" "$T_TMP/churn.out" "$counters" <<'EOF'
import json, sys
rows = []
for line in open(sys.argv[1]):
    f = line.split()
    maps = dict(kv.split("=") for kv in f[6:])
    rows.append([int(x) for x in f[:6]] + [maps])
churn = json.loads(open(sys.argv[2]).read())
c = {}
for line in open(sys.argv[3]):
    k, *v = line.split()
    c[k] = [int(x) for x in v] + [0] * 4
conn_records, close_lost, storage_fail = c["conn_records"][:3]
timing, timing_lost = c["timing"][:2]
produced, delivered, spooled, lost = c["kafka"][:4]
hmeta, pmeta = c["meta"][:2]
applied, ends, paired = c["applied"][:3]
timing_applied = c["paths"][0]

names = sorted({k for r in rows for k in r[6]})
print("| t (s) | agent RSS (MiB) | agent fds | correlator RSS (MiB) "
      "| correlator fds | TCP sockets | " +
      " | ".join("map %s" % n for n in names) + " |")
print("|---:" * (6 + len(names)) + "|")
for r in rows:
    print("| %d | %.1f | %d | %.1f | %d | %d | " % (
        r[0], r[1] / 1024, r[2], r[3] / 1024, r[4], r[5]) +
        " | ".join(r[6].get(n, "-") for n in names) + " |")

def trend(i, scale=1.0):
    # After the first minute (start-up, broker and group joins).
    xs = [(r[0], r[i] / scale) for r in rows if r[0] >= 60] or \
         [(r[0], r[i] / scale) for r in rows]
    ys = [y for _, y in xs]
    n = len(xs)
    mt = sum(t for t, _ in xs) / n
    my = sum(ys) / n
    var = sum((t - mt) ** 2 for t, _ in xs)
    slope = sum((t - mt) * (y - my) for t, y in xs) / var if var else 0
    return min(ys), max(ys), slope * 600
print()
print("| series (after the first minute) | min | max "
      "| least-squares slope per 10 min |")
print("|---|---:|---:|---:|")
for label, i, sc in (("agent RSS (MiB)", 1, 1024), ("agent open files", 2, 1),
                     ("correlator RSS (MiB)", 3, 1024),
                     ("correlator open files", 4, 1), ("TCP sockets", 5, 1)):
    lo, hi, s = trend(i, sc)
    print("| %s | %.1f | %.1f | %+.1f |" % (label, lo, hi, s))
print()
secs = max(rows[-1][0], 1)
print("Connections: %d short made (%d failed; %.0f a second), %d long; "
      "the correlator saw %d ends and paired %d connections (%d made)."
      % (churn["short"], churn["short_failed"], churn["short"] / secs,
         churn["long"], ends, paired, churn["short"] + churn["long"]))
print()
print("| records | made by the agent | applied by the correlator |")
print("|---|---:|---:|")
print("| connection | %d | %d |" % (conn_records, applied))
print("| timing | %d | %d |" % (timing, timing_applied))
print("| metadata | %d | (not read) |" % (hmeta + pmeta))
print()
print("Kafka producer: %d produced, %d delivered, %d spooled, %d lost.  "
      "Lost in the kernel: %d close records, %d socket storage failures, "
      "%d timing messages." % (produced, delivered, spooled, lost,
                               close_lost, storage_fail, timing_lost))
ok = (produced == delivered == conn_records + timing + hmeta + pmeta and
      lost == 0 and applied == conn_records and timing_applied == timing and
      close_lost == storage_fail == 0)
print()
print("Nothing lost: %s." % ("yes: made = produced = delivered = applied, "
      "for connection and timing records" if ok else "**no**"))
EOF
echo "<!-- /bench_soak -->"
