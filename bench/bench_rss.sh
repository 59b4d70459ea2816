#!/bin/bash
# The correlator's memory against time under connection churn: does it
# follow the live connections or the history?  `causeway simulate --churn`
# publishes a fleet whose connections open and close (by default a day of
# 1,000 hosts with 5 live connections each, 20-minute lifetimes and a
# 10-minute collection interval, compressed 480 times: three minutes) to
# the embedded broker (`causeway broker`) through the agents' producer,
# and one `causeway correlate` (checkpoints, one-minute time buckets and
# a one-hour view on, the defaults) consumes it.
# Every EVERY seconds: the correlator's resident memory (VmRSS), its CPU
# time, and the records and ends of its newest snapshot (edges.json).
# Bounded memory shows as a flat RSS once the live set is in; a correlator
# that keeps every end grows with the records.
#
#   bench/run.sh bench_rss
#   HOSTS=1000 LIVE=5 LIFETIME=20m INTERVAL=10m DURATION=1d SPEEDUP=480 \
#   EVERY=10 CORR_OPTS="--min-share 0.0001" IDLE=30s bench/run.sh bench_rss
#
# CORR_OPTS: `causeway correlate` options (a bucket width, a TTL).  The
# default, --min-share 0.0001, keeps graph.dot to the edges that carry
# over 0.01% of the bytes: written whole (some 300,000 process edges in
# 1,000 host clusters) through cgraph it takes 15 s and more per snapshot
# (on the writer's thread, not the consuming one, but the memory measured
# is then mostly the graph being laid out).  IDLE: the correlator
# stops this long after the last record (default 30s).
. "$(dirname "$0")/../tests/lib.sh"
need_cmd python3
HOSTS=${HOSTS:-1000}
LIVE=${LIVE:-5}
LIFETIME=${LIFETIME:-20m}
INTERVAL=${INTERVAL:-10m}
DURATION=${DURATION:-1d}
SPEEDUP=${SPEEDUP:-480}
EVERY=${EVERY:-10}
CORR_OPTS=${CORR_OPTS---min-share 0.0001}
IDLE=${IDLE:-30s}
CHURN=(--churn -H "$HOSTS" -L "$LIVE" --lifetime "$LIFETIME" -i "$INTERVAL"
	-d "$DURATION")

"$CW" broker >"$T_TMP/boot" 2>"$T_TMP/broker.log" &
bg_pid $!
wait_file "$T_TMP/boot"
BOOT=$(cat "$T_TMP/boot")
echo "embedded broker at $BOOT" >&2
printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' \
	>"$T_TMP/kafka.properties"
# The topic exists once a record is in: one of a fleet of its own, so the
# correlator owns the partitions before the stream starts.
"$CW" simulate -H 1 -c 1 -s 99 --kafka "$BOOT" 2>"$T_TMP/sim0.log" ||
	fail "simulate failed: $(cat "$T_TMP/sim0.log")"

# shellcheck disable=SC2086 # CORR_OPTS is a list of options
"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
	--from-beginning --no-paths --idle "$IDLE" -o "$T_TMP/corr" $CORR_OPTS \
	>/dev/null 2>"$T_TMP/corr.log" &
CORR=$!
bg_pid $CORR
for _ in $(seq 1 400); do
	[ "$(grep -c 'causeway.conns \[[0-9]*\]: \(restored\|no checkpoint\)' \
		"$T_TMP/corr.log")" -ge 4 ] && break
	kill -0 $CORR 2>/dev/null || fail "correlate exited: $(cat "$T_TMP/corr.log")"
	sleep 0.05
done

"$CW" simulate "${CHURN[@]}" --kafka "$BOOT" --speedup "$SPEEDUP" \
	2>"$T_TMP/sim.log" &
SIM=$!
bg_pid $SIM

# sample T: "t rss_kib cpu_ticks records ends" of the correlator.
sample() {
	local stat rss snap
	stat=$(cut -d' ' -f14,15 "/proc/$CORR/stat" 2>/dev/null) || return 1
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$CORR/status" 2>/dev/null) || return 1
	# The snapshot's counters: its last bytes, not the whole file.
	snap=$(tail -c 4096 "$T_TMP/corr/edges.json" 2>/dev/null | grep -o \
		'"applied":[0-9]*,"ends":[0-9]*' | tail -n 1 | tr -dc '0-9,' | tr , ' ')
	[ -n "$snap" ] || snap="0 0"
	echo "$1 $rss $(echo "$stat" | awk '{print $1 + $2}') $snap"
}
t0=$(date +%s.%N)
: >"$T_TMP/samples"
sim_end=""
while kill -0 $CORR 2>/dev/null; do
	t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.0f", b - a}')
	sample "$t" >>"$T_TMP/samples" || break
	echo "sample: $(tail -n 1 "$T_TMP/samples")" >&2
	if [ -z "$sim_end" ] && ! kill -0 $SIM 2>/dev/null; then
		sim_end=$t
		wait $SIM || fail "simulate failed: $(tail -n 5 "$T_TMP/sim.log")"
	fi
	next=$(awk -v t="$t" -v e="$EVERY" 'BEGIN {print t + e}')
	while kill -0 $CORR 2>/dev/null && awk -v a="$t0" -v n="$next" \
		-v b="$(date +%s.%N)" 'BEGIN {exit !(b - a < n)}'; do
		sleep 0.2
	done
