#!/usr/bin/env python3
"""The NITRO dashboard in a real browser: Debian's headless Chromium, driven over the
WebDriver protocol through Debian's chromedriver (this client speaks WebDriver with the
standard library only). Run it inside the lab's client namespace.

usage: dashboard.py URL USER PASSWORD SERVICE SCREENSHOT

Logs in through the page's form, waits until SERVICE's row says UP and prints `UP` (the
caller then stops its backend), waits until the row says DOWN and prints `DOWN`, saves a
screenshot to SCREENSHOT and prints `screenshot PATH`. Also prints `vservers N`, the first
vserver's and service's rows (`row …`, `service-row …`), the first service group member's
(`member-row …`), `charts N` and `errors N` (script
errors the page logged). Exits 1 on a timeout.
"""

import base64
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

STATE_TIMEOUT_S = 60
# As the machine notes say: without these Chromium keeps calling Google's hosts.
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1300,1100",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Driver:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.session = None

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.load(r).get("value")
        except urllib.error.HTTPError as e:
            sys.exit(f"webdriver {method} {path}: {e.code} {e.read()[:300]!r}")

    def s(self, method, path, body=None):
        return self.call(method, f"/session/{self.session}{path}", body)

    def start(self, profile):
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium",
                                   "args": CHROMIUM_ARGS + [f"--user-data-dir={profile}"]},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def element(self, css):
        found = self.s("POST", "/element", {"using": "css selector", "value": css})
        return next(iter(found.values()))

    def type(self, css, text):
        self.s("POST", f"/element/{self.element(css)}/value", {"text": text})

    def script(self, source, *args):
        return self.s("POST", "/execute/sync", {"script": source, "args": list(args)})

    def wait_for(self, what, check):
        deadline = time.monotonic() + STATE_TIMEOUT_S
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.25)
        sys.exit(f"timed out waiting for {what}")


def service_state(d, service):
    return d.script(
        "const r = document.querySelector(`#services tr[data-service='${arguments[0]}']`);"
        "return r ? r.querySelector('.state').textContent : null;", service)


def main():
    url, user, password, service, screenshot = sys.argv[1:6]
    port = free_port()
    driver_proc = subprocess.Popen(["chromedriver", f"--port={port}"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = Driver(port)
    try:
        for _ in range(100):
            try:
                if d.call("GET", "/status").get("ready"):
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.1)
        with tempfile.TemporaryDirectory() as profile:
            d.start(profile)
            try:
                d.s("POST", "/url", {"url": url})
                d.wait_for("the login form",
                           lambda: d.script("return !document.getElementById('login').hidden"))
                d.type("#username", user)
                d.type("#password", password)
                d.s("POST", f"/element/{d.element('#submit')}/click", {})
                d.wait_for(f"{service} UP", lambda: service_state(d, service) == "UP")
                print("UP", flush=True)
                print("vservers", d.script("return document.querySelectorAll('#vservers tbody tr').length"), flush=True)
                print("row", d.script("return document.querySelector('#vservers tbody tr').innerText.replace(/\\s+/g, ' ')"), flush=True)
                print("service-row", d.script("return document.querySelector('#services tbody tr').innerText.replace(/\\s+/g, ' ')"), flush=True)
                # A service group's member, if the configuration has one.
                print("member-row", d.script("const r = [...document.querySelectorAll('#services tbody tr')].find((r) => r.dataset.service.includes(' › ')); return r ? r.innerText.replace(/\\s+/g, ' ') : 'none'"), flush=True)
                d.wait_for(f"{service} DOWN", lambda: service_state(d, service) == "DOWN")
                print("DOWN", flush=True)
                # A few more samples, so the charts have lines to show.
                time.sleep(3)
                print("charts", d.script("return document.querySelectorAll('#charts canvas').length"), flush=True)
                png = base64.b64decode(d.s("GET", "/screenshot"))
                with open(screenshot, "wb") as f:
                    f.write(png)
                print(f"screenshot {screenshot}", flush=True)
                logs = d.s("POST", "/se/log", {"type": "browser"}) or []
                # Network errors are the API's answers (a 401 before the login): not the page's.
                severe = [entry for entry in logs
                          if entry.get("level") == "SEVERE" and entry.get("source") != "network"]
                for entry in severe:
                    print("error:", entry.get("message"), flush=True)
                print("errors", len(severe), flush=True)
            finally:
                d.call("DELETE", f"/session/{d.session}")
    finally:
        driver_proc.terminate()
        driver_proc.wait(timeout=10)


if __name__ == "__main__":
    main()
