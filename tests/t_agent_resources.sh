#!/bin/bash
# Resources and workload identity, from the agent to the graph.  Two
# processes run in cgroups this test makes, laid out as containerd lays out
# Kubernetes containers (kubepods.slice/.../cri-containerd-<id>.scope), on
# a test host (a network namespace of its own): a "web" client that burns
# about half a CPU
# for 1.5 s of CPU time once told to, sending a 1000-byte message every
# 50 ms, and a "db" server that holds 64 MiB it has touched.  A test
# runtime root holds containerd's task bundles for both containers (pod,
# namespace, container name).  The agent watches that host (in its network
# namespace, the machine's cgroup mounts in view) with --runtime-root; then
# the graph of its output must give:
#   - web: cpu_ms within 10% of what its cgroup's CPU counter moved while it
#     burned, mean and peak rates no more than one core;
#   - db: rss_bytes within 10% of its cgroup's memory and of its own
#     anonymous and shared memory (RssAnon + RssShmem of its status);
#   - both: container name, pod, namespace and owning workload as the
#     runtime root says, in the process, pod and workload projections;
#   - the edge between the two pods: the bytes the client sent.
# Cgroups are made in every hierarchy this machine has (v1 cpuacct and
# memory, and the v2 tree, hybrid or unified) and removed at the end, also
# on failure.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3
# The interpreter itself: a launcher (pyenv's shims) would stand between.
PY=$(python3 -c 'import sys; print(sys.executable)')

CG=/sys/fs/cgroup
# Where each kind of counter lives: pure v2, or v1 controllers (hybrid).
if [ -f $CG/cgroup.controllers ]; then
	grep -qw memory $CG/cgroup.controllers ||
		skip "cgroup v2 without the memory controller"
	V2=$CG CPUACCT="" MEMORY=""
else
	CPUACCT=$CG/cpuacct
	[ -d $CPUACCT ] || CPUACCT=$CG/cpu,cpuacct
	MEMORY=$CG/memory
	[ -f $CPUACCT/cpuacct.usage ] && [ -f $MEMORY/memory.usage_in_bytes ] ||
		skip "no v1 cpuacct and memory hierarchies"
	V2=""
	[ -f $CG/unified/cgroup.procs ] && V2=$CG/unified
fi

hex64() { python3 -c 'import os; print(os.urandom(32).hex())'; }
uuid() { python3 -c 'import uuid; print(uuid.uuid4())'; }
WEB_ID=$(hex64) DB_ID=$(hex64) WEB_UID=$(uuid) DB_UID=$(uuid)
WEB_POD=web-7d9f8b6c5d-x2x4z DB_POD=db-0 NS=shop
# A unique top slice, so parallel runs and leftovers never meet.
TOP="kubepods-cwt$$.slice"
slice() { # slice POD_UID CONTAINER_ID: the container's cgroup path
	echo "/$TOP/kubepods-burstable.slice/kubepods-burstable-pod${1//-/_}.slice/cri-containerd-$2.scope"
}
WEB_CG=$(slice "$WEB_UID" "$WEB_ID") DB_CG=$(slice "$DB_UID" "$DB_ID")
HIERS=()
[ -n "$CPUACCT" ] && HIERS+=("$CPUACCT" "$MEMORY")
[ -n "$V2" ] && HIERS+=("$V2")

# Remove the test's cgroups: their processes first, deepest folders first.
cg_remove() {
	local h d
	for h in "${HIERS[@]}"; do
		[ -d "$h/$TOP" ] || continue
		find "$h/$TOP" -name cgroup.procs -exec cat {} + 2>/dev/null |
			xargs -r kill -9 2>/dev/null
	done
	sleep 0.3
	for h in "${HIERS[@]}"; do
		[ -d "$h/$TOP" ] || continue
		find "$h/$TOP" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
}
on_exit cg_remove
if [ -n "$V2" ] && [ -z "$CPUACCT" ]; then
	# Unified: let the slices' children have cpu and memory.
	for c in cpu memory; do
		grep -qw $c $V2/cgroup.subtree_control ||
			echo "+$c" >$V2/cgroup.subtree_control 2>/dev/null
	done
