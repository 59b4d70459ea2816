#!/bin/bash
# The correlator's ingest and the cost of keeping its state in Kafka:
# records/s per core with per-partition checkpoints on (the default)
# against --no-checkpoints (one pairing, committed offsets only: the
# correlator before issue 16), and the time to restore a partition's
# checkpoint.
#
# Two streams of connection churn (`causeway simulate --churn`),
# published unpaced to the embedded broker (`causeway broker`,
# librdkafka's mock cluster on loopback, lz4; the records' topic made
# with 16 partitions, so that a stream of 400,000 records fits the
# about 5 MiB a partition the mock keeps) through the agents' producer,
# each span on one broker and its first quarter on another:
#  - churn: 1,000 hosts with 5 live connections each, four hours, every
#    end reporting every 10 minutes (simulate's default): two or three
#    records an end, nearly every record an open or a close.  The worst
#    case: each record makes or ends an end, and its edge is written.
#  - steady: 20 hosts with 25 live connections each living about a
#    minute, every end reporting every second (the agent's default
#    --interval, for a connection active all its life): about 60
#    records an end, most of them updates.
# The floor beside them: bench/consume.c, a group member configured as
# the correlator's that reads the records and does nothing else: what
# no work in the correlator can take away.
# Each round runs one correlator of each mode on each broker,
# alternating, each in a new group reading the whole topic, pinned to
# CPU 0 with all its threads (DESIGN.md: costs per operation are measured
# pinned; the brokers run on the other CPU); its CPU time (user + system,
# all threads, from wait4(): /usr/bin/time rounds to 10 ms, a tenth of a
# small run) is what it cost, and beside it what the process tells of
# its own ingest: its CPU from the first record read to the last and the
# snapshot after (the correlator's "ingest:" line, consume's second
# number), without the group join, the restore and the idling, whose CPU
# moves from run to run.  The difference between a shape's two streams'
# CPU over the difference in records is the cost per record with what is
# fixed taken out (the same in both); records/s per core is its inverse.  A stream that does not fit the broker's retention
# whole fails the bench (records applied must equal those published).
# Restore: a second correlator of a checkpointing group restores the
# state its predecessor left (its "state:" line gives ends and seconds).
# Medians over rounds.
#
#   bench/run.sh bench_correlate   (ROUNDS=9 HOSTS=1000 LIVE=5 SPAN=4h
#                                   SHOSTS=20 SLIVE=25 SSPAN=400s
#                                   RROUNDS=2 RHOSTS=200 RCONNS=60)
#
# BROKER=real: the same streams and modes on one real Apache Kafka broker
# (tests/lib/kafka.sh, `make deps`; its JVM pinned to CPU 1) instead of
# the embedded one: one stream at a time in causeway.conns, made anew
# with 16 partitions for each; no restore rows.
#
# No -o: ingest alone (the snapshot files are written on a thread of
# their own, and cost what the graph's size makes them cost).  A run
# slowed by other work on the machine costs more CPU per record: hence
# several rounds, medians and the range.
. "$(dirname "$0")/../tests/lib.sh"
need_cmd python3 gcc taskset
ROUNDS=${ROUNDS:-9}
RROUNDS=${RROUNDS:-2}
HOSTS=${HOSTS:-1000}
LIVE=${LIVE:-5}
SPAN=${SPAN:-4h}
SHOSTS=${SHOSTS:-20}
SLIVE=${SLIVE:-25}
SSPAN=${SSPAN:-400s}
RHOSTS=${RHOSTS:-200}	# the restore stream: a checkpoint must fit the
RCONNS=${RCONNS:-60}	# broker's 5 MiB a partition whole
BROKER=${BROKER:-embedded}
case $BROKER in embedded | real) ;; *) fail "BROKER: embedded or real" ;; esac
printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' \
	>"$T_TMP/kafka.properties"

