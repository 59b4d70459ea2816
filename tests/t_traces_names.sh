#!/bin/bash
# The readers of causeway paths and traces on awkward but valid input, and
# on a header that is not: more distinct node names than the old cap of
# 65,536 (it said "bad peer") in time linear in them, a UTF-8 byte order
# mark at the start of a CSV or span trace (taken), and a header naming a
# column twice (one error line naming the column).
. "$(dirname "$0")/lib.sh"
D=$T_TMP
BOM=$'\xef\xbb\xbf'

# N connections, each between two names of its own: 2N names.
names_csv() {
	awk -v n="$1" 'BEGIN {
		print "start_ns,node,peer,conn,dir,role"
		for (i = 1; i <= n; i++) {
			t = 4 * i
			printf "%d,c%d,s%d,%d,out,connected\n", t, i, i, i
			printf "%d,s%d,c%d,%d,in,accepted\n", t + 1, i, i, i
			printf "%d,s%d,c%d,%d,out,accepted\n", t + 2, i, i, i
			printf "%d,c%d,s%d,%d,in,connected\n", t + 3, i, i, i
		}
	}'
}
names_csv 35000 >$D/70k.csv
"$CW" traces $D/70k.csv -o $D/70k.json 2>$D/70k.log ||
	fail "70,000 names refused: $(cat $D/70k.log)"
n=$(grep -o '"service.name","value":{"stringValue":"s[0-9]*"' $D/70k.json |
	sort -u | wc -l)
[ "$n" = 35000 ] || fail "70,000 names: $n servers in the output, want 35000"
note "70,000 distinct names: every server traced"
# Linear, shown without a clock: 40k names read in the time of at most
# ~3x 20k (a quadratic index takes 4x); a note only, no bound.
names_csv 10000 >$D/20k.csv
names_csv 20000 >$D/40k.csv
a=$( { TIMEFORMAT=%R; time "$CW" traces $D/20k.csv -o /dev/null 2>/dev/null; } 2>&1)
b=$( { TIMEFORMAT=%R; time "$CW" traces $D/40k.csv -o /dev/null 2>/dev/null; } 2>&1)
note "20k names ${a}s, 40k names ${b}s"

# A byte order mark at the start: the same output as without it.
"$CW" paths --synthetic tiers:n=100 >$D/tiers.csv || fail "synthetic"
{ printf '%s' "$BOM"; cat $D/tiers.csv; } >$D/tiers-bom.csv
"$CW" paths $D/tiers.csv >$D/a.txt 2>&1 || fail "paths: $(cat $D/a.txt)"
"$CW" paths $D/tiers-bom.csv >$D/b.txt 2>&1 || fail "paths BOM: $(cat $D/b.txt)"
sed -i -E 's/; [0-9.]+s$//' $D/a.txt $D/b.txt
cmp -s $D/a.txt $D/b.txt || fail "paths: a BOM changed the output"
head -401 $D/20k.csv >$D/msgs.csv
{ printf '%s' "$BOM"; cat $D/msgs.csv; } >$D/msgs-bom.csv
"$CW" traces $D/msgs.csv -o $D/a.json 2>/dev/null || fail "traces CSV"
"$CW" traces $D/msgs-bom.csv -o $D/b.json 2>$D/err ||
	fail "traces CSV with a BOM: $(cat $D/err)"
cmp -s $D/a.json $D/b.json || fail "traces: a BOM changed the output"
printf '%sTraceID,SpanID,ParentID,PodName,StartTimeUnixNano,EndTimeUnixNano\n' \
	"$BOM" >$D/spans.csv
printf 't1,s1,root,web-0,100,900\nt1,s2,s1,db-0,200,300\n' >>$D/spans.csv
"$CW" traces --truth $D/spans.csv 2>$D/err >/dev/null ||
	fail "traces --truth with a BOM: $(cat $D/err)"
"$CW" paths --truth $D/spans.csv 2>$D/err >/dev/null ||
	fail "paths --truth with a BOM: $(cat $D/err)"
note "a byte order mark is taken by every reader"

# A column named twice: refused, naming it.
printf 'ts_ns,node,peer,dir,node\n1,a,b,out,c\n' >$D/twice.csv
expect_error - "names column 'node' twice" "$CW" paths $D/twice.csv
sed '1s/$/,conn/' $D/msgs.csv >$D/twice2.csv
expect_error - "names column 'conn' twice" "$CW" traces $D/twice2.csv
sed '1s/^/EndTimeUnixNano,/; 2,$s/^/1,/' $D/spans.csv >$D/twice3.csv
expect_error - "names column 'EndTimeUnixNano' twice" \
	"$CW" traces --truth $D/twice3.csv
expect_error - "names column 'EndTimeUnixNano' twice" \
	"$CW" paths --truth $D/twice3.csv
note "a column named twice is refused with its name"
