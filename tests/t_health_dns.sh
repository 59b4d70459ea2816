#!/bin/bash
# Names of external peers from DNS answers (issue 31), against dnsmasq in
# a test host answering made-up names: an A record, a chain of two CNAMEs
# to an A, a short TTL, and an AAAA record.  A client in another test host resolves each
# name through it (glibc, its resolv.conf pointing at dnsmasq) and
# connects to the address.  Agents watching only the client's namespace
# (so the server is an external peer) with --dns:
#   - causeway run: DnsName records in meta.jsonl, edges.json's external
#     nodes' dns_name and graph.dot's labels;
#   - causeway agent --out (JSON lines) read back by causeway graph: the
#     view's dns_name (JSON) and GraphML's attribute; and by causeway
#     serve: the page's labels.
# Each name and address is checked against what dnsmasq's log says it
# answered.  An answer of 40 addresses (EDNS, over 512 bytes) is cut by
# the capture: the 29 answers wholly inside are learned, no more.  The short TTL: a repeat inside it is not published again, a
# lookup after it is (renewed, next seq).  A hostile server on port 53
# (a pointer loop, a record running past the end, an answer for another
# name, answers nobody asked for) changes nothing; the malformed and the
# unsolicited ones are counted.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 dnsmasq getent

two_hosts
ip -n "$SRV" addr add 10.77.1.5/24 dev "$LINK_B"
ip -n "$SRV" addr add 10.77.1.6/24 dev "$LINK_B"
ip -n "$SRV" addr add 10.77.1.9/24 dev "$LINK_B"
# ip netns exec mounts /etc/netns/NS/resolv.conf over /etc/resolv.conf.
mkdir -p "/etc/netns/$CLI"
on_exit rm -rf "/etc/netns/$CLI"
# edns0: answers over 512 bytes come over UDP, as the capture's cut needs.
printf 'nameserver %s\noptions edns0\n' "$SRV_IP" >"/etc/netns/$CLI/resolv.conf"
many=()
for i in $(seq 1 40); do
	many+=("--host-record=many.example.test,10.77.2.$i,300")
done

log=$T_TMP/dnsmasq.log
ip netns exec "$SRV" dnsmasq --keep-in-foreground --no-resolv --no-hosts \
	--bind-interfaces --listen-address="$SRV_IP" --user=root \
	--pid-file="$T_TMP/dnsmasq.pid" --log-queries --log-facility="$log" \
	--host-record=api.example.test,10.77.1.2,300 \
	--host-record=edge.example.test,10.77.1.5,300 \
	--cname=www.example.test,edge.example.test,120 \
	--cname=shop.example.test,www.example.test,90 \
	--host-record=short.example.test,10.77.1.6,5 \
	--host-record=api6.example.test,fd77:1::2,240 "${many[@]}" &
bg_pid $!
wait_port "$SRV" 53 udp
ip netns exec "$SRV" $TRAFFIC echo-server 0.0.0.0 8080 &
bg_pid $!
ip netns exec "$SRV" $TRAFFIC echo-server "$SRV_IP6" 8080 &
bg_pid $!
wait_port "$SRV" 8080

# resolve NAME: connect to it on 8080 by name (glibc's resolver) and
# print the address it reached.
cat >"$T_TMP/connect.py" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 8080), timeout=5)
s.sendall(b"q" * 100)
s.recv(100)
print(s.getpeername()[0])
s.close()
PY
resolve() {
	ip netns exec "$CLI" python3 "$T_TMP/connect.py" "$1" ||
		fail "unable to reach $1 through dnsmasq"
}

run_out=$T_TMP/run
agent_start "$run_out" --dns --netns "$(ns_inode "$CLI")"
mport=$(free_port)
"$CW" agent --dns --netns "$(ns_inode "$CLI")" --interval 200ms \
	--metrics "127.0.0.1:$mport" --out "$T_TMP/agent.jsonl" \
	2>"$T_TMP/agent.err" &
AGENT2=$!
bg_pid $AGENT2
for i in $(seq 1 100); do
	grep -q "agent on host" "$T_TMP/agent.err" 2>/dev/null && break
	kill -0 $AGENT2 2>/dev/null || fail "agent exited: $(cat "$T_TMP/agent.err")"
	sleep 0.05
done

check_eq "api.example.test reached" "$(resolve api.example.test)" 10.77.1.2
check_eq "shop.example.test reached" "$(resolve shop.example.test)" 10.77.1.5
check_eq "short.example.test reached" "$(resolve short.example.test)" 10.77.1.6
# The agents stamp a name when they read its answer, after the lookup
# started: the TTL counts from no sooner than its return (and from the
# --out agent's own stamp, read below, if later).
t0=$(date +%s%N)
check_eq "api6.example.test reached" "$(resolve api6.example.test)" "$SRV_IP6"
# 40 addresses: an answer of 12 + 23 + 40 x 16 bytes, cut at 512.
check_eq "many.example.test addresses" \
	"$(ip netns exec "$CLI" getent ahostsv4 many.example.test |
		grep -c STREAM)" 40
resolve short.example.test >/dev/null # inside its TTL: not news
sleep 0.5

