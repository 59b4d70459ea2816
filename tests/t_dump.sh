#!/bin/bash
# causeway dump on wire stream files.  The files are written by an
# independent encoder (python, from docs/wire.md alone), so this also checks
# that a consumer in another language reads and writes the same format.
. "$(dirname "$0")/lib.sh"
need_cmd python3
[ -x "$CW" ] || fail "no causeway binary at $CW (make)"

# wirefile OUT CASE: write a wire stream file.
wirefile() {
	python3 - "$1" "$2" <<'EOF'
import struct, sys, zlib

def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])

def key(f, wt): return varint(f << 3 | wt)
def vi(f, v): return key(f, 0) + varint(v) if v else b""
def ln(f, b): return key(f, 2) + varint(len(b)) + b if b else b""
def s(f, t): return ln(f, t.encode())
def fx64(f, v): return key(f, 1) + struct.pack("<Q", v) if v else b""

def process(tgid, comm, cmdline):
    return vi(1, tgid) + vi(2, 123456) + vi(3, 99) + s(4, comm) + \
        s(5, cmdline) + s(6, "c0ffee") + s(7, "")

def conn(seq, lport, nbytes, v6=False):
    la = bytes([10, 77, 0, 1]) if not v6 else bytes.fromhex("fd77" + "00" * 13 + "01")
    ra = bytes([10, 77, 0, 2]) if not v6 else bytes.fromhex("fd77" + "00" * 13 + "02")
    return s(1, "host-a") + vi(2, 4026531992) + vi(3, 1000 + seq) + \
        vi(4, 6) + vi(5, 1) + vi(6, 1) + ln(7, la) + vi(8, lport) + \
        ln(9, ra) + vi(10, 80) + vi(11, nbytes) + vi(12, 2 * nbytes) + \
        vi(13, 3) + vi(14, 4) + vi(15, 5) + vi(16, 6) + \
        fx64(17, 1700000000000000000) + fx64(18, 1700000001000000000) + \
        vi(19, 7) + vi(20, 250) + vi(21, seq) + \
        ln(22, process(4242, "curl", "curl -s http://10.77.0.2/"))

def envelope(body_field, body, version=1):
    return vi(1, version) + ln(body_field, body)

def frame(payload):
    return struct.pack("<II", len(payload), zlib.crc32(payload)) + payload

out, case = sys.argv[1], sys.argv[2]
recs = [envelope(10, conn(1, 41000, 1000)),
        envelope(10, conn(2, 41001, 2 ** 40, v6=True)),
        envelope(11, s(1, "host-a") + s(2, "a.example") + s(3, "6.18.0") +
                 vi(5, 2) + vi(6, 8 << 30) + vi(8, 3))]
data = b"CWWIRE1\n" + b"".join(frame(r) for r in recs)
if case == "bad":
    data += frame(b"\xff\xff\xff\xff")                       # malformed
    data += frame(envelope(10, conn(4, 1, 1), version=2))    # v2
    data += frame(b"\x08\x01\x52\x02\x40")                   # malformed
    bad = bytearray(frame(envelope(10, conn(5, 41005, 5))))
    bad[-1] ^= 1                                             # CRC
    data += bytes(bad)
    data += frame(envelope(10, conn(6, 41006, 6)))
    data += frame(envelope(10, conn(7, 41007, 7)))[:-3]      # torn
open(out, "wb").write(data)
EOF
}

good=$T_TMP/good.cww bad=$T_TMP/bad.cww
wirefile "$good" good
wirefile "$bad" bad

note "a good file: every record, every field"
"$CW" dump "$good" >"$T_TMP/out" 2>"$T_TMP/err" || {
	cat "$T_TMP/err"; fail "dump of a good file exited non-zero"; }
