#!/bin/bash
# causeway serve --kafka follows the fleet's topics as the correlator does:
# an agent inside a test host, where curl fetches a page from a python3 web
# server, publishes connections, timing windows (2 s every 5 s), sample
# runs (its schedule) and host metadata to `causeway broker` in the same
# host; serve, a consumer of its own group there too:
#  - shows the N connections from curl to the server, each end paired,
#    with the bytes each way that curl counted;
#  - infers each window's causal paths as `causeway correlate` does: for
#    every window both inferred, the same paths, and curl -> python3 in
#    them;
#  - lists the sample run that `causeway dump` reads from the samples
#    topic (host, device, start, bins), with its bursts and its plot;
#  - exposes the agent's health from its host metadata on /metrics: once
#    the agent stops, equal to the counts it prints (its last host record
#    carries them), and the consumer's lag, 0 once everything is read;
#  - gives the graph's nodes the processes' resources from the meta
#    topic: then, in the process and pod views, the nodes, CPU and memory
#    that `causeway graph --format json` gives for the conns and meta
#    topics as `causeway dump` reads them.
# Takes up to a minute and a half (the sampler's first run).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd curl python3
N=5

two_hosts
H=$CLI
echo "hello from the test host" >"$T_TMP/index.html"
ip netns exec "$H" python3 -m http.server 8000 --bind 127.0.0.1 \
	--directory "$T_TMP" >/dev/null 2>&1 &
SRV_PID=$!
bg_pid $SRV_PID
wait_port "$H" 8000

# Inside the host (the sampler watches the host's link): the broker on the
# host's loopback, in a process of its own so it outlives the agent.
broker_start -n "$H"
port=$(free_port) || fail "no free port"
ip netns exec "$H" "$CW" agent --netns "$(ns_inode "$H")" --host khost \
	--interval 300ms --samples-every 30s --samples-store "$T_TMP/store" \
	--window 2s --window-every 5s --meta-every 1s \
	--spool "$T_TMP/spool" --kafka "$BOOT" 2>"$T_TMP/agent.log" &
AGENT=$!
bg_pid $AGENT
for _ in $(seq 1 600); do
	grep -q "agent on host" "$T_TMP/agent.log" && break
	sleep 0.1
done
grep -q "agent on host" "$T_TMP/agent.log" || fail "agent did not start: $(cat "$T_TMP/agent.log")"
# in_host CMD...: run in the test host (serve, curl, correlate, dump).
in_host() { ip netns exec "$H" "$@"; }

in_host "$CW" serve --listen 127.0.0.1:$port --kafka "$BOOT" --group "serve-$$" \
	2>"$T_TMP/serve.log" &
bg_pid $!

: >"$T_TMP/sizes"
for i in $(seq $N); do
	ip netns exec "$H" curl -s -o /dev/null -w '%{size_request} %{size_header} %{size_download}\n' \
		http://127.0.0.1:8000/index.html >>"$T_TMP/sizes" || fail "curl failed"
done

# Wait (a bound, not a measurement) until serve has all N connections.
for _ in $(seq 1 300); do
	in_host curl -sf "http://127.0.0.1:$port/api/graph" >"$T_TMP/g.json" 2>/dev/null &&
		python3 -c '
import json, sys
g = json.load(open(sys.argv[1]))
nodes = {x["id"]: x for x in g["nodes"]}
sys.exit(0 if sum(e["paired"] for e in g["edges"]
                  if nodes[e["to"]]["comm"] == "python3") >= int(sys.argv[2]) else 1)
' "$T_TMP/g.json" $N && break
	sleep 0.2
done
python3 -c '
import json, sys
g = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
sizes = [tuple(map(int, l.split())) for l in open(sys.argv[3])]
nodes = {x["id"]: x for x in g["nodes"]}
# The agent, its broker and serve share the host: only curl -> python3.
edges = [e for e in g["edges"] if nodes[e["from"]]["comm"] == "curl"
         and nodes[e["to"]]["comm"] == "python3"]
assert len(edges) == n, ("want %d curl edges" % n, g["edges"])
for e in edges:
    assert nodes[e["to"]]["comm"] == "python3", nodes[e["to"]]
    assert e["conns"] == 1 and e["paired"] == 1, e
