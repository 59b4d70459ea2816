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

broker_start
# The mock broker lets a group's next member in only after the session
# timeout: keep it short.
printf 'session.timeout.ms=6000\n' >"$T_TMP/kafka.properties"

# attempt NAME SEED [agent options...]: two agents on their own topics;
# SEED 0: no loss.
attempt() {
	local name=$1 seed=$2 out=$T_TMP/$1 n pc ps topics rc
	shift 2
	topics=bt-$name
	mkdir -p "$out"
	: >"$srv"
	truth_loss "$seed"
	fleet_agent "$out" "$CLI" "cli-$name" --kafka "$BOOT" \
		--topic-prefix "$topics" "$@"
	pc=$FLEET_AGENT_PID
	fleet_agent "$out" "$SRV" "srv-$name" --kafka "$BOOT" \
		--topic-prefix "$topics" "$@"
	ps=$FLEET_AGENT_PID
	truth_clients "$name" "$out/cli.jsonl"
	n=$(wc -l <"$out/cli.jsonl")
	truth_settle "$CLI" "$SRV" -- "$srv" "$n"
	fleet_agent_stop $pc "$out/agent-cli-$name.log"
	fleet_agent_stop $ps "$out/agent-srv-$name.log"
	cp "$srv" "$out/srv.jsonl"
	truth_loss_end "$seed" "$name"
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

truth_session sampled 0
truth_session always 0 --hooks always
truth_session sampled-loss 31
truth_session always-loss 41 --hooks always
truth_end "ends' or edges' bytes"
echo ok
