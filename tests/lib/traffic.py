#!/usr/bin/env python3
"""Traffic with known ground truth for the agent tests.

Every client prints one JSON object with the bytes it really sent and
received (socket return values), so tests compare the agent's kernel
counts against what the application did, not against our own arithmetic.

  traffic.py redis HOST PORT N           N SET commands on one connection
  traffic.py echo-server HOST PORT       TCP: reply b'x'*len(request), close
  traffic.py short HOST PORT N SIZE      N connections, each SIZE bytes
  traffic.py udp-server HOST PORT        UDP: echo each datagram
  traffic.py udp-client HOST PORT N SIZE N request/response datagrams
  traffic.py hold HOST PORT GO OUT IN    connect, wait for file GO, then
                                         send OUT bytes, read IN bytes
  traffic.py sink-server HOST PORT IN OUT  read IN bytes, send OUT, close
  traffic.py echo-stream HOST PORT       TCP: echo everything until EOF
  traffic.py phases HOST PORT GO N BYTES one connection; for i in 1..N wait
                                         for file GO.i, send and read back
                                         BYTES, then touch GO.i.done
"""
import json
import os
import socket
import sys
import time


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def recv_exact(s, n):
    got = 0
    while got < n:
        b = s.recv(min(65536, n - got))
        if not b:
            break
        got += len(b)
    return got


def redis(host, port, n):
    s = socket.create_connection((host, int(port)))
    sent = recv = 0
    for i in range(int(n)):
        key, val = "key:%d" % i, "v" * (10 + i % 50)
        parts = ["SET", key, val]
        cmd = "*%d\r\n" % len(parts) + "".join(
            "$%d\r\n%s\r\n" % (len(p), p) for p in parts)
        s.sendall(cmd.encode())
        sent += len(cmd)
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = s.recv(4096)
            if not chunk:
                raise SystemExit("redis closed the connection")
            reply += chunk
        recv += len(reply)
    lport = s.getsockname()[1]
    s.close()
    print(json.dumps({"sent": sent, "received": recv, "requests": int(n),
                      "lport": lport, "pid": os.getpid()}))


def echo_server(host, port):
    srv = socket.socket(family(host), socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, int(port)))
    srv.listen(1024)
    while True:
        c, _ = srv.accept()
        data = c.recv(65536)
        if data:
            c.sendall(b"x" * len(data))
        c.close()


def short(host, port, n, size):
    sent = recv = 0
    longest = 0.0
    for _ in range(int(n)):
        t0 = time.monotonic()
        s = socket.create_connection((host, int(port)))
        s.sendall(b"q" * int(size))
        sent += int(size)
        recv += recv_exact(s, int(size))
        s.close()
        longest = max(longest, time.monotonic() - t0)
    print(json.dumps({"sent": sent, "received": recv, "conns": int(n),
                      "longest_ms": round(longest * 1000, 3),
                      "pid": os.getpid()}))


def udp_server(host, port):
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    s.bind((host, int(port)))
    while True:
        data, peer = s.recvfrom(65536)
        s.sendto(data, peer)


def udp_client(host, port, n, size):
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    s.settimeout(2)
    sent = recv = 0
    for _ in range(int(n)):
        sent += s.sendto(b"u" * int(size), (host, int(port)))
        data, _ = s.recvfrom(65536)
        recv += len(data)
    print(json.dumps({"sent": sent, "received": recv, "datagrams": int(n),
                      "lport": s.getsockname()[1], "pid": os.getpid()}))


def hold(host, port, go, out, inn):
    s = socket.create_connection((host, int(port)))
    print(json.dumps({"lport": s.getsockname()[1], "pid": os.getpid()}),
          flush=True)
    while not os.path.exists(go):
        time.sleep(0.02)
    s.sendall(b"h" * int(out))
    got = recv_exact(s, int(inn))
    s.close()
    print(json.dumps({"sent": int(out), "received": got}), flush=True)


def sink_server(host, port, inn, out):
    srv = socket.socket(family(host), socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, int(port)))
    srv.listen(16)
    c, _ = srv.accept()
    recv_exact(c, int(inn))
    c.sendall(b"s" * int(out))
    c.close()


def echo_stream(host, port):
    srv = socket.socket(family(host), socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, int(port)))
    srv.listen(64)
    while True:
        c, _ = srv.accept()
        if os.fork() == 0:
            while True:
                b = c.recv(65536)
                if not b:
                    os._exit(0)
                c.sendall(b)
        c.close()


def phases(host, port, go, n, size):
    s = socket.create_connection((host, int(port)))
    print(json.dumps({"lport": s.getsockname()[1], "pid": os.getpid()}),
          flush=True)
    for i in range(1, int(n) + 1):
        while not os.path.exists("%s.%d" % (go, i)):
            time.sleep(0.02)
        s.sendall(b"p" * int(size))
        recv_exact(s, int(size))
        with open("%s.%d.done" % (go, i), "w") as f:
            f.write("done\n")
    s.close()


COMMANDS = {
    "echo-stream": echo_stream, "phases": phases,
    "redis": redis, "echo-server": echo_server, "short": short,
    "udp-server": udp_server, "udp-client": udp_client, "hold": hold,
    "sink-server": sink_server,
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    COMMANDS[sys.argv[1]](*sys.argv[2:])