got = sorted((e["bytes_c2s"], e["bytes_s2c"]) for e in edges)
want = sorted((q, h + d) for q, h, d in sizes)
assert got == want, (got, want)
print("-- %d connections curl -> python3, paired, bytes as curl counted: %s" % (n, got[0]))
' "$T_TMP/g.json" $N "$T_TMP/sizes" ||
	fail "serve --kafka does not show what curl did: $(cat "$T_TMP/serve.log")"
in_host curl -sf "http://127.0.0.1:$port/api/stats" >"$T_TMP/stats.json" || fail "no stats"
grep -q '"kafka_messages":[1-9]' "$T_TMP/stats.json" || fail "no Kafka messages counted: $(cat "$T_TMP/stats.json")"
note "stats: $(cat "$T_TMP/stats.json")"

# ---- timing windows: paths as correlate infers them -------------------
# A load of about 12 s covers at least two windows (2 s at each multiple
# of 5 s): one client process, so the paths' root is one node.
ip netns exec "$H" python3 "$CW_ROOT/examples/load.py" http://127.0.0.1:8000/index.html \
	--clients 2 --rate 20 --duration 12s >"$T_TMP/load.json" &
LOAD_PID=$!
bg_pid $LOAD_PID
wait $LOAD_PID || fail "load generator failed"
note "load: $(cat "$T_TMP/load.json")"

# Wait (a bound) until serve has inferred two windows with paths.
for _ in $(seq 1 300); do
	in_host curl -sf "http://127.0.0.1:$port/api/paths" >"$T_TMP/paths.json" &&
		python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))["windows"]
sys.exit(0 if sum(1 for x in w if x["paths"]) >= 2 else 1)' "$T_TMP/paths.json" &&
		break
	sleep 0.2
done
# The sample run: the schedule's next multiple of 30 s, then 20 s of bins,
# with traffic over the host's link for it to count.
ip netns exec "$SRV" $TRAFFIC echo-stream "$SRV_IP" 7400 &
bg_pid $!
wait_port "$SRV" 7400
for _ in $(seq 1 900); do
	ip netns exec "$H" $TRAFFIC short "$SRV_IP" 7400 2 20000 \
		>>"$T_TMP/veth.out" 2>/dev/null
	in_host curl -sf "http://127.0.0.1:$port/api/samples" >"$T_TMP/runs.json" &&
		grep -q '"nbins"' "$T_TMP/runs.json" && break
	kill -0 $AGENT 2>/dev/null || fail "agent exited: $(cat "$T_TMP/agent.log")"
	sleep 0.1
done
grep -q '"nbins"' "$T_TMP/runs.json" || fail "serve lists no sample run: $(cat "$T_TMP/runs.json")"
[ -s "$T_TMP/veth.out" ] || fail "no traffic crossed the link"
note "$(wc -l <"$T_TMP/veth.out") rounds of traffic over the link"

# The correlator over the same topics (its own group).  The agent watches
# its own Kafka traffic here, so the topics never go idle: a duration.
in_host "$CW" correlate --kafka "$BOOT" --from-beginning --duration 15s \
	--group "corr-$$" --window-grace 2s -o "$T_TMP/corr" \
	>/dev/null 2>"$T_TMP/corr.log" || fail "correlate failed: $(cat "$T_TMP/corr.log")"
[ -s "$T_TMP/corr/paths.jsonl" ] || fail "correlate inferred no window: $(cat "$T_TMP/corr.log")"
# serve again, now that correlate has seen every window serve will.
in_host curl -sf "http://127.0.0.1:$port/api/paths" >"$T_TMP/paths.json" || fail "no /api/paths"
python3 - "$T_TMP/paths.json" "$T_TMP/corr/paths.jsonl" \
	"python3[$LOAD_PID]@khost" "python3[$SRV_PID]@khost" <<'PY' ||
import json, sys
served = json.load(open(sys.argv[1]))
assert served["source"] == "kafka", served["source"]
mine = {w["slot_ns"]: w for w in served["windows"]}
corr = {}
for l in open(sys.argv[2]):
    w = json.loads(l)
    corr[w["slot_ns"]] = w
both = [s for s in mine if s in corr]
with_paths = [s for s in both if corr[s]["paths"]]
assert len(with_paths) >= 2, ("windows with paths in both", sorted(mine),
                              sorted(corr))
