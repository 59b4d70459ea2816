#!/bin/bash
# `causeway simulate --churn` writes what agents would publish for a fleet
# whose connections come and go, and the correlator pairs all of it.
# Checked from the records themselves (causeway dump): every connection
# the summary counts has both ends, each end's counters only grow, every
# closed connection has a closed record on both ends, a cookie is never
# reused on a host, both ends agree on the bytes, and each client end has
# exactly one server end with the mirrored 4-tuple and an overlapping
# lifetime.  Then the pairing: `causeway graph` on the file and `causeway
# correlate` reading the same mode's records from the embedded broker
# find every connection paired, no end alone or ambiguous, and the edges'
# bytes equal the ends' final counters.  The same seed gives the same
# bytes; another seed does not.
. "$(dirname "$0")/lib.sh"
need_cmd python3

# Bad usage: one line naming the option, exit 2, no file left behind.
for bad in "--live 0" "--lifetime 0s" "--interval 2d" "--duration 1ms" \
	"--speedup 3" "--kafka 127.0.0.1:1 -o $T_TMP/x.cww" "--hosts 1000000 --live 5" \
	"--format yaml" "--bogus"; do
	# shellcheck disable=SC2086 # each case is a list of options
	"$CW" simulate --churn $bad -o "$T_TMP/bad.cww" >/dev/null 2>"$T_TMP/bad.log"
	rc=$?
	[ "$rc" = 2 ] || fail "simulate --churn $bad: exit $rc, want 2"
	[ "$(wc -l <"$T_TMP/bad.log")" = 1 ] ||
		fail "simulate --churn $bad: not one line: $(cat "$T_TMP/bad.log")"
	[ ! -e "$T_TMP/bad.cww" ] || fail "simulate --churn $bad left a file"
done
"$CW" simulate --churn --help | grep -q "^usage: causeway simulate --churn" ||
	fail "no churn usage"
note "bad usage refused with one line and exit 2"

ARGS=(--churn -H 40 -L 5 --lifetime 2m -i 1m -d 2h -s 7)
"$CW" simulate "${ARGS[@]}" -o "$T_TMP/a.cww" 2>"$T_TMP/a.log" ||
	fail "simulate failed: $(cat "$T_TMP/a.log")"
"$CW" simulate "${ARGS[@]}" -o "$T_TMP/b.cww" 2>/dev/null || fail "simulate failed"
cmp -s "$T_TMP/a.cww" "$T_TMP/b.cww" || fail "the same seed gave other bytes"
"$CW" simulate --churn -H 40 -L 5 --lifetime 2m -i 1m -d 2h -s 8 \
	-o "$T_TMP/c.cww" 2>/dev/null || fail "simulate failed"
cmp -s "$T_TMP/a.cww" "$T_TMP/c.cww" && fail "another seed gave the same bytes"
note "$(cat "$T_TMP/a.log")"
# "churn: C connections between H hosts (S live throughout, X closed), R
# records over ..."
read -r conns live closed records <<<"$(sed -n \
	's/.*churn: \([0-9]*\) connections between [0-9]* hosts (\([0-9]*\) live throughout, \([0-9]*\) closed), \([0-9]*\) records.*/\1 \2 \3 \4/p' \
	"$T_TMP/a.log")"
[ -n "$records" ] || fail "no summary line: $(cat "$T_TMP/a.log")"
check_eq "live connections" "$live" 200
check_eq "connections = live + closed" "$conns" $((live + closed))
[ "$closed" -gt $((2 * live)) ] || fail "only $closed closed: no churn"

"$CW" dump "$T_TMP/a.cww" >"$T_TMP/a.jsonl" || fail "dump failed"
python3 - "$T_TMP/a.jsonl" "$conns" "$closed" "$records" >"$T_TMP/truth" <<'EOF' ||
import json, sys
from collections import defaultdict
path, conns, closed, records = sys.argv[1], *map(int, sys.argv[2:])
ends, nrec = {}, 0
for line in open(path):
    r = json.loads(line)
    nrec += 1
    key = (r["host"], r["boot_id"], r["cookie"])
    old = ends.get(key)
    if old:
        assert not old["closed"], "a record after the close of %s" % (key,)
        for f in ("bytes_out", "bytes_in", "msgs_out", "last_ns"):
            assert r[f] >= old[f], "%s went down on %s" % (f, key)
        assert r["first_ns"] == old["first_ns"] and r["role"] == old["role"]
    ends[key] = r
assert nrec == records, "%d records, the summary says %d" % (nrec, records)
assert len(ends) == 2 * conns, "%d ends of %d connections" % (len(ends), conns)
nclosed = sum(e["closed"] for e in ends.values())
assert nclosed == 2 * closed, "%d closed ends, want %d" % (nclosed, 2 * closed)
servers = defaultdict(list)
for e in ends.values():
    if e["role"] == "server":
        servers[(e["laddr"], e["lport"], e["raddr"], e["rport"])].append(e)
