#!/bin/bash
# bench_place_live: placement quality on traffic measured live, the SAC'20
# paper's two patterns as tests/t_place_fleet.sh runs them (four test hosts
# of 200 MiB, one agent each, containers in cgroups laid out as
# containerd's, 64 MiB each; Q1 workers scanning from storage servers, Q2
# workers shuffling among themselves, one process outside containers).
# The test's phase 1 (placed badly on purpose) is planned by `causeway
# place --kafka --since/--until --method all`, each pattern alone (its time
# range) and both; units, CPU and memory as the agents measured them.
# Prints one markdown section on stdout; asserts nothing (the test does).
# Needs root; runs the shell test, so take the lock as for tests:
#
#   flock /tmp/cw-heavy.lock bench/run.sh bench_place_live
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export CW=${CW:-$PWD/$BUILD/causeway} CW_ROOT=$PWD
T=$(mktemp -d /tmp/causeway-bench-place-live.XXXXXX)
trap 'rm -rf "$T"' EXIT

PLACE_FLEET_BENCH=$T/live.jsonl bash tests/t_place_fleet.sh >&2

python3 - "$T/live.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("<!-- bench_place_live -->")
print("## Placement on live traffic (`bench/bench_place_live.sh`)")
print()
print("Made by `flock /tmp/cw-heavy.lock bench/run.sh bench_place_live`:")
print("tests/t_place_fleet.sh's stack, placed badly on purpose, measured")
print("by four agents through the embedded broker, planned by `causeway")
print("place --kafka B --since T0 --until T1 -H hosts.csv --method all")
print("--time-limit 60 --format json` over each pattern's time range.")
print("Hosts 2 cpu and 200 MiB (10% headroom: two 64 MiB containers);")
print("units, CPU and memory as the agents measured them; the process")
print("outside containers is pinned.  Cells are hosts used / cross-host")
print("bytes (payload, as the agents counted it).")
print()
print("| instance | units | now | GA (paper) | ours (partition) | GLPK | ours vs ILP |")
print("|---|---|---|---|---|---|---|")
applied = [d for d in rows if d["instance"] == "applied"]
rows = [d for d in rows if d["instance"] != "applied"]
for d in rows:
    p = {x["method"]: x for x in d["plans"]}
    ga, ours, ilp = p["ga"], p["partition"], p.get("ilp")
    cell = lambda x: "%d / %d (%.3f s)" % (x["hosts_used"], x["cross_bytes"], x["seconds"])
    icell = "-" if not ilp else "%d / %d (%s, %.1f s)" % (
        ilp["hosts_used"], ilp["cross_bytes"],
        "optimal" if ilp["optimal"] else "not proved", ilp["seconds"])
    vs = "-"
    if ilp and ilp["hosts_used"] == ours["hosts_used"]:
        vs = "%+.1f%%" % (100.0 * (ours["cross_bytes"] - ilp["cross_bytes"]) /
                         ilp["cross_bytes"]) if ilp["cross_bytes"] else (
            "+0.0%" if ours["cross_bytes"] == 0 else "-")
    print("| live %s | %d | %d / %d | %s | %s | %s | %s |" % (
        d["instance"], len(ours["units"]), ours["hosts_used_now"],
        ours["cross_bytes_now"], cell(ga), cell(ours), icell, vs))
print()
print("The chosen plan of both patterns, applied by the test (every unit")
print("restarted on its planned host) and the same load run again: the")
print("cross-host bytes causeway measured after (`--since T`), and the")
print("bytes the test hosts sent on their veths (headers included).")
print()
print("| plan | moves | cross-host bytes now -> planned | after, by causeway | drop predicted | drop by causeway | drop on the veths |")
print("|---|---|---|---|---|---|---|")
for a in applied:
    pred = a["now"] - a["planned"]
    meas = a["now"] - a["after"]
    wire = a["wire_before"] - a["wire_after"]
    print("| %s | %d | %d -> %d | %d | %d | %d (%+.2f%%) | %d (%d -> %d, %+.2f%%) |" % (
        a["method"], a["moves"], a["now"], a["planned"], a["after"], pred,
        meas, 100.0 * (meas - pred) / pred, wire, a["wire_before"],
        a["wire_after"], 100.0 * (wire - pred) / pred))
print("<!-- /bench_place_live -->")
PY
