#!/usr/bin/env python3
"""The scores `causeway traces --truth-links` printed, as one JSON object.

  scores.py STDOUT STDERR

{"services": {name: {"requests", "right", "fcfs", "top5", "link_p",
"link_r"}}, "traces": {"n", "right", "fcfs"}, "links": {the matching
counts}, "spans", "link_s", "bound": {"kept", "windows_cut", "windows",
"calls", "dropped", "truth_lost"}, "calibration": [{"lo", "hi", "links",
"conf", "right"}]} from the score table, the candidate bound's and the
confidence bins' lines on stdout, and the "truth links" and "spans
linked" lines on stderr.
"""
import json
import re
import sys

out = {"services": {}, "traces": {}, "links": {}, "bound": {},
       "calibration": []}
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) == 7 and w[0] != "service":
        out["services"][w[0]] = dict(zip(
            ["requests", "right", "fcfs", "top5", "link_p", "link_r"],
            [int(w[1])] + [float(x) for x in w[2:]]))
    m = re.match(r"traces right end to end: ([\d.]+) \(FCFS ([\d.]+)\) of (\d+)",
                 line)
    if m:
        out["traces"] = {"right": float(m[1]), "fcfs": float(m[2]),
                         "n": int(m[3])}
    m = re.match(r"candidate bound \((\d+) kept, \d+ held\): (\d+) of (\d+) "
                 r"windows cut, (\d+) calls, (\d+) candidates dropped; (\d+) "
                 r"calls lost", line)
    if m:
        out["bound"] = dict(zip(["kept", "windows_cut", "windows", "calls",
                                 "dropped", "truth_lost"],
                                [int(x) for x in m.groups()]))
    m = re.match(r"  \[([\d.]+), ([\d.]+)\) +(\d+) +([\d.]+) +([\d.]+)$", line)
    if m:
        out["calibration"].append(dict(zip(
            ["lo", "hi", "links", "conf", "right"],
            [float(m[1]), float(m[2]), int(m[3]), float(m[4]),
             float(m[5])])))
for line in open(sys.argv[2]):
    m = re.search(r"truth links: (\d+) lines; (\d+) requests and (\d+) calls "
                  r"found; (\d+) outside the capture, (\d+) on connections it "
                  r"lacks, (\d+) unmatched, (\d+) conflicting", line)
    if m:
        out["links"] = dict(zip(["lines", "requests", "calls", "outside",
                                 "no_conn", "unmatched", "conflicts"],
                                [int(x) for x in m.groups()]))
    m = re.search(r"(\d+) spans linked in ([\d.]+)s", line)
    if m:
        out["spans"], out["link_s"] = int(m[1]), float(m[2])
json.dump(out, sys.stdout)
print()
