#!/usr/bin/env python3
"""Write one connection record as a wire Envelope (common/wire.proto), the
bytes an agent puts on P.conns, for a test to publish with kcat.

  conn_record.py OUT FIELD=VALUE...

Fields: host, cookie, role (client|server), flags, laddr, lport, raddr,
rport, bytes_out, bytes_in, msgs_out, msgs_in, first_ns, last_ns, seq,
tgid, start_ns, comm.  Addresses are IPv4; numbers are decimal; what is not
given is 0 (TCP always).
"""
import ipaddress
import struct
import sys


def varint(n):
    if not 0 <= n < 1 << 64:
        sys.exit("conn_record.py: %d is not a uint64" % n)
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def u(field, n):
    return key(field, 0) + varint(n) if n else b""


def blob(field, data):
    return key(field, 2) + varint(len(data)) + data


def fixed64(field, n):
    return key(field, 1) + struct.pack("<Q", n)


f = dict(a.split("=", 1) for a in sys.argv[2:])
num = lambda k: int(f.get(k, "0"))
proc = u(1, num("tgid")) + u(2, num("start_ns"))
if "comm" in f:
    proc += blob(4, f["comm"].encode())
conn = (blob(1, f.get("host", "h").encode()) + u(3, num("cookie")) +
        u(4, 6) + u(5, {"client": 1, "server": 2}.get(f.get("role"), 0)) +
        u(6, num("flags")) +
        blob(7, ipaddress.IPv4Address(f.get("laddr", "10.0.0.1")).packed) +
        u(8, num("lport")) +
        blob(9, ipaddress.IPv4Address(f.get("raddr", "10.0.0.2")).packed) +
        u(10, num("rport")) + u(11, num("bytes_out")) +
        u(12, num("bytes_in")) + u(15, num("msgs_out")) +
        u(16, num("msgs_in")) + fixed64(17, num("first_ns")) +
        fixed64(18, num("last_ns")) + u(21, num("seq")) + blob(22, proc))
with open(sys.argv[1], "wb") as out:
    out.write(u(1, 1) + blob(10, conn))