# broker NAME DURATION SIMULATE_OPTION...: a broker holding DURATION of
# a churn; sets BOOT_NAME and RECORDS_NAME.
broker() {
	local name=$1 span=$2
	shift 2
	taskset -c 1 "$CW" broker -t causeway.conns:16 >"$T_TMP/boot-$name" \
		2>"$T_TMP/broker-$name.log" &
	bg_pid $!
	wait_file "$T_TMP/boot-$name"
	printf -v "BOOT_$name" '%s' "$(cat "$T_TMP/boot-$name")"
	"$CW" simulate --churn "$@" -d "$span" -s 5 \
		--kafka "$(cat "$T_TMP/boot-$name")" --speedup 0 2>"$T_TMP/sim-$name.log" ||
		fail "simulate failed: $(cat "$T_TMP/sim-$name.log")"
	printf -v "RECORDS_$name" '%s' "$(sed -n \
		's/.* \([0-9]*\) records published.*/\1/p' "$T_TMP/sim-$name.log")"
}
# quarter SPAN: a quarter of SPAN, in seconds with a unit
# cw_parse_duration reads.
quarter() {
	python3 -c 'import sys
u = {"s": 1, "m": 60, "h": 3600, "d": 86400}
v = sys.argv[1]
print("%ds" % ((int(float(v[:-1]) * u[v[-1]]) if v[-1] in u else int(v)) // 4))' "$1"
}
BB=$T_TMP/bin
mkdir -p "$BB"
gcc -O2 -Wall -o "$BB/consume" "$CW_ROOT/bench/consume.c" -lrdkafka ||
	fail "unable to build bench/consume.c"
CHURN=(-H "$HOSTS" -L "$LIVE")
STEADY=(-H "$SHOSTS" -L "$SLIVE" --lifetime 1m -i 1s)
STREAMS="churn_big churn_small steady_big steady_small"
SPANS=("$SPAN" "$(quarter "$SPAN")" "$SSPAN" "$(quarter "$SSPAN")")

# real_stream NAME DURATION SIMULATE_OPTION...: causeway.conns on the real
# broker made anew, holding DURATION of a churn; sets BOOT_NAME and
# RECORDS_NAME.
real_stream() {
	local name=$1 span=$2 i
	shift 2
	if [ -n "$(kafka_partitions causeway.conns)" ]; then
		kafka_java org.apache.kafka.tools.TopicCommand --bootstrap-server \
			"$KAFKA_BOOT" --delete --topic causeway.conns \
			>"$T_TMP/delete.log" 2>&1 ||
			fail "unable to delete causeway.conns: $(cat "$T_TMP/delete.log")"
		for i in $(seq 1 300); do
			[ -z "$(kafka_partitions causeway.conns)" ] && break
			sleep 0.2
		done
	fi
	kafka_topic_create causeway.conns --partitions 16
	printf -v "BOOT_$name" '%s' "$KAFKA_BOOT"
	"$CW" simulate --churn "$@" -d "$span" -s 5 --kafka "$KAFKA_BOOT" \
		--speedup 0 2>"$T_TMP/sim-$name.log" ||
		fail "simulate failed: $(cat "$T_TMP/sim-$name.log")"
	printf -v "RECORDS_$name" '%s' "$(sed -n \
		's/.* \([0-9]*\) records published.*/\1/p' "$T_TMP/sim-$name.log")"
}
if [ "$BROKER" = real ]; then
	. "$CW_ROOT/tests/lib/kafka.sh"
	taskset -cp 1 $$ >/dev/null	# the JVM inherits CPU 1 only
	kafka_start 1 >&2
	taskset -cp 0-$(($(nproc) - 1)) $$ >/dev/null
else
	i=0
	for st in $STREAMS; do
		case $st in churn*) set -- "${CHURN[@]}" ;; *) set -- "${STEADY[@]}" ;; esac
		broker "$st" "${SPANS[i++]}" "$@"
	done
fi

# cpu_time FILE CMD...: run CMD; its CPU seconds (user + system, its
# threads and children) into FILE, to the microsecond.  CMD's status.
cpu_time() {
	python3 -c 'import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
_, st, ru = os.wait4(p.pid, 0)
open(sys.argv[1], "w").write("%.6f\n" % (ru.ru_utime + ru.ru_stime))
sys.exit(os.waitstatus_to_exitcode(st) & 255)' "$@"
}