# A hostile server on port 53 answers a client's three queries: with a
# compression pointer that loops, with a record running past the end
# (both malformed, counted), and with an answer owned by another name than
# the question's (ignored); then it sends two answers nobody asked for,
# well-formed, naming 10.77.1.66: one with the id of a query already
# answered, one with a fresh id.  Nothing of it may name anything.
cat >"$T_TMP/hostile.py" <<'PY'
import socket, struct, sys
def name(s):
    return b"".join(bytes([len(l)]) + l.encode() for l in s.split(".")) + b"\0"
hdr = lambda i, an: struct.pack(">HHHHHH", i, 0x8180, 1, an, 0, 0)
q = name("evil.example.test") + struct.pack(">HH", 1, 1)
a = struct.pack(">HHIH", 1, 1, 3600, 4) + bytes([10, 77, 1, 66])
answers = [
    lambda i: hdr(i, 1) + q + struct.pack(">H", 0xc000 | (12 + len(q))) + a,
    lambda i: hdr(i, 1) + q + name("evil.example.test") +
              struct.pack(">HHIH", 1, 1, 60, 40),
    lambda i: hdr(i, 1) + q + name("other.example.test") + a,
]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
open(sys.argv[2], "w").write("ready\n")
for make in answers:
    query, peer = s.recvfrom(512)
    s.sendto(make(struct.unpack(">H", query[:2])[0]), peer)
last = struct.unpack(">H", query[:2])[0]
for i in (last, (last + 1) & 0xffff):
    s.sendto(hdr(i, 1) + q + name("evil.example.test") + a, peer)
PY
cat >"$T_TMP/asker.py" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 0))
s.settimeout(10)
q = b"".join(bytes([len(l)]) + l.encode() for l in
             "evil.example.test".split(".")) + b"\0" + struct.pack(">HH", 1, 1)
for i in (0x1111, 0x2222, 0x3333):
    s.sendto(struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + q,
             (sys.argv[2], 53))
    s.recv(2048)
for _ in range(2):
    s.recv(2048)
PY
ip netns exec "$SRV" python3 "$T_TMP/hostile.py" 10.77.1.9 \
	"$T_TMP/hostile.ready" &
HOSTILE=$!
bg_pid $HOSTILE
wait_file "$T_TMP/hostile.ready"
ip netns exec "$CLI" python3 "$T_TMP/asker.py" "$CLI_IP" 10.77.1.9 ||
	fail "the client did not get the hostile server's five datagrams"
wait $HOSTILE || fail "the hostile server failed"

# Past short.example.test's TTL (5 s, also the agent's floor) as the
# agents count it, with 1 s to spare for an agent slow to read an answer
# on a loaded machine: news again.
for i in $(seq 1 100); do
	t1=$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l) if "\"kind\":\"dns\"" in l else {}
    if r.get("addr") == "10.77.1.6":
        print(r["time_ns"])
        break' "$T_TMP/agent.jsonl" 2>/dev/null) && [ -n "$t1" ] && break
	sleep 0.1
done
[ -n "$t1" ] || fail "the agent did not report short.example.test: $(cat "$T_TMP/agent.err")"
[ "$t1" -gt "$t0" ] && t0=$t1
while [ $(($(date +%s%N) - t0)) -lt 6000000000 ]; do sleep 0.2; done
resolve short.example.test >/dev/null
sleep 0.5
# The agent's counters, as --metrics serves them.
metric() {
	curl -sf "http://127.0.0.1:$mport/metrics" |
		awk -v m="$1" '$1 ~ "^"m"[{]" {print $2}'
}
check_eq "causeway_agent_dns_malformed_total" \
	"$(metric causeway_agent_dns_malformed_total)" 2
# At least ours: the capture is the host's, other lookups may add names.
n=$(metric causeway_agent_dns_names_total)
[ "${n:-0}" -ge 5 ] || fail "causeway_agent_dns_names_total: got '$n', want >= 5"
note "causeway_agent_dns_names_total: $n"
kill -INT $AGENT2
wait $AGENT2 || fail "agent exited $?: $(cat "$T_TMP/agent.err")"
agent_stop "$run_out" >/dev/null

# What dnsmasq answered: "config NAME is ADDR" (a CNAME's "is <CNAME>").
truth=$(awk '/ config [^ ]* is [0-9a-f]*[.:]/ {print $(NF-2), $NF}' "$log" |
	sort -u)
note "dnsmasq answered: $(grep -v many <<<"$truth" | tr '\n' ' ')and 40 for many.example.test"

python3 - "$run_out/meta.jsonl" "$T_TMP/agent.jsonl" "$run_out/edges.json" \
	"$run_out/graph.dot" <<PY || fail "names do not match dnsmasq's answers"
import json, sys
truth = {}
for line in """$truth""".split("\n"):
    name, addr = line.split()
    truth[addr] = name
# dnsmasq's log names the A record's owner; the client asked for the
# chain's first name, which is what the agent reports.
asked = {"10.77.1.2": ("api.example.test", 300),
         "10.77.1.5": ("shop.example.test", 90), # the chain's shortest
         "10.77.1.6": ("short.example.test", 5),
         "fd77:1::2": ("api6.example.test", 240)}
