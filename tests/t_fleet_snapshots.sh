#!/bin/bash
# A correlator's snapshot files are written off the thread that consumes
# records (cli/graph_writer.c): with snapshots every 100 ms over a stream
# that takes seconds to read, graphs are handed to the writer while
# records are applied, each file seen mid-run is whole (the writer
# renames a finished file into place), and the files at the end are the
# whole stream's (2 h of churn, within the embedded broker's retention):
# every connection paired and every byte of the same run written to a
# file, as edges.json and as the --json summary.  Then the default view,
# the last hour: the same as that hour read back from P.edges.
. "$(dirname "$0")/lib.sh"
need_cmd python3

churn_published --churn -H 300 -L 5 --lifetime 10m -i 5m -d 2h -s 7

# --view 0: the graph of the whole two hours, not of their last hour.
"$CW" correlate --kafka "$BOOT" --group snaps --from-beginning --no-paths \
	--idle 3s --snapshot-every 100ms --min-share 0 --json -o "$T_TMP/out" \
	--view 0 \
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

# The default view (--view 1h) over the same two hours: the graph is the
# buckets from an hour before the newest sealed one, and the open ones:
# what `causeway graph --kafka --since` reads back of that hour, edge for
# edge, from the buckets this member wrote to P.edges.  Less than the
# whole stream, and not nothing.
"$CW" correlate --kafka "$BOOT" --group view --from-beginning --no-paths \
	--idle 3s --min-share 0 --json >"$T_TMP/view.json" 2>"$T_TMP/view.log" ||
	fail "correlate failed: $(cat "$T_TMP/view.log")"
sealed=$(sed -n 's/.*sealed up to \([0-9]*\);.*/\1/p' "$T_TMP/view.log")
[ -n "$sealed" ] || fail "no buckets line: $(cat "$T_TMP/view.log")"
from=$((sealed / 1000000000 - 3600))
"$CW" graph --kafka "$BOOT" --group view --since "@$from" --format json \
	>"$T_TMP/hour.json" 2>"$T_TMP/hour.log" ||
	fail "graph --kafka failed: $(cat "$T_TMP/hour.log")"
python3 - "$C2S" "$T_TMP/view.json" "$T_TMP/hour.json" <<'EOF' ||
import json, sys
whole = int(sys.argv[1])
def edges(path):  # by what the nodes are: ids (and labels) differ
    d = json.load(open(path))
    name = {n["id"]: tuple(n.get(k) for k in ("kind", "host", "pid", "comm",
                                             "addr", "port"))
            for n in d["nodes"]}
    return {(name[e["client"]], name[e["server"]]):
            (e["bytes_c2s"], e["bytes_s2c"], e["conns"]) for e in d["edges"]}
v, h = edges(sys.argv[2]), edges(sys.argv[3])
assert v == h, "the view: %d edges, the hour read back: %d; %d differ" % (
    len(v), len(h), len(set(v.items()) ^ set(h.items())))
c2s = sum(x[0] for x in v.values())
assert 0 < c2s < whole, "the view's bytes %d of the stream's %d" % (c2s, whole)
print("the view of the last hour: %d edges, %.0f%% of the stream's bytes, "
      "as graph --kafka --since reads that hour back" % (len(v), 100.0 * c2s / whole))
EOF
	fail "the view is not the last hour of buckets"
# A view shorter than a bucket would hold none: refused, in one line.
"$CW" correlate --kafka "$BOOT" --view 30s >/dev/null 2>"$T_TMP/err.log"
check_eq "correlate --view 30s (buckets of 1m): exit status" $? 2
check_eq "lines said" "$(wc -l <"$T_TMP/err.log")" 1
echo PASS
