#!/usr/bin/env python3
"""NITRO under load for the lab: RATE requests a second for SECONDS, open loop (each request
has its time slot, late ones are not skipped), a mix of reads and writes, over keep-alive
connections of a few threads, with one session from a login.

usage: nitro_load.py BASE_URL USER PASSWORD RATE SECONDS

The mix, per ten requests: four stat reads (lbvserver, service), three config reads
(lbvserver, service), three writes (the vserver `web`'s method flipped between ROUNDROBIN and
LEASTCONNECTION, a server `load-N` added, and the one added two rounds before deleted; the
last two are deleted at the end, outside the count). Prints one JSON line: requests
sent, answered, by status, failures, and latency percentiles in milliseconds.
"""

import http.client
import json
import sys
import threading
import time
import urllib.parse

THREADS = 8


class Client:
    def __init__(self, base, cookie):
        url = urllib.parse.urlsplit(base)
        self.host, self.port = url.hostname, url.port or 80
        self.cookie = cookie
        self.conn = None

    def request(self, method, path, body=None):
        headers = {"Cookie": self.cookie, "Content-Type": "application/json"}
        data = None if body is None else json.dumps(body)
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
                self.conn.request(method, path, body=data, headers=headers)
                reply = self.conn.getresponse()
                reply.read()
                return reply.status
            except (OSError, http.client.HTTPException):
                # A connection the server closed between requests: once more on a new one.
                self.conn = None
                if attempt == 1:
                    raise
        return None


def login(base, user, password):
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=10)
    body = json.dumps({"login": {"username": user, "password": password, "timeout": 3600}})
    conn.request("POST", "/nitro/v1/config/login", body=body,
                 headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    answer = json.loads(reply.read())
    if reply.status != 201:
        sys.exit(f"login: {reply.status} {answer}")
    return "NITRO_AUTH_TOKEN=" + urllib.parse.quote(answer["sessionid"], safe="")


def request_for(i):
    """The i-th request of the mix: (method, path, body, expected status)."""
    slot, n = i % 10, i // 10
    if slot in (0, 1):
        return "GET", "/nitro/v1/stat/lbvserver", None, 200
    if slot in (2, 3):
        return "GET", "/nitro/v1/stat/service", None, 200
    if slot in (4, 5):
        return "GET", "/nitro/v1/config/lbvserver", None, 200
    if slot == 6:
        return "GET", "/nitro/v1/config/service", None, 200
    if slot == 7:
        method = "ROUNDROBIN" if n % 2 else "LEASTCONNECTION"
        return "PUT", "/nitro/v1/config/lbvserver", {"lbvserver": {"name": "web", "lbmethod": method}}, 200
    if slot == 8:
        octet = 100 + n % 100
        server = {"name": f"load-{n}", "ipaddress": f"198.18.1.{octet}"}
        return "POST", "/nitro/v1/config/server", {"server": server}, 201
    # The server added two rounds (100 ms at 200/s) before: its add has been answered.
    if n < 2:
        return "GET", "/nitro/v1/config/server", None, 200
    return "DELETE", f"/nitro/v1/config/server/load-{n - 2}", None, 200


def main():
    base, user, password = sys.argv[1:4]
    rate, seconds = float(sys.argv[4]), float(sys.argv[5])
    cookie = login(base, user, password)
    total = int(rate * seconds)
    start = time.monotonic() + 0.2
    lock = threading.Lock()
    next_index = [0]
    latencies, statuses, failures = [], {}, []

    def worker():
        client = Client(base, cookie)
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= total:
                return
            due = start + i / rate
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            method, path, body, expected = request_for(i)
            # Latency counts from the slot, so a queue behind a slow answer shows.
            try:
                status = client.request(method, path, body)
            except (OSError, http.client.HTTPException) as e:
                status = None
                with lock:
                    failures.append(f"{method} {path}: {e}")
            took = (time.monotonic() - due) * 1000
            with lock:
                latencies.append(took)
                statuses[str(status)] = statuses.get(str(status), 0) + 1
                if status is not None and status != expected:
                    failures.append(f"{method} {path}: {status}, expected {expected}")

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    cleanup = Client(base, cookie)
    for n in range(max(0, total // 10 - 2), total // 10):
        cleanup.request("DELETE", f"/nitro/v1/config/server/load-{n}")
    latencies.sort()

    def pct(p):
        return round(latencies[min(len(latencies) - 1, int(len(latencies) * p))], 2) if latencies else None

    answered = sum(n for s, n in statuses.items() if s != "None")
    print(json.dumps({
        "sent": total, "answered": answered, "statuses": statuses, "seconds": round(elapsed, 2),
        "rate": round(total / elapsed, 1), "p50_ms": pct(0.5), "p99_ms": pct(0.99),
        "max_ms": round(latencies[-1], 2) if latencies else None,
        "failures": failures[:10], "failed": len(failures),
    }), flush=True)


if __name__ == "__main__":
    main()