many_truth = {a for a, n in truth.items() if n == "many.example.test"}
truth = {a: n for a, n in truth.items() if n != "many.example.test"}
assert len(many_truth) == 40, many_truth
assert truth == {"10.77.1.2": "api.example.test", "10.77.1.5": "edge.example.test",
                 "10.77.1.6": "short.example.test",
                 "fd77:1::2": "api6.example.test"}, truth
for path in sys.argv[1:3]:
    recs = [json.loads(l) for l in open(path) if '"kind":"dns"' in l]
    mine = [r for r in recs if r["addr"] in asked]
    for addr, (name, ttl) in asked.items():
        got = [r for r in mine if r["addr"] == addr]
        want = 2 if addr == "10.77.1.6" else 1
        assert len(got) == want, (path, addr, got)
        for r in got:
            assert (r["name"], r["ttl_s"]) == (name, ttl), (path, r)
    short = [r for r in mine if r["addr"] == "10.77.1.6"]
    assert short[1]["seq"] > short[0]["seq"], short
    assert short[1]["time_ns"] - short[0]["time_ns"] >= 5e9, short
    assert not [r for r in recs if r["addr"] == "10.77.1.66"], recs
    # Cut at 512 bytes: the header (12), the question (23) and the 29
    # answers of 16 bytes wholly before the cut, not the 30th.
    many = {r["addr"] for r in recs if r["name"] == "many.example.test"}
    assert len(many) == 29 and many <= many_truth, many
    print("%s: %d names as dnsmasq answered, short renewed after %.1f s"
          % (path.split("/")[-1], len(mine),
             (short[1]["time_ns"] - short[0]["time_ns"]) / 1e9))
g = json.load(open(sys.argv[3]))
ext = {(n["addr"], n["port"]): n.get("dns_name") for n in g["nodes"]
       if n["kind"] == "external"}
for addr, (name, _) in asked.items():
    assert ext.get((addr, 8080)) == name, (addr, ext)
dot = open(sys.argv[4]).read()
for addr, (name, _) in asked.items():
    assert name + ":8080" in dot, name
print("edges.json and graph.dot: %d external nodes named" % len(asked))
PY

for f in "$run_out/stderr" "$T_TMP/agent.err"; do
	line=$(grep "dns: " "$f") || fail "no dns line in $f"
	note "$line"
	mal=$(sed -n 's/.*), \([0-9]*\) malformed.*/\1/p' <<<"$line")
	check_eq "malformed answers counted ($(basename "$f"))" "$mal" 2
	uns=$(sed -n 's/.*(\([0-9]*\) unsolicited.*/\1/p' <<<"$line")
	[ "${uns:-0}" -ge 2 ] || fail "answers nobody asked for not counted"
	cut=$(sed -n 's/.* \([0-9]*\) cut at 512 bytes.*/\1/p' <<<"$line")
	[ "${cut:-0}" -ge 1 ] || fail "the answer over 512 bytes was not cut"
done

# The same names from the agent's records, read by causeway graph.
"$CW" graph --format json "$T_TMP/agent.jsonl" >"$T_TMP/view.json" ||
	fail "causeway graph failed"
"$CW" graph --format graphml "$T_TMP/agent.jsonl" >"$T_TMP/view.graphml" ||
	fail "causeway graph --format graphml failed"
python3 - "$T_TMP/view.json" "$T_TMP/view.graphml" <<'PY' ||
import json, sys
v = json.load(open(sys.argv[1]))
names = {n["addr"]: n.get("dns_name") for n in v["nodes"]
         if n["kind"] == "external"}
assert names.get("10.77.1.2") == "api.example.test", names
assert names.get("10.77.1.5") == "shop.example.test", names
assert names.get("10.77.1.6") == "short.example.test", names
assert names.get("fd77:1::2") == "api6.example.test", names
gml = open(sys.argv[2]).read()
assert 'attr.name="dns_name"' in gml and "shop.example.test" in gml
print("graph JSON and GraphML: names of", sorted(names))
PY
	fail "graph from the agent's records lacks the names"

# The page's graph, from the same records: its labels are the names.
sport=$(free_port)
serve_start "$sport" "$T_TMP/agent.jsonl"
curl -sf "http://127.0.0.1:$sport/api/graph?by=process" >"$T_TMP/api.json" ||
	fail "serve's /api/graph failed"
python3 - "$T_TMP/api.json" <<'PY' || fail "the page's labels lack the names"
import json, sys
nodes = {n["label"]: n for n in json.load(open(sys.argv[1]))["nodes"]}
labels = set(nodes)
for want, addr in (("api.example.test:8080", "10.77.1.2"),
                   ("shop.example.test:8080", "10.77.1.5"),
                   ("api6.example.test:8080", "fd77:1::2")):
    n = nodes.get(want)
    assert n, (want, labels)
    # The address stays the peer's, whatever the label says.
    assert (n["host"], n["dns_name"]) == (addr, want[:-5]), n
print("the page's labels:", sorted(l for l in labels if "example" in l))
PY
echo ok