fi
for h in "${HIERS[@]}"; do
	for p in "$WEB_CG" "$DB_CG"; do
		mkdir -p "$h$p" || fail "unable to make cgroup $h$p"
		if [ "$h" = "$V2" ] && [ -z "$CPUACCT" ]; then
			d=$h
			for part in ${p//\// }; do
				grep -qw memory "$d/cgroup.subtree_control" 2>/dev/null ||
					echo "+cpu +memory" >"$d/cgroup.subtree_control" 2>/dev/null
				d=$d/$part
			done
		fi
	done
done

# The runtime root: containerd's task bundles with the CRI annotations.
ROOT=$T_TMP/root
bundle() { # bundle ID CONTAINER POD POD_UID
	local d=$ROOT/run/containerd/io.containerd.runtime.v2.task/k8s.io/$1
	mkdir -p "$d"
	cat >"$d/config.json" <<EOF
{"ociVersion": "1.0.2", "process": {"args": ["$2"]},
 "annotations": {"io.kubernetes.cri.container-type": "container",
  "io.kubernetes.cri.container-name": "$2",
  "io.kubernetes.cri.sandbox-name": "$3",
  "io.kubernetes.cri.sandbox-namespace": "$NS",
  "io.kubernetes.cri.sandbox-uid": "$4"}}
EOF
}
bundle "$WEB_ID" web "$WEB_POD" "$WEB_UID"
bundle "$DB_ID" db "$DB_POD" "$DB_UID"

cat >"$T_TMP/db.py" <<'EOF'
# Hold 64 MiB, every page touched; serve one client: read what it sends.
import os, socket, sys
held = bytearray(64 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
open(sys.argv[3], "w").write("%d\n" % os.getpid())
c, _ = s.accept()
while c.recv(65536):
    pass
EOF
cat >"$T_TMP/web.py" <<'EOF'
# Connect and say hello; when GO appears burn about half a CPU (50 ms
# busy, 50 ms idle) until 1.5 s of CPU time are used, sending 1000 bytes
# every cycle; write the bytes sent to DONE; then idle, connected.
import os, socket, sys, time
host, port, go, done = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
c = socket.create_connection((host, port))
# A first message: a connection is published once bytes move on it.
c.sendall(b"h" * 100)
print(os.getpid(), flush=True)
while not os.path.exists(go):
    time.sleep(0.02)
sent, t0 = 100, time.process_time()
while time.process_time() - t0 < 1.5:
    end = time.monotonic() + 0.05
    while time.monotonic() < end:
        pass
    c.sendall(b"x" * 1000)
    sent += 1000
    time.sleep(0.05)
open(done, "w").write("%d\n" % sent)
while True:
    time.sleep(1)
EOF

# Start CMD in the container cgroup PATH of every hierarchy, in netns NS.
in_container() { # in_container PATH NS CMD...
	local p=$1 ns=$2 h
	shift 2
	for h in "${HIERS[@]}"; do
		echo $BASHPID >"$h$p/cgroup.procs" || exit 1
	done
	# The interpreter's own pages stay charged where they were first
	# read; what it allocates from here on is the container's.
	exec ip netns exec "$ns" "$@"
}

# The agent sees the sockets of its own network namespace.  nsenter moves
# it there and nothing else: `ip netns exec` would also mount another
# /sys, hiding the cgroups.
need_cmd nsenter
NODE=$(ns_create node)
NODE_IP=127.0.0.1
nsenter --net="/run/netns/$NODE" "$CW" agent -o "$T_TMP/agent.jsonl" \
	--netns "$(ns_inode "$NODE")" --interval 250ms --samples-every 0 \
	--runtime-root "$ROOT" 2>"$T_TMP/agent.log" &
AGENT=$!
bg_pid $AGENT
for _ in $(seq 1 600); do
	grep -qs "agent on host" "$T_TMP/agent.log" && break
	kill -0 $AGENT 2>/dev/null || fail "agent exited: $(cat "$T_TMP/agent.log")"
	sleep 0.05
done
grep -qs "agent on host" "$T_TMP/agent.log" ||
	fail "the agent did not start: $(cat "$T_TMP/agent.log")"

# Each program says its own pid: the shell may fork on the way.
(in_container "$DB_CG" "$NODE" "$PY" "$T_TMP/db.py" "$NODE_IP" 7700 \
	"$T_TMP/db.pid") &
bg_pid $!
wait_file "$T_TMP/db.pid" 30
DB_PID=$(cat "$T_TMP/db.pid")
bg_pid "$DB_PID"
(in_container "$WEB_CG" "$NODE" "$PY" "$T_TMP/web.py" "$NODE_IP" 7700 \
	"$T_TMP/go" "$T_TMP/web.done" >"$T_TMP/web.pid") &
bg_pid $!
wait_file "$T_TMP/web.pid"
WEB_PID=$(cat "$T_TMP/web.pid")
bg_pid "$WEB_PID"
for p in $DB_PID $WEB_PID; do
	grep -q "cri-containerd-" /proc/$p/cgroup ||
		fail "pid $p is in no test cgroup: $(cat /proc/$p/cgroup)"
done
note "db pid $DB_PID in $DB_CG; web pid $WEB_PID in $WEB_CG"

# proc_seen PID: the agent has published that process's use at least twice.
proc_seen() {
	[ "$(grep -c "\"kind\":\"process\".*\"pid\":$1," "$T_TMP/agent.jsonl" 2>/dev/null)" -ge 2 ]
}
for _ in $(seq 1 400); do
	proc_seen $WEB_PID && proc_seen $DB_PID && break
	kill -0 $AGENT 2>/dev/null || fail "agent exited: $(cat "$T_TMP/agent.log")"
	sleep 0.05
done
proc_seen $WEB_PID && proc_seen $DB_PID ||
	fail "no process records for both: $(grep -c . "$T_TMP/agent.jsonl") lines, $(grep -c "\"pid\":$WEB_PID," "$T_TMP/agent.jsonl") of web, $(grep -c "\"pid\":$DB_PID," "$T_TMP/agent.jsonl") of db; $(tail -n 3 "$T_TMP/agent.log")"

# CPU time of the web container's cgroup, ns: the ground truth.
cg_cpu_ns() {
	if [ -n "$CPUACCT" ]; then
		cat "$CPUACCT$WEB_CG/cpuacct.usage"
	else
		echo $(($(awk '$1 == "usage_usec" { print $2 }' "$V2$WEB_CG/cpu.stat") * 1000))
	fi
}
U0=$(cg_cpu_ns)
touch "$T_TMP/go"
wait_file "$T_TMP/web.done" 60
U1=$(cg_cpu_ns)
SENT=$(cat "$T_TMP/web.done")
if [ -n "$MEMORY" ]; then
	DB_MEM=$(cat "$MEMORY$DB_CG/memory.usage_in_bytes")
else
	DB_MEM=$(cat "$V2$DB_CG/memory.current")
fi
# Its own memory as the kernel counts it for the process: the anonymous
# and shared pages (what its cgroup is charged for it; the interpreter's
# file pages were read, and charged, before it moved in).
DB_RSS=$(($(awk '/^(RssAnon|RssShmem):/ { n += $2 } END { print n }' \
	/proc/$DB_PID/status) * 1024))
note "web burned $(((U1 - U0) / 1000000)) ms of CPU, sent $SENT bytes; db cgroup $DB_MEM bytes, RssAnon+RssShmem $DB_RSS, VmRSS $(($(awk '/^VmRSS:/ { print $2 }' /proc/$DB_PID/status) * 1024))"
# Two more samples of each, then stop: the span covers the burn.
N0=$(grep -c "\"pid\":$WEB_PID," "$T_TMP/agent.jsonl")
for _ in $(seq 1 200); do
	[ "$(grep -c "\"pid\":$WEB_PID," "$T_TMP/agent.jsonl")" -ge $((N0 + 2)) ] && break
	sleep 0.05
done
kill -TERM $AGENT
wait $AGENT || fail "agent exit status $?: $(cat "$T_TMP/agent.log")"

for by in process pod workload; do
	"$CW" graph --by $by --format json "$T_TMP/agent.jsonl" >"$T_TMP/$by.json" ||
		fail "graph --by $by failed"
done

python3 - "$T_TMP" "$WEB_PID" "$DB_PID" "$U0" "$U1" "$DB_MEM" "$DB_RSS" \
	"$SENT" "$T_TMP/agent.jsonl" <<'PY' || fail "resources or identity differ (graphs in $T_TMP)"
import json, sys
tmp, web, db, u0, u1, db_mem, db_rss, sent, recs = sys.argv[1:]
web, db, u0, u1, db_mem, db_rss, sent = map(int, (web, db, u0, u1, db_mem, db_rss, sent))

def load(by):
    return json.load(open("%s/%s.json" % (tmp, by)))

def within(what, got, want, pct=10):
    ok = abs(got - want) <= want * pct / 100
    print("-- %s: %s (want %s, within %d%%)%s" % (what, got, want, pct, "" if ok else " FAIL"))
    return ok

ok = True
g = load("process")
def proc(pid):
    n = [v for v in g["nodes"] if v.get("pid") == pid]
    assert len(n) == 1, "pid %d: %d vertices" % (pid, len(n))
    return n[0]
w, d = proc(web), proc(db)
# The agent read both from their cgroups.
src = {}
for line in open(recs):
    r = json.loads(line)
    if r.get("kind") == "process" and r["process"]["pid"] in (web, db):
        src.setdefault(r["process"]["pid"], set()).add(r["source"])
assert src == {web: {"cgroup"}, db: {"cgroup"}}, src
ok &= within("web cpu_ms vs its cgroup's counter", w["cpu_ms"], (u1 - u0) / 1e6)
print("-- web cpu_cores %.3f, cpu_peak_cores %.3f" % (w["cpu_cores"], w["cpu_peak_cores"]))
ok &= 0 < w["cpu_cores"] <= w["cpu_peak_cores"] <= 1.05
ok &= within("db rss_bytes vs its cgroup's memory", d["rss_bytes"], db_mem)
ok &= within("db rss_bytes vs its RssAnon + RssShmem", d["rss_bytes"], db_rss)
ok &= d["rss_peak_bytes"] >= d["rss_bytes"] >= 64 << 20
want = {web: ("web", "web-7d9f8b6c5d-x2x4z", "Deployment", "web"),
        db: ("db", "db-0", "StatefulSet", "db")}
for v, pid in ((w, web), (d, db)):
    got = (v.get("container_name"), v.get("pod"), v.get("workload_kind"), v.get("workload"))
    print("-- pid %d: %s, namespace %s" % (pid, got, v.get("namespace")))
    ok &= got == want[pid] and v.get("namespace") == "shop"

p = load("pod")
names = {v["name"]: v for v in p["nodes"]}
ok &= "shop/web-7d9f8b6c5d-x2x4z" in names and "shop/db-0" in names
e = [x for x in p["edges"] if x["client_name"] == "shop/web-7d9f8b6c5d-x2x4z"
     and x["server_name"] == "shop/db-0"]
ok &= len(e) == 1 and e[0]["bytes_c2s"] == sent
print("-- pod edge web -> db: %s bytes (client sent %d)" % (e[0]["bytes_c2s"] if e else None, sent))
ok &= within("pod db-0 rss_bytes", names["shop/db-0"]["rss_bytes"], db_mem)

k = load("workload")
names = {v["name"]: v for v in k["nodes"]}
print("-- workloads: %s" % sorted(names))
ok &= "shop/Deployment/web" in names and "shop/StatefulSet/db" in names
ok &= within("workload web cpu_ms", names["shop/Deployment/web"]["cpu_ms"], (u1 - u0) / 1e6)
hosts = g["hosts"]
ok &= len(hosts) == 1 and hosts[0]["mem_bytes"] > 0 and hosts[0]["cpus"] > 0
print("-- hosts: %s" % hosts)
sys.exit(0 if ok else 1)
PY
echo ok
