#!/usr/bin/env python3
"""The middle tier of the example service: an HTTP/1.1 app server that
answers each request after APP_DELAY of work and one query to its backend.

  app.py --listen ADDR:PORT --redis ADDR:PORT [--delay 2ms]
  app.py --listen ADDR:PORT --db ADDR:PORT [--delay 2ms]   (line-protocol db)
  app.py db --listen ADDR:PORT [--delay 5ms]               (a line db tier)

Each worker thread keeps one persistent backend connection, as a real app
server's connection pool would.  The 'db' mode is a tiny database stand-in
whose service time is known exactly, for causal-path tests.
"""
import argparse
import socket
import socketserver
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def addr(s):
    host, port = s.rsplit(":", 1)
    return host.strip("[]"), int(port)


def seconds(s):
    for suffix, mult in (("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if s.endswith(suffix):
            return float(s[: -len(suffix)]) * mult
    return float(s)


class Backend(threading.local):
    """One connection per thread to redis (RESP) or the line db."""

    def __init__(self):
        self.sock = None
        self.buf = b""

    def connect(self, target):
        self.sock = socket.create_connection(target)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("backend closed")
            self.buf += chunk
        out, self.buf = self.buf.split(b"\r\n", 1)
        return out

    def redis_get(self, key):
        k = key.encode()
        self.sock.sendall(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(k), k))
        head = self.line()
        if head.startswith(b"$") and head != b"$-1":
            n = int(head[1:])
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(4096)
            val, self.buf = self.buf[:n], self.buf[n + 2:]
            return val
        return b""

    def db_query(self, key):
        self.sock.sendall(b"Q " + key.encode() + b"\r\n")
        return self.line()


def make_handler(opts):
    backend = Backend()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            if backend.sock is None:
                backend.connect(addr(opts.redis or opts.db))
            # Sleep, not busy work: a spinning thread would hold the GIL
            # and make concurrent requests queue behind each other.
            time.sleep(opts.delay)
            key = "item:%d" % (hash(self.path) % 100)
            val = backend.redis_get(key) if opts.redis else backend.db_query(key)
            body = b'{"path": "%s", "value": "%s"}\n' % (
                self.path.encode(), val)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


class DbHandler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            time.sleep(self.server.delay)
            self.wfile.write(b"V " + line.strip()[2:] + b"\r\n")
            self.wfile.flush()


class DbServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", nargs="?", default="app", choices=["app", "db"])
    ap.add_argument("--listen", required=True)
    ap.add_argument("--redis")
    ap.add_argument("--db")
    ap.add_argument("--delay", default="2ms")
    opts = ap.parse_args()
    opts.delay = seconds(opts.delay)
    if opts.mode == "db":
        srv = DbServer(addr(opts.listen), DbHandler)
        srv.delay = opts.delay
        srv.serve_forever()
    if not (opts.redis or opts.db):
        ap.error("--redis or --db is needed")
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(addr(opts.listen), make_handler(opts)).serve_forever()


if __name__ == "__main__":
    main()
