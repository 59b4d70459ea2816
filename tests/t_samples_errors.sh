#!/bin/bash
# Bad input to causeway samples: an unknown interface, an interval or a
# sample count out of range, a corrupt or truncated run file.  Each gives
# one "causeway: error: ..." line, a non-zero exit and leaves the store as
# it was.  Ctrl-C during a run detaches the hooks and keeps the bins so far.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ip tc python3 sha256sum

A=$(ns_create a)
B=$(ns_create b)
# ns_create runs in a $(...) subshell, where its registration is lost:
# register them here so that the EXIT trap removes them.
T_NETNS+=("$A" "$B")
ns_link "$A" "$B" 10.77.4.1 10.77.4.2
STORE=$T_TMP/store
export CAUSEWAY_SAMPLES_DIR=$STORE

# Two good runs in the store.
for i in 1 2; do
	ip netns exec "$A" "$CW" -q samples record --dev "$LINK_A" \
		--interval 100us --samples 200 >/dev/null ||
		fail "a good record failed"
done
[ "$(ls "$STORE" | wc -l)" -eq 2 ] || fail "want 2 runs in the store"
good=$(ls "$STORE"/*.cws | head -n 1)
snapshot() { (cd "$STORE" && sha256sum -- * | sort); }
before=$(snapshot)

expect_error 1 "unknown interface 'nosuch0'" \
	ip netns exec "$A" "$CW" samples record --dev nosuch0
expect_error 2 "\-\-interval '5us'" \
	ip netns exec "$A" "$CW" samples record --dev "$LINK_A" --interval 5us
expect_error 2 "\-\-interval '2s'" \
	ip netns exec "$A" "$CW" samples record --dev "$LINK_A" --interval 2s
expect_error 2 "\-\-interval 'fast'" \
	ip netns exec "$A" "$CW" samples record --dev "$LINK_A" --interval fast
expect_error 2 "\-\-samples '0'" \
	ip netns exec "$A" "$CW" samples record --dev "$LINK_A" --samples 0
expect_error 2 "\-\-samples '20001'" \
	ip netns exec "$A" "$CW" samples record --dev "$LINK_A" --samples 20001
expect_error 1 "prefix '10.0.0.0/33'" \
	ip netns exec "$A" "$CW" samples record --dev "$LINK_A" --in-region 10.0.0.0/33
expect_error 1 "no run 'nosuchrun'" "$CW" samples show nosuchrun
expect_error 2 "\-\-format must be" "$CW" samples export "$good"
expect_error 2 "\-\-link-speed '0'" \
	"$CW" samples bursts "$good" --link-speed 0

# Corrupt and truncated copies, outside the store and inside it.
cp "$good" "$T_TMP/corrupt.cws"
python3 - "$T_TMP/corrupt.cws" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x40
open(sys.argv[1], "wb").write(b)
PY
head -c -7 "$good" >"$T_TMP/truncated.cws"
printf 'hello' >"$T_TMP/notarun.cws"
for f in corrupt truncated notarun; do
	expect_error 1 "$f.cws' is bad" "$CW" samples show "$T_TMP/$f.cws"
	expect_error 1 "$f.cws' is bad" \
		"$CW" samples export "$T_TMP/$f.cws" --format csv
	expect_error 1 "$f.cws' is bad" \
		"$CW" samples bursts "$T_TMP/$f.cws" --link-speed 1G
done
expect_error 1 "unable to create '/nonexistent/dir/x.svg'" \
	"$CW" samples plot "$good" -o /nonexistent/dir/x.svg
# A store named that is not there is a typo, not an empty list.
expect_error 1 "unable to open store '/nonexistent/store': No such file" \
	"$CW" samples list --store /nonexistent/store
[ "$(snapshot)" = "$before" ] || fail "the store changed"
cp "$T_TMP/corrupt.cws" "$STORE/zz-corrupt.cws"
expect_error 1 "zz-corrupt.cws' is bad" "$CW" samples show zz-corrupt
"$CW" samples list >"$T_TMP/list" || fail "list with a corrupt run"
grep -q "zz-corrupt.cws *(unreadable)" "$T_TMP/list" || fail "list does not flag the corrupt run"
rm "$STORE/zz-corrupt.cws"
[ "$(snapshot)" = "$before" ] || fail "the store changed"
note "store unchanged: $(echo "$before" | wc -l) runs"

# Ctrl-C: hooks gone, the bins so far kept and marked.
ip netns exec "$A" "$CW" samples record --dev "$LINK_A" --interval 10ms \
	--samples 20000 >"$T_TMP/rec.out" 2>"$T_TMP/rec.err" &
rec=$!
bg_pid $rec
for i in $(seq 100); do grep -q recording "$T_TMP/rec.err" && break; sleep 0.05; done
tc -n "$A" filter show dev "$LINK_A" ingress | grep -q bpf || fail "no hook during the run"
sleep 0.5
kill -INT $rec
wait $rec || fail "record after SIGINT: exit $?: $(cat "$T_TMP/rec.err")"
tc -n "$A" filter show dev "$LINK_A" ingress | grep -q bpf && fail "ingress hook left after SIGINT"
tc -n "$A" filter show dev "$LINK_A" egress | grep -q bpf && fail "egress hook left after SIGINT"
tc -n "$A" qdisc show dev "$LINK_A" | grep -q clsact && fail "clsact left after SIGINT"
run=$(cat "$T_TMP/rec.out")
"$CW" samples show "$run" | grep -q "(interrupted)" || fail "interrupted run not marked"
note "interrupted: $("$CW" samples show "$run" | grep bins:)"
echo "PASS"
