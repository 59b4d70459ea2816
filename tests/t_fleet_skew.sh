#!/bin/bash
# Records far from the fleet's time cannot poison a partition.  Between
# two churning streams (`causeway simulate --churn` through the embedded
# broker, the second later in time than the first), kcat puts on every
# partition of causeway.conns a record from 2099, one from 1990 and one a
# month old.  Before, the 2099 one moved its partition's sealing point to
# 2099: every later record counted as late, closed ends were never freed,
# the edges before it left the view, and the checkpoint kept it.  Now the
# correlator sets them aside and counts them (the skew bound, docs/
# causeway-correlate.md): no late record, closed ends freed, every byte of
# both streams in edges.json.  A second member started from the
# checkpoints, fed a third stream, must find the same.
. "$(dirname "$0")/lib.sh"
need_cmd python3 kcat

broker_start
TOPIC=causeway.conns
printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' \
	>"$T_TMP/kafka.properties"

# stream NAME SIM...: publish a churn run, the same run in a file for the
# truth; CONNS_NAME, C2S_NAME, S2C_NAME.
stream() {
	local name=$1 conns c2s s2c
	shift
	"$CW" simulate --churn "$@" --kafka "$BOOT" --speedup 0 \
		2>"$T_TMP/$name.log" ||
		fail "simulate $name failed: $(cat "$T_TMP/$name.log")"
	"$CW" simulate --churn "$@" -o "$T_TMP/$name.cww" 2>/dev/null ||
		fail "simulate $name -o failed"
	conns=$(sed -n 's/.*churn: \([0-9]*\) connections.*/\1/p' \
		"$T_TMP/$name.log")
	read -r c2s s2c <<<"$(client_bytes "$T_TMP/$name.cww")"
	[ -n "$conns" ] && [ -n "$s2c" ] || fail "no truth for $name"
	eval "CONNS_$name=$conns C2S_$name=$c2s S2C_$name=$s2c"
	note "$name: $conns connections, bytes $c2s / $s2c"
}
# correlate NAME: a member of group g until idle, its log in NAME.log.
correlate() {
	"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
		--group g --from-beginning --no-paths --idle 3s \
		--snapshot-every 300ms --bucket 2s --lateness 2s --json \
		-o "$T_TMP/$1" >"$T_TMP/$1.json" 2>"$T_TMP/$1.log" ||
		fail "correlator $1 failed: $(cat "$T_TMP/$1.log")"
}
# buckets NAME: "LIVE LATE SEALED" of NAME's summary.
buckets() {
	sed -n 's/.*buckets: \([0-9]*\) live ends, .* \([0-9]*\) late deltas; sealed up to \([0-9]*\);.*/\1 \2 \3/p' \
		"$T_TMP/$1.log"
}
# check NAME C2S S2C MAXLIVE: NAME's graph carries every byte, nothing is
# late, the sealing point is not ahead of the clock, and fewer than
# MAXLIVE ends are live (closed ends were freed).
check() {
	local live late sealed now got
	read -r live late sealed <<<"$(buckets "$1")"
	[ -n "$sealed" ] || fail "$1: no buckets line: $(cat "$T_TMP/$1.log")"
	check_eq "$1: late deltas" "$late" 0
	now=$(date +%s%N)
	[ "$sealed" -le "$now" ] || fail "$1: sealed up to $sealed, after now ($now)"
	[ "$live" -lt "$4" ] || fail "$1: $live live ends, want fewer than $4"
	note "$1: $live live ends (fewer than $4), sealed up to $sealed"
	got=$(python3 -c 'import json, sys
e = json.load(open(sys.argv[1]))["edges"]
print(sum(x["bytes_c2s"] for x in e), sum(x["bytes_s2c"] for x in e))' \
		"$T_TMP/$1/edges.json")
	check_eq "$1: edges.json bytes" "$got" "$2 $3"
}

stream A -H 12 -L 4 --lifetime 10s -i 5s -d 2m -s 5
NPART=$(kcat -L -b "$BOOT" -t "$TOPIC" 2>/dev/null |
	sed -n 's/.* with \([0-9]*\) partitions.*/\1/p' | head -n 1)
[ -n "$NPART" ] || fail "no partition count for $TOPIC"
now=$(date +%s%N)
month=$((now - 30 * 86400 * 1000000000))
for p in $(seq 0 $((NPART - 1))); do
	n=0
	for t in 4070908800000000000 631152000000000000 $month; do
		n=$((n + 1))
		python3 "$CW_ROOT/tests/lib/conn_record.py" "$T_TMP/bad.bin" \
			host=skew-host cookie=$((p * 10 + n)) role=client \
			lport=$((40000 + p * 10 + n)) rport=80 bytes_out=100 \
			first_ns=$((t - 1000000000)) last_ns=$t tgid=7 comm=skew ||
			fail "no record made"
		kcat -P -b "$BOOT" -t "$TOPIC" -p "$p" -k skew "$T_TMP/bad.bin" \
			2>>"$T_TMP/kcat.log" || fail "kcat: $(cat "$T_TMP/kcat.log")"
	done
done
note "put a 2099, a 1990 and a month-old record on each of $NPART partitions"
# The next stream (its span ends as it starts publishing, 12 s long)
# starts after the first one's last record, so after its sealing point:
# none of its records is late unless something moved that point.
sleep 13
stream B -H 12 -L 4 --lifetime 1s -i 500ms -d 12s -s 6

correlate one
grep -q "skipping future record at $TOPIC \[[0-9]*\] offset [0-9]*: last_ns 4070908800000000000 is" \
	"$T_TMP/one.log" || fail "no line for the 2099 record: $(cat "$T_TMP/one.log")"
check_eq "one: set aside" \
	"$(sed -n 's/.*records: skipped \(.*\)/\1/p' "$T_TMP/one.log")" \
	"$NPART future, $((2 * NPART)) past"
check_eq "one: --json's bad_records future, past" "$(python3 -c 'import json, sys
b = json.load(open(sys.argv[1]))["bad_records"]
print(b["future"], b["past"])' "$T_TMP/one.json")" "$NPART $((2 * NPART))"
check one $((C2S_A + C2S_B)) $((S2C_A + S2C_B)) $((2 * CONNS_B))

# A restart from the checkpoints: nothing of the bad records came back.
sleep 13
stream C -H 12 -L 4 --lifetime 1s -i 500ms -d 12s -s 7
correlate two
check_eq "two: partitions restored" \
	"$(grep -c "$TOPIC \[[0-9]*\]: restored" "$T_TMP/two.log")" "$NPART"
grep -q "skipping\|records: skipped" "$T_TMP/two.log" &&
	fail "two set records aside: $(cat "$T_TMP/two.log")"
check two $((C2S_A + C2S_B + C2S_C)) $((S2C_A + S2C_B + S2C_C)) \
	$((2 * (CONNS_B + CONNS_C)))
echo PASS
