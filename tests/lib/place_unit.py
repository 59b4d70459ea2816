#!/usr/bin/env python3
"""One unit (container) of t_place_fleet's stack: it holds MEM MiB of
resident memory, serves on PORT, and once GO exists runs its transfers
with its peers, then writes DONE and keeps serving until killed.

A transfer is PEER:PUSH:GET: connect to PEER (its address and port read
from MAP, "name addr port" lines, at the time of the transfer, so a peer
that moved is found where it runs now), send a 16-byte header (PUSH and GET
as two big-endian 64-bit numbers), send PUSH bytes, read GET bytes to the
end.  The server side does the mirror image.  The paper's two patterns:
Q1 workers scanning from storage servers (GET), Q2 workers shuffling among
themselves (PUSH).  Bytes are exact: DONE holds what was sent and read.
"""
import argparse
import os
import socket
import struct
import sys
import threading
import time

CHUNK = 1 << 16
BLOCK = b"\x5a" * CHUNK


def send_n(s, n):
    while n > 0:
        k = s.send(BLOCK[: min(n, CHUNK)])
        n -= k


def recv_n(s, n):
    got = 0
    while got < n:
        b = s.recv(min(n - got, CHUNK))
        if not b:
            break
        got += len(b)
    return got


def serve_one(c):
    with c:
        hdr = b""
        while len(hdr) < 16:
            b = c.recv(16 - len(hdr))
            if not b:
                return
            hdr += b
        push, get = struct.unpack(">QQ", hdr)
        recv_n(c, push)
        send_n(c, get)
        c.shutdown(socket.SHUT_WR)
        while c.recv(CHUNK):
            pass


def serve(port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(64)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve_one, args=(c,), daemon=True).start()


def where(path, peer):
    for line in open(path):
        f = line.split()
        if len(f) == 3 and f[0] == peer:
            return f[1], int(f[2])
    sys.exit("place_unit: %s is not in %s" % (peer, path))


def transfer(addr, push, get):
    s = socket.create_connection(addr)
    with s:
        s.sendall(struct.pack(">QQ", push, get))
        send_n(s, push)
        s.shutdown(socket.SHUT_WR)
        return recv_n(s, get)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mem", type=int, default=0, help="MiB held resident")
    ap.add_argument("--map", required=True)
    ap.add_argument("--go", required=True)
    ap.add_argument("--done", required=True)
    ap.add_argument("transfers", nargs="*", help="PEER:PUSH:GET")
    a = ap.parse_args()
    # Written, not just allocated: the pages are resident.
    hold = bytearray(b"\x01") * (a.mem << 20)
    threading.Thread(target=serve, args=(a.port,), daemon=True).start()
    while not os.path.exists(a.go):
        time.sleep(0.02)
    sent = got = 0
    for t in a.transfers:
        peer, push, get = t.split(":")
        got += transfer(where(a.map, peer), int(push), int(get))
        sent += int(push)
    with open(a.done + ".tmp", "w") as f:
        f.write("%d %d %d\n" % (sent, got, len(hold)))
    os.rename(a.done + ".tmp", a.done)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