# run MODE ROUND STREAM: one correlator; prints "cpu_seconds applied
# ingest_cpu_seconds": the whole process's CPU, and its own account of
# ingest's (the correlator's "ingest:" line, consume's second number:
# from the first record read to the last, and the snapshots after it).
run() {
	local group="$1-$2-$3" opt="" boot="BOOT_$3"
	[ "$1" = none ] && opt=--no-checkpoints
	if [ "$1" = floor ]; then
		cpu_time "$T_TMP/time-$group" taskset -c 0 "$BB/consume" "${!boot}" causeway.conns "$group" \
			"$T_TMP/kafka.properties" 6000 >"$T_TMP/n-$group" \
			2>"$T_TMP/log-$group" || fail "consume failed: $(cat "$T_TMP/log-$group")"
		read -r n ing <"$T_TMP/n-$group"
		echo "$(cat "$T_TMP/time-$group") $n $ing"
		return
	fi
	cpu_time "$T_TMP/time-$group" taskset -c 0 "$CW" correlate --kafka "${!boot}" --kafka-config "$T_TMP/kafka.properties" \
		--group "$group" --from-beginning --no-paths --idle 6s $opt \
		>/dev/null 2>"$T_TMP/log-$group" || fail "correlate failed: $(cat "$T_TMP/log-$group")"
	echo "$(cat "$T_TMP/time-$group") $(sed -n \
		's/.* \([0-9]*\) records applied.*/\1/p' "$T_TMP/log-$group") $(sed -n \
		's/.* ingest: \([0-9.]*\) s CPU.*/\1/p' "$T_TMP/log-$group")"
}

# round R STREAM...: each mode once on each stream.
round() {
	local r=$1 m st want cpu n ing
	shift
	for m in floor none ckpt; do
		for st in "$@"; do
			want="RECORDS_$st"
			read -r cpu n ing <<<"$(run "$m" "$r" "$st")"
			[ "$n" = "${!want}" ] || fail "$m round $r applied $n of ${!want}"
			[ -n "$ing" ] || fail "$m round $r: no ingest CPU told"
			echo "$m $st $cpu $ing" >>"$T_TMP/cpu"
			echo "round $r $m $st: $cpu s CPU, ingest $ing s, $n records" >&2
		done
	done
}
if [ "$BROKER" = real ]; then
	# One stream in the topic at a time: all its rounds, then the next.
	i=0
	for st in $STREAMS; do
		case $st in churn*) set -- "${CHURN[@]}" ;; *) set -- "${STEADY[@]}" ;; esac
		real_stream "$st" "${SPANS[i++]}" "$@"
		n="RECORDS_$st"
		echo "stream $st: ${!n} records" >&2
		echo "$st ${!n}" >>"$T_TMP/records"
		for r in $(seq 1 "$ROUNDS"); do
			round "$r" "$st"
		done
	done
else
	for st in $STREAMS; do
		n="RECORDS_$st"
		echo "stream $st: ${!n} records" >&2
		echo "$st ${!n}" >>"$T_TMP/records"
	done
	for r in $(seq 1 "$ROUNDS"); do
		round "$r" $STREAMS
	done
fi

# Restore: a stream of its own on a broker of its own (the first one's
# topic holds more than a whole checkpoint the broker would keep).
[ "$BROKER" = real ] && RROUNDS=0
touch "$T_TMP/restore"
if [ "$RROUNDS" -gt 0 ]; then
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
fi

python3 - "$T_TMP/cpu" "$T_TMP/restore" "$T_TMP/records" \
	"$HOSTS" "$LIVE" "$SPAN" "$SHOSTS" "$SLIVE" "$SSPAN" "$BROKER" \
	"$([ "$BROKER" = real ] && kafka_version)" <<'PY'
import statistics, sys
cpu, ing = {}, {}
for line in open(sys.argv[1]):
    m, st, c, i = line.split()
    cpu.setdefault((m, st), []).append(float(c))
    ing.setdefault((m, st), []).append(float(i))
