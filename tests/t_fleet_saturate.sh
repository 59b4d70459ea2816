#!/bin/bash
# Byte counters near 2^64 saturate, they never wrap.  kcat puts on
# causeway.conns two connections between the same two processes: one
# whose both ends report 2^64 - 1 bytes each way, one near the wrap, and
# (in another minute, so the edge spans two buckets) a small one.  Before,
# the edge's totals wrapped to a few bytes; the correlator's edges.json
# its --json graph and `causeway graph` must now give 2^64 - 1 each way.
. "$(dirname "$0")/lib.sh"
need_cmd python3 kcat curl

broker_start
TOPIC=causeway.conns
MAX=18446744073709551615 # bash arithmetic is signed: literals only

# conn N C2S S2C AT [COMM PID]: both ends of connection N, closed at AT,
# on partition 0 (both ends of a connection are in one partition), the
# server end owned by COMM[PID] (default serve[20]).
conn() {
	local n=$1 c2s=$2 s2c=$3 at=$4 comm=${5:-serve} pid=${6:-20} common
	common="first_ns=$((at - 1000000000)) last_ns=$at flags=1"
	python3 "$CW_ROOT/tests/lib/conn_record.py" "$T_TMP/c.bin" \
		host=web cookie=$n role=client laddr=10.9.0.1 \
		lport=$((40000 + n)) raddr=10.9.0.2 rport=80 bytes_out=$c2s \
		bytes_in=$s2c msgs_out=$c2s msgs_in=$s2c tgid=10 comm=curl \
		$common || fail "no record made"
	python3 "$CW_ROOT/tests/lib/conn_record.py" "$T_TMP/s.bin" \
		host=db cookie=$((1000 + n)) role=server laddr=10.9.0.2 \
		lport=80 raddr=10.9.0.1 rport=$((40000 + n)) bytes_out=$s2c \
		bytes_in=$c2s msgs_out=$s2c msgs_in=$c2s tgid=$pid comm=$comm \
		$common || fail "no record made"
	kcat -P -b "$BOOT" -t "$TOPIC" -p 0 -k "conn$n" "$T_TMP/c.bin" \
		"$T_TMP/s.bin" 2>>"$T_TMP/kcat.log" ||
		fail "kcat: $(cat "$T_TMP/kcat.log")"
}
now=$(date +%s%N)
at=$((now - 5 * 60 * 1000000000))
conn 1 $MAX $MAX $at
conn 2 18446744073709551515 13298 $((at + 1000000000))
conn 3 700 900 $((at + 2 * 60 * 1000000000))
conn 4 800 800 $((at + 2 * 60 * 1000000000)) other 30

"$CW" correlate --kafka "$BOOT" --group g --from-beginning --no-paths \
	--idle 2s --json -o "$T_TMP/out" >"$T_TMP/out.json" \
	2>"$T_TMP/out.log" || fail "correlate failed: $(cat "$T_TMP/out.log")"
# edge FILE: "CONNS C2S S2C MSGS_C2S MSGS_S2C" of the curl -> serve edge.
edge() {
	python3 -c 'import json, sys
g = json.load(open(sys.argv[1]))
n = {x["id"]: x.get("comm") for x in g["nodes"]}
e = [x for x in g["edges"] if n[x["client"]] == "curl" and n[x["server"]] == "serve"]
assert len(e) == 1, "edges: %s" % g["edges"]
e = e[0]
print(e["conns"], e["bytes_c2s"], e["bytes_s2c"], e["msgs_c2s"], e["msgs_s2c"])' "$1"
}
check_eq "edges.json: curl -> serve" "$(edge "$T_TMP/out/edges.json")" \
	"3 $MAX $MAX $MAX $MAX"
check_eq "--json: curl -> serve" "$(edge "$T_TMP/out.json")" \
	"3 $MAX $MAX $MAX $MAX"
# The same records through `graph` (its own pairing and sums) and its
# JSON: the node sums and the edge saturate there too.
"$CW" dump --kafka "$BOOT" --from-beginning --count 8 --timeout 10s \
	>"$T_TMP/conns.jsonl" 2>"$T_TMP/dump.log" ||
	fail "dump failed: $(cat "$T_TMP/dump.log")"
"$CW" graph --format json -o "$T_TMP/graph.json" "$T_TMP/conns.jsonl" \
	2>"$T_TMP/graph.log" || fail "graph failed: $(cat "$T_TMP/graph.log")"
check_eq "graph --format json: curl -> serve" \
	"$(edge "$T_TMP/graph.json")" "3 $MAX $MAX $MAX $MAX"
# serve reading the same topic: the saturated edge's share of all bytes is
# 1 and the small edge's next to nothing, where wrapped sums made a share
# of 1.2e16.
port=$(free_port) || fail "no free port"
"$CW" serve --listen 127.0.0.1:$port --kafka "$BOOT" --group "serve-$$" \
	2>"$T_TMP/serve.log" &
bg_pid $!
share=
for _ in $(seq 1 100); do
	share=$(curl -sf "http://127.0.0.1:$port/api/graph" 2>/dev/null |
		python3 -c 'import json, sys
e = json.load(sys.stdin)["edges"]
e = sorted(e, key=lambda x: -x["conns"])
if len(e) == 2 and e[0]["conns"] == 3:
    print(e[0]["share"], "tiny" if e[1]["share"] < 1e-12 else e[1]["share"])' \
		2>/dev/null)
	[ -n "$share" ] && break
	sleep 0.2
done
[ -n "$share" ] || fail "serve never showed the edge: $(cat "$T_TMP/serve.log")"
check_eq "serve: the edges' shares" "$share" "1 tiny"
echo PASS
