#!/usr/bin/env python3
"""Query the edges.json that `causeway run -o DIR` writes.

  edges.py FILE [--client-pid P] [--server-pid P] [--client-comm C]
           [--server-comm C] [--proto tcp|udp] FIELD...

Prints the named fields of the one matching edge (summed if several edges
match, e.g. several server workers), space separated.  Fields are edge
fields (bytes_c2s, msgs_s2c, conns, ...) or client.X / server.X for node
fields.  Exits 1 with a message if nothing matches.
"""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("--client-pid", type=int)
ap.add_argument("--server-pid", type=int)
ap.add_argument("--client-comm")
ap.add_argument("--server-comm")
ap.add_argument("--client-host")
ap.add_argument("--server-host")
ap.add_argument("--proto")
ap.add_argument("fields", nargs="+")
a = ap.parse_args()

g = json.load(open(a.file))
nodes = {n["id"]: n for n in g["nodes"]}


def ok(node, pid, comm, host):
    if pid is not None and node.get("pid") != pid:
        return False
    if comm is not None and node.get("comm") != comm:
        return False
    if host is not None and node.get("host") != host:
        return False
    return True


hits = [e for e in g["edges"]
        if ok(nodes[e["client"]], a.client_pid, a.client_comm, a.client_host)
        and ok(nodes[e["server"]], a.server_pid, a.server_comm, a.server_host)
        and (a.proto is None or e["proto"] == a.proto)]
if not hits:
    sys.exit("no edge matches; edges: " + "; ".join(
        "%s -> %s %s" % (nodes[e["client"]]["label"],
                         nodes[e["server"]]["label"], e["proto"])
        for e in g["edges"]))
out = []
for f in a.fields:
    if "." in f:
        side, key = f.split(".", 1)
        out.append(str(nodes[hits[0][side]].get(key)))
    else:
        out.append(str(sum(e[f] for e in hits)))
print(" ".join(out))