rec = dict((l.split()[0], int(l.split()[1])) for l in open(sys.argv[3]))
hosts, live, span, shosts, slive, sspan, broker, kver = sys.argv[4:12]
real = broker == "real"
rest = [tuple(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
rounds = len(cpu[("none", "churn_big")])

def marginal(m, shape, of=ing):
    # per round: the big stream's CPU less the small one's, per record
    nb, ns = rec[shape + "_big"], rec[shape + "_small"]
    return [(b - s) / (nb - ns) for b, s in zip(of[(m, shape + "_big")],
                                                 of[(m, shape + "_small")])]

def spread(per):
    return "%.2f us [%.2f, %.2f]" % (statistics.median(per) * 1e6,
                                     min(per) * 1e6, max(per) * 1e6)

def row(shape, name, m):
    per = marginal(m, shape)
    med = statistics.median(per)
    whole = statistics.median(cpu[(m, shape + "_big")])
    return "| %s | %s | %s | %.0f | %s | %.3f s | %.0f |" % (
        shape, name, spread(per), 1 / med, spread(marginal(m, shape, cpu)),
        whole, rec[shape + "_big"] / whole)

def med(m, shape):
    return statistics.median(marginal(m, shape))

tag = "bench_correlate" + ("_real" if real else "")
print("<!-- %s -->" % tag)
if real:
    print("## Correlator ingest on a real Kafka broker "
          "(`bench/bench_correlate_real.sh`)")
else:
    print("## Correlator ingest and state in Kafka (`bench/bench_correlate.sh`)")
print()
print("Command: `bench/run.sh %s` (ROUNDS=%d HOSTS=%s LIVE=%s "
      "SPAN=%s SHOSTS=%s SLIVE=%s SSPAN=%s)." % (
          tag, rounds, hosts, live, span, shosts,
          slive, sspan))
if real:
    print("Two streams from `causeway simulate --churn`, each span and its")
    print("first quarter in turn in `causeway.conns` (made anew with 16")
    print("partitions) of one Apache Kafka %s broker (KRaft, on loopback," % kver)
    print("its JVM pinned to CPU 1):")
else:
    print("Two streams from `causeway simulate --churn`, each span on one")
    print("embedded broker and its first quarter on another (the records'")
    print("topic made with 16 partitions, `causeway broker -t")
    print("causeway.conns:16`, so that each stream fits the broker whole):")
print()
print("- *churn*: `-H %s -L %s`, %s: connections living about 20 minutes"
      % (hosts, live, span))
print("  whose ends report every 10 minutes, two or three records an end")
print("  (%d and %d records).  The worst case: nearly every record opens or"
      % (rec["churn_big"], rec["churn_small"]))
print("  closes an end, and each connection is an edge of its own.")
print("- *steady*: `-H %s -L %s --lifetime 1m -i 1s`, %s: ends reporting"
      % (shosts, slive, sspan))
print("  every second, the agent's default `--interval` for a connection")
print("  active all its life, about 60 records an end (%d and %d records)."
      % (rec["steady_big"], rec["steady_small"]))
print()
print("One correlator per mode, stream and round (alternating, each its")
print("own group, reading the whole topic, pinned to CPU 0 with its")
print("threads; the brokers on the other CPU): CPU time (user + system, all")
print("threads) of ingest: records read, decoded, paired, folded into")
print("buckets, checkpointed, the buckets written to P.edges and the graph")
print("built once at the end; no `-o` (with it, edges.json and graph.dot")
print("are written on a thread of their own).  A run reads its stream in")
print("a second or two, so its one snapshot (checkpoints and P.edges) is")
print("the one at the end: one per stream, where a correlator at full")
print("load takes one every 10 s, millions of records apart.")
print()
print("Two clocks.  *Ingest*: the process's CPU (all threads) from the")
print("first record read to the last, and the snapshot after it, as the")
print("correlator tells it (its `ingest:` line; `bench/consume.c` the same")
print("for the floor): the group join, the restore of checkpoints and the")
print("6 s of idling, whose CPU moves by a tenth of a second from run to")
print("run, are not in it.  *Whole run*: the process's CPU from wait4(),")
print("everything.  Per record, from either: a shape's two streams' CPU")
print("difference over their records' difference (what is fixed, the")
print("final graph above all, cancels); records/s per core is the inverse")
print("of the ingest figure (the aim is 500,000).  Median [min, max] over")
print("rounds.  The floor is `bench/consume.c`: a librdkafka group member")
print("configured as the correlator's that reads the same records and does")
print("nothing with them.")
print()
print("| stream | mode | CPU per record (ingest) | records/s per core "
      "| CPU per record (whole run) | whole run CPU "
      "| whole run records/s per core |")
print("|---|---|---|---|---|---|---|")
for shape in ("churn", "steady"):
    print(row(shape, "floor: reading the records, nothing else", "floor"))
    print(row(shape, "--no-checkpoints (before)", "none"))
    print(row(shape, "checkpoints to P.state (default)", "ckpt"))
print()
for shape in ("churn", "steady"):
    ck, no, fl = med("ckpt", shape), med("none", shape), med("floor", shape)
    print("- %s: checkpoints against none %.2fx the CPU per record; ingest"
          % (shape, ck / no))
    print("  with checkpoints is %.0f%% of the 500k records/s per core aim;"
          % (100.0 / ck / 500000))
    print("  reading alone (the floor) is %.2f us of it (%.0f%%)."
          % (fl * 1e6, 100.0 * fl / ck))
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
print("<!-- /%s -->" % tag)
PY
