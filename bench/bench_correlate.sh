#!/bin/bash
# The correlator's ingest and the cost of keeping its state in Kafka:
# records/s per core with per-partition checkpoints on (the default)
# against --no-checkpoints (one pairing, committed offsets only: the
# correlator before issue 16), and the time to restore a partition's
# checkpoint.
#
# The stream is connection churn (`causeway simulate --churn`: 1,000
# hosts with 5 live connections each, an hour of opens, updates and
# closes), published unpaced to the embedded broker (`causeway broker`,
# librdkafka's mock cluster on loopback, lz4) through the agents'
# producer; a second broker holds the first quarter of the same span.
# The floor beside them: bench/consume.c, a group member configured as
# the correlator's that reads the records and does nothing else: what
# no work in the correlator can take away.
# Each round runs one correlator of each mode on each broker,
# alternating, each in a new group reading the whole topic; its CPU time
# (user + system, all threads, from wait4(): /usr/bin/time rounds to
# 10 ms, a tenth of a small run) is what it cost.  The
# difference between the two streams' CPU over the difference in records
# is the cost per record with the group join and the idling until --idle
# ends taken out (the same in both); records/s per core is its inverse.
# Both streams fit the broker's retention (about 5 MiB a partition).
# Restore: a second correlator of a checkpointing group restores the
# state its predecessor left (its "state:" line gives ends and seconds).
# Medians over rounds.
#
#   bench/run.sh bench_correlate   (ROUNDS=4 HOSTS=1000 LIVE=5 SPAN=1h
#                                   RROUNDS=2 RHOSTS=200 RCONNS=60)
#
# No -o: ingest alone (the snapshot files are written on a thread of
# their own, and cost what the graph's size makes them cost).  A run
# slowed by other work on the machine costs more CPU per record: hence
# several rounds, medians and the range.
. "$(dirname "$0")/../tests/lib.sh"
need_cmd python3 gcc
ROUNDS=${ROUNDS:-4}
RROUNDS=${RROUNDS:-2}
HOSTS=${HOSTS:-1000}
LIVE=${LIVE:-5}
SPAN=${SPAN:-1h}
RHOSTS=${RHOSTS:-200}	# the restore stream: a checkpoint must fit the
RCONNS=${RCONNS:-60}	# broker's 5 MiB a partition whole
printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' \
	>"$T_TMP/kafka.properties"

