#!/usr/bin/env python3
"""OpenTelemetry spans of the event-loop service -> truth-links lines.

  otel_truth.py SPANS.jsonl >TRUTH.csv     (prints a check on stderr)

Each server span is a request the service served; each client span whose
parent is that server span is a call made for it.  The check says whether
the ground truth is itself complete: every span has its connection ends,
every client span has a server span as parent, every request has at least
one call (the service always calls the thread-per-request tier), and the
server spans' count (printed) can be held against the load generator's.
"""
import json
import sys

SERVER, CLIENT = 1, 2
spans = []
for line in open(sys.argv[1]):
    if line.endswith("\n"):  # a running service may be mid-line at the end
        spans.append(json.loads(line))
servers = {s["spanId"]: s for s in spans if s["kind"] == SERVER}
calls = {}
bad = 0
for s in spans:
    if not s["client"] or not s["server"]:
        bad += 1
    if s["kind"] == CLIENT:
        if s["parentSpanId"] in servers:
            calls.setdefault(s["parentSpanId"], []).append(s)
        else:
            bad += 1
print("service,in_client,in_server,in_start_ns,out_client,out_server,"
      "out_start_ns")
no_call = 0
for sid, r in servers.items():
    cs = sorted(calls.get(sid, []), key=lambda c: int(c["start"]))
    if not cs:
        no_call += 1
        print("evloop,%s,%s,%s,,," % (r["client"], r["server"], r["start"]))
    for c in cs:
        print("evloop,%s,%s,%s,%s,%s,%s" % (r["client"], r["server"],
              r["start"], c["client"], c["server"], c["start"]))
json.dump({"requests": len(servers),
           "calls": sum(len(v) for v in calls.values()),
           "incomplete_spans": bad, "requests_without_calls": no_call},
          sys.stderr)
sys.stderr.write("\n")
