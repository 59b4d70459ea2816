#!/usr/bin/env python3
"""Everyday TCP patterns with their ground truth, for the byte-truth tests.

Each end of every connection writes one JSON line with what its own system
calls returned: bytes written (send, sendmsg, sendfile, splice) and bytes
read (recv, splice).  So a test compares what the agent reported for an end
with what the program really did, never with our own arithmetic.

  bytes_truth.py serve HOST BASE OUT       one listener per pattern, on
                                           ports BASE, BASE+1, ...; every
                                           server end appended to OUT
  bytes_truth.py client HOST BASE OUT [P...]  run the patterns (all by
                                           default) concurrently against
                                           the server; client ends to OUT
  bytes_truth.py list                      the patterns, one a line

A line: {"pattern", "role", "laddr", "lport", "raddr", "rport",
"written", "read", "pid"}.  The client exits 0 once every pattern ran to
its end and every server end it expected was written by the server (the
server logs an end when it is done with it, before or after the client).

What each pattern does, and why it is here:

  sendfile_srv_close  request 1,000 B; the server answers 5,000,001 B with
                      sendfile() and closes first (its full socket goes
                      away in FIN_WAIT2 while the client still reads)
  rounds_srv_close    20 rounds of 50 KB each way, server closes first
  cli_halfclose       client sends 123,457 B, shutdown(SHUT_WR), then reads
                      the 654,321 B reply to EOF (bytes read after its own
                      FIN, after the kernel moved the socket to CLOSE)
  srv_halfclose       server answers, shutdown(SHUT_WR), then reads what
                      the client sends after seeing the server's FIN
  cli_close_first     request/response, client closes first
  simultaneous        both ends close at one agreed instant (FINs cross)
  rst_cli_linger0     client closes with SO_LINGER 0 (sends a RST)
  rst_srv_linger0     server closes with SO_LINGER 0
  unread_close        server closes with unread data queued (the kernel
                      sends a RST); read = what it took out, not what came
  writev              sendmsg() with five buffers, ten times
  splice              client splices a pipe into the socket; server
                      splices the socket into a pipe (tcp_read_sock)
  small_nodelay       1,000 writes of 7 B with TCP_NODELAY
  long_lived          1,000 B each way every 100 ms for 3 s, many intervals
  burst               200 short connections at once, half closed first by
                      the server, half by the client
"""
import json
import os
import socket
import struct
import sys
import tempfile
import threading
import time

PATTERNS = ["sendfile_srv_close", "rounds_srv_close", "cli_halfclose",
            "srv_halfclose", "cli_close_first", "simultaneous",
            "rst_cli_linger0", "rst_srv_linger0", "unread_close", "writev",
            "splice", "small_nodelay", "long_lived", "burst"]
BURST = 200
SIMUL_DELAY = 0.3  # the agreed close instant: this long after it is sent

_lock = threading.Lock()


class End:
    """One end of a connection and what its own calls returned."""

    def __init__(self, sock, pattern, role, out):
        self.s, self.pattern, self.role, self.out = sock, pattern, role, out
        self.written = self.read = 0
        # Taken now: after a RST the socket no longer knows its peer.
        self.local = sock.getsockname()[:2]
        self.peer = sock.getpeername()[:2]

    def send(self, data):
        self.s.sendall(data)
        self.written += len(data)

    def sendmsg(self, bufs):
        # sendmsg may write part of the buffers: finish them by hand.
        n = self.s.sendmsg(bufs)
        self.written += n
        rest = b"".join(bufs)[n:]
        if rest:
            self.send(rest)

    def recv_exact(self, n):
        got = 0
        while got < n:
            b = self.s.recv(min(65536, n - got))
            if not b:
                break
            got += len(b)
        self.read += got
        return got

    def recv_data(self, n):
        data = b""
        while len(data) < n:
            b = self.s.recv(n - len(data))
            if not b:
                break
            data += b
        self.read += len(data)
        return data

    def recv_eof(self):
        while True:
            try:
                b = self.s.recv(65536)
            except ConnectionResetError:
                return
            if not b:
                return
            self.read += len(b)

    def log(self):
        (la, lp), (ra, rp) = self.local, self.peer
        line = json.dumps({"pattern": self.pattern, "role": self.role,
                           "laddr": la, "lport": lp, "raddr": ra,
                           "rport": rp, "written": self.written,
                           "read": self.read, "pid": os.getpid()})
        with _lock:
            with open(self.out, "a") as f:
                f.write(line + "\n")


