#!/bin/bash
# serve --kafka applies a record only from the topic that carries its
# kind.  kcat puts one connection (both ends) on causeway.conns and three
# more, whose processes are called "stray", on causeway.meta,
# causeway.timing and causeway.samples.  Before, serve drew all four;
# now its graph has the first alone and /api/stats counts the six stray
# ends as kafka_other.
. "$(dirname "$0")/lib.sh"
need_cmd python3 kcat curl

broker_start

# conn N COMM TOPIC: both ends of connection N, COMM -> serve, on TOPIC.
conn() {
	local n=$1 at
	at=$(date +%s%N)
	python3 "$CW_ROOT/tests/lib/conn_record.py" "$T_TMP/c.bin" host=web \
		cookie=$n role=client laddr=10.9.0.1 lport=$((40000 + n)) \
		raddr=10.9.0.2 rport=80 bytes_out=100 bytes_in=200 tgid=$n \
		comm="$2" first_ns=$at last_ns=$at || fail "no record made"
	python3 "$CW_ROOT/tests/lib/conn_record.py" "$T_TMP/s.bin" host=db \
		cookie=$((1000 + n)) role=server laddr=10.9.0.2 lport=80 \
		raddr=10.9.0.1 rport=$((40000 + n)) bytes_out=200 bytes_in=100 \
		tgid=99 comm=serve first_ns=$at last_ns=$at ||
		fail "no record made"
	kcat -P -b "$BOOT" -t "$3" -p 0 -k "conn$n" "$T_TMP/c.bin" \
		"$T_TMP/s.bin" 2>>"$T_TMP/kcat.log" ||
		fail "kcat: $(cat "$T_TMP/kcat.log")"
}
conn 1 curl causeway.conns
conn 2 stray causeway.meta
conn 3 stray causeway.timing
conn 4 stray causeway.samples

port=$(free_port) || fail "no free port"
"$CW" serve --listen 127.0.0.1:$port --kafka "$BOOT" --group "serve-$$" \
	2>"$T_TMP/serve.log" &
bg_pid $!
# Wait (a bound, not a measurement) until serve has read all 8 records.
for _ in $(seq 1 300); do
	curl -sf "http://127.0.0.1:$port/api/stats" >"$T_TMP/stats.json" \
		2>/dev/null && python3 -c 'import json, sys
sys.exit(json.load(open(sys.argv[1]))["kafka_messages"] < 8)' \
		"$T_TMP/stats.json" && break
	sleep 0.1
done
curl -sf "http://127.0.0.1:$port/api/graph" >"$T_TMP/g.json" ||
	fail "no graph: $(cat "$T_TMP/serve.log")"
check_eq "messages read, stray ends counted" "$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(s["kafka_messages"], s["kafka_other"])' "$T_TMP/stats.json")" "8 6"
check_eq "processes in the graph" "$(python3 -c 'import json, sys
g = json.load(open(sys.argv[1]))
print(" ".join(sorted(n.get("comm", "") for n in g["nodes"])))' \
	"$T_TMP/g.json")" "curl serve"
echo PASS
