#!/bin/bash
# Bytes exact through the fleet pipeline: the byte-truth patterns of
# tests/lib/bytes_truth.py (every close order, RST, half-close, sendfile,
# splice, a burst of 200 ...) over IPv4 and IPv6 between two test hosts,
# one `causeway agent` per host publishing to a broker, in both hook modes,
# with and without seeded loss on each receiver's ingress.  Checked with no
# tolerance: every end as read back from the conns topic (`causeway dump`)
# against what its program's own calls returned, every agent's records all
# delivered, and the correlator's edges (`causeway correlate`): every
# connection paired, bytes each way what the sending ends wrote.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 clang tc bpftool

two_hosts
srv=$T_TMP/srv.jsonl
truth_serve "$SRV" "$SRV_IP" 7100 "$srv"
truth_serve "$SRV" "$SRV_IP6" 7200 "$srv"

"$CW" broker >"$T_TMP/boot" 2>"$T_TMP/broker.log" &
bg_pid $!
wait_file "$T_TMP/boot"
BOOT=$(cat "$T_TMP/boot")
# The mock broker lets a group's next member in only after the session
# timeout: keep it short.
printf 'session.timeout.ms=6000\n' >"$T_TMP/kafka.properties"

failed=0
# attempt NAME SEED [agent options...]: two agents on their own topics;
# SEED 0: no loss.
attempt() {
	local name=$1 seed=$2 out=$T_TMP/$1 n c4 c6 pc ps d1 d2 s1 s2 f1 f2 topics rc
	shift 2
	topics=bt-$name
	mkdir -p "$out"
	: >"$srv"
	if [ "$seed" != 0 ]; then
		drop_attach "$CLI" "$LINK_A" "$seed"
		drop_attach "$SRV" "$LINK_B" "$((seed + 1))"
	fi
	fleet_agent "$out" "$CLI" "cli-$name" --kafka "$BOOT" \
		--topic-prefix "$topics" "$@"
	pc=$FLEET_AGENT_PID
	fleet_agent "$out" "$SRV" "srv-$name" --kafka "$BOOT" \
		--topic-prefix "$topics" "$@"
	ps=$FLEET_AGENT_PID
	ip netns exec "$CLI" $BYTES_TRUTH client "$SRV_IP" 7100 "$out/cli.jsonl" &
	c4=$!
	ip netns exec "$CLI" $BYTES_TRUTH client "$SRV_IP6" 7200 "$out/cli.jsonl" &
	c6=$!
	wait $c4 || fail "$name: the IPv4 client failed"
	wait $c6 || fail "$name: the IPv6 client failed"
	n=$(wc -l <"$out/cli.jsonl")
	truth_settle "$CLI" "$SRV" -- "$srv" "$n"
	fleet_agent_stop $pc "$out/agent-cli-$name.log"
	fleet_agent_stop $ps "$out/agent-srv-$name.log"
	cp "$srv" "$out/srv.jsonl"
	if [ "$seed" != 0 ]; then
		read -r _ d1 s1 f1 <<<"$(drop_count "$CLI" "$LINK_A")"
		read -r _ d2 s2 f2 <<<"$(drop_count "$SRV" "$LINK_B")"
		note "$name: $((d1 + d2)) packets dropped, $((s1 + s2)) SYNs and $((f1 + f2)) FINs among them"
		[ $((d1 + d2)) -gt 0 ] || fail "$name: the drop program dropped nothing"
		drop_detach "$CLI" "$LINK_A"
		drop_detach "$SRV" "$LINK_B"
	fi
	note "$name: $n connections, $((2 * n)) ends"
	"$CW" dump --kafka "$BOOT" --topic-prefix "$topics" --topic conns \
		--from-beginning --timeout 3s >"$out/records.jsonl" \
		2>"$out/dump.log" || fail "$name: dump failed: $(cat "$out/dump.log")"
	python3 "$CW_ROOT/tests/lib/bytes_check.py" --label "$name" \
		"$out/records.jsonl" "$out/srv.jsonl" "$out/cli.jsonl"
	rc=$?
	[ $rc -eq 0 ] || return $rc
	"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
		--topic-prefix "$topics" --group "bt-$name" --from-beginning \
		--idle 4s -o "$out/corr" >/dev/null 2>"$out/corr.log" ||
		fail "$name: correlate failed: $(cat "$out/corr.log")"
	python3 "$CW_ROOT/tests/lib/bytes_check.py" --label "$name" \
		--edges "$out/corr/edges.json" "$out/srv.jsonl" "$out/cli.jsonl" ||
		return 1
}

# session NAME SEED [options...]: an attempt, checked with no tolerance.
# One fault class alone earns a second attempt: at most a few ends with no
# final record at all (the agent never saw the connection close), seen
# about once in 25 runs, only with loss and with other tests running on
# the machine, and not yet explained (issue #28's closing note).  A wrong
# byte count of a recorded end never does, and the second attempt must be
# exact.  The first attempt's faults stay in the log as RETRY lines.
session() {
	local rc
	attempt "$@"
	rc=$?
	if [ $rc -eq 3 ]; then
		note "RETRY $1: ends with no final record (above); once more"
		keep=$CW_ROOT/${BUILD:-build}/test-logs/$(basename "$0" .sh).d
		mkdir -p "$keep" && cp -r "$T_TMP/$1" "$keep/"
		attempt "$1-again" "${@:2}"
		rc=$?
	fi
	[ $rc -eq 0 ] || failed=1
}

session sampled 0
session always 0 --hooks always
session sampled-loss 31
session always-loss 41 --hooks always
if [ $failed -ne 0 ]; then
	# Every session's records and truth, for the post-mortem.
	keep=$CW_ROOT/${BUILD:-build}/test-logs/$(basename "$0" .sh).d
	rm -rf "$keep" && mkdir -p "$keep" && cp -r "$T_TMP"/*/ "$keep"/
fi
[ $failed -eq 0 ] || fail "some ends' or edges' bytes are wrong (above)"
echo ok
