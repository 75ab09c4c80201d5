"""The one way the Python tests start `partd serve`.

`Daemon` runs the real binary (env PARTD_BIN, default build/partd) on a free
loopback port (it binds port 0 and logs the address it got) with a data
directory of the test's choosing, collects its log line by line, can be
restarted on the same directory, and talks HTTP to it (Python's
http.client). With notify=True it also listens on a NOTIFY_SOCKET of its own
and waits for the systemd READY=1, whose STATUS names the bound address.

`make_daemon` is the pytest fixture every test directory uses (its conftest
imports it): make_daemon(*args, env=None, data_dir=None, start=True,
ready=True) -> Daemon, killed at the end of the test if still running.
`DaemonFactory` is the same for wider fixture scopes.

With PARTD_TEST_STORE=postgresql every daemon that is not given --store
gets one: a fresh database of a throw-away PostgreSQL server (partd_pg.py)
per data directory, so that a restart on the same directory finds its
jobs again. `ON_POSTGRESQL` says so; tests of what only the SQLite store
has (its file, the data directory's disk) skip then.

Waiting is by polling with a bounded deadline (`wait_until`), never by
sleeping a fixed time.
"""
import http.client
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

import partd_pg

ROOT = pathlib.Path(__file__).resolve().parents[2]
PARTD_BIN = os.environ.get("PARTD_BIN", str(ROOT / "build" / "partd"))
START_TIMEOUT_S = 30

ON_POSTGRESQL = os.environ.get("PARTD_TEST_STORE", "sqlite") == "postgresql"
_STORE_URLS = {}  # data directory -> its database under PARTD_TEST_STORE=postgresql

sqlite_only = pytest.mark.skipif(
    ON_POSTGRESQL, reason="about the SQLite store's file or data directory "
    "(PARTD_TEST_STORE=postgresql)")


def _store_args(data_dir, args):
    """--store for the suite's store choice (nothing when args name one)."""
    if not ON_POSTGRESQL or any(str(a).startswith("--store") for a in args):
        return []
    key = os.path.abspath(str(data_dir))
    if key not in _STORE_URLS:
        _STORE_URLS[key] = partd_pg.shared_server().fresh_db()
    # A short lease: a job of a killed daemon is taken over in seconds.
    lease = [] if any(str(a).startswith("--lease-ms") for a in args) else ["--lease-ms", "3000"]
    return ["--store", _STORE_URLS[key]] + lease


_LISTENING = re.compile(
    r"\blistening address=(\S+)|\"event\":\"listening\",\"address\":\"([^\"]+)\"")


def sanitizer_runtime(binary=PARTD_BIN):
    """The sanitizer runtime the binary links ("libasan", "libtsan"), or None.
    An LD_PRELOAD allocation shim cannot go before such a runtime, which
    must come first; tests that preload one skip on these builds (the plain
    build runs them)."""
    with open(binary, "rb") as f:
        data = f.read()
    for name in (b"libasan.so", b"libtsan.so"):
        if name in data:
            return name.decode().split(".")[0]
    return None


