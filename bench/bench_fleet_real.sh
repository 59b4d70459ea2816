#!/bin/bash
# A simulated fleet at scale on a real Apache Kafka cluster (issue #30):
# `causeway simulate --churn` publishing as 10,000 hosts' agents (through
# the agents' producer: idempotent, acks=all, keyed by 4-tuple) to three
# KRaft brokers (tests/lib/kafka.sh, `make deps`; causeway.conns with
# PARTS partitions, 3 replicas, min.insync.replicas 2), paced so that
# simulated time runs SPEEDUP times the wall clock, while three
# correlator members of one group read it (checkpoints to P.state and
# buckets to P.edges, as in production; --snapshot-every EVERY).
#
# Reported: records/s (records published over the simulator's run; the
# lag says whether the members kept up), the end-to-end lag of a record
# (its Kafka timestamp, taken when the simulator produced it, to the
# member's clock once it is applied to the member's graph: `correlate
# --json`'s lag_ms) at p50 and p99 per member, and each member's peak RSS
# (VmHWM, sampled while it runs).  Members run without -o and stop IDLE
# after their last record.  The fleet graph read back from P.edges
# (`causeway graph --kafka --group`) must be exact: its connections,
# paired connections and bytes each way equal those `causeway graph`
# finds in the same span written to a file with the same seed, and the
# members applied every record published (the bench fails otherwise).
#
#   bench/run.sh bench_fleet_real   (HOSTS=10000 LIVE=5 LIFETIME=20m
#                                    INTERVAL=10m SPAN=30m SPEEDUP=60
#                                    PARTS=12 EVERY=5s IDLE=15s)
#
# Everything shares the machine's cores (brokers, members, simulator):
# the figures are those of the machine as loaded, not of a member alone.
. "$(dirname "$0")/../tests/lib.sh"
. "$CW_ROOT/tests/lib/kafka.sh"
need_cmd python3
HOSTS=${HOSTS:-10000}
LIVE=${LIVE:-5}
LIFETIME=${LIFETIME:-20m}
INTERVAL=${INTERVAL:-10m}
SPAN=${SPAN:-30m}
SPEEDUP=${SPEEDUP:-60}
PARTS=${PARTS:-12}
EVERY=${EVERY:-5s}
IDLE=${IDLE:-15s}
GROUP=fleet
SIM=(--churn -H "$HOSTS" -L "$LIVE" --lifetime "$LIFETIME" -i "$INTERVAL"
	-d "$SPAN" -s 7)

kafka_start 3 >&2
kafka_topic_create causeway.conns --partitions "$PARTS" \
	--replication-factor 3 --config min.insync.replicas=2
kafka_wait_isr causeway.conns 3
printf 'session.timeout.ms=10000\nheartbeat.interval.ms=1000\n' \
	>"$T_TMP/kafka.properties"

# The reference: the same span to a file, and its graph's totals.
"$CW" simulate "${SIM[@]}" -o "$T_TMP/ref.cww" 2>"$T_TMP/ref-sim.log" ||
	fail "simulate to a file failed: $(cat "$T_TMP/ref-sim.log")"
"$CW" graph --format json -o "$T_TMP/ref.json" "$T_TMP/ref.cww" \
	2>"$T_TMP/ref-graph.log" || fail "graph failed: $(cat "$T_TMP/ref-graph.log")"
rm -f "$T_TMP/ref.cww"
want=$(graph_totals "$T_TMP/ref.json")
echo "reference graph (conns paired c2s s2c): $want" >&2

# Three members, each with its partitions before the first record.
MEMBERS=(m1 m2 m3)
for m in "${MEMBERS[@]}"; do
	"$CW" correlate --kafka "$KAFKA_BOOT" --kafka-config "$T_TMP/kafka.properties" \
		--group "$GROUP" --no-paths --snapshot-every "$EVERY" --json \
		--idle "$IDLE" >"$T_TMP/$m.json" 2>"$T_TMP/$m.log" &
	printf -v "PID_$m" %s $!
	bg_pid $!
done
for _ in $(seq 1 600); do
	n=$(cat "$T_TMP"/m?.log | grep -c 'causeway.conns \[[0-9]*\]: \(restored\|no checkpoint\)')
	[ "$n" -ge "$PARTS" ] && break
	sleep 0.1
done
[ "$n" -ge "$PARTS" ] || fail "the members were given $n of $PARTS partitions"
sleep 3	# the group settled (each member its share)

t0=$(date +%s.%N)
"$CW" simulate "${SIM[@]}" --kafka "$KAFKA_BOOT" --speedup "$SPEEDUP" \
	2>"$T_TMP/sim.log" || fail "simulate failed: $(cat "$T_TMP/sim.log")"
t_sim=$(date +%s.%N)
published=$(sed -n 's/.*churn: .* \([0-9]*\) records over.*/\1/p' "$T_TMP/sim.log")
behind=$(sed -n 's/.*at most \([0-9.]*\) s behind.*/\1/p' "$T_TMP/sim.log")
echo "published $published records; the producer at most $behind s behind its pace" >&2

