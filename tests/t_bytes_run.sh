#!/bin/bash
# Bytes exact in every everyday TCP pattern, through `causeway run`: every
# end of every connection of tests/lib/bytes_truth.py (close orders,
# half-close either side, simultaneous close, RST both ways, close with
# unread data, sendfile, splice, writev, small writes, a long-lived
# connection over many intervals, a burst of 200 short connections, peeked
# reads, several iovecs, sendmmsg/recvmmsg, MSG_ZEROCOPY, an urgent byte,
# SO_LINGER 0 with data in flight, a silent connection, an end served by a
# forked child or handed over by SCM_RIGHTS, TCP Fast Open, io_uring), over
# IPv4 and IPv6 at once, and some of them with both ends on one host's
# loopback, reported to the byte as the program's own calls returned, and
# with --hooks always its calls and messages too: in both hook modes, with
# no loss and with about 1 packet in 40 dropped on each receiver's ingress
# (seeded).  No tolerance.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 clang tc bpftool

# The uring pattern's client (io_uring has no Python binding), built here.
if [ "$(sysctl -n kernel.io_uring_disabled 2>/dev/null || echo 0)" = 0 ]; then
	clang -O2 -Wall -o "$T_TMP/uring_client" \
		"$CW_ROOT/tests/lib/uring_client.c" || fail "uring_client: no build"
	export URING_CLIENT=$T_TMP/uring_client
else
	note "io_uring disabled here (kernel.io_uring_disabled): no uring pattern"
fi

two_hosts
srv=$T_TMP/srv.jsonl
truth_serve "$SRV" "$SRV_IP" 7100 "$srv"
truth_serve "$SRV" "$SRV_IP6" 7200 "$srv"
# Both ends on one host: the server host's loopback, both families.
truth_serve "$SRV" 127.0.0.1 7300 "$srv"
truth_serve "$SRV" ::1 7400 "$srv"
LO_PATTERNS="rounds_srv_close cli_halfclose rst_srv_linger0 unread_close
	peek silent tfo"

# lo_clients NAME OUT: some patterns over the server host's loopback, both
# families, beside truth_clients; their ends to OUT.  (Local: lib.sh's
# truth_clients runs on the client host only.)
lo_clients() {
	local c4 c6
	ip netns exec "$SRV" $BYTES_TRUTH client 127.0.0.1 7300 "$2" \
		$LO_PATTERNS &
	c4=$!
	ip netns exec "$SRV" $BYTES_TRUTH client ::1 7400 "$2" $LO_PATTERNS &
	c6=$!
	wait $c4 || fail "$1: the IPv4 loopback client failed"
	wait $c6 || fail "$1: the IPv6 loopback client failed"
}

# attempt NAME SEED [run options...]: one agent, both families' clients;
# SEED 0: no loss.
attempt() {
	local name=$1 seed=$2 out=$T_TMP/$1 n calls= lo
	shift 2
	[ "$*" = "--hooks always" ] && calls=--calls
	mkdir -p "$out"
	: >"$srv"
	truth_loss "$seed"
	agent_start "$out" --interval 200ms "$@"
	lo_clients "$name" "$out/cli.jsonl" &
	lo=$!
	truth_clients "$name" "$out/cli.jsonl"
	wait $lo || return 1
	n=$(wc -l <"$out/cli.jsonl")
	truth_settle "$CLI" "$SRV" -- "$srv" "$n"
	agent_stop "$out" >/dev/null
	cp "$srv" "$out/srv.jsonl"
	truth_loss_end "$seed" "$name"
	note "$name: $n connections, $((2 * n)) ends"
	python3 "$CW_ROOT/tests/lib/bytes_check.py" --label "$name" \
		--netns "$(ns_inode "$CLI"),$(ns_inode "$SRV")" $calls \
		"$out/conns.jsonl" "$out/srv.jsonl" "$out/cli.jsonl"
}

truth_session sampled 0 --hooks sampled
truth_session always 0 --hooks always
truth_session sampled-loss 11 --hooks sampled
truth_session always-loss 21 --hooks always
truth_end "ends' bytes"
echo ok
