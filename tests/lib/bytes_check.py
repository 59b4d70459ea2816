#!/usr/bin/env python3
"""Compare every connection end's bytes with the ground truth, exactly.

  bytes_check.py [--label L] [--netns N,N...] [--calls] RECORDS TRUTH...
  bytes_check.py [--label L] --edges EDGES TRUTH...

RECORDS: connection records as JSON lines (`causeway run -o`'s conns.jsonl,
or `causeway dump` of the conns topic).  TRUTH: the JSON lines that
tests/lib/bytes_truth.py wrote, one per end, with what the program's own
calls returned.  For each end the record that counts is its final one
(closed); an end with no record, no final record, another owner, or bytes
off by even one fails.  With --calls (for `--hooks always`, where
docs/agent-counters.md promises them exact) an end's calls and messages
each way must also be what the program counted, where its truth line has
them (not after sendfile or splice, whose inner sends the kernel splits).
--netns keeps only the records of those network namespaces (their
inodes): the test hosts' addresses exist in other tests' namespaces too.
Prints one line per pattern (ends, exact, wrong) and each wrong
end; exits 1 if any end is wrong, or 3 if the only faults are ends with
no record or no final record (the agent never saw their close: see the
test scripts for why that class alone is told apart).

With --edges, EDGES is a graph (`causeway correlate -o`'s edges.json):
for each pair of client and server processes in the truth, its edge must
count every connection, pair every one, and carry in bytes_c2s what the
clients wrote and in bytes_s2c what the servers wrote (a paired edge
takes each direction from the end that sent it), and in unreceived_c2s and
unreceived_s2c what one side wrote less what the other read (a close with
unread data, a RST).

With TRUTH_RUNLOG set, RECORDS mode also appends its total line (ends,
exact, what each side wrote and read) to that file.
"""
import json
import os
import sys
from collections import defaultdict


def key(laddr, lport, raddr, rport):
    return (laddr, int(lport), raddr, int(rport))


def load_records(path, netns=None):
    best = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if r.get("proto", "tcp") != "tcp" or "lport" not in r:
                continue
            if netns and r.get("netns") not in netns:
                continue
            k = key(r["laddr"], r["lport"], r["raddr"], r["rport"])
            old = best.get(k)
            # Final over running; among equals the later reading.
            rank = (bool(r.get("closed")), r.get("seq", 0), n)
            if old is None or rank > old[0]:
                best[k] = (rank, r)
    return {k: v[1] for k, v in best.items()}


def read_truth(paths):
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def check_edges(label, path, truth_paths):
    g = json.load(open(path))
    pid = {n["id"]: n.get("pid") for n in g["nodes"]}
    ends = {}
    for t in read_truth(truth_paths):
        ends[(t["role"], t["laddr"], t["lport"], t["raddr"], t["rport"])] = t
    want = defaultdict(lambda: [0, 0, 0, 0, 0])
    for (role, la, lp, ra, rp), t in ends.items():
        if role != "client":
            continue
        s = ends.get(("server", ra, rp, la, lp))
        if s is None:
            print("%sWRONG no server end for %s:%d" % (label, la, lp))
            return 1
        w = want[(t["pid"], s["pid"])]
        w[0] += 1
        w[1] += t["written"]
        w[2] += s["written"]
        w[3] += t["written"] - s["read"]
        w[4] += s["written"] - t["read"]
    bad = 0
    for (cp, sp), (conns, c2s, s2c, un_c2s, un_s2c) in sorted(want.items()):
        got = [e for e in g["edges"] if e.get("proto", "tcp") == "tcp" and
               pid.get(e["client"]) == cp and pid.get(e["server"]) == sp]
        have = [sum(e.get(k, 0) for e in got) for k in
                ("conns", "paired", "bytes_c2s", "bytes_s2c",
                 "unreceived_c2s", "unreceived_s2c")]
        exp = [conns, conns, c2s, s2c, un_c2s, un_s2c]
        ok = have == exp
        bad += not ok
        print("%sedge %d -> %d: conns %d paired %d c2s %d s2c %d "
              "unreceived %d/%d%s" % (
                  label, cp, sp, *have,
                  "" if ok else "  WRONG, want %d %d %d %d %d/%d" % tuple(exp)))
    return 1 if bad or not want else 0


