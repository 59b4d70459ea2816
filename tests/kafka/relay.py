#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A TCP relay from one network namespace to another, for the Kafka tests.

The test brokers listen on the loopback of the machine's own namespace
and tell clients to come back to 127.0.0.1:PORT.  A client in a test host
reaches them through relays: one listening on the test host's loopback
(the addresses the brokers advertise) and connecting across the host's
veth, another listening on the veth's far end and connecting to the
brokers' loopback.  A drop on that veth then cuts the client off from
the brokers as a network would: its packets vanish, nothing is refused.

    relay.py LISTEN_NS LISTEN_ADDR CONNECT_NS CONNECT_ADDR READY PORT...

Listens on LISTEN_ADDR:PORT in LISTEN_NS (a name in /run/netns, or - for
this process's own) for each PORT, relays each connection to
CONNECT_ADDR:PORT made from CONNECT_NS, writes the file READY when it
listens, and runs until SIGTERM.
"""
import ctypes
import os
import selectors
import signal
import socket
import sys
import threading

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def enter(ns, own):
    """Switch the calling thread to namespace NS (- for OWN, an fd)."""
    if ns == "-":
        fd, close = own, False
    else:
        fd, close = os.open("/run/netns/" + ns, os.O_RDONLY), True
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        sys.exit("relay.py: setns %s: %s" % (ns, os.strerror(err)))
    if close:
        os.close(fd)


def pump(src, dst):
    """Copy src to dst until src ends, then end dst's sending side."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
        try:
            s.shutdown(how)
        except OSError:
            pass


def serve(client, addr, port):
    """Relay one accepted connection (on a thread of its own: a connect
    across a cut link waits for as long as the kernel tries)."""
    up = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        up.connect((addr, port))
    except OSError:
        client.close()
        up.close()
        return
    back = threading.Thread(target=pump, args=(up, client), daemon=True)
    back.start()
    pump(client, up)
    back.join()
    client.close()
    up.close()


def main():
    if len(sys.argv) < 7:
        sys.exit(__doc__)
    lns, laddr, cns, caddr, ready = sys.argv[1:6]
    ports = [int(p) for p in sys.argv[6:]]
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    enter(lns, own)
    sel = selectors.DefaultSelector()
    for port in ports:
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((laddr, port))
        ls.listen(64)
        sel.register(ls, selectors.EVENT_READ, port)
    # Every socket made from here on (the threads' too) is CONNECT_NS's.
    enter(cns, own)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(ready + ".tmp", ready)
    while True:
        for key, _ in sel.select():
            client, _ = key.fileobj.accept()
            threading.Thread(target=serve, args=(client, caddr, key.data),
                             daemon=True).start()


if __name__ == "__main__":
    main()
