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
  peek                each read peeked first (MSG_PEEK): peeked bytes and
                      calls are not reads
  iovecs              readv() and recvmsg() into three buffers, sendmsg()
                      of three
  mmsg                sendmmsg() and recvmmsg() (a call per message)
  zerocopy            MSG_ZEROCOPY sends (SO_ZEROCOPY), completions taken
  oob                 an urgent byte (MSG_OOB), read out of band
  linger0_inflight    SO_LINGER 0 close right after 2 MB were queued: a
                      RST with data in flight; written = what send() took
  silent              a connection that never carries a byte
  fork_accept         a forking server: the accepting process's child
                      serves the end and closes it
  scm_rights          the accepting process hands the socket (SCM_RIGHTS)
                      to a worker process, which serves and closes it
  tfo                 TCP Fast Open: two connections, the second with its
                      request's first 1,000 B in the SYN (net.ipv4.
                      tcp_fastopen set in the test hosts' namespaces)
  uring               io_uring sends and receives by tests/lib/uring_client.c
                      (built by the test: $URING_CLIENT; unset: skipped)

A line also has calls_out, calls_in, msgs_out and msgs_in (calls that
moved bytes, and runs of calls one way), except after sendfile or splice,
whose inner sends and reads the kernel splits its own way.
"""
import array
import ctypes
import errno
import json
import os
import signal
import subprocess
import socket
import struct
import sys
import tempfile
import threading
import time

PATTERNS = ["sendfile_srv_close", "rounds_srv_close", "cli_halfclose",
            "srv_halfclose", "cli_close_first", "simultaneous",
            "rst_cli_linger0", "rst_srv_linger0", "unread_close", "writev",
            "splice", "small_nodelay", "long_lived", "burst", "peek",
            "iovecs", "mmsg", "zerocopy", "oob", "linger0_inflight",
            "silent", "fork_accept", "scm_rights", "tfo", "uring"]
BURST = 200
SIMUL_DELAY = 0.3  # the agreed close instant: this long after it is sent

_lock = threading.Lock()


class End:
    """One end of a connection and what its own calls returned: bytes, and
    the calls that moved bytes and the messages they make (a run of calls
    one way), unless a call whose inner sends the kernel splits its own way
    (sendfile, splice) made those unknown."""

    def __init__(self, sock, pattern, role, out):
        self.s, self.pattern, self.role, self.out = sock, pattern, role, out
        self.written = self.read = 0
        self.calls = {"out": 0, "in": 0}
        self.msgs = {"out": 0, "in": 0}
        self.last, self.calls_known = None, True
        # Taken now: after a RST the socket no longer knows its peer.
        self.local = sock.getsockname()[:2]
        self.peer = sock.getpeername()[:2]

    def call(self, way, n):
        """One call of ours moved n bytes way ("out", "in")."""
        if n <= 0:
            return
        if way == "out":
            self.written += n
        else:
            self.read += n
        self.calls[way] += 1
        if self.last != way:
            self.msgs[way] += 1
        self.last = way

    def put(self, n):
        self.call("out", n)

    def got(self, n):
        self.call("in", n)

    def send(self, data, flags=0):
        # send() in a loop, not sendall(): each call is counted.
        view = memoryview(data)
        while view:
            n = self.s.send(view, flags)
            self.put(n)
            view = view[n:]

    def sendmsg(self, bufs):
        # sendmsg may write part of the buffers: finish them by hand.
        n = self.s.sendmsg(bufs)
        self.put(n)
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
            self.got(len(b))
        return got

    def recv_data(self, n):
        data = b""
        while len(data) < n:
            b = self.s.recv(n - len(data))
            if not b:
                break
            data += b
            self.got(len(b))
        return data

    def recv_eof(self):
        while True:
            try:
                b = self.s.recv(65536)
            except ConnectionResetError:
                return
            if not b:
                return
            self.got(len(b))

    def log(self):
        (la, lp), (ra, rp) = self.local, self.peer
        t = {"pattern": self.pattern, "role": self.role, "laddr": la,
             "lport": lp, "raddr": ra, "rport": rp, "written": self.written,
             "read": self.read, "pid": os.getpid()}
        if self.calls_known:
            t.update(calls_out=self.calls["out"], calls_in=self.calls["in"],
                     msgs_out=self.msgs["out"], msgs_in=self.msgs["in"])
        line = json.dumps(t)
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
    e.calls_known = False  # sendfile's sends are the kernel's to split
    off, left = 0, 5000001
    with open(ctx["file"], "rb") as f:
        while left:
            n = os.sendfile(e.s.fileno(), f.fileno(), off, left)
            off += n
            left -= n
            e.put(n)
    e.log()
    e.s.close()


def srv_rounds_srv_close(e, ctx):
    srv_rounds(e, 20)


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
    srv_answer(e, 10000, 20000)


def srv_answer(e, request, reply):
    """Take the request, reply, wait for the client to close first."""
    e.recv_exact(request)
    e.send(fill(reply))
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
    srv_answer(e, 5000, 7000)


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
    e.calls_known = False  # splice()'s reads are the kernel's to split
    r, w = os.pipe()
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        while True:
            n = os.splice(e.s.fileno(), w, 65536)
            if n == 0:
                break
            e.got(n)
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


def srv_peek(e, ctx):
    # Every read is first peeked: peeked bytes are not read.
    while e.read < 20000:
        if not e.s.recv(4096, socket.MSG_PEEK):
            break
        e.recv_exact(min(4096, 20000 - e.read))
    e.send(fill(15000))
    e.recv_eof()
    e.log()
    e.s.close()


def srv_iovecs(e, ctx):
    # readv() and recvmsg() into several buffers, turn about, to EOF.
    bufs = [bytearray(n) for n in (10, 3000, 65536)]
    turn = 0
    while True:
        if turn % 2:
            n = e.s.recvmsg_into(bufs)[0]
        else:
            n = os.readv(e.s.fileno(), bufs)
        turn += 1
        if not n:
            break
        e.got(n)
    e.send(fill(30000))
    e.log()
    e.s.close()


def srv_mmsg(e, ctx):
    while True:
        n = recvmmsg(e, 4, 5000)
        if n == 0 or e.read >= 60000:
            break
    sendmmsg(e, [fill(n) for n in (1, 4000, 20000)] * 2)
    e.recv_eof()
    e.log()
    e.s.close()


def srv_zerocopy(e, ctx):
    srv_cli_halfclose(e, ctx)  # the client half-closes after its sends


srv_uring = srv_zerocopy


def srv_oob(e, ctx):
    # The urgent byte out of band (SO_OOBINLINE off), the rest in band.
    e.recv_exact(999)
    for _ in range(500):
        try:
            e.got(len(e.s.recv(1, socket.MSG_OOB)))
            break
        except OSError as err:
            if err.errno not in (errno.EINVAL, errno.EAGAIN):
                raise
            time.sleep(0.01)
    e.send(b"k")
    e.recv_eof()
    e.log()
    e.s.close()


def srv_linger0_inflight(e, ctx):
    e.send(b"g")  # this end knows its peer: the client may go on
    e.recv_eof()  # to the client's RST; what came before it is read
    e.log()
    e.s.close()


def srv_silent(e, ctx):
    e.recv_eof()
    e.log()
    e.s.close()


def srv_fork_accept(e, ctx):
    srv_rounds(e, 5)


def srv_scm_rights(e, ctx):
    srv_rounds(e, 5)


def srv_tfo(e, ctx):
    srv_answer(e, 3000, 8000)


def srv_rounds(e, n):
    for _ in range(n):
        e.recv_exact(50000)
        e.send(fill(50000))
    e.log()
    e.s.close()


# ---- sendmmsg/recvmmsg, which Python's socket module lacks ---------------

class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.POINTER(Iovec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


class Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", Msghdr), ("len", ctypes.c_uint)]


_libc = ctypes.CDLL(None, use_errno=True)
MSG_WAITFORONE = 0x10000


def _mmsg_vec(bufs):
    vec = (Mmsghdr * len(bufs))()
    iovs = []
    for m, b in zip(vec, bufs):
        iov = Iovec(ctypes.addressof(b), len(b))
        iovs.append(iov)
        m.hdr.iov, m.hdr.iovlen = ctypes.pointer(iov), 1
    return vec, iovs


def sendmmsg(e, datas):
    """All of datas, one message each, by one sendmmsg() (each message is
    a send call of its own in the kernel); what a short count left, by
    hand."""
    bufs = [ctypes.create_string_buffer(d, len(d)) for d in datas]
    vec, _ = _mmsg_vec(bufs)
    k = _libc.sendmmsg(e.s.fileno(), vec, len(bufs), 0)
    if k < 0:
        raise OSError(ctypes.get_errno(), "sendmmsg")
    for i in range(k):
        e.put(vec[i].len)
    done = sum(vec[i].len for i in range(k))
    e.send(b"".join(datas)[done:])


def recvmmsg(e, n, size):
    """One recvmmsg() of up to n messages of size (a recv call each in
    the kernel): bytes read, 0 at EOF."""
    bufs = [ctypes.create_string_buffer(size) for _ in range(n)]
    vec, _ = _mmsg_vec(bufs)
    k = _libc.recvmmsg(e.s.fileno(), vec, n, MSG_WAITFORONE, None)
    if k < 0:
        raise OSError(ctypes.get_errno(), "recvmmsg")
    for i in range(k):
        e.got(vec[i].len)
    return sum(vec[i].len for i in range(k))


# ---- the client side ------------------------------------------------------

def cli_sendfile_srv_close(e):
    e.send(fill(1000))
    e.recv_eof()


def cli_rounds_srv_close(e):
    cli_rounds(e, 20)


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
    e.calls_known = False  # and so are its sends
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
                e.put(m)
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


def cli_peek(e):
    e.send(fill(20000))
    while e.read < 15000:
        if not e.s.recv(1500, socket.MSG_PEEK):
            break
        e.recv_exact(min(1500, 15000 - e.read))


def cli_iovecs(e):
    for i in range(20):
        e.sendmsg([fill(n) for n in (1, 10, 4999)])
    e.s.shutdown(socket.SHUT_WR)
    bufs = [bytearray(n) for n in (7, 700, 7000)]
    while True:
        n = e.s.recvmsg_into(bufs)[0]
        if not n:
            break
        e.got(n)


def cli_mmsg(e):
    sendmmsg(e, [fill(n) for n in (3, 2997, 7000)] * 6)
    sendmmsg(e, [fill(2000)])
    while e.read < 48002:
        if recvmmsg(e, 3, 1000) == 0:
            break


SO_ZEROCOPY, MSG_ZEROCOPY = 60, 0x4000000


def cli_zerocopy(e):
    e.s.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
    data = fill(65536)
    for _ in range(40):
        try:
            n = e.s.send(data, MSG_ZEROCOPY)
        except OSError as err:
            if err.errno != errno.ENOBUFS:
                raise
            n = 0
        e.put(n)
        drain_errqueue(e.s)
    e.s.shutdown(socket.SHUT_WR)
    e.recv_eof()


def drain_errqueue(s):
    """Take the zero-copy completions, so that they never fill optmem."""
    while True:
        try:
            s.recvmsg(0, 256, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return


def cli_oob(e):
    e.send(fill(999))
    e.send(b"!", socket.MSG_OOB)  # the urgent byte ends the first 1,000
    e.recv_exact(1)
    e.send(fill(2000))


def cli_linger0_inflight(e):
    # A RST with data still queued: written is what send() took.
    e.recv_exact(1)
    e.send(fill(2000000))
    linger0(e.s)


def cli_silent(e):
    time.sleep(0.3)


def cli_fork_accept(e):
    cli_rounds(e, 5)


def cli_scm_rights(e):
    cli_rounds(e, 5)


def cli_rounds(e, n):
    for _ in range(n):
        e.send(fill(50000))
        e.recv_exact(50000)
    e.recv_eof()


def cli_tfo(e):
    e.recv_exact(8000)


def connect_tfo(addr):
    """The request in the SYN, by sendto(MSG_FASTOPEN): the first
    connection of a run only fetches the server's cookie (its data goes
    after the handshake), the second carries it in its SYN."""
    s = socket.socket(family(addr[0]), socket.SOCK_STREAM)
    calls = [s.sendto(fill(1000), socket.MSG_FASTOPEN, addr)]
    while sum(calls) < 3000:
        calls.append(s.send(fill(3000 - sum(calls))))
    return s, calls


def uring(host, port, out):
    """The uring pattern's client end: uring_client prints its own truth
    line.  An error message, or None."""
    exe = os.environ.get("URING_CLIENT")
    if not exe:
        return None
    r = subprocess.run([exe, host, str(port), "300000"], timeout=120,
                       capture_output=True, text=True)
    if r.returncode:
        return "uring: %s" % r.stderr.strip()
    with _lock:
        with open(out, "a") as f:
            f.write(r.stdout)
    return None


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def fastopen_on():
    """TCP Fast Open for clients and servers, in this network namespace
    only (the test hosts' own sysctl)."""
    with open("/proc/sys/net/ipv4/tcp_fastopen", "w") as f:
        f.write("3")


def scm_worker(handle):
    """A process of its own that takes accepted sockets over a socketpair
    (SCM_RIGHTS) and serves them: the end's owner is not the process that
    accepted it.  Exits when the server goes (its end of the pair closes).
    Returns the server's end of the pair."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.fork():
        b.close()
        return a
    a.close()
    while True:
        fds = array.array("i")
        msg, anc, _, _ = b.recvmsg(1, socket.CMSG_LEN(fds.itemsize))
        if not msg:
            os._exit(0)
        fds.frombytes(anc[0][2][:fds.itemsize])
        c = socket.socket(fileno=fds[0])
        threading.Thread(target=handle, args=("scm_rights", c),
                         daemon=True).start()


def fork_server(handle, host, port):
    """A process of its own, forked before any thread, that accepts and
    forks a child per connection (a classic forking server): the child
    serves the end and closes it, the parent closes its copy at once.
    Single-threaded, so a child holds no other connection's socket."""
    ppid = os.getpid()
    if os.fork():
        return
    s = listener(host, port)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    s.settimeout(1.0)
    while os.getppid() == ppid:  # the server is killed at the end
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        c.settimeout(None)
        if os.fork() == 0:
            s.close()
            handle("fork_accept", c)
            os._exit(0)
        c.close()
    os._exit(0)


def listener(host, port):
    s = socket.socket(family(host), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(512)
    return s


def serve(host, base, out):
    base = int(base)
    # The file sendfile sends: unlinked at once (the server is killed at
    # the end, so it could never remove it), reopened through its fd.
    fd, path = tempfile.mkstemp(prefix="bytes-truth-")
    os.unlink(path)
    os.write(fd, b"f" * 5000001)
    ctx = {"file": "/proc/self/fd/%d" % fd}
    fastopen_on()

    def handle(pattern, c):
        bound(c)
        e = End(c, pattern, "server", out)
        try:
            globals()["srv_" + pattern](e, ctx)
        except OSError as err:
            print("server %s: %s" % (pattern, err), file=sys.stderr)
            e.log()
            c.close()

    # Before any thread: these processes are forked from a single thread.
    scm = scm_worker(handle)
    fork_server(handle, host, base + PATTERNS.index("fork_accept"))

    def listen(i, pattern):
        s = listener(host, base + i)
        if pattern == "tfo":
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, 16)
        while True:
            c, _ = s.accept()
            if pattern == "scm_rights":
                socket.send_fds(scm, [b"s"], [c.fileno()])
                c.close()
            else:
                threading.Thread(target=handle, args=(pattern, c),
                                 daemon=True).start()

    for i, p in enumerate(PATTERNS):
        if p != "fork_accept":
            threading.Thread(target=listen, args=(i, p),
                             daemon=True).start()
    print("ready", flush=True)
    try:
        threading.Event().wait()
    finally:
        os.unlink(path)


def client(host, base, out, patterns):
    base = int(base)
    errors = []

    if "tfo" in patterns:
        fastopen_on()

    def one(pattern):
        addr = (host, base + PATTERNS.index(pattern))
        if pattern == "uring":
            err = uring(host, addr[1], out)
            if err:
                errors.append(err)
            return
        if pattern == "tfo":
            s, calls = connect_tfo(addr)
        else:
            s, calls = socket.create_connection(addr), []
        bound(s)
        e = End(s, pattern, "client", out)
        for n in calls:
            e.put(n)
        try:
            globals()["cli_" + pattern](e)
        except OSError as err:
            errors.append("%s: %s" % (pattern, err))
        e.log()
        s.close()

    threads = []
    def twice(pattern):  # the second one has the first one's cookie
        one(pattern)
        one(pattern)

    for p in patterns:
        n = BURST if p == "burst" else 1
        for _ in range(n):
            t = threading.Thread(target=twice if p == "tfo" else one,
                                 args=(p,))
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