def calls_problems(t, r):
    """Calls and messages each way, program's count against the record's."""
    out = []
    for k in ("calls_out", "calls_in", "msgs_out", "msgs_in"):
        if r.get(k) != t[k]:
            out.append("%s %d, reported %s" % (k, t[k], r.get(k)))
    return out


def main(argv):
    label = ""
    if argv[:1] == ["--label"]:
        label, argv = argv[1] + ": ", argv[2:]
    if argv[:1] == ["--edges"] and len(argv) >= 3:
        return check_edges(label, argv[1], argv[2:])
    netns = None
    if argv[:1] == ["--netns"]:
        netns, argv = {int(n) for n in argv[1].split(",")}, argv[2:]
    calls = argv[:1] == ["--calls"]
    if calls:
        argv = argv[1:]
    if len(argv) < 2:
        raise SystemExit(__doc__)
    recs = load_records(argv[0], netns)
    per = defaultdict(lambda: [0, 0])
    total = defaultdict(int)  # truth bytes by role and direction
    wrong = []
    unseen = 0  # ends whose fault is only that no final record came
    for path in argv[1:]:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                t = json.loads(line)
                k = key(t["laddr"], t["lport"], t["raddr"], t["rport"])
                name = "%s %s %s:%d" % (t["pattern"], t["role"], t["laddr"],
                                        t["lport"])
                per[t["pattern"]][0] += 1
                total[t["role"] + " wrote"] += t["written"]
                total[t["role"] + " read"] += t["read"]
                r = recs.get(k)
                if r is None:
                    wrong.append("%s: no record" % name)
                    unseen += 1
                    continue
                problems = []
                if not r.get("closed"):
                    problems.append("no final (closed) record")
                if r.get("role") != t["role"]:
                    problems.append("role %s" % r.get("role"))
                pid = (r.get("process") or {}).get("pid")
                if pid != t["pid"]:
                    problems.append("owner pid %s, not %d" % (pid, t["pid"]))
                if r["bytes_out"] != t["written"]:
                    problems.append("written %d, reported %d (%+d)" % (
                        t["written"], r["bytes_out"],
                        r["bytes_out"] - t["written"]))
                if r["bytes_in"] != t["read"]:
                    problems.append("read %d, reported %d (%+d)" % (
                        t["read"], r["bytes_in"], r["bytes_in"] - t["read"]))
                if calls and "calls_out" in t:
                    problems += calls_problems(t, r)
                if problems:
                    wrong.append("%s: %s" % (name, "; ".join(problems)))
                    unseen += not r.get("closed")
                else:
                    per[t["pattern"]][1] += 1
    for p in sorted(per):
        ends, exact = per[p]
        print("%s%-20s %4d ends %4d exact %4d wrong" % (
            label, p, ends, exact, ends - exact))
    ends = sum(v[0] for v in per.values())
    line = ("%d ends, %d exact; clients wrote %d read %d, servers wrote %d "
            "read %d" % (ends, ends - len(wrong), total["client wrote"],
                         total["client read"], total["server wrote"],
                         total["server read"]))
    print("%stotal: %s" % (label, line))
    if os.environ.get("TRUTH_RUNLOG"):
        with open(os.environ["TRUTH_RUNLOG"], "a") as f:
            f.write("%s %s\n" % (label.rstrip(": ") or "-", line))
    for w in wrong[:40]:
        print("%sWRONG %s" % (label, w))
    if len(wrong) > 40:
        print("%s... %d more wrong" % (label, len(wrong) - 40))
    if not per:
        print("%sno ground truth read" % label)
        return 1
    if wrong and unseen == len(wrong) and unseen <= 4:
        return 3
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
