"""Headless Chromium for the console's tests, driven over the W3C WebDriver
protocol (Debian's `chromedriver`, plain HTTP with urllib: nothing to
download, no Python package beyond the standard library).

`Browser` starts chromedriver on a free loopback port and one Chromium
session with a fresh profile and every background service off (the machine
has no network: without the switches Chromium keeps trying to reach Google).
It navigates, runs scripts in the page, types and clicks, reads the browser
log (console messages and Content-Security-Policy reports), and takes
screenshots (PNG bytes). `png_pixels` decodes a PNG with zlib and struct
alone, for checks on what was drawn.

`chromium_missing()` names what is not installed, for pytest's skip.

Waiting is by polling with a bounded deadline (partd_daemon.wait_until),
never by sleeping a fixed time.
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import zlib

CHROMIUM = os.environ.get("PARTD_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PARTD_CHROMEDRIVER", "/usr/bin/chromedriver")

# A W3C WebDriver element reference's key.
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"

CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-quic", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--disable-breakpad",
    "--disable-client-side-phishing-detection", "--disable-domain-reliability",
    "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication,"
    "CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions",
    "--metrics-recording-only", "--no-pings", "--password-store=basic",
    "--use-mock-keychain", "--mute-audio", "--window-size=1280,1000",
]


def chromium_missing():
    """None when Chromium and chromedriver are installed, else what is not."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    return ", ".join(missing) + " not installed (apt-get install chromium chromium-driver)" \
        if missing else None


class WebDriverError(AssertionError):
    pass


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One chromedriver process and one Chromium session."""

    def __init__(self, timeout=60):
        self.profile = tempfile.mkdtemp(prefix="partd-chromium-")
        self.log_path = os.path.join(self.profile, "chromedriver.log")
        self.port = _free_port()
        self.driver = subprocess.Popen(
            [CHROMEDRIVER, f"--port={self.port}", "--allowed-ips=127.0.0.1",
             f"--log-path={self.log_path}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        self.session = None
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self._call("GET", "/status", timeout=5)["ready"]:
                    break
            except (OSError, WebDriverError):
                pass
            if self.driver.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise WebDriverError("chromedriver did not start")
            time.sleep(0.05)  # polling interval, not synchronisation
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "pageLoadStrategy": "normal",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": CHROMIUM_ARGS + [f"--user-data-dir={self.profile}/profile"],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}}
        try:
            self.session = self._call("POST", "/session", caps, timeout=timeout)["sessionId"]
        except Exception:
            self.close()
            raise

    # -- protocol ------------------------------------------------------------
    def _call(self, method, path, body=None, timeout=60):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                doc = json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            doc = json.loads(e.read() or b"{}")
            v = doc.get("value", {})
            raise WebDriverError(f"{method} {path}: {v.get('error')}: {v.get('message')}")
        return doc.get("value")

    def cmd(self, method, path, body=None, timeout=60):
        return self._call(method, f"/session/{self.session}{path}", body, timeout)

    # -- what the tests use --------------------------------------------------
    def get(self, url):
        self.cmd("POST", "/url", {"url": url})

    def script(self, source, *args):
        """Runs a function body in the page (arguments as `arguments`)."""
        return self.cmd("POST", "/execute/sync", {"script": source, "args": list(args)})

    def find(self, css):
        return self.cmd("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def type(self, css, text):
        self.cmd("POST", f"/element/{self.find(css)}/value", {"text": text})

    def click(self, css):
        self.cmd("POST", f"/element/{self.find(css)}/click", {})

    def screenshot(self, css=None):
        """PNG bytes of the viewport, or of one element."""
        path = f"/element/{self.find(css)}/screenshot" if css else "/screenshot"
        return base64.b64decode(self.cmd("GET", path))

    def page_source(self):
        return self.cmd("GET", "/source")

    def log(self):
        """The browser's console and security messages since the last call."""
        return self.cmd("POST", "/se/log", {"type": "browser"}) or []

    def close(self):
        if self.session:
            try:
                self._call("DELETE", f"/session/{self.session}", timeout=30)
            except (OSError, WebDriverError):
                pass
            self.session = None
        if self.driver.poll() is None:
            self.driver.terminate()
            try:
                self.driver.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.driver.kill()
                self.driver.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


# -- PNG decoding ---------------------------------------------------------------

def png_pixels(png):
    """(width, height, rows) of an 8-bit RGB or RGBA PNG, rows being lists of
    (r, g, b) tuples (what Chromium's screenshots are)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        chunk = png[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        elif kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return width, height, rows