c2s = s2c = 0
for e in ends.values():
    if e["role"] != "client":
        continue
    m = [s for s in servers[(e["raddr"], e["rport"], e["laddr"], e["lport"])]
         if s["first_ns"] <= e["last_ns"] and e["first_ns"] <= s["last_ns"]]
    assert len(m) == 1, "client end %s has %d server ends" % (e["cookie"], len(m))
    s = m[0]
    assert (s["bytes_in"], s["bytes_out"]) == (e["bytes_out"], e["bytes_in"])
    assert s["closed"] == e["closed"], "one end closed, the other not"
    c2s += e["bytes_out"]
    s2c += e["bytes_in"]
print(c2s, s2c)
EOF
	fail "the records are not what agents would publish"
read -r c2s s2c <"$T_TMP/truth"
note "records: $records, $conns connections, both ends each, $closed closed"

# pairing CONNS C2S S2C JSON: the stats and edge totals of a graph.
pairing() {
	python3 - "$@" <<'EOF'
import json, sys
conns, c2s, s2c = map(int, sys.argv[1:4])
d = json.loads(open(sys.argv[4]).read())
st = d["stats"]
got = (st["ends"], st["paired"], st["unpaired"], st["ambiguous"])
assert got == (2 * conns, conns, 0, 0), "ends, paired, unpaired, ambiguous: %s" % (got,)
b = (sum(e["bytes_c2s"] for e in d["edges"]), sum(e["bytes_s2c"] for e in d["edges"]))
assert b == (c2s, s2c), "edge bytes %s, the ends' %s" % (b, (c2s, s2c))
assert sum(e["conns"] for e in d["edges"]) == conns
EOF
}
"$CW" graph --format json "$T_TMP/a.cww" >"$T_TMP/graph.json" 2>/dev/null ||
	fail "graph failed"
pairing "$conns" "$c2s" "$s2c" "$T_TMP/graph.json" ||
	fail "causeway graph did not pair the churn completely"
note "graph: $conns connections paired, none alone"

# The same through Kafka: the embedded broker, the agents' producer, a
# correlator.  Small enough that the broker's retention keeps it whole.
# The records' topic made by the broker with 6 partitions, not the 4 a
# topic gets on first use: the correlator must start all 6.
for bad in "-t conns" "-t :3" "-t a/b:3" "-t ..:3" "-t conns:0" "-t conns:1025" \
	"-t conns:2 -t conns:3"; do
	# shellcheck disable=SC2086 # each case is a list of options
	"$CW" broker $bad -d 1s >/dev/null 2>"$T_TMP/bad.log"
	rc=$?
	[ "$rc" = 2 ] || fail "broker $bad: exit $rc, want 2"
	[ "$(wc -l <"$T_TMP/bad.log")" = 1 ] ||
		fail "broker $bad: not one line: $(cat "$T_TMP/bad.log")"
done
broker_start -t causeway.conns:6
"$CW" simulate --churn -H 20 -L 5 --lifetime 1m -i 30s -d 30m -s 9 \
	--kafka "$BOOT" --speedup 0 2>"$T_TMP/k.log" ||
	fail "simulate --kafka failed: $(cat "$T_TMP/k.log")"
read -r kconns krecords <<<"$(sed -n \
	's/.*churn: \([0-9]*\) connections.*), \([0-9]*\) records.*/\1 \2/p' "$T_TMP/k.log")"
published=$(sed -n 's/.* \([0-9]*\) records published.*/\1/p' "$T_TMP/k.log")
check_eq "records published" "$published" "$krecords"
# The bytes to expect: the same run to a file (the span's start differs,
# nothing else).
"$CW" simulate --churn -H 20 -L 5 --lifetime 1m -i 30s -d 30m -s 9 \
	-o "$T_TMP/k.cww" 2>/dev/null || fail "simulate failed"
client_bytes "$T_TMP/k.cww" >"$T_TMP/ktruth" || fail "dump failed"
read -r kc2s ks2c <"$T_TMP/ktruth"
printf 'session.timeout.ms=6000\nheartbeat.interval.ms=500\n' >"$T_TMP/kafka.properties"
"$CW" correlate --kafka "$BOOT" --kafka-config "$T_TMP/kafka.properties" \
	--from-beginning --no-paths --idle 8s --json -o "$T_TMP/corr" \
	>"$T_TMP/corr.json" 2>"$T_TMP/corr.log" ||
	fail "correlate failed: $(cat "$T_TMP/corr.log")"
applied=$(sed -n 's/.* \([0-9]*\) records applied.*/\1/p' "$T_TMP/corr.log")
check_eq "records applied" "$applied" "$krecords"
started=$(sed -n 's/.*state: .* \([0-9]*\) started afresh.*/\1/p' "$T_TMP/corr.log")
check_eq "partitions the correlator started (broker -t causeway.conns:6)" \
	"$started" 6
pairing "$kconns" "$kc2s" "$ks2c" "$T_TMP/corr.json" ||
	fail "the correlator did not pair the churn completely: $(cat "$T_TMP/corr.log")"
note "correlate: $krecords records from the broker, $kconns connections paired"
echo "PASS"