for s in both:
    a, b = mine[s], corr[s]
    for k in ("window_start_ns", "window_end_ns", "records", "ends",
              "paired", "messages", "paths"):
        assert a[k] == b[k], "window %d: %s differs: %s vs %s" % (
            s, k, json.dumps(a[k])[:300], json.dumps(b[k])[:300])
load, srv = sys.argv[3], sys.argv[4]
hops = [h for s in with_paths for p in corr[s]["paths"] for h in p["hops"]
        if h["from"] == load and h["to"] == srv]
assert hops, "no hop %s -> %s in %s" % (load, srv,
    json.dumps(corr[with_paths[0]]["paths"])[:1500])
print("-- %d windows as correlate infers them (%d with paths), %d hops "
      "load -> server, %d messages" % (len(both), len(with_paths), len(hops),
      sum(h["messages"] for h in hops)))
PY
	fail "serve's paths differ from correlate's"

# ---- sample runs: what dump reads from the samples topic ---------------
in_host "$CW" dump --kafka "$BOOT" --topic samples --from-beginning \
	--timeout 5s >"$T_TMP/dump.jsonl" 2>"$T_TMP/dump.log" ||
	fail "dump failed: $(cat "$T_TMP/dump.log")"
in_host curl -sf "http://127.0.0.1:$port/api/samples" >"$T_TMP/runs.json" || fail "no /api/samples"
name=$(python3 - "$T_TMP/runs.json" "$T_TMP/dump.jsonl" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
dumped = [json.loads(l) for l in open(sys.argv[2])]
assert dumped, "the topic has no run"
got = [(r["host"], r["dev"], r["start_ms"], r["interval_ns"], r["nbins"])
       for r in runs]
want = [(d["host"], d["dev"], d["start_ns"] // 10**6, d["interval_ns"],
         d["nbins"]) for d in dumped]
# A run may have completed between the dump and the list: newer only.
assert got[:len(want)] == want, (got, want)
assert all(g[2] > want[-1][2] for g in got[len(want):]), (got, want)
print(runs[len(want) - 1]["name"])
PY
) || fail "serve's sample runs differ from the topic's"
note "sample run $name, as dump reads it"
in_host curl -sf "http://127.0.0.1:$port/api/samples?run=$name" >"$T_TMP/run.json" ||
	fail "no run $name"
python3 - "$T_TMP/run.json" "$T_TMP/dump.jsonl" <<'PY' || fail "the run's totals differ"
import json, sys
r = json.load(open(sys.argv[1]))
d = [json.loads(l) for l in open(sys.argv[2])][-1]
assert r["totals"] == d["totals"], (r["totals"], d["totals"])
for f in ("bytes_out", "bytes_in"):
    want = sum(b[f] for b in d["bins"])
    assert r["totals"][f] == want, (f, r["totals"][f], want)
assert "egress" in r and "ingress" in r, r.keys()
print("-- run totals: %s" % r["totals"])
PY
in_host curl -sf "http://127.0.0.1:$port/api/samples.svg?run=$name" | grep -q "<svg" ||
	fail "no plot of run $name"

# ---- the agent's health: serve's /metrics against the agent's report ---
kill -TERM $AGENT
wait $AGENT || fail "agent exit status $?: $(cat "$T_TMP/agent.log")"
read -r a_records <<<"$(sed -n 's/.*stopped: \([0-9]*\) records in.*/\1/p' "$T_TMP/agent.log")"
read -r a_spooled a_lost <<<"$(sed -n \
	's/.*kafka: [0-9]* produced, [0-9]* delivered, \([0-9]*\) spooled, [0-9]* replayed, \([0-9]*\) lost.*/\1 \2/p' \
	"$T_TMP/agent.log")"
read -r a_windows <<<"$(sed -n 's/.*timing: \([0-9]*\) windows.*/\1/p' "$T_TMP/agent.log")"
[ -n "$a_records" ] && [ -n "$a_lost" ] && [ -n "$a_windows" ] ||
	fail "the agent reported no counters: $(tail -n 6 "$T_TMP/agent.log")"
