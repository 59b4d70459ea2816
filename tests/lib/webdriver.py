"""A headless Chromium driven through chromedriver's WebDriver HTTP API,
for the tests of serve's page (t_serve_page, t_serve_traces): a session,
JavaScript run in the page, a bounded wait for a condition, screenshots.

    from webdriver import http, Page
    page = Page(driver_url, profile_dir, shots_dir)
    page.go(serve + "/")
    page.wait("the graph", "return document.getElementById('status')...")
    page.shot("graph")
"""
import base64
import json
import time
import urllib.request


def http(method, url, body=None):
    """One WebDriver call (or any JSON request): the answer's JSON."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read() or b"null")


class Page:
    ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync",
            "--window-size=1400,1000"]

    def __init__(self, driver, profile, shots):
        args = self.ARGS + ["--user-data-dir=" + profile]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium",
                                   "args": args}}}}
        sess = http("POST", driver + "/session", caps)["value"]["sessionId"]
        self.S = driver + "/session/" + sess
        self.shots = shots

    def go(self, url):
        http("POST", self.S + "/url", {"url": url})

    def js(self, script, *a):
        return http("POST", self.S + "/execute/sync",
                    {"script": script, "args": list(a)})["value"]

    def wait(self, what, cond, secs=60):
        """A bound on waiting for the page, not a measurement: a page that
        never gets there fails with what it showed."""
        end = time.time() + secs
        while time.time() < end:
            v = self.js(cond)
            if v:
                return v
            time.sleep(0.2)
        raise SystemExit("timed out waiting for %s; status: %s" % (
            what, self.js("return document.body.innerText.slice(0, 400)")))

    def shot(self, name):
        png = http("GET", self.S + "/screenshot")["value"]
        with open("%s/%s.png" % (self.shots, name), "wb") as f:
            f.write(base64.b64decode(png))

    def close(self):
        http("DELETE", self.S)
