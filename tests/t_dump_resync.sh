#!/bin/bash
# causeway dump past an impossible frame length: a wire file from
# `causeway simulate` with the length field of its 4th record overwritten
# (0xfffffff0, no writer makes it), and another with 100 bytes of junk
# (led by such a length) put between two records.  dump must resync on
# the next frame whose CRC holds, as the spool does: every other record
# printed exactly as from the undamaged file, the bytes skipped counted
# (the damaged frame's own size; the junk's 100), exit status 1.  From a
# pipe, which cannot be searched, it stops with a message saying so.
. "$(dirname "$0")/lib.sh"
need_cmd python3
cd "$T_TMP" || fail "no $T_TMP"

"$CW" simulate --hosts 2 --conns 5 --seed 3 --format wire -o s.cww ||
	fail "simulate failed"
"$CW" dump s.cww >clean.jsonl || fail "dump of the undamaged file failed"
python3 - <<'PY' || fail "unable to damage the file"
import struct
b = bytes(open("s.cww", "rb").read())
offs, off = [], 8
while off < len(b):
    n, _ = struct.unpack_from("<II", b, off)
    offs.append((off, n))
    off += 8 + n
assert len(offs) >= 8, len(offs)
bad = bytearray(b)
o, n = offs[3]
bad[o:o + 4] = struct.pack("<I", 0xfffffff0)
open("badlen.cww", "wb").write(bad)
open("badlen.want", "w").write("%d %d\n" % (o, 8 + n))
o = offs[5][0]
junk = struct.pack("<I", 0xfffffff0) + bytes(range(96))
open("junk.cww", "wb").write(b[:o] + junk + b[o:])
open("junk.want", "w").write("%d %d\n" % (o, len(junk)))
PY

check_case() {	# NAME SKIPPED_RECORD(1-based, 0: none)
	local rc
	"$CW" dump "$1.cww" >"$1.jsonl" 2>"$1.err"
	rc=$?
	check_eq "$1: exit status" "$rc" 1
	read -r off skipped <"$1.want"
	grep -q "offset $off: impossible record length: skipped $skipped bytes" "$1.err" ||
		fail "$1: no resync past offset $off of $skipped bytes: $(cat "$1.err")"
	grep -q "1 resyncs past impossible lengths, $skipped bytes skipped" "$1.err" ||
		fail "$1: resync not counted: $(cat "$1.err")"
	if [ "$2" -gt 0 ]; then
		sed "${2}d" clean.jsonl >"$1.expect"
	else
		cp clean.jsonl "$1.expect"
	fi
	cmp -s "$1.jsonl" "$1.expect" ||
		fail "$1: records differ from the undamaged file's: $(diff "$1.jsonl" "$1.expect" | head -5)"
	note "$1: $(wc -l <"$1.jsonl") of $(wc -l <clean.jsonl) records, $skipped bytes skipped at offset $off"
}
check_case badlen 4
check_case junk 0

# A pipe cannot be searched: the records before, then a clear stop.
cat badlen.cww | "$CW" dump - >pipe.jsonl 2>pipe.err
rc=$?
check_eq "pipe: exit status" "$rc" 1
grep -q "a pipe cannot be searched" pipe.err || fail "pipe: $(cat pipe.err)"
check_eq "pipe: records before the damage" "$(wc -l <pipe.jsonl)" 3
echo ok