# Wait (a bound) for the agent's last host record, sent at its stop.
got=""
for _ in $(seq 1 100); do
	in_host curl -sf "http://127.0.0.1:$port/metrics" >"$T_TMP/serve.prom" || true
	got=$(sed -n 's/^causeway_fleet_agent_records_total{host="khost"} //p' "$T_TMP/serve.prom")
	[ "$got" = "$a_records" ] && break
	sleep 0.2
done
fleet() { sed -n "s/^causeway_fleet_agent_$1{host=\"khost\"} //p" "$T_TMP/serve.prom"; }
check_eq "agent khost: records, serve and the agent" "$(fleet records_total)" "$a_records"
check_eq "agent khost: timing windows" "$(fleet windows_total)" "$a_windows"
check_eq "agent khost: records lost" "$(fleet lost_total)" "$a_lost"
check_eq "agent khost: records spooled" "$(fleet spooled_total)" "$a_spooled"
check_eq "agent khost: waiting in the spool" "$(fleet spool_records)" 0
grep -q '^causeway_agents_seen 1$' "$T_TMP/serve.prom" ||
	fail "serve saw no agent: $(grep agents "$T_TMP/serve.prom")"
# Nothing is written any more: serve's consumer catches up everywhere.
for _ in $(seq 1 100); do
	in_host curl -sf "http://127.0.0.1:$port/metrics" >"$T_TMP/serve.prom" || true
	grep '^causeway_kafka_consumer_lag{' "$T_TMP/serve.prom" | grep -qv ' 0$' || break
	sleep 0.2
done
for t in conns meta timing samples; do
	grep -q "^causeway_kafka_consumer_lag{topic=\"causeway.$t\",partition=\"[0-9]*\"} " \
		"$T_TMP/serve.prom" || fail "no lag for causeway.$t"
done
grep '^causeway_kafka_consumer_lag{' "$T_TMP/serve.prom" | grep -v ' 0$' &&
	fail "serve's consumer stays behind"
note "consumer lag: $(grep -c '^causeway_kafka_consumer_lag{' "$T_TMP/serve.prom") partitions, all read"

# ---- resources: the meta topic's process records on the graph's nodes --
for t in conns meta; do
	in_host "$CW" dump --kafka "$BOOT" --topic $t --from-beginning \
		--timeout 5s >"$T_TMP/$t.jsonl" 2>"$T_TMP/dump-$t.log" ||
		fail "dump of $t failed: $(cat "$T_TMP/dump-$t.log")"
done
for by in process pod; do
	"$CW" graph --by $by --format json -o "$T_TMP/want-$by.json" \
		"$T_TMP/conns.jsonl" "$T_TMP/meta.jsonl" || fail "graph --by $by failed"
	in_host curl -sf "http://127.0.0.1:$port/api/graph?by=$by" >"$T_TMP/got-$by.json" ||
		fail "no /api/graph?by=$by"
done
python3 - "$T_TMP" "python3[$SRV_PID]@khost" <<'PY' || fail "serve's resources differ from the graph's"
import json, sys
tmp, server = sys.argv[1:]
USAGE = ("cpu_ms", "cpu_cores", "cpu_peak_cores", "rss_bytes", "rss_peak_bytes")
for by in ("process", "pod"):
    got = json.load(open("%s/got-%s.json" % (tmp, by)))
    want = {n["name"]: n for n in json.load(open("%s/want-%s.json" % (tmp, by)))["nodes"]}
    assert {n["name"] for n in got["nodes"]} == set(want), \
        (by, sorted(n["name"] for n in got["nodes"]), sorted(want))
    used = 0
    for n in got["nodes"]:
        for k in USAGE:
            assert n.get(k) == want[n["name"]].get(k), (by, n["name"], k, n.get(k),
                                                        want[n["name"]].get(k))
        used += "rss_bytes" in n
    assert used, "no node of the %s view has resources" % by
    print("-- %s view: %d nodes, %d with resources as the graph's" %
          (by, len(got["nodes"]), used))
srv = [n for n in json.load(open(tmp + "/got-process.json"))["nodes"] if n["name"] == server]
assert srv and srv[0]["rss_bytes"] > 1 << 20 and srv[0]["rss_peak_bytes"] >= srv[0]["rss_bytes"], srv
print("-- %s: %d bytes RSS, %.1f ms CPU" % (server, srv[0]["rss_bytes"], srv[0]["cpu_ms"]))
PY