[ -s "$T_TMP/err" ] && { cat "$T_TMP/err"; fail "dump of a good file wrote to stderr"; }
check_eq "lines" "$(wc -l <"$T_TMP/out")" 3
pyjson '
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
a, b, h = l
assert a["host"] == "host-a" and a["netns"] == 4026531992, a
assert a["cookie"] == 1001 and a["seq"] == 1 and a["proto"] == "tcp", a
assert a["role"] == "client" and a["closed"] is True, a
assert a["laddr"] == "10.77.0.1" and a["lport"] == 41000, a
assert a["raddr"] == "10.77.0.2" and a["rport"] == 80, a
assert a["bytes_out"] == 1000 and a["bytes_in"] == 2000, a
assert (a["calls_out"], a["calls_in"], a["msgs_out"], a["msgs_in"]) == (3, 4, 5, 6)
assert a["first_ns"] == 1700000000000000000, a
assert a["last_ns"] == 1700000001000000000, a
assert a["retrans"] == 7 and a["srtt_us"] == 250, a
p = a["process"]
assert p["pid"] == 4242 and p["comm"] == "curl" and p["start_ns"] == 123456, p
assert p["cmdline"] == "curl -s http://10.77.0.2/" and p["cgroup_id"] == 99, p
assert p["container"] == "c0ffee" and p["pod"] == "", p
assert b["laddr"] == "fd77::1" and b["bytes_out"] == 2 ** 40, b
assert h["kind"] == "host" and h["hostname"] == "a.example" and h["cpus"] == 2, h
assert h["mem_bytes"] == 8 << 30 and h["seq"] == 3, h
' "$T_TMP/out" || fail "dumped JSON does not match what was written"

note "stdin"
"$CW" dump - <"$good" >"$T_TMP/out2" || fail "dump - exited non-zero"
cmp -s "$T_TMP/out" "$T_TMP/out2" || fail "dump - differs from dump FILE"

note "a damaged file: good records printed, the rest counted, exit 1"
"$CW" dump "$bad" >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
cat "$T_TMP/err"
check_eq "exit status" "$rc" 1
check_eq "lines" "$(wc -l <"$T_TMP/out")" 4
check_eq "last seq" "$(tail -n 1 "$T_TMP/out" | pyjson 'import json,sys; print(json.load(sys.stdin)["seq"])')" 6
check_eq "malformed logged once" "$(grep -c 'skipping malformed' "$T_TMP/err")" 1
grep -q 'skipping unknown version record.*schema version 2' "$T_TMP/err" ||
	fail "no one-line message for the unknown version"
grep -q 'skipped 2 malformed, 1 unknown version' "$T_TMP/err" ||
	fail "no summary of skipped records"
grep -q 'fails its CRC' "$T_TMP/err" || fail "no message for the CRC error"
grep -q 'torn write' "$T_TMP/err" || fail "no message for the torn tail"

note "not a wire file: one clear line, exit 1, no output"
"$CW" dump "$CW_ROOT/Makefile" >"$T_TMP/out" 2>"$T_TMP/err"
check_eq "exit status" "$?" 1
check_eq "stderr lines" "$(wc -l <"$T_TMP/err")" 1
grep -q "'.*Makefile': not a causeway wire file" "$T_TMP/err" ||
	fail "unclear error: $(cat "$T_TMP/err")"
[ -s "$T_TMP/out" ] && fail "output for a file that is not a wire file"

note "missing file"
"$CW" dump "$T_TMP/nope.cww" 2>"$T_TMP/err" >/dev/null
check_eq "exit status" "$?" 1
grep -q "unable to open '.*nope.cww': No such file" "$T_TMP/err" ||
	fail "unclear error: $(cat "$T_TMP/err")"

note "bad usage"
"$CW" dump 2>/dev/null
check_eq "no input" "$?" 2
"$CW" dump --count 0 "$good" 2>/dev/null
check_eq "--count 0" "$?" 2
"$CW" dump --topic x "$good" 2>/dev/null
check_eq "--topic without --kafka" "$?" 2

note "--count"
check_eq "--count 2" "$("$CW" dump --count 2 "$good" | wc -l)" 2
echo "PASS"
