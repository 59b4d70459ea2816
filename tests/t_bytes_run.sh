#!/bin/bash
# Bytes exact in every everyday TCP pattern, through `causeway run`: every
# end of every connection of tests/lib/bytes_truth.py (close orders,
# half-close either side, simultaneous close, RST both ways, close with
# unread data, sendfile, splice, writev, small writes, a long-lived
# connection over many intervals, a burst of 200 short connections), over
# IPv4 and IPv6 at once, reported to the byte as the program's own calls
# returned: in both hook modes, with no loss and with about 1 packet in 40
# dropped on each receiver's ingress (seeded).  No tolerance.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 clang tc bpftool

two_hosts
srv=$T_TMP/srv.jsonl
truth_serve "$SRV" "$SRV_IP" 7100 "$srv"
truth_serve "$SRV" "$SRV_IP6" 7200 "$srv"

failed=0
# attempt NAME SEED [run options...]: one agent, both families' clients;
# SEED 0: no loss.
attempt() {
	local name=$1 seed=$2 out=$T_TMP/$1 n c4 c6 d1 d2 s1 s2 f1 f2
	shift 2
	mkdir -p "$out"
	: >"$srv"
	if [ "$seed" != 0 ]; then
		drop_attach "$CLI" "$LINK_A" "$seed"
		drop_attach "$SRV" "$LINK_B" "$((seed + 1))"
	fi
	agent_start "$out" --interval 200ms "$@"
	ip netns exec "$CLI" $BYTES_TRUTH client "$SRV_IP" 7100 "$out/cli.jsonl" &
	c4=$!
	ip netns exec "$CLI" $BYTES_TRUTH client "$SRV_IP6" 7200 "$out/cli.jsonl" &
	c6=$!
	wait $c4 || fail "$name: the IPv4 client failed"
	wait $c6 || fail "$name: the IPv6 client failed"
	n=$(wc -l <"$out/cli.jsonl")
	truth_settle "$CLI" "$SRV" -- "$srv" "$n"
	agent_stop "$out" >/dev/null
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
	python3 "$CW_ROOT/tests/lib/bytes_check.py" --label "$name" \
		--netns "$(ns_inode "$CLI"),$(ns_inode "$SRV")" \
		"$out/conns.jsonl" "$out/srv.jsonl" "$out/cli.jsonl"
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

session sampled 0 --hooks sampled
session always 0 --hooks always
session sampled-loss 11 --hooks sampled
session always-loss 21 --hooks always
if [ $failed -ne 0 ]; then
	# Every session's records and truth, for the post-mortem.
	keep=$CW_ROOT/${BUILD:-build}/test-logs/$(basename "$0" .sh).d
	rm -rf "$keep" && mkdir -p "$keep" && cp -r "$T_TMP"/*/ "$keep"/
fi
[ $failed -eq 0 ] || fail "some ends' bytes are wrong (above)"
echo ok
