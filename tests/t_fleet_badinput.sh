#!/bin/bash
# Bad records on the conns topic never stop the correlator.  Real agents in
# two test hosts publish the records of two batches of short connections to
# the embedded broker; between the batches kcat puts bad records on every
# partition of causeway.conns: random garbage, a real envelope cut short,
# real envelopes with an unknown schema version, envelopes with no record
# kind this build knows, an empty value and a null one.  The correlator
# must exit 0, count each bad kind exactly, log each kind once, and still
# pair every connection with its exact bytes.  A second correlator in the
# same group then reads only what came after (offsets were committed past
# the bad records).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 kcat

two_hosts
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP" 7400 &
bg_pid $!
wait_port "$SRV" 7400

broker_start
TOPIC=causeway.conns
note "embedded broker at $BOOT"
# The mock broker admits a group's next member session.timeout.ms - 1 s
# after the last one left (docs/causeway-broker.md, NOT A REAL BROKER).
printf 'session.timeout.ms=6000\n' >"$T_TMP/kafka.properties"

fleet_agent "$T_TMP" "$CLI" cli --kafka "$BOOT"
AGENTS=($FLEET_AGENT_PID)
fleet_agent "$T_TMP" "$SRV" srv --kafka "$BOOT"
AGENTS+=($FLEET_AGENT_PID)

b1=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7400 20 1000) ||
	fail "batch 1 failed"
note "batch 1: $b1"
sleep 1	# three agent intervals: the batch's records are delivered

# One real record, raw, to build bad ones from.
kcat -C -b "$BOOT" -t "$TOPIC" -o beginning -c 1 -e -q -f '%s' \
	>"$T_TMP/real.bin" 2>"$T_TMP/kcat.log" ||
	fail "kcat could not read a record: $(cat "$T_TMP/kcat.log")"
NPART=$(kcat -L -b "$BOOT" -t "$TOPIC" 2>/dev/null |
	sed -n 's/.* with \([0-9]*\) partitions.*/\1/p' | head -n 1)
[ -n "$NPART" ] && [ "$NPART" -ge 1 ] || fail "no partition count for $TOPIC"
note "$TOPIC: $NPART partitions; a real record is $(stat -c %s "$T_TMP/real.bin") bytes"

# The bad records, one file each: NAME.KIND.bin.
python3 - "$T_TMP/real.bin" "$T_TMP/bad" <<'PY' || fail "unable to make the bad records"
import os, random, sys

real = open(sys.argv[1], "rb").read()
out = sys.argv[2]
os.makedirs(out)
# An Envelope starts with its version (field 1, varint: 08 01), then the
# conn record (field 10, length-delimited: 0x52).
if real[:3] != b"\x08\x01\x52":
    sys.exit("not a version 1 conn envelope: %s" % real[:8].hex())
body = real[2:]
rnd = random.Random(7)
bad = {
    "garbage1.malformed": rnd.randbytes(64),
    "garbage2.malformed": rnd.randbytes(300),
    "garbage3.malformed": b"this is not a protobuf envelope\n",
    "cut-half.malformed": real[: len(real) // 2],
    "cut-last.malformed": real[:-1],
    # version 99 (08 63) before a real conn record
    "v99.version": b"\x08\x63" + body,
    # version 2 whose body a version 1 reader can't know (field 15)
    "v2.version": b"\x08\x02\x7a\x03abc",
    # version 1 and nothing else
    "nokind.kind": b"\x08\x01",
    # version 1 and a record of a kind from the future (field 1000)
    "newkind.kind": b"\x08\x01\xc2\x3e\x03xyz",
}
for name, data in bad.items():
    with open(os.path.join(out, name + ".bin"), "wb") as f:
        f.write(data)
PY
# produce PARTITION FILE...: each file is one record on that partition.
produce() {
	local p=$1
	shift
	kcat -P -b "$BOOT" -t "$TOPIC" -p "$p" -k bad "$@" 2>>"$T_TMP/kcat.log" ||
		fail "kcat could not produce: $(cat "$T_TMP/kcat.log")"
}
n=0
for f in "$T_TMP"/bad/*.bin; do
	produce $((n % NPART)) "$f"
	n=$((n + 1))
done
# An empty value and a null value (a tombstone): kcat skips empty files,
# so these go through its key delimiter.
printf 'bad:\n' | kcat -P -b "$BOOT" -t "$TOPIC" -p 0 -K: 2>>"$T_TMP/kcat.log" ||
	fail "kcat could not produce an empty record"
printf 'bad:\n' | kcat -P -b "$BOOT" -t "$TOPIC" -p $((1 % NPART)) -K: -Z \
	2>>"$T_TMP/kcat.log" || fail "kcat could not produce a null record"
WANT_MALFORMED=$(($(ls "$T_TMP"/bad/*.malformed.bin | wc -l) + 2))
WANT_VERSION=$(ls "$T_TMP"/bad/*.version.bin | wc -l)
WANT_KIND=$(ls "$T_TMP"/bad/*.kind.bin | wc -l)
WANT_BAD=$((WANT_MALFORMED + WANT_VERSION + WANT_KIND))
note "produced $WANT_BAD bad records: $WANT_MALFORMED malformed, $WANT_VERSION unknown version, $WANT_KIND unknown kind"

b2=$(ip netns exec "$CLI" $TRAFFIC short "$SRV_IP" 7400 30 700) ||
	fail "batch 2 failed"
note "batch 2: $b2"
sleep 1
kill -INT "${AGENTS[@]}"
for p in "${AGENTS[@]}"; do
	wait "$p" || fail "an agent failed: $(cat "$T_TMP"/agent-*.log)"
done
read -r produced delivered <<<"$(cat "$T_TMP"/agent-*.log |
	sed -n 's/.*kafka: \([0-9]*\) produced, \([0-9]*\) delivered.*/\1 \2/p' |
	awk '{p += $1; d += $2} END {print p + 0, d + 0}')"
