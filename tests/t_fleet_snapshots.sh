#!/bin/bash
# A correlator's snapshot files are written off the thread that consumes
# records (cli/graph_writer.c): with snapshots every 100 ms over a stream
# that takes seconds to read, graphs are handed to the writer while
# records are applied, each file seen mid-run is whole (the writer
# renames a finished file into place), and the files at the end are the
# whole stream's (2 h of churn, within the embedded broker's retention):
# every connection paired and every byte of the same run written to a
# file, as edges.json and as the --json summary.
. "$(dirname "$0")/lib.sh"
need_cmd python3

churn_published --churn -H 300 -L 5 --lifetime 10m -i 5m -d 2h -s 7

"$CW" correlate --kafka "$BOOT" --group snaps --from-beginning --no-paths \
	--idle 3s --snapshot-every 100ms --min-share 0 --json -o "$T_TMP/out" \
	>"$T_TMP/corr.json" 2>"$T_TMP/corr.log" &
CORR=$!
bg_pid $CORR
# Every edges.json seen while it runs parses whole.
seen=0
while kill -0 $CORR 2>/dev/null; do
	if cp "$T_TMP/out/edges.json" "$T_TMP/mid.json" 2>/dev/null; then
		python3 -c 'import json, sys; json.load(open(sys.argv[1]))' \
			"$T_TMP/mid.json" || fail "a torn edges.json mid-run"
		seen=$((seen + 1))
	fi
	sleep 0.1
done
wait $CORR || fail "correlate failed: $(cat "$T_TMP/corr.log")"
note "edges.json read whole $seen times while the correlator ran"
line=$(grep "graphs written off the consuming thread" "$T_TMP/corr.log") ||
	fail "no snapshot writer line: $(cat "$T_TMP/corr.log")"
note "${line#causeway: }"
written=$(sed -n 's/.*snapshots: \([0-9]*\) graphs written.*/\1/p' <<<"$line")
[ "$written" -ge 1 ] || fail "no graph written off the consuming thread"
python3 - "$CONNS" "$C2S" "$S2C" "$T_TMP/corr.json" "$T_TMP/out/edges.json" <<'EOF' ||
import json, sys
conns, c2s, s2c = map(int, sys.argv[1:4])
for path in sys.argv[4:6]:
    d = json.load(open(path))
    st = d["stats"]
    got = (st["ends"], st["paired"], st["unpaired"])
    assert got == (2 * conns, conns, 0), "%s: ends, paired, unpaired: %s" % (
        path, got)
    b = (sum(e["bytes_c2s"] for e in d["edges"]),
         sum(e["bytes_s2c"] for e in d["edges"]))
    assert b == (c2s, s2c), "%s: edge bytes %s, the ends' %s" % (
        path, b, (c2s, s2c))
print("the end's graph: %d connections paired, bytes as published, in "
      "edges.json and --json alike" % conns)
EOF
	fail "the end's graph is not the whole stream's"
grep -q "digraph" "$T_TMP/out/graph.dot" || fail "no graph.dot"
echo PASS
