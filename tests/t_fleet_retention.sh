#!/bin/bash
# A correlator that falls behind retention: the stream is published while
# no member reads, more than the embedded broker keeps (about 5 MiB per
# partition), so the oldest records are deleted before anyone applies
# them.  The correlator must say for each partition which offsets were
# lost and how many, count them (the sum must be each partition's low
# watermark, read independently with kcat), and pair the rest exactly: its
# graph's totals equal those `causeway graph` finds in the records that
# survived, dumped with kcat.
. "$(dirname "$0")/lib.sh"
need_cmd python3 kcat

broker_start
TOPIC=causeway.conns
note "embedded broker at $BOOT"

"$CW" simulate -H 1000 -c 150 -s 2 --kafka "$BOOT" 2>"$T_TMP/sim.log" ||
	fail "simulate failed: $(cat "$T_TMP/sim.log")"
produced=$(sed -n 's/.* \([0-9]*\) records published.*/\1/p' "$T_TMP/sim.log")
note "records published: $produced"

# Each partition's low watermark and the records that survived, in
# partition and offset order, as a wire stream file.
NPART=$(kcat -L -b "$BOOT" -t "$TOPIC" 2>/dev/null |
	sed -n 's/.* with \([0-9]*\) partitions.*/\1/p' | head -n 1)
[ -n "$NPART" ] || fail "no partition count for $TOPIC"
lost_want=0
: >"$T_TMP/left.bin"
for p in $(seq 0 $((NPART - 1))); do
	lo=$(kcat -C -b "$BOOT" -t "$TOPIC" -p "$p" -o beginning -c 1 -e -q \
		-f '%o' 2>>"$T_TMP/kcat.log")
	[ -n "$lo" ] || fail "no records left in partition $p"
	note "partition $p: low watermark $lo"
	lost_want=$((lost_want + lo))
	kcat -C -b "$BOOT" -t "$TOPIC" -p "$p" -o beginning -e -q -f '%R%s' \
		>>"$T_TMP/left.bin" 2>>"$T_TMP/kcat.log" ||
		fail "kcat could not read partition $p: $(cat "$T_TMP/kcat.log")"
done
[ "$lost_want" -gt 0 ] || fail "retention deleted nothing: publish more"
python3 - "$T_TMP/left.bin" "$T_TMP/left.cww" <<'PY' || fail "no wire file"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
out = open(sys.argv[2], "wb")
out.write(b"CWWIRE1\n")
i = n = 0
while i < len(data):
    (size,) = struct.unpack(">i", data[i:i + 4])
    rec = data[i + 4:i + 4 + size]
    i += 4 + size
    out.write(struct.pack("<II", len(rec), zlib.crc32(rec)) + rec)
    n += 1
print(n)
PY
left=$(python3 -c 'import sys
d = open(sys.argv[1], "rb").read(); i = n = 0
while i < len(d):
    n += 1; i += 4 + int.from_bytes(d[i:i + 4], "big")
print(n)' "$T_TMP/left.bin")
check_eq "records left + deleted = published" $((left + lost_want)) "$produced"

"$CW" correlate --kafka "$BOOT" --group behind --no-paths --idle 8s \
	--snapshot-every 1s -o "$T_TMP/corr" --json >"$T_TMP/corr.json" \
	2>"$T_TMP/corr.log" ||
	fail "correlate failed: $(cat "$T_TMP/corr.log")"
grep "deleted before\|records applied\|state:" "$T_TMP/corr.log"
check_eq "partitions that say what they lost" \
	"$(grep -c "offsets 0 to [0-9]* were deleted before they were applied" \
		"$T_TMP/corr.log")" "$NPART"
said=$(sed -n 's/.*applied: \([0-9]*\) records lost.*/\1/p' "$T_TMP/corr.log" |
	paste -sd+)
check_eq "records said lost" "$((said))" "$lost_want"
check_eq "records counted lost" \
	"$(sed -n 's/.* \([0-9]*\) records lost to retention.*/\1/p' "$T_TMP/corr.log")" \
	"$lost_want"
check_eq "records lost in --json" "$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["state"]["lost_to_retention"])' \
	"$T_TMP/corr.json")" "$lost_want"
check_eq "records applied" \
	"$(sed -n 's/.* \([0-9]*\) records applied.*/\1/p' "$T_TMP/corr.log")" "$left"

"$CW" graph --format json -o "$T_TMP/ref.json" "$T_TMP/left.cww" \
	2>"$T_TMP/graph.log" || fail "graph failed: $(cat "$T_TMP/graph.log")"
want=$(graph_totals "$T_TMP/ref.json")
note "graph of the records left: conns, paired, bytes c2s, s2c: $want"
check_eq "the correlator's graph of the rest" "$(graph_totals "$T_TMP/corr/edges.json")" "$want"
kill -INT $BROKER
wait $BROKER
echo ok