check_eq "agents: every record produced was delivered" "$delivered" "$produced"
[ "$delivered" -gt 0 ] || fail "the agents delivered nothing"
# Host and process metadata go to causeway.meta, timing records to
# causeway.timing: the rest are connections.
meta=$(cat "$T_TMP"/agent-*.log |
	sed -n 's/.*meta: \([0-9]*\) host and \([0-9]*\) process records.*/\1 \2/p' |
	awk '{m += $1 + $2} END {print m + 0}')
# Timing records go to causeway.timing: whether a window of the agents'
# default schedule fell in the run depends on the clock.
timing=$(cat "$T_TMP"/agent-*.log |
	sed -n 's/.*timing: [0-9]* windows, \([0-9]*\) records.*/\1/p' |
	awk '{t += $1} END {print t + 0}')
conns=$((delivered - meta - timing))

# correlate N: run a correlator of group "badinput" into $T_TMP/corrN.
correlate() {
	local rc
	"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
		--group badinput --from-beginning --idle "$2" -o "$T_TMP/corr$1" \
		--json >"$T_TMP/corr$1.json" 2>"$T_TMP/corr$1.log"
	rc=$?
	cat "$T_TMP/corr$1.log" >&2
	check_eq "correlator $1: exit status" "$rc" 0
}
# count N KIND: lines of correlator N's log that say it skips KIND.
count() { grep -c "skipping $2 record" "$T_TMP/corr$1.log"; }
# applied N: "records applied" and "bad records skipped" of correlator N.
applied() {
	sed -n 's/.* \([0-9]*\) records applied, .*, \([0-9]*\) bad records skipped.*/\1 \2/p' \
		"$T_TMP/corr$1.log"
}

# --idle counts from the start too; the broker gives a new group its
# partitions after 3 s.
correlate 1 5s
read -r recs bad <<<"$(applied 1)"
check_eq "correlator 1: records applied" "$recs" "$conns"
check_eq "correlator 1: bad records skipped" "$bad" "$WANT_BAD"
check_eq "correlator 1: counts per kind" \
	"$(sed -n 's/.*records: skipped //p' "$T_TMP/corr1.log")" \
	"$WANT_MALFORMED malformed, $WANT_VERSION unknown version, $WANT_KIND unknown kind"
check_eq "correlator 1: bad records in --json" "$(python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))["bad_records"]
print(b["malformed"], b["unknown_version"], b["unknown_kind"])' "$T_TMP/corr1.json")" \
	"$WANT_MALFORMED $WANT_VERSION $WANT_KIND"
check_eq "correlator 1: malformed logged once" "$(count 1 malformed)" 1
check_eq "correlator 1: unknown version logged once" "$(count 1 'unknown version')" 1
check_eq "correlator 1: unknown kind logged once" "$(count 1 'unknown kind')" 1
check_eq "correlator 1: nothing else logged as skipped" \
	"$(grep -c "skipping" "$T_TMP/corr1.log")" 3

check_batch() {	# N RESULT CONNS SIZE: the batch's edge in correlator N's graph
	local pid c2s s2c conns paired
	pid=$(json_get "$2" pid)
	read -r conns paired c2s s2c <<<"$(edge "$T_TMP/corr$1" --client-pid "$pid" \
		conns paired bytes_c2s bytes_s2c)"
	check_eq "batch of $3: connections" "$conns" "$3"
	check_eq "batch of $3: every connection paired" "$paired" "$3"
	check_eq "batch of $3: bytes client -> server" "$c2s" "$(json_get "$2" sent)"
	check_eq "batch of $3: bytes server -> client" "$s2c" "$(json_get "$2" received)"
}
check_batch 1 "$b1" 20 1000
check_batch 1 "$b2" 30 700

# Two new records after the committed offsets: the real record again and
# one more envelope of no known kind.  The second correlator of the group
# must read exactly these: nothing before them is read again.
produce 0 "$T_TMP/real.bin"
produce $((1 % NPART)) "$T_TMP/bad/nokind.kind.bin"
# Up to 5 s before the group takes a member again, then 3 s to assign.
correlate 2 12s
read -r recs bad <<<"$(applied 2)"
check_eq "correlator 2: records applied (only the new one)" "$recs" 1
check_eq "correlator 2: bad records skipped (only the new one)" "$bad" 1
check_eq "correlator 2: counts per kind" \
	"$(sed -n 's/.*records: skipped //p' "$T_TMP/corr2.log")" "1 unknown kind"
check_eq "correlator 2: malformed records read again" "$(count 2 malformed)" 0
check_eq "correlator 2: unknown version records read again" "$(count 2 'unknown version')" 0
kill -INT $BROKER
wait $BROKER
echo ok
