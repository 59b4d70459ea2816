#!/bin/bash
# Several requests in flight on one connection are counted as pipelined
# (xchg_pipelined), not timed as exchanges (docs/edge-health.md,
# "Exchange times").  Two clients against one server that reads one
# 100 B request at a time, works 10 ms on it and sends a 1,000 B reply:
#   serial     one request at a time: every exchange timed (~10 ms at the
#              server), none pipelined: the control;
#   multiplex  a writer thread sends a request every 2 ms, a reader thread
#              takes the replies: up to ~5 requests wait in the server's
#              receive queue, the client sends while replies are on their
#              way.
# Checked: the serial exchanges all timed (the server's 10 ms); the
# multiplexed ones counted pipelined at both ends, and whatever was timed
# right (a mis-timed one pairs a request with an earlier request's reply:
# 2 to 40 ms at the server, under 10 ms at the client).  The count is of
# turns (a request message and its reply message), not of requests: the
# requests a client sends between two replies are one message.
# And redis-benchmark -P 16 (-c 1, 3,200 GETs): each batch of 16 goes in
# one message and comes back in one, so it is one exchange (200 of them),
# timed whole: every request of a batch waits for the batch's reply.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 redis-server redis-benchmark
XH="python3 $CW_ROOT/tests/lib/xchg_hist.py"

two_hosts
RR="python3 $CW_ROOT/tests/lib/reqrep.py"
ip netns exec "$SRV" $RR serve "$SRV_IP" 7071 100 0.010 1000 &
bg_pid $!
ip netns exec "$SRV" $RR serve "$SRV_IP" 7072 100 0.010 1000 &
bg_pid $!
wait_port "$SRV" 7071
wait_port "$SRV" 7072
redis_start "$SRV" "$SRV_IP"

out=$T_TMP/out
agent_start "$out" --window 1h
ip netns exec "$CLI" $RR serial "$SRV_IP" 7071 100 100 1000 0 ||
	fail "serial client failed"
ip netns exec "$CLI" $RR multiplex "$SRV_IP" 7072 100 100 1000 0.002 ||
	fail "multiplexing client failed"
ip netns exec "$CLI" redis-benchmark -h "$SRV_IP" -p 6379 -c 1 -n 3200 -P 16 \
	-t get --csv >"$T_TMP/rb.csv" 2>/dev/null || fail "redis-benchmark failed"
sleep 0.5
agent_stop "$out" >/dev/null

ns_c=$(ns_inode "$CLI") ns_s=$(ns_inode "$SRV")
python3 - "$($XH "$out/conns.jsonl" --netns "$ns_c" --rport 7071)" \
	"$($XH "$out/conns.jsonl" --netns "$ns_s" --lport 7071)" \
	"$($XH "$out/conns.jsonl" --netns "$ns_c" --rport 7072)" \
	"$($XH "$out/conns.jsonl" --netns "$ns_s" --lport 7072)" \
	"$($XH "$out/conns.jsonl" --netns "$ns_c" --rport 7072 --field xchg_first)" \
	"$($XH "$out/conns.jsonl" --netns "$ns_c" --rport 6379)" \
	"$($XH "$out/conns.jsonl" --netns "$ns_s" --lport 6379)" \
	<<'PY' || fail "pipelined exchanges were timed"
import json, sys
sc, ss, mc, ms, mcf, rc, rs = (json.loads(a) for a in sys.argv[1:])
for name, r in (("serial client", sc), ("serial server", ss),
                ("multiplex client", mc), ("multiplex server", ms),
                ("redis -P 16 client", rc), ("redis -P 16 server", rs)):
    print("%-17s timed %3d pipelined %3d  p50 %7.3f p90 %7.3f p99 %7.3f ms"
          % (name, r["count"], r["pipelined"], r["p50"] / 1e6,
             r["p90"] / 1e6, r["p99"] / 1e6))
bad = []
# The control: all 100 timed, the server's ~10 ms.
if sc["count"] != 100 or ss["count"] != 100 or sc["pipelined"] or ss["pipelined"]:
    bad.append("serial: %d/%d timed at client/server, %d/%d pipelined"
               % (sc["count"], ss["count"], sc["pipelined"], ss["pipelined"]))
if not 10e6 <= ss["p50"] <= 11e6:
    bad.append("serial server p50 %.3f ms, not ~10" % (ss["p50"] / 1e6))
# Multiplexed: at the server, each request read is a turn, all
# pipelined (the next requests wait unread as it answers); at the client
# the requests sent between two replies are one message, so it counts
# turns (one a reply), all pipelined (the request went on after a pause).
if ms["pipelined"] < 95 or ms["count"] + ms["pipelined"] > 100:
    bad.append("multiplex server: %d timed, %d pipelined"
               % (ms["count"], ms["pipelined"]))
if mc["pipelined"] < 10 or mc["count"]:
    bad.append("multiplex client: %d timed, %d pipelined"
               % (mc["count"], mc["pipelined"]))
# Whatever was timed is right: the server's 10 ms, never less.
if ms["count"] and not 10e6 <= ms["p99"] <= 11e6:
    bad.append("multiplex server timed p99 %.3f ms" % (ms["p99"] / 1e6))
if mcf["count"] and mcf["p50"] < 10e6:
    bad.append("multiplex client timed a reply %.3f ms after its request"
               % (mcf["p50"] / 1e6))
# redis-benchmark -P 16: 200 batches (and its connection's CONFIG GET
# at the start), none shorter at the client than at the server.
for name, r in (("client", rc), ("server", rs)):
    if not 200 <= r["count"] + r["pipelined"] <= 202:
        bad.append("redis %s: %d timed, %d pipelined, not 200 batches"
                   % (name, r["count"], r["pipelined"]))
if rc["count"] and rc["p50"] < rs["p50"]:
    bad.append("redis: client p50 %d ns under the server's %d"
               % (rc["p50"], rs["p50"]))
print("\n".join("bad: " + b for b in bad))
sys.exit(1 if bad else 0)
PY
echo ok
