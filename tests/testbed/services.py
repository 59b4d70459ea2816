#!/usr/bin/env python3
"""Testbed services that log their own ground truth.

  services.py tpr  --listen A:P --redis A:P --truth FILE
  services.py pool --listen A:P --redis A:P --truth FILE [--workers N]
  (--name N: the service's name in its truth, default the mode)

tpr: thread per request: each incoming HTTP/1.1 connection gets its own
thread, which reads a request, makes its Redis calls (one or two GETs) and
answers; one request per thread at a time.

pool: worker pool: one I/O thread reads requests from every connection and
queues them; N worker threads take them, make one Redis call and answer,
so the thread that made a call is not the one that read the request.

Both share a small pool of Redis connections (fewer than the threads that
use it), so one Redis connection carries calls for many requests.  Every
call is logged as a truth-links line (docs/causeway-traces.md):

  service,in_client,in_server,in_start_ns,out_client,out_server,out_start_ns

in_start_ns is when the service read the request, out_start_ns when it
started writing the call, both CLOCK_REALTIME like a packet capture.
"""
import argparse
import queue
import random
import selectors
import signal
import socket
import sys
import threading
import time


def ep(addr):
    return "%s:%d" % (addr[0], addr[1])


def parse_ep(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


class Truth:
    """Line-buffered so a killed service leaves whole lines only."""

    def __init__(self, path, service):
        self.f = open(path, "w", buffering=1)
        self.f.write("service,in_client,in_server,in_start_ns,"
                     "out_client,out_server,out_start_ns\n")
        self.svc = service
        self.lock = threading.Lock()

    def log(self, conn, t_in, calls):
        lines = []
        ins = "%s,%s,%s,%d" % (self.svc, conn[0], conn[1], t_in)
        if not calls:
            lines.append(ins + ",,,\n")
        for c in calls:
            lines.append("%s,%s,%s,%d\n" % (ins, c[0], c[1], c[2]))
        with self.lock:
            self.f.write("".join(lines))


class RedisPool:
    def __init__(self, addr, size):
        self.q = queue.Queue()
        for _ in range(size):
            s = socket.create_connection(addr)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.q.put(s)

    def get(self, key):
        """One GET on a pooled connection: (client, server, start_ns)."""
        s = self.q.get()
        try:
            cmd = b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key)
            t = time.time_ns()
            s.sendall(cmd)
            buf = b""
            while True:
                buf += s.recv(65536)
                if buf.startswith(b"$-1\r\n"):
                    break
                if buf.startswith(b"$") and b"\r\n" in buf:
                    n = int(buf[1:buf.index(b"\r\n")])
                    if len(buf) >= buf.index(b"\r\n") + 2 + n + 2:
                        break
            return ep(s.getsockname()), ep(s.getpeername()), t
        finally:
            self.q.put(s)


def read_request(sock, buf):
    """(request head, rest) or (None, b"") at end of stream."""
    while b"\r\n\r\n" not in buf:
        d = sock.recv(65536)
        if not d:
            return None, b""
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head, rest


def answer(sock, body):
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                 b"Content-Type: text/plain\r\n\r\n%s" % (len(body), body))


def work(ms):
    """Some service time of its own, part sleep, part CPU."""
    time.sleep(ms / 2000.0)
    end = time.perf_counter() + ms / 2000.0
    while time.perf_counter() < end:
        pass


def tpr_conn(sock, args, redis, truth):
    conn = (ep(sock.getpeername()), ep(sock.getsockname()))
    buf = b""
    while True:
        head, buf = read_request(sock, buf)
        if head is None:
            return
        t_in = time.time_ns()
        calls = [redis.get(b"user:%d" % random.randrange(1000))]
        work(args.work_ms)
        if random.random() < 0.5:
            calls.append(redis.get(b"cart:%d" % random.randrange(1000)))
        truth.log(conn, t_in, calls)
        answer(sock, b"tpr ok\n")


def serve_tpr(args, lsock, redis, truth):
    while True:
        s, _ = lsock.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=tpr_conn, args=(s, args, redis, truth),
                         daemon=True).start()


def pool_worker(jobs, args, redis, truth):
    while True:
        sock, conn, t_in = jobs.get()
        calls = [redis.get(b"stock:%d" % random.randrange(1000))]
        work(args.work_ms)
        truth.log(conn, t_in, calls)
        try:
            answer(sock, b"pool ok\n")
        except OSError:
            pass


def serve_pool(args, lsock, redis, truth):
    jobs = queue.Queue()
    for _ in range(args.workers):
        threading.Thread(target=pool_worker, args=(jobs, args, redis, truth),
                         daemon=True).start()
    sel = selectors.DefaultSelector()
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ)
    bufs = {}
    while True:
        for key, _ in sel.select():
            s = key.fileobj
            if s is lsock:
                c, _ = lsock.accept()
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                bufs[c] = b""
                sel.register(c, selectors.EVENT_READ)
                continue
            try:
                d = s.recv(65536)
            except OSError:
                d = b""
            if not d:
                sel.unregister(s)
                bufs.pop(s, None)
                s.close()
                continue
            bufs[s] += d
            while b"\r\n\r\n" in bufs[s]:
                _, bufs[s] = bufs[s].split(b"\r\n\r\n", 1)
                conn = (ep(s.getpeername()), ep(s.getsockname()))
                jobs.put((s, conn, time.time_ns()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["tpr", "pool"])
    ap.add_argument("--listen", required=True)
    ap.add_argument("--redis", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--redis-conns", type=int, default=3)
    ap.add_argument("--work-ms", type=float, default=1.0)
    ap.add_argument("--name", help="the service's name in its truth "
                    "(default: the mode)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    random.seed()
    truth = Truth(args.truth, args.name or args.mode)
    redis = RedisPool(parse_ep(args.redis), args.redis_conns)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(parse_ep(args.listen))
    lsock.listen(256)
    (serve_tpr if args.mode == "tpr" else serve_pool)(args, lsock, redis,
                                                       truth)


if __name__ == "__main__":
    main()
