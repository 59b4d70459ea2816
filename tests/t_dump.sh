#!/bin/bash
# causeway dump on wire stream files.  The files are written by an
# independent encoder (python, from docs/wire.md alone),
# so this also checks that a consumer in another language reads and writes
# the same format: connections, metadata, timing windows and sample runs.
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

def packed(f, vals):
    return ln(f, b"".join(varint(v) for v in vals))

# A timing window: nginx's end, 5 messages; starts as deltas from start_ns.
T0 = 1700000010000000000
TS = [T0 + 5000, T0 + 5000, T0 + 1500000, T0 + 40000000, T0 + 41000000]
DIRS = ["in", "out", "in", "out", "in"]
SIZES = [80, 350, 80, 350, 0]
def timing(nsizes=5):
    deltas = [TS[0] - T0] + [b - a for a, b in zip(TS, TS[1:])]
    bits = sum(1 << i for i, d in enumerate(DIRS) if d == "in")
    return s(1, "host-b") + vi(2, 4026532001) + vi(3, 77) + vi(4, 6) + \
        vi(5, 2) + ln(7, bytes([10, 77, 0, 11])) + vi(8, 80) + \
        ln(9, bytes([10, 77, 0, 10])) + vi(10, 41000) + \
        ln(11, process(1234, "nginx", "nginx: worker process")) + \
        fx64(12, T0) + fx64(13, T0) + fx64(14, T0 + 2000000000) + \
        vi(15, 3) + packed(16, deltas) + packed(17, SIZES[:nsizes]) + \
        ln(18, bytes([bits]))

# A sample run: the run file format (docs/causeway-samples.md, RUN FILES), 4 bins.
def samples():
    host, dev = b"host-b", b"eth0"
    bins = [{0: 1000, 2: 300}, {}, {0: 7, 10: 2}, {2: 2 ** 33}]
    body = b""
    for b in bins:
        body += varint(sum(1 << f for f in b))
        body += b"".join(varint(b[f]) for f in sorted(b))
    hdr = b"CWSAMPLE" + struct.pack("<HHIQQQIIIIQQ", 1, 72, 0, T0,
                                    1000000, 0, 5, 4, 2, len(body), 0, 0)
    hdr += bytes([len(host)]) + host + struct.pack("<H", len(dev)) + dev
    run = hdr + body
    run += struct.pack("<I", zlib.crc32(run))
    return s(1, "host-b") + s(2, "eth0") + fx64(3, T0) + vi(4, 1000000) + \
        vi(5, 5) + vi(6, 4) + vi(7, 11) + ln(8, run)

def envelope(body_field, body, version=1):
    return vi(1, version) + ln(body_field, body)

def frame(payload):
    return struct.pack("<II", len(payload), zlib.crc32(payload)) + payload

out, case = sys.argv[1], sys.argv[2]
recs = [envelope(10, conn(1, 41000, 1000)),
        envelope(10, conn(2, 41001, 2 ** 40, v6=True)),
        envelope(11, s(1, "host-a") + s(2, "a.example") + s(3, "6.18.0") +
                 vi(5, 2) + vi(6, 8 << 30) + vi(8, 3)),
        envelope(13, timing()), envelope(14, samples())]
data = b"CWWIRE1\n" + b"".join(frame(r) for r in recs)
if case == "bad":
    data += frame(b"\xff\xff\xff\xff")                       # malformed
    data += frame(envelope(10, conn(4, 1, 1), version=2))    # v2
    data += frame(b"\x08\x01\x52\x02\x40")                   # malformed
    data += frame(envelope(13, timing(nsizes=4)))            # malformed
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
check_eq "lines" "$(wc -l <"$T_TMP/out")" 5
pyjson '
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
a, b, h, t, r = l
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
T0 = 1700000010000000000
assert t["kind"] == "timing" and t["host"] == "host-b" and t["cookie"] == 77, t
assert t["slot_ns"] == T0 and t["window_start_ns"] == T0, t
assert t["window_end_ns"] == T0 + 2000000000 and t["seq"] == 3, t
assert t["role"] == "server" and t["laddr"] == "10.77.0.11", t
assert t["lport"] == 80 and t["raddr"] == "10.77.0.10" and t["rport"] == 41000, t
assert t["process"]["comm"] == "nginx" and t["process"]["pid"] == 1234, t
assert t["msgs"] == [[T0 + 5000, "in", 80], [T0 + 5000, "out", 350],
                     [T0 + 1500000, "in", 80], [T0 + 40000000, "out", 350],
                     [T0 + 41000000, "in", 0]], t["msgs"]
assert r["kind"] == "samples" and r["host"] == "host-b" and r["dev"] == "eth0", r
assert r["seq"] == 11 and r["start_ns"] == T0 and r["interval_ns"] == 1000000, r
assert r["samples"] == 5 and r["nbins"] == 4 and r["ncpus"] == 2, r
assert [b["bytes_in"] for b in r["bins"]] == [1000, 0, 7, 0], r["bins"]
assert [b["bytes_out"] for b in r["bins"]] == [300, 0, 0, 2 ** 33], r["bins"]
assert r["bins"][2]["retrans_out"] == 0 and r["bins"][2]["flows_in"] == 2, r
assert r["totals"]["bytes_out"] == 300 + 2 ** 33, r["totals"]
' "$T_TMP/out" || fail "dumped JSON does not match what was written"

note "stdin"
"$CW" dump - <"$good" >"$T_TMP/out2" || fail "dump - exited non-zero"
cmp -s "$T_TMP/out" "$T_TMP/out2" || fail "dump - differs from dump FILE"

note "a damaged file: good records printed, the rest counted, exit 1"
"$CW" dump "$bad" >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
cat "$T_TMP/err"
check_eq "exit status" "$rc" 1
check_eq "lines" "$(wc -l <"$T_TMP/out")" 6
check_eq "last seq" "$(tail -n 1 "$T_TMP/out" | pyjson 'import json,sys; print(json.load(sys.stdin)["seq"])')" 6
check_eq "malformed logged once" "$(grep -c 'skipping malformed' "$T_TMP/err")" 1
grep -q 'skipping unknown version record.*schema version 2' "$T_TMP/err" ||
	fail "no one-line message for the unknown version"
grep -q 'skipped 3 malformed, 1 unknown version' "$T_TMP/err" ||
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
# --kafka-config, as every other command names it (--properties too).
for opt in --kafka-config --properties; do
	"$CW" dump $opt k.properties "$good" 2>"$T_TMP/err"
	check_eq "$opt without --kafka" "$?" 2
	grep -q "need --kafka" "$T_TMP/err" || fail "$opt: $(cat "$T_TMP/err")"
done

note "a broker that is not there: an error once the wait is over, not a silent empty dump"
"$CW" dump --kafka 127.0.0.1:1 --timeout 1s >"$T_TMP/out" 2>"$T_TMP/err"
check_eq "exit status" "$?" 1
grep -q "no partitions assigned in 3[0-9] s: is the broker reachable" \
	"$T_TMP/err" || fail "unclear error: $(tail -n 3 "$T_TMP/err")"
[ -s "$T_TMP/out" ] && fail "output with no broker"

note "--count"
check_eq "--count 2" "$("$CW" dump --count 2 "$good" | wc -l)" 2
echo "PASS"
