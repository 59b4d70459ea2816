#!/usr/bin/env python3
"""An asyncio event loop that calls Redis now or later, and its client:
the loop-iteration evidence's test (tests/t_traces_loop.sh).

  loopsrv.py serve --mode now|defer --listen A:P --redis A:P --truth FILE
  loopsrv.py load --target A:P --conns N --duration S

serve: one thread, one asyncio loop.  Each request is a line; for it the
server writes one PING to Redis on a connection of its own pool (as many
connections as requests can be open: a call never waits for one, so it
is never written when another request's reply frees it) and answers when
the PONG comes back.  `now` writes the PING from the read's callback
(data_received), in the loop iteration that read the request, like a
Node.js or nginx handler; `defer` writes it from a timer 2 ms later
(call_later), so from a later iteration: the kernel must not take the
context of whatever the loop read last for it.  Every call is a
truth-links line (docs/causeway-traces.md).

load: N connections, each sending a request, waiting for its answer and
pausing 0-4 ms, for S seconds; prints the answers counted as JSON.
"""
import argparse
import asyncio
import json
import random
import socket
import sys
import threading
import time


def ep(addr):
    return "%s:%d" % (addr[0], addr[1])


def parse_ep(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


class RedisConn(asyncio.Protocol):
    def __init__(self, pool):
        self.pool, self.buf, self.waiter = pool, b"", None

    def connection_made(self, transport):
        self.transport = transport
        self.pool.free.append(self)

    def call(self, done):
        self.waiter = done
        self.transport.write(b"PING\r\n")

    def data_received(self, data):
        self.buf += data
        if b"\r\n" in self.buf:
            self.buf = b""
            done, self.waiter = self.waiter, None
            self.pool.free.append(self)
            done()


class Pool:
    def __init__(self):
        self.free = []


class Server(asyncio.Protocol):
    def __init__(self, args, pool, truth):
        self.args, self.pool, self.truth, self.buf = args, pool, truth, b""

    def connection_made(self, transport):
        self.transport = transport
        s = transport.get_extra_info("socket")
        self.ends = ep(s.getpeername()) + "," + ep(s.getsockname())

    def data_received(self, data):
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            self.request(line, time.time_ns())

    def request(self, line, t_in):
        def write():
            r = self.pool.free.pop()
            s = r.transport.get_extra_info("socket")
            self.truth.write("loop,%s,%d,%s,%s,%d\n" % (
                self.ends, t_in, ep(s.getsockname()), ep(s.getpeername()),
                time.time_ns()))
            r.call(lambda: self.transport.write(b"OK " + line + b"\n"))
        if self.args.mode == "now":
            write()
        else:
            asyncio.get_running_loop().call_later(0.002, write)


async def serve(args):
    loop = asyncio.get_running_loop()
    truth = open(args.truth, "w", buffering=1)
    truth.write("service,in_client,in_server,in_start_ns,out_client,"
                "out_server,out_start_ns\n")
    pool = Pool()
    host, port = parse_ep(args.redis)
    for _ in range(args.conns):
        await loop.create_connection(lambda: RedisConn(pool), host, port)
    host, port = parse_ep(args.listen)
    srv = await loop.create_server(lambda: Server(args, pool, truth),
                                   host, port)
    async with srv:
        await srv.serve_forever()


def load(args):
    host, port = parse_ep(args.target)
    end = time.monotonic() + args.duration
    counts = [0] * args.conns

    def one(i):
        s = socket.create_connection((host, port))
        f = s.makefile("rb")
        n = 0
        while time.monotonic() < end:
            n += 1
            s.sendall(b"R %d.%d\n" % (i, n))
            if not f.readline().startswith(b"OK"):
                return
            counts[i] += 1
            time.sleep(random.uniform(0, 0.004))
        s.close()
    th = [threading.Thread(target=one, args=(i,)) for i in range(args.conns)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    print(json.dumps({"ok": sum(counts)}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["serve", "load"])
    p.add_argument("--mode", choices=["now", "defer"], default="now")
    p.add_argument("--listen")
    p.add_argument("--redis")
    p.add_argument("--truth")
    p.add_argument("--target")
    p.add_argument("--conns", type=int, default=4)
    p.add_argument("--duration", type=float, default=5)
    args = p.parse_args()
    if args.what == "load":
        load(args)
        return
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