# The members stop IDLE after their last record; their peak RSS (VmHWM)
# is sampled until then.
for m in "${MEMBERS[@]}"; do
	echo "$m 0" >>"$T_TMP/rss"
done
while :; do
	alive=0
	for m in "${MEMBERS[@]}"; do
		pid=PID_$m
		kb=$(awk '/^VmHWM/ {print $2}' "/proc/${!pid}/status" 2>/dev/null) ||
			continue
		[ -n "$kb" ] || continue
		alive=1
		sed -i "s/^$m [0-9]*\$/$m $kb/" "$T_TMP/rss"
	done
	[ $alive -eq 1 ] || break
	sleep 0.5
done
for m in "${MEMBERS[@]}"; do
	pid=PID_$m
	wait "${!pid}" || fail "member $m failed: $(tail -n 20 "$T_TMP/$m.log")"
	grep "records applied\|state:" "$T_TMP/$m.log" >&2
done
"$CW" graph --kafka "$KAFKA_BOOT" --group "$GROUP" --format json \
	-o "$T_TMP/fleet.json" 2>"$T_TMP/fleet.log" ||
	fail "graph --kafka failed: $(cat "$T_TMP/fleet.log")"
got=$(graph_totals "$T_TMP/fleet.json")
echo "fleet graph (conns paired c2s s2c): $got" >&2
[ "$got" = "$want" ] || fail "the fleet graph differs from the reference: $got, want $want"

python3 - "$T_TMP" "$published" "$t0" "$t_sim" "$behind" \
	"$want" "$HOSTS" "$LIVE" "$LIFETIME" "$INTERVAL" "$SPAN" "$SPEEDUP" \
	"$PARTS" "$EVERY" "$IDLE" "$(kafka_version)" <<'PY'
import json, sys
(tmp, published, t0, t_sim, behind, want, hosts, live, lifetime,
 interval, span, speedup, parts, every, idle, kver) = sys.argv[1:]
published = int(published)
t0, t_sim = float(t0), float(t_sim)
members = ["m1", "m2", "m3"]
rep = {m: json.load(open("%s/%s.json" % (tmp, m))) for m in members}
rss = dict(l.split() for l in open(tmp + "/rss"))
applied = sum(rep[m]["stats"]["applied"] for m in members)
if applied != published:
    sys.exit("applied %d of %d" % (applied, published))
conns, paired, c2s, s2c = want.split()
tag = "bench_fleet_real"
print("<!-- %s -->" % tag)
print("## A simulated fleet on three real Kafka brokers (`bench/%s.sh`)" % tag)
print()
print("Command: `bench/run.sh %s` (HOSTS=%s LIVE=%s LIFETIME=%s INTERVAL=%s"
      % (tag, hosts, live, lifetime, interval))
print("SPAN=%s SPEEDUP=%s PARTS=%s EVERY=%s IDLE=%s)." % (span, speedup, parts,
                                                     every, idle))
print("`causeway simulate --churn -H %s -L %s --lifetime %s -i %s -d %s`"
      % (hosts, live, lifetime, interval, span))
print("publishes as %s hosts' agents, paced at %s simulated seconds a second,"
      % (hosts, speedup))
print("to three Apache Kafka %s brokers (KRaft, on loopback; causeway.conns with"
      % kver)
print("%s partitions, 3 replicas, min.insync.replicas 2) while three correlator"
      % parts)
print("members of one group read it (checkpoints to P.state and buckets to")
print("P.edges every %s; no `-o`).  Brokers, members and simulator share the machine's" % every)
print("cores.  Lag: from a record's Kafka timestamp (the simulator's clock at")
print("produce) to the member's clock once it is applied to its graph")
print("(`correlate --json`'s lag_ms).  RSS: each member's peak (VmHWM) while")
print("it ran.  The fleet graph read back from P.edges (`causeway graph")
print("--kafka --group`) equals the graph of the same span written to a file:")
print("%s connections (%s paired), %s bytes client to server and %s back;"
      % (conns, paired, c2s, s2c))
print("every record published was applied once.")
print()
print("| member | records applied | lag p50 | lag p99 | lag max | peak RSS |")
print("|---|---|---|---|---|---|")
for m in members:
    l = rep[m]["lag_ms"]
    print("| %s | %d | %.0f ms | %.0f ms | %.0f ms | %.1f MiB |" % (
        m, rep[m]["stats"]["applied"], l["p50"], l["p99"], l["max"],
        int(rss[m]) / 1024.0))
print()
print("- %d records published in %.1f s: %.0f records/s (the simulator fell"
      % (published, t_sim - t0, published / (t_sim - t0)))
print("  at most %s s behind its pace); the lag says how far behind the" % behind)
print("  members were.  No `-o`: no graph files written, only ingest,")
print("  checkpoints and buckets.")
print("<!-- /%s -->" % tag)
PY
