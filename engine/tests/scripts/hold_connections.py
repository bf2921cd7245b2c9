#!/usr/bin/env python3
"""Holds many TCP connections through the VIP, for the flow-table pressure lab test.

usage: hold_connections.py VIP PORT TOTAL BATCH FRESH

Phase 1 opens TOTAL connections in batches of BATCH (each batch waits up to 1 s for its
handshakes), sends one HTTP request on every established one, and prints
`held ESTABLISHED PENDING ANSWERED`. It then waits for a line on stdin (the test reads the
engine's figures meanwhile), abandons the pending connects and closes the established
connections. A moment later (the closed flows still linger in the engine's table), phase 2
opens FRESH new connections the same way and prints `fresh ESTABLISHED PENDING ANSWERED`.
Every wait is bounded; nothing is sent anywhere but VIP:PORT.
"""

import errno
import resource
import selectors
import socket
import sys
import time

REQUEST = b"GET / HTTP/1.1\r\nHost: fulcrum-lab\r\n\r\n"


def open_batch(vip, port, n):
    """Starts n non-blocking connects and waits up to 1 s: (established, pending)."""
    sel = selectors.DefaultSelector()
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex((vip, port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            continue
        sel.register(s, selectors.EVENT_WRITE)
    established = []
    deadline = time.monotonic() + 1.0
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
            s = key.fileobj
            sel.unregister(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                established.append(s)
            else:
                s.close()
    pending = [key.fileobj for key in list(sel.get_map().values())]
    sel.close()
    return established, pending


def ask_all(conns, limit_s=15.0):
    """Sends one request on each connection; how many answered with X-Backend."""
    sel = selectors.DefaultSelector()
    got = {}
    for s in conns:
        try:
            s.sendall(REQUEST)
        except OSError:
            continue
        got[s] = b""
        sel.register(s, selectors.EVENT_READ)
    answered = 0
    deadline = time.monotonic() + limit_s
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            got[s] += data
            if b"x-backend: backend-" in got[s].lower():
                answered += 1
                sel.unregister(s)
            elif not data:
                sel.unregister(s)
    sel.close()
    return answered


def open_many(vip, port, total, batch):
    established, pending = [], []
    for start in range(0, total, batch):
        e, p = open_batch(vip, port, min(batch, total - start))
        established += e
        pending += p
    return established, pending


def main():
    vip, port, total, batch, fresh = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:6])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))

    established, pending = open_many(vip, port, total, batch)
    answered = ask_all(established)
    print(f"held {len(established)} {len(pending)} {answered}", flush=True)
    sys.stdin.readline()
    for s in pending + established:
        s.close()
    time.sleep(0.2)  # the services' FINs come back: the flows are closed, not half-closed

    established, pending = open_many(vip, port, fresh, batch)
    answered = ask_all(established)
    print(f"fresh {len(established)} {len(pending)} {answered}", flush=True)
    for s in pending + established:
        s.close()


if __name__ == "__main__":
    main()
