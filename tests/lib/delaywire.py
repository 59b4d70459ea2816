#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A wire with a known delay between two test hosts, for edge-health tests.

The kernel here has neither netem nor fq (whose earliest-departure-time
stamps a tc program could set), so the delay is made in user space: two
TAP devices, one moved into each test host, and this process carrying
every Ethernet frame from one to the other DELAY milliseconds after it
left.  The delay is constant, so frames keep their order; the process
counts what it carried and says it on exit.

    delaywire.py NS_A DEV_A NS_B DEV_B DELAY_MS [READY_FILE]

Creates DEV_A in NS_A and DEV_B in NS_B (up, no address: the test adds
them), writes READY_FILE when frames flow, and runs until SIGTERM; then
the devices go with the process (a TAP device lives as long as its file).
"""
import fcntl
import heapq
import os
import selectors
import signal
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000


def tap(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def ip(*args):
    subprocess.run(["ip", *args], check=True)


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit("usage: delaywire.py NS_A DEV_A NS_B DEV_B DELAY_MS [READY_FILE]")
    ns_a, dev_a, ns_b, dev_b = sys.argv[1:5]
    delay = float(sys.argv[5]) / 1000.0
    fds = {}
    for ns, dev in ((ns_a, dev_a), (ns_b, dev_b)):
        fds[dev] = tap(dev)
        ip("link", "set", dev, "netns", ns)
        ip("-n", ns, "link", "set", dev, "up")
    fa, fb = fds[dev_a], fds[dev_b]
    peer = {fa: fb, fb: fa}
    sel = selectors.DefaultSelector()
    sel.register(fa, selectors.EVENT_READ)
    sel.register(fb, selectors.EVENT_READ)
    queue = []  # (due, seq, out fd, frame): a heap; one delay keeps order
    seq = carried = 0
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    if len(sys.argv) == 7:
        with open(sys.argv[6], "w") as f:
            f.write(f"{os.getpid()}\n")
    while not stop:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, out, frame = heapq.heappop(queue)
            try:
                os.write(out, frame)
                carried += 1
            except BlockingIOError:
                pass  # the device's queue is full: a loss, as on a wire
        timeout = max(0.0, queue[0][0] - now) if queue else 0.5
        for key, _ in sel.select(timeout):
            while True:
                try:
                    frame = os.read(key.fd, 65536)
                except BlockingIOError:
                    break
                seq += 1
                heapq.heappush(queue, (time.monotonic() + delay, seq, peer[key.fd], frame))
    print(f"delaywire: {carried} frames carried, {delay * 1000:g} ms each way", file=sys.stderr)


if __name__ == "__main__":
    main()
