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

# attempt NAME SEED [run options...]: one agent, both families' clients;
# SEED 0: no loss.
attempt() {
	local name=$1 seed=$2 out=$T_TMP/$1 n
	shift 2
	mkdir -p "$out"
	: >"$srv"
	truth_loss "$seed"
	agent_start "$out" --interval 200ms "$@"
	truth_clients "$name" "$out/cli.jsonl"
	n=$(wc -l <"$out/cli.jsonl")
	truth_settle "$CLI" "$SRV" -- "$srv" "$n"
	agent_stop "$out" >/dev/null
	cp "$srv" "$out/srv.jsonl"
	truth_loss_end "$seed" "$name"
	note "$name: $n connections, $((2 * n)) ends"
	python3 "$CW_ROOT/tests/lib/bytes_check.py" --label "$name" \
		--netns "$(ns_inode "$CLI"),$(ns_inode "$SRV")" \
		"$out/conns.jsonl" "$out/srv.jsonl" "$out/cli.jsonl"
}

truth_session sampled 0 --hooks sampled
truth_session always 0 --hooks always
truth_session sampled-loss 11 --hooks sampled
truth_session always-loss 21 --hooks always
truth_end "ends' bytes"
echo ok