def wait_until(what, predicate, timeout=30.0, interval=0.01):
    """Polls predicate() until it returns a true value (returned) or fails
    with a description of what never happened."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for: {what}")
        time.sleep(interval)  # polling interval, not synchronisation


class Response:
    """An HTTP answer: status, headers (lower-case names), body bytes."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def json(self):
        return json.loads(self.body)

    def header(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return f"<Response {self.status} {self.body[:300]!r}>"


class Daemon:
    """One `partd serve` process and the HTTP helpers of the tests."""

    def __init__(self, data_dir, args=(), env=None, notify=False, cpus=None):
        self.data_dir = str(data_dir)
        self.cpus = set(cpus) if cpus is not None else None  # CPUs it may run on
        self.args = list(args) + _store_args(data_dir, args)
        self.env = dict(os.environ, **(env or {}))
        self.notify_path = None
        self._notify = None
        if notify:
            pathlib.Path(self.data_dir).parent.mkdir(parents=True, exist_ok=True)
            self.notify_path = os.path.join(os.path.dirname(self.data_dir) or ".",
                                            f"notify-{os.getpid()}-{id(self)}.sock")
            self.env["NOTIFY_SOCKET"] = self.notify_path
        self.proc = None
        self.lines = []
        self.host = "127.0.0.1"
        self.port = None
        self.token = None
        self._reader = None

    # -- process -------------------------------------------------------------
    @property
    def url(self):
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def pid(self):
        return self.proc.pid

    def _launch(self):
        """Starts the process; returns an Event set once it logs its address
        (or its output ends)."""
        cmd = [PARTD_BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", self.data_dir]
        self.lines = []
        self.port = None
        if self.notify_path:
            if self._notify:
                self._notify.close()
            if os.path.exists(self.notify_path):
                os.unlink(self.notify_path)
            self._notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._notify.bind(self.notify_path)
            self._notify.settimeout(0.25)
        # Pinned before exec, so that every thread it starts inherits it.
        pin = (lambda: os.sched_setaffinity(0, self.cpus)) if self.cpus else None
        self.proc = subprocess.Popen(cmd + self.args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=self.env, text=True, preexec_fn=pin)
        ready = threading.Event()

        def read():
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                m = _LISTENING.search(line)
                if m:
                    host, port = (m.group(1) or m.group(2)).rsplit(":", 1)
                    self.host = host.strip("[]")
                    self.port = int(port)
                    ready.set()
            ready.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        return ready

    def _wait_notify_ready(self):
        """Waits for READY=1 on our NOTIFY_SOCKET; its STATUS must name the
        address the log named."""
        deadline = time.monotonic() + START_TIMEOUT_S
        status = None
        while time.monotonic() < deadline:
            try:
                msg = self._notify.recv(4096).decode()
            except socket.timeout:
                msg = ""
            fields = msg.split("\n")
            for field in fields:
                if field.startswith("STATUS=listening on "):
                    status = field[len("STATUS=listening on "):].strip()
            if "READY=1" in fields:
                if status is None:
                    raise AssertionError(f"READY=1 without the listening address: {msg!r}")
                host, port = status.rsplit(":", 1)
                self.host, self.port = host.strip("[]"), int(port)
                return
            if self.proc.poll() is not None:
                break
        raise AssertionError("partd serve did not report READY=1:\n" + self.log())

    def start(self, expect_exit=False, ready=True):
        """Starts the daemon and waits until it listens (and, with ready,
        until /readyz answers 200 over plain HTTP). With expect_exit, waits
        for the process to end instead and returns its exit status."""
        listening = self._launch()
        if expect_exit:
            self.proc.wait(timeout=START_TIMEOUT_S)
            self._reader.join(timeout=5)
            return self.proc.returncode
        if self.notify_path:
            self._wait_notify_ready()
        elif not listening.wait(START_TIMEOUT_S) or self.port is None:
            self.proc.kill()
            raise AssertionError("daemon did not start:\n" + self.log())
        if ready and not any(a.startswith("--tls") for a in self.args):
            wait_until("/readyz says 200", lambda: self.status("/readyz") == 200)
        return None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Signals the daemon and waits for it; returns its exit status."""
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        return self.proc.returncode

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self._reader.join(timeout=5)

    def close(self):
        if self.alive():
            self.stop(signal.SIGKILL)
        if self._notify:
            self._notify.close()
            self._notify = None

    def log(self):
        return "\n".join(self.lines)

    def wait_log(self, pattern, timeout=30):
        """Waits for a log line matching the regex (request lines are written
        after the answer is sent, so they may trail the client)."""
        rx = re.compile(pattern)
        return wait_until(f"a log line matching {pattern!r}:\n{self.log()}",
                          lambda: next((l for l in list(self.lines) if rx.search(l)), None),
                          timeout)

    def rss_bytes(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS in /proc/%d/status" % self.pid)

    # -- HTTP ----------------------------------------------------------------
    def conn(self, timeout=60, source=None):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout,
                                          source_address=(source, 0) if source else None)

    def connect(self, source=None, timeout=30):
        """A raw TCP connection to the daemon (optionally from another
        loopback address, e.g. 127.0.0.2: another client IP)."""
        return socket.create_connection((self.host, self.port), timeout=timeout,
                                        source_address=(source, 0) if source else None)

    def request(self, method, path, body=None, headers=None, auth=True, timeout=120,
                source=None):
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        if isinstance(body, str):
            body = body.encode()
        if auth and self.token and "Authorization" not in hdrs:
            hdrs["Authorization"] = "Bearer " + self.token
        c = self.conn(timeout, source)
        try:
            c.request(method, path, body=body, headers=hdrs)
            r = c.getresponse()
            return Response(r.status, r.getheaders(), r.read())
        finally:
            c.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def status(self, path):
        """The status of a GET, None when the daemon does not answer."""
        try:
            return self.request("GET", path, timeout=10).status
        except OSError:
            return None

    def post_job(self, doc, headers=None):
        body = doc if isinstance(doc, (bytes, str)) else json.dumps(doc).encode()
        hdrs = {"Content-Type": "application/json"}
        hdrs.update(headers or {})
        return self.request("POST", "/v1/jobs", body=body, headers=hdrs)

    def job(self, job_id):
        r = self.get(f"/v1/jobs/{job_id}")
        assert r.status == 200, r
        return r.json()

    def wait_job(self, job_id, statuses=("succeeded", "failed", "cancelled"), timeout=300):
        """Polls the job until its status is one of `statuses`."""
        def reached():
            job = self.job(job_id)
            return job if job["status"] in statuses else None
        return wait_until(f"job {job_id} to reach one of {statuses}", reached, timeout,
                          interval=0.005)

    def metric(self, name, labels=None):
        text = self.get("/metrics").body.decode()
        want = name + ("{" + labels + "}" if labels else "")
        for line in text.splitlines():
            if line.startswith(want + " "):
                return float(line.split()[-1])
        return None


class DaemonFactory:
    """Makes daemons under one directory and kills what is left at close()."""

    def __init__(self, base_dir):
        self.base_dir = pathlib.Path(base_dir)
        self.started = []

    def make(self, *args, env=None, data_dir=None, start=True, ready=True, notify=False,
             cpus=None):
        d = Daemon(data_dir or (self.base_dir / f"data{len(self.started)}"), args, env,
                   notify=notify, cpus=cpus)
        self.started.append(d)
        if start:
            d.start(ready=ready)
        return d

    def close(self):
        for d in self.started:
            d.close()


@pytest.fixture
def make_daemon(tmp_path):
    """Factory: make_daemon(*args, env=None, data_dir=None, start=True,
    ready=True, notify=False) -> Daemon (started unless start=False)."""
    factory = DaemonFactory(tmp_path)
    yield factory.make
    factory.close()


@pytest.fixture
def daemon(make_daemon):
    return make_daemon()
