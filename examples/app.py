#!/usr/bin/env python3
"""The middle tier of the example service: an HTTP/1.1 app server that
answers each request after APP_DELAY of work and one query to its backend.

  app.py --listen ADDR:PORT --redis ADDR:PORT [--delay 2ms]
  app.py --listen ADDR:PORT --postgres ADDR:PORT [--query SQL] [--delay 2ms]
  app.py --listen ADDR:PORT --db ADDR:PORT [--delay 2ms]   (line-protocol db)
  app.py db --listen ADDR:PORT [--delay 5ms]               (a line db tier)
  app.py pgtime --postgres ADDR:PORT --query SQL [-n 200]  (time a query)

The HTTP side is lean on purpose (raw sockets, keep-alive, one thread per
connection, each thread with its own backend connection as a pooled app
server would have), so that what the app adds between a request arriving
and its backend call leaving is APP_DELAY plus a few tens of microseconds.
It measures that itself: GET /stats (straight to the app, not through a
proxy) returns the medians of its own timings, as ground truth for the
causal-path tests.  The postgres backend needs psycopg2 (Debian's
python3-psycopg2, so run the app with /usr/bin/python3).

The 'db' mode is a tiny database stand-in whose service time is known
exactly.  'pgtime' runs a query N times in one session with the server's
statement logging on (log_min_duration_statement = 0), so the server's own
time for it can be read from its log.
"""
import argparse
import json
import socket
import socketserver
import sys
import threading
import time


def addr(s):
    host, port = s.rsplit(":", 1)
    return host.strip("[]"), int(port)


def seconds(s):
    for suffix, mult in (("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if s.endswith(suffix):
            return float(s[: -len(suffix)]) * mult
    return float(s)


def pg_connect(target):
    import psycopg2  # only this backend needs it

    host, port = target
    conn = psycopg2.connect(host=host, port=port, user="postgres",
                            dbname="postgres", connect_timeout=10)
    conn.autocommit = True  # one round trip per query, no BEGIN/COMMIT
    return conn


class Backend:
    """One connection to redis (RESP), postgres or the line db."""

    def __init__(self, opts):
        self.opts = opts
        self.buf = b""
        self.sock = self.pg = self.cur = None
        if opts.postgres:
            self.pg = pg_connect(addr(opts.postgres))
            self.cur = self.pg.cursor()
        else:
            self.sock = socket.create_connection(addr(opts.redis or opts.db))
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self):
        if self.pg:
            self.pg.close()
        if self.sock:
            self.sock.close()

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("backend closed")
            self.buf += chunk
        out, self.buf = self.buf.split(b"\r\n", 1)
        return out

    def query(self, key):
        if self.pg:
            self.cur.execute(self.opts.query)
            return str(self.cur.fetchall()).encode()
        if self.opts.redis:
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
        self.sock.sendall(b"Q " + key.encode() + b"\r\n")
        return self.line()


class Stats:
    """The app's own timings, per request: from the request in hand to the
    backend call about to leave (work), and the backend round trip."""

    def __init__(self):
        self.lock = threading.Lock()
        self.work, self.backend = [], []

    def add(self, work, backend):
        with self.lock:
            self.work.append(work)
            self.backend.append(backend)

    def json(self):
        def median_us(v):
            v = sorted(v)
            return round(v[len(v) // 2] * 1e6, 1) if v else None

        with self.lock:
            return json.dumps({"requests": len(self.work),
                               "work_us": median_us(self.work),
                               "backend_us": median_us(self.backend)})


def response(status, body, ctype="application/json"):
    return (b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
            % (status, ctype.encode(), len(body))) + body


def read_request(conn, buf):
    """(request line, headers, body, rest of buf, time it was all in) or
    None at the end of the connection."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    length = 0
    for h in lines[1:]:
        name, _, value = h.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(buf) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buf += chunk
    return lines[0], lines[1:], buf[:length], buf[length:], time.perf_counter()


def serve_conn(conn, opts, stats):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    backend = None
    buf = b""
    try:
        backend = Backend(opts)
        while True:
            req = read_request(conn, buf)
            if req is None:
                return
            line, _, _, buf, t_in = req
            path = line.split(b" ")[1] if line.count(b" ") >= 2 else b"/"
            if path == b"/stats":
                conn.sendall(response(b"200 OK", stats.json().encode()))
                continue
            # Sleep, not busy work: a spinning thread would hold the GIL
            # and make concurrent requests queue behind each other.
            time.sleep(opts.delay)
            t_call = time.perf_counter()
            val = backend.query("item:%d" % (hash(path) % 100))
            stats.add(t_call - t_in, time.perf_counter() - t_call)
            conn.sendall(response(b"200 OK", b'{"path": "%s", "value": "%s"}\n'
                                  % (path, val.replace(b'"', b"'"))))
    except Exception as e:  # a backend error ends this connection only
        print("app: connection ended: %s" % e, file=sys.stderr)
    finally:
        if backend:
            backend.close()
        conn.close()


def serve_app(opts):
    stats = Stats()
    lsock = socket.socket(socket.AF_INET6 if ":" in addr(opts.listen)[0]
                          else socket.AF_INET)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(addr(opts.listen))
    lsock.listen(128)
    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=serve_conn, args=(conn, opts, stats),
                         daemon=True).start()


class DbHandler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            time.sleep(self.server.delay)
            self.wfile.write(b"V " + line.strip()[2:] + b"\r\n")
            self.wfile.flush()


class DbServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def pgtime(opts):
    pg = pg_connect(addr(opts.postgres))
    cur = pg.cursor()
    cur.execute("SET log_min_duration_statement = 0")  # superuser only
    t = []
    for _ in range(opts.n):
        t0 = time.perf_counter()
        cur.execute(opts.query)
        cur.fetchall()
        t.append(time.perf_counter() - t0)
    cur.execute("SET log_min_duration_statement = -1")
    pg.close()
    t.sort()
    print(json.dumps({"query": opts.query, "n": opts.n,
                      "round_trip_us": round(t[len(t) // 2] * 1e6, 1)}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", nargs="?", default="app",
                    choices=["app", "db", "pgtime"])
    ap.add_argument("--listen")
    ap.add_argument("--redis")
    ap.add_argument("--postgres")
    ap.add_argument("--query", default="SELECT 1")
    ap.add_argument("--db")
    ap.add_argument("--delay", default="2ms")
    ap.add_argument("-n", type=int, default=200)
    opts = ap.parse_args()
    opts.delay = seconds(opts.delay)
    if opts.mode == "pgtime":
        if not opts.postgres:
            ap.error("pgtime needs --postgres")
        return pgtime(opts)
    if not opts.listen:
        ap.error("--listen is needed")
    if opts.mode == "db":
        srv = DbServer(addr(opts.listen), DbHandler)
        srv.delay = opts.delay
        srv.serve_forever()
    if not (opts.redis or opts.db or opts.postgres):
        ap.error("--redis, --postgres or --db is needed")
    serve_app(opts)


if __name__ == "__main__":
    main()