# broker NAME DURATION: a broker holding DURATION of the churn; sets
# BOOT_NAME and RECORDS_NAME.
broker() {
	"$CW" broker >"$T_TMP/boot-$1" 2>"$T_TMP/broker-$1.log" &
	bg_pid $!
	wait_file "$T_TMP/boot-$1"
	printf -v "BOOT_$1" '%s' "$(cat "$T_TMP/boot-$1")"
	"$CW" simulate --churn -H "$HOSTS" -L "$LIVE" -d "$2" -s 5 \
		--kafka "$(cat "$T_TMP/boot-$1")" --speedup 0 2>"$T_TMP/sim-$1.log" ||
		fail "simulate failed: $(cat "$T_TMP/sim-$1.log")"
	printf -v "RECORDS_$1" '%s' "$(sed -n \
		's/.* \([0-9]*\) records published.*/\1/p' "$T_TMP/sim-$1.log")"
}
# A quarter of the span, in seconds with a unit cw_parse_duration reads.
span_s=$(python3 -c 'import sys
u = {"s": 1, "m": 60, "h": 3600, "d": 86400}
v = sys.argv[1]
print(int(float(v[:-1]) * u[v[-1]] if v[-1] in u else int(v)) // 4)' "$SPAN")
BB=$T_TMP/bin
mkdir -p "$BB"
gcc -O2 -Wall -o "$BB/consume" "$CW_ROOT/bench/consume.c" -lrdkafka ||
	fail "unable to build bench/consume.c"
broker big "$SPAN"
broker small "${span_s}s"
# shellcheck disable=SC2154 # set by broker() through printf -v
echo "streams: $RECORDS_big and $RECORDS_small records" >&2

# cpu_time FILE CMD...: run CMD; its CPU seconds (user + system, its
# threads and children) into FILE, to the microsecond.  CMD's status.
cpu_time() {
	python3 -c 'import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
_, st, ru = os.wait4(p.pid, 0)
open(sys.argv[1], "w").write("%.6f\n" % (ru.ru_utime + ru.ru_stime))
sys.exit(os.waitstatus_to_exitcode(st) & 255)' "$@"
}

# run MODE ROUND STREAM: one correlator; prints "cpu_seconds applied".
run() {
	local group="$1-$2-$3" opt="" boot="BOOT_$3"
	[ "$1" = none ] && opt=--no-checkpoints
	if [ "$1" = floor ]; then
		cpu_time "$T_TMP/time-$group" "$BB/consume" "${!boot}" causeway.conns "$group" \
			"$T_TMP/kafka.properties" 6000 >"$T_TMP/n-$group" \
			2>"$T_TMP/log-$group" || fail "consume failed: $(cat "$T_TMP/log-$group")"
		echo "$(cat "$T_TMP/time-$group") $(cat "$T_TMP/n-$group")"
		return
	fi
	cpu_time "$T_TMP/time-$group" "$CW" correlate --kafka "${!boot}" --kafka-config "$T_TMP/kafka.properties" \
		--group "$group" --from-beginning --no-paths --idle 6s $opt \
		>/dev/null 2>"$T_TMP/log-$group" || fail "correlate failed: $(cat "$T_TMP/log-$group")"
	echo "$(cat "$T_TMP/time-$group") $(sed -n \
		's/.* \([0-9]*\) records applied.*/\1/p' "$T_TMP/log-$group")"
}

for r in $(seq 1 "$ROUNDS"); do
	for m in floor none ckpt; do
		for st in big small; do
			want="RECORDS_$st"
			read -r cpu n <<<"$(run $m $r $st)"
			[ "$n" = "${!want}" ] || fail "$m round $r applied $n of ${!want}"
			echo "$m $st $cpu" >>"$T_TMP/cpu"
			echo "round $r $m $st: $cpu s CPU, $n records" >&2
		done
	done
done

# Restore: a stream of its own on a broker of its own (the first one's
# topic holds more than a whole checkpoint the broker would keep).
"$CW" broker >"$T_TMP/boot2" 2>"$T_TMP/broker2.log" &
bg_pid $!
wait_file "$T_TMP/boot2"
BOOT=$(cat "$T_TMP/boot2")
"$CW" simulate -H "$RHOSTS" -c "$RCONNS" -s 6 --kafka "$BOOT" 2>"$T_TMP/rsim.log" ||
	fail "simulate failed"
for r in $(seq 1 "$RROUNDS"); do
	for i in 1 2; do
		"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
			--group "restore-$r" --from-beginning --no-paths --idle 8s \
			--snapshot-every 1s -o "$T_TMP/rout-$r" \
			>/dev/null 2>"$T_TMP/rlog-$r-$i" || fail "correlate failed"
	done
	sed -n 's/.* partitions restored (\([0-9]*\) ends, \([0-9.]*\) s).*/\1 \2/p' \
		"$T_TMP/rlog-$r-2" >>"$T_TMP/restore"
	echo "restore round $r: $(tail -n 1 "$T_TMP/restore")" >&2
done

python3 - "$T_TMP/cpu" "$T_TMP/restore" "$RECORDS_big" "$RECORDS_small" \
	"$HOSTS" "$LIVE" "$SPAN" <<'PY'
import statistics, sys
cpu = {}
for line in open(sys.argv[1]):
    m, st, c = line.split()
    cpu.setdefault((m, st), []).append(float(c))
nb, ns = int(sys.argv[3]), int(sys.argv[4])
hosts, live, span = sys.argv[5:8]
rest = [tuple(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
rounds = len(cpu[("none", "big")])

def marginal(m):
    # per round: the big stream's CPU less the small one's, per record
    return [(b - s) / (nb - ns) for b, s in zip(cpu[(m, "big")],
                                                 cpu[(m, "small")])]

def row(name, m):
    per = marginal(m)
    med = statistics.median(per)
    whole = statistics.median(cpu[(m, "big")])
    return "| %s | %.2f us [%.2f, %.2f] | %.0f | %.3f s | %.0f |" % (
        name, med * 1e6, min(per) * 1e6, max(per) * 1e6, 1 / med, whole,
        nb / whole)

print("<!-- bench_correlate -->")
print("## Correlator ingest and state in Kafka (`bench/bench_correlate.sh`)")
print()
print("Command: `bench/run.sh bench_correlate` (ROUNDS=%d HOSTS=%s LIVE=%s "
      "SPAN=%s)." % (rounds, hosts, live, span))
print("Connection churn from `causeway simulate --churn -H %s -L %s` (opens,"
      % (hosts, live))
print("updates every 10 minutes, closes): %s on one embedded broker (%d"
      % (span, nb))
print("records), its first quarter on another (%d records).  One correlator"
      % ns)
print("per mode, stream and round (alternating, each its own group, reading")
print("the whole topic, default snapshots every 10 s): CPU time (user +")
print("system, all threads) of ingest: records read, decoded, paired,")
print("folded into buckets, checkpointed, the buckets written to P.edges")
print("and the graph built once at the end; no `-o` (with it, edges.json")
print("and graph.dot are written on a thread of their own, 2 s of CPU for")
print("this graph through cgraph, and the end's graph once more before the")
print("command exits).  Per record: the two streams' CPU difference over")
print("their records' difference, which takes the group join, the final")
print("graph and the 6 s of idling out; records/s per core is its inverse")
print("(the aim is 500,000).  Median [min, max] over rounds; the whole")
print("run's figure beside it includes the fixed costs.  The floor is")
print("`bench/consume.c`: a librdkafka group member configured as the")
print("correlator's that reads the same records and does nothing with them.")
print()
print("| mode | CPU per record | records/s per core | whole run CPU "
      "| whole run records/s per core |")
print("|---|---|---|---|---|")
print(row("floor: reading the records, nothing else", "floor"))
print(row("--no-checkpoints (before)", "none"))
print(row("checkpoints to P.state (default)", "ckpt"))
r = statistics.median(marginal("ckpt")) / statistics.median(marginal("none"))
print()
print("Checkpoints against none: %.2fx the CPU per record; ingest with "
      "checkpoints is %.1f%% of the 500k records/s per core aim."
      % (r, 100.0 / statistics.median(marginal("ckpt")) / 500000))
fl = statistics.median(marginal("floor"))
print("Reading the records alone (the floor) costs %.2f us of them: %.0f%% of"
      % (fl * 1e6, 100.0 * fl / statistics.median(marginal("ckpt"))))
print("ingest with checkpoints, %.0f%% of ingest without."
      % (100.0 * fl / statistics.median(marginal("none"))))
if rest:
    per = [s / e * 1e6 for e, s in rest if e]
    print()
    print("Restore (a second member of the group takes the 4 partitions and")
    print("restores their checkpoints: two reads of each partition of")
    print("P.state, decode, and the ends added back): %d ends in %s s;"
          % (rest[0][0], ", ".join("%.3f" % s for _, s in rest)))
    print("median %.2f s per million live ends (measured at this size and"
          % statistics.median(per))
    print("scaled: the embedded broker keeps no larger checkpoint whole).")
print("<!-- /bench_correlate -->")
PY
