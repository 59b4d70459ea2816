#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Request-reply traffic of known shape, for the exchange-time tests.

    reqrep.py serve ADDR PORT REQ DELAY_S REPLY
        answers each REQ-byte request, read whole, after DELAY_S seconds
        with REPLY bytes; one thread per connection; reads one request at
        a time (more may wait in the socket).
    reqrep.py serial ADDR PORT N REQ REPLY PAUSE_S
        N requests one at a time, each after the reply to the one before
        and a pause.
    reqrep.py multiplex ADDR PORT N REQ REPLY EVERY_S
        a writer sends a request every EVERY_S whatever came back, a
        reader takes the N replies as they come.
"""
import socket
import sys
import threading
import time


def recv_exact(c, n):
    got = 0
    while got < n:
        b = c.recv(min(65536, n - got))
        if not b:
            return False
        got += len(b)
    return True


def serve(addr, port, req, delay, reply):
    def one(c):
        while recv_exact(c, req):
            time.sleep(delay)
            c.sendall(b"r" * reply)
        c.close()
    ls = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(8)
    while True:
        threading.Thread(target=one, args=(ls.accept()[0],), daemon=True).start()


def client(mode, addr, port, n, req, reply, pause):
    c = socket.create_connection((addr, port))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode == "serial":
        for _ in range(n):
            c.sendall(b"q" * req)
            if not recv_exact(c, reply):
                sys.exit("reqrep: the server closed")
            time.sleep(pause)
    else:
        t = threading.Thread(target=recv_exact, args=(c, n * reply))
        t.start()
        for _ in range(n):
            c.sendall(b"q" * req)
            time.sleep(pause)
        t.join()
    c.close()


def main():
    a = sys.argv[1:]
    if len(a) == 6 and a[0] == "serve":
        serve(a[1], int(a[2]), int(a[3]), float(a[4]), int(a[5]))
    elif len(a) == 7 and a[0] in ("serial", "multiplex"):
        client(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5]),
               float(a[6]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
