#!/bin/bash
# Bad input to graph, render and simulate: one line on stderr,
# "causeway: error: ...", a non-zero exit and no output file.
. "$(dirname "$0")/lib.sh"
cd "$T_TMP"

"$CW" simulate --hosts 2 --conns 3 -o good.jsonl || fail "simulate failed"
{ head -n 1 good.jsonl; echo '{"host": "h", "cookie": '; tail -n 1 good.jsonl; } >bad.jsonl

# expect RC PATTERN OUTFILE CMD...: exit RC, one error line matching
# PATTERN, OUTFILE absent.
expect() {
	local rc=$1 pat=$2 out=$3 got
	shift 3
	rm -f "$out"
	"$@" >stdout 2>stderr
	got=$?
	[ $got -eq "$rc" ] || fail "$*: exit $got, want $rc: $(cat stderr)"
	[ "$(wc -l <stderr)" -eq 1 ] || fail "$*: want one line, got: $(cat stderr)"
	grep -q "^causeway: error: $pat" stderr || fail "$*: got '$(cat stderr)', want '$pat'"
	[ -e "$out" ] && fail "$*: left $out behind"
	ls | grep -q "\.tmp\." && fail "$*: left a temporary file"
	note "$(cat stderr)"
}

expect 1 "'bad.jsonl' line 2: bad JSON" out.json "$CW" graph -o out.json bad.jsonl
expect 1 "'bad.jsonl' line 2: bad JSON" out.svg "$CW" render -o out.svg bad.jsonl
expect 2 "--by 'rack': want process, cmdline, container, host, pod or workload" \
	out.json "$CW" graph --by rack -o out.json good.jsonl
expect 2 "--by 'rack'" out.svg "$CW" render --by rack -o out.svg good.jsonl
expect 1 "unable to open 'missing.jsonl': No such file" out.json \
	"$CW" graph -o out.json good.jsonl missing.jsonl
expect 1 "unable to open 'missing.jsonl'" out.svg "$CW" render -o out.svg missing.jsonl
expect 2 "--format 'xml'" out.json "$CW" graph --format xml -o out.json good.jsonl
expect 2 "--min-share '2'" out.svg "$CW" render --min-share 2 -o out.svg good.jsonl
expect 2 "-o FILE is required" none "$CW" render good.jsonl
expect 2 "no input" none "$CW" graph
expect 2 "unknown option '--bogus'" none "$CW" graph --bogus good.jsonl
expect 2 "--window 'soon'" none "$CW" graph --window soon good.jsonl
expect 1 "--neighbours 'nobody\[1\]': no such node" out.json \
	"$CW" graph --neighbours 'nobody[1]' -o out.json good.jsonl
expect 2 "--hosts '0'" out.jsonl "$CW" simulate --hosts 0 --conns 1 -o out.jsonl
expect 2 "--hosts and --conns are required" none "$CW" simulate --hosts 3
expect 1 "unable to create 'nodir/out.json'" nodir/out.json \
	"$CW" graph -o nodir/out.json good.jsonl

# An output that is a device is written in place, never replaced by a
# regular file (as root, -o /dev/null must not destroy /dev/null), and a
# write that fails says which file and why, in one line.
mknod nul c 1 3 || fail "mknod failed"
for f in svg dot png; do
	"$CW" render -s 0.01 -f $f -o nul good.jsonl 2>stderr ||
		fail "render -f $f -o nul: $(cat stderr)"
	[ -c nul ] || fail "render -f $f replaced the device nul"
	expect 1 "unable to write '/dev/full': No space left on device" none \
		"$CW" render -s 0.01 -f $f -o /dev/full good.jsonl
done
expect 1 "unable to create '/proc/out.svg'" /proc/out.svg \
	"$CW" render -o /proc/out.svg good.jsonl
# graph's table and JSON name the file too, whether the write fails on
# the way (a large graph) or when the file is closed (a small one).
"$CW" simulate --hosts 20 --conns 50 -o large.jsonl || fail "simulate failed"
for f in json table; do
	for in in good.jsonl large.jsonl; do
		expect 1 "unable to write '/dev/full': No space left on device" none \
			"$CW" graph --format $f -o /dev/full $in
	done
done

# Wire stream files: a damaged frame is a bad record, named by its offset.
"$CW" simulate --hosts 2 --conns 3 --format wire -o good.cww || fail "simulate --format wire failed"
nrec=$(wc -l <good.jsonl)
python3 -c '
import struct, sys
d = bytearray(open("good.cww", "rb").read())
n = struct.unpack_from("<I", d, 8)[0]
second = 8 + 8 + n
d[second + 8 + 3] ^= 0xff			# a byte of the second record
open("crc.cww", "wb").write(d)
open("torn.cww", "wb").write(d[:len(d) - 5])	# and the last one cut short
print(second)
' >offset || fail "unable to damage good.cww"
printf 'CW not wire\n' >notwire.cww
expect 1 "'crc.cww' offset $(cat offset): record fails its CRC check" out.json \
	"$CW" graph -o out.json crc.cww
expect 1 "'notwire.cww': not a causeway wire file" out.json "$CW" graph -o out.json notwire.cww
expect 1 "'torn.cww' offset [0-9]*: record fails its CRC check" out.svg \
	"$CW" render -o out.svg torn.cww
"$CW" graph --skip-bad --format json -o ok.json torn.cww 2>stderr ||
	fail "--skip-bad on wire failed: $(cat stderr)"
grep -q "^causeway: warning: 'torn.cww' offset $(cat offset): record fails its CRC check (skipped)" stderr ||
	fail "no warning for the damaged record: $(cat stderr)"
grep -q "2 bad records skipped" stderr || fail "the torn record was not counted: $(cat stderr)"
pyjson 'import json, sys; s = json.load(open("ok.json"))["stats"]; assert (s["records"], s["bad_lines"]) == (int(sys.argv[1]) - 2, 2), s' "$nrec" ||
	fail "--skip-bad counted wrong on wire"
expect 2 "--format 'xml': want json or wire" out.cww \
	"$CW" simulate --hosts 1 --conns 1 --format xml -o out.cww

# --skip-bad reads on: one warning, the good lines counted.
"$CW" graph --skip-bad --format json -o ok.json bad.jsonl 2>stderr ||
	fail "--skip-bad failed: $(cat stderr)"
grep -q "^causeway: warning: 'bad.jsonl' line 2: .*(skipped)" stderr ||
	fail "no warning for the skipped line: $(cat stderr)"
pyjson 'import json; s = json.load(open("ok.json"))["stats"]; assert (s["records"], s["bad_lines"]) == (2, 1), s' ||
	fail "--skip-bad counted wrong"
note "ok"