def bound(s):
    """A blocking socket whose calls give up after 60 s: splice() and
    sendfile() need a blocking descriptor, so not Python's timeout."""
    tv = struct.pack("ll", 60, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)


def linger0(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def fill(n, ch=b"d"):
    return ch * n


# ---- the server side of each pattern: (End) -> None, closes the socket --

def srv_sendfile_srv_close(e, ctx):
    e.recv_exact(1000)
    off, left = 0, 5000001
    with open(ctx["file"], "rb") as f:
        while left:
            n = os.sendfile(e.s.fileno(), f.fileno(), off, left)
            off += n
            left -= n
            e.written += n
    e.log()
    e.s.close()


def srv_rounds_srv_close(e, ctx):
    for _ in range(20):
        e.recv_exact(50000)
        e.send(fill(50000))
    e.log()
    e.s.close()


def srv_cli_halfclose(e, ctx):
    e.recv_eof()
    e.send(fill(654321))
    e.log()
    e.s.close()


def srv_srv_halfclose(e, ctx):
    e.recv_exact(1000)
    e.send(fill(300000))
    e.s.shutdown(socket.SHUT_WR)
    e.recv_eof()
    e.log()
    e.s.close()


def srv_cli_close_first(e, ctx):
    e.recv_exact(10000)
    e.send(fill(20000))
    e.recv_eof()
    e.log()
    e.s.close()


def srv_simultaneous(e, ctx):
    e.recv_exact(5000)
    e.send(fill(5000))
    at = float(e.recv_data(20))  # the agreed instant: both close then
    time.sleep(max(0.0, at - time.time()))
    e.log()
    e.s.close()


def srv_rst_cli_linger0(e, ctx):
    e.recv_exact(5000)
    e.send(fill(7000))
    e.recv_eof()
    e.log()
    e.s.close()


def srv_rst_srv_linger0(e, ctx):
    e.recv_exact(5000)
    e.send(fill(7000))
    e.recv_exact(1)  # the client has read the reply
    e.log()
    linger0(e.s)
    e.s.close()


def srv_unread_close(e, ctx):
    e.recv_exact(3000)
    e.recv_exact(1)  # the first byte of the second part; the rest unread
    time.sleep(0.2)  # let the rest of it arrive into the receive queue
    e.log()
    e.s.close()


def srv_writev(e, ctx):
    e.recv_eof()
    e.send(fill(1000))
    e.log()
    e.s.close()


def srv_splice(e, ctx):
    r, w = os.pipe()
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        while True:
            n = os.splice(e.s.fileno(), w, 65536)
            if n == 0:
                break
            e.read += n
            while n:
                n -= os.splice(r, null, n)
    finally:
        os.close(r)
        os.close(w)
        os.close(null)
    e.send(fill(4321))
    e.log()
    e.s.close()


def srv_small_nodelay(e, ctx):
    e.recv_eof()
    e.send(b"ok!")
    e.log()
    e.s.close()


def srv_long_lived(e, ctx):
    while e.recv_exact(1000) == 1000:
        e.send(fill(1000))
    e.log()
    e.s.close()


def srv_burst(e, ctx):
    e.recv_exact(100)
    e.send(fill(150))
    if e.peer[1] % 2:
        e.recv_eof()  # odd client ports: the client closes first
    e.log()
    e.s.close()


# ---- the client side ------------------------------------------------------

def cli_sendfile_srv_close(e):
    e.send(fill(1000))
    e.recv_eof()


def cli_rounds_srv_close(e):
    for _ in range(20):
        e.send(fill(50000))
        e.recv_exact(50000)
    e.recv_eof()


def cli_cli_halfclose(e):
    e.send(fill(123457))
    e.s.shutdown(socket.SHUT_WR)
    e.recv_eof()


def cli_srv_halfclose(e):
    e.send(fill(1000))
    e.recv_eof()
    e.send(fill(200000))


def cli_cli_close_first(e):
    e.send(fill(10000))
    e.recv_exact(20000)


def cli_simultaneous(e):
    e.send(fill(5000))
    e.recv_exact(5000)
    at = time.time() + SIMUL_DELAY  # test hosts share the wall clock
    e.send(b"%020.6f" % at)
    time.sleep(max(0.0, at - time.time()))


def cli_rst_cli_linger0(e):
    e.send(fill(5000))
    e.recv_exact(7000)
    linger0(e.s)


def cli_rst_srv_linger0(e):
    e.send(fill(5000))
    e.recv_exact(7000)
    e.send(b"r")
    e.recv_eof()


def cli_unread_close(e):
    e.send(fill(3000))
    e.send(fill(5000))
    e.recv_eof()


def cli_writev(e):
    sizes = [100, 2000, 30000, 7, 50000]
    for i in range(10):
        e.sendmsg([fill(n, bytes([97 + i])) for n in sizes])
    e.s.shutdown(socket.SHUT_WR)
    e.recv_eof()


def cli_splice(e):
    r, w = os.pipe()
    try:
        left = 1000000
        chunk = fill(32768)
        while left:
            n = os.write(w, chunk[:min(left, len(chunk))])
            while n:
                m = os.splice(r, e.s.fileno(), n)
                n -= m
                left -= m
                e.written += m
    finally:
        os.close(r)
        os.close(w)
    e.s.shutdown(socket.SHUT_WR)
    e.recv_eof()


def cli_small_nodelay(e):
    e.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _ in range(1000):
        e.send(b"1234567")
    e.s.shutdown(socket.SHUT_WR)
    e.recv_eof()


def cli_long_lived(e):
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        e.send(fill(1000))
        e.recv_exact(1000)
        time.sleep(0.1)


def cli_burst(e):
    e.send(fill(100))
    e.recv_exact(150)
    if e.local[1] % 2 == 0:
        e.recv_eof()  # even ports: the server closes first


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def serve(host, base, out):
    base = int(base)
    # The file sendfile sends: unlinked at once (the server is killed at
    # the end, so it could never remove it), reopened through its fd.
    fd, path = tempfile.mkstemp(prefix="bytes-truth-")
    os.unlink(path)
    os.write(fd, b"f" * 5000001)
    ctx = {"file": "/proc/self/fd/%d" % fd}

    def handle(pattern, c):
        e = End(c, pattern, "server", out)
        try:
            globals()["srv_" + pattern](e, ctx)
        except OSError as err:
            print("server %s: %s" % (pattern, err), file=sys.stderr)
            e.log()
            c.close()

    def listen(i, pattern):
        s = socket.socket(family(host), socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, base + i))
        s.listen(512)
        while True:
            c, _ = s.accept()
            bound(c)
            threading.Thread(target=handle, args=(pattern, c),
                             daemon=True).start()

    for i, p in enumerate(PATTERNS):
        threading.Thread(target=listen, args=(i, p), daemon=True).start()
    print("ready", flush=True)
    try:
        threading.Event().wait()
    finally:
        os.unlink(path)


def client(host, base, out, patterns):
    base = int(base)
    errors = []

    def one(pattern):
        s = socket.create_connection((host, base + PATTERNS.index(pattern)))
        bound(s)
        e = End(s, pattern, "client", out)
        try:
            globals()["cli_" + pattern](e)
        except OSError as err:
            errors.append("%s: %s" % (pattern, err))
        e.log()
        s.close()

    threads = []
    for p in patterns:
        n = BURST if p == "burst" else 1
        for _ in range(n):
            t = threading.Thread(target=one, args=(p,))
            t.start()
            threads.append(t)
    for t in threads:
        t.join()
    if errors:
        raise SystemExit("client: " + "; ".join(errors))


def main(argv):
    if argv[:1] == ["list"]:
        print("\n".join(PATTERNS))
    elif len(argv) == 4 and argv[0] == "serve":
        serve(*argv[1:])
    elif len(argv) >= 4 and argv[0] == "client":
        pats = argv[4:] or PATTERNS
        bad = [p for p in pats if p not in PATTERNS]
        if bad:
            raise SystemExit("unknown pattern '%s'" % bad[0])
        client(argv[1], argv[2], argv[3], pats)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
