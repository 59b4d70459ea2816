#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Exchange times of a set of connection ends, from `causeway run`'s
conns.jsonl (the tests of docs/edge-health.md, "Exchange times").

    xchg_hist.py CONNS --netns INODE [--lport P] [--rport P]
                 [--field xchg|xchg_first]

Takes each matching TCP end's last record (its histograms are cumulative),
merges their histograms bin by bin (each bin is [lowest value, count]) and
prints {"count", "p50", "p90", "p99", "pipelined", "ends"} as JSON, in ns,
with the quantile rule of common/hist.c: the middle of the bin holding the
ceil(q * count)-th smallest sample.

    xchg_hist.py --truth FILE

reads one duration per line (seconds) and prints the same quantiles of
those, by nearest rank, in ns.
"""
import argparse
import json
import math
import sys


def width(lower):
    if lower < 32:
        return 1
    return 1 << (lower.bit_length() - 1 - 5)


def quantile_bins(bins, q):
    total = sum(c for _, c in bins)
    if not total:
        return 0
    rank = max(1, math.ceil(q * total))
    seen = 0
    for lower, c in sorted(bins):
        seen += c
        if seen >= rank:
            return lower + (width(lower) - 1) // 2
    return 0


def quantile_list(v, q):
    v = sorted(v)
    return v[max(1, math.ceil(q * len(v))) - 1] if v else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("conns", nargs="?")
    ap.add_argument("--netns", type=int)
    ap.add_argument("--lport", type=int)
    ap.add_argument("--rport", type=int)
    ap.add_argument("--field", default="xchg")
    ap.add_argument("--truth")
    a = ap.parse_args()
    if a.truth:
        v = [float(x) * 1e9 for x in open(a.truth).read().split() if x != "-"]
        print(json.dumps({"count": len(v), **{
            "p%d" % p: round(quantile_list(v, p / 100)) for p in (50, 90, 99)}}))
        return
    last = {}
    for line in open(a.conns):
        r = json.loads(line)
        if r.get("proto") != "tcp" or r.get("netns") != a.netns:
            continue
        if a.lport is not None and r["lport"] != a.lport:
            continue
        if a.rport is not None and r["rport"] != a.rport:
            continue
        if r["cookie"] not in last or r["seq"] > last[r["cookie"]]["seq"]:
            last[r["cookie"]] = r
    bins = {}
    piped = 0
    for r in last.values():
        for lower, c in (r.get(a.field) or {}).get("bins", []):
            bins[lower] = bins.get(lower, 0) + c
        piped += r.get("xchg_pipelined", 0)
    b = list(bins.items())
    print(json.dumps({"count": sum(bins.values()), "pipelined": piped,
                      "ends": len(last), **{
                          "p%d" % p: quantile_bins(b, p / 100)
                          for p in (50, 90, 99)}}))


if __name__ == "__main__":
    sys.exit(main())