done
wait $CORR || fail "correlate failed: $(tail -n 5 "$T_TMP/corr.log")"
early=0
if [ -z "$sim_end" ]; then	# the correlator stopped first
	early=1
	sim_end=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.0f", b - a}')
	kill $SIM 2>/dev/null
	wait $SIM
fi
cat "$T_TMP/sim.log" >&2
grep -E "applied|state:|buckets:|lost|warning|error" "$T_TMP/corr.log" >&2

tck=$(getconf CLK_TCK)
python3 - "$T_TMP/samples" "$T_TMP/sim.log" "$T_TMP/corr.log" "$tck" \
	"$SPEEDUP" "${sim_end:-0}" "${CHURN[*]}" "$CORR_OPTS" \
	"$(sed -n 's/.* \([0-9]*\) records published.*/\1/p' "$T_TMP/sim0.log")" \
	"$early" "$IDLE" "$T_TMP/corr/edges.json" <<'EOF'
import json, re, sys
samples, simlog, corrlog = (open(p).read() for p in sys.argv[1:4])
tck, speedup, sim_end = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
churn, corr_opts = sys.argv[7], sys.argv[8]
early, idle = int(sys.argv[10]), sys.argv[11]
rows = [list(map(int, l.split())) for l in samples.splitlines() if l.strip()]

def grab(pat, text, default=0):
    m = re.findall(pat, text)
    return m[-1] if m else default

conns, nhosts, live, closed, records = map(int, grab(
    r"churn: (\d+) connections between (\d+) hosts \((\d+) live "
    r"throughout, (\d+) closed\), (\d+) records", simlog, (0,) * 5))
lag = float(grab(r"at most ([\d.]+) s behind", simlog, 0))
published = int(grab(r"(\d+) records published", simlog, 0))
applied_seed = int(sys.argv[9])  # the records that made the topic
applied, ends = map(int, grab(r"(\d+) records applied, (\d+) ends", corrlog,
                              (0, 0)))
applied -= applied_seed
lost = int(grab(r"(\d+) records lost to retention", corrlog, 0))

print("<!-- bench_rss -->")
print("## Correlator memory under connection churn (`bench/bench_rss.sh`)")
print()
print("Command: `bench/run.sh bench_rss` (`causeway simulate %s --kafka B "
      "--speedup %d`; `causeway correlate --kafka B --from-beginning "
      "--no-paths%s`)." % (churn, speedup, " " + corr_opts if corr_opts else ""))
print("The fleet: %d hosts, %d connections live at any time, %d made and "
      "%d closed over the span; %d records published (%d applied by the "
      "correlator, %d lost to the broker's retention).  Simulate kept the "
      "pace within %.1f s; it ended at t = %d s, and the correlator %s "
      "after its last record." % (nhosts, live, conns, closed, published,
                                  applied, lost, lag, sim_end, idle))
missing = published - applied - lost
if missing > 0:
    print()
    print("**%d records were neither applied nor counted lost** (the "
          "correlator's log: %s)." % (missing, "; ".join(sorted(set(
              re.findall(r"warning: (kafka: [^\n]*)", corrlog)))[:3]) or
              "no warning"))
if early:
    print()
    print("**The correlator stopped (--idle %s) before the stream ended:** "
          "it applied %d of %d records." % (idle, applied, published))
print()
print("| t (s) | simulated (h) | records (snapshot) | ends (snapshot) "
      "| RSS (MiB) | CPU (s) |")
print("|---:|---:|---:|---:|---:|---:|")
for t, rss, cpu, rec, e in rows:
    simh = min(t, sim_end or t) * speedup / 3600.0
    print("| %d | %.1f | %d | %d | %.1f | %.1f |" % (
        t, simh, rec, e, rss / 1024.0, cpu / tck))

# Growth while the stream runs, after its first fifth (the live set comes
# in then): least squares of RSS on time, per simulated hour.
run = [r for r in rows if r[0] <= (sim_end or rows[-1][0])]
tail = run[len(run) // 5:] or run
xs = [r[0] for r in tail]
ys = [r[1] / 1024.0 for r in tail]
if len(tail) > 1 and max(xs) > min(xs):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / \
        sum((x - mx) ** 2 for x in xs)
else:
    slope = 0.0
peak = max(r[1] for r in rows) / 1024.0
print()
print("RSS %.1f MiB at t = %d s (a fifth into the stream), %.1f MiB at its "
      "end, peak %.1f MiB; it grew %+.2f MiB per simulated hour (least "
      "squares over the rest of the stream: flat is 0), %+.1f MiB over the "
      "span's last four fifths.  At the end the correlator held %d ends "
      "for %d live connections (%d bytes of RSS per end it held)."
      % (ys[0] if ys else 0, xs[0] if xs else 0, ys[-1] if ys else 0, peak,
         slope * 3600.0 / speedup if speedup else 0,
         (ys[-1] - ys[0]) if ys else 0, ends, live,
         peak * 1048576 / ends if ends else 0))
# With time buckets: the ends still held, and the graph's edges (the
# sealed totals of the view: its last hour by default).
live = grab(r"buckets: (\d+) live ends", corrlog, None)
if live is not None:
    try:
        nedges = len(json.load(open(sys.argv[12]))["edges"])
    except (OSError, ValueError, KeyError):
        nedges = -1
    print()
    print("Time buckets on: at the end %s ends were live (the \"ends\" "
          "above count those folded into their edges and freed too); the "
          "graph (the view: the last hour of buckets unless CORR_OPTS "
          "says --view) had %d edges." % (live, nedges))
print("<!-- /bench_rss -->")
EOF
