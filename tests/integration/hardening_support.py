"""Support for the hostile-client and fault tests: the real daemon, raw sockets.

`Daemon` runs `partd serve` (env PARTD_BIN, default build/partd) on a free
loopback port (it binds port 0 and logs the address it got) with a data
directory of the test's choosing. `wait_until` is the only way these tests
wait for the daemon: it polls a condition with a bounded deadline and fails
with a description of what never happened.
"""
import http.client
import json
import signal
import socket
import time

import pytest

from daemon_process import PARTD_BIN, DaemonProcess  # noqa: F401 (PARTD_BIN: for the tests)


def wait_until(what, predicate, timeout=30.0, interval=0.01):
    """Polls predicate() until it returns a true value (returned) or fails."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for: {what}")
        time.sleep(interval)  # polling interval, not synchronisation


class Answer:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<Answer {self.status} {self.body[:300]!r}>"


class Daemon(DaemonProcess):
    def start(self):
        self._wait_listening(self._launch())
        wait_until("/readyz says 200", lambda: self.status("/readyz") == 200)
        return self

    def rss_bytes(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS in /proc/%d/status" % self.pid)

    # -- HTTP ----------------------------------------------------------------
    def request(self, method, path, body=None, headers=None, timeout=120, source=None):
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout,
                                       source_address=(source, 0) if source else None)
        try:
            c.request(method, path, body=body, headers=hdrs)
            r = c.getresponse()
            return Answer(r.status, r.getheaders(), r.read())
        finally:
            c.close()

    def status(self, path):
        try:
            return self.request("GET", path, timeout=10).status
        except OSError:
            return None

    def post_job(self, body):
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        return self.request("POST", "/v1/jobs", body=body,
                            headers={"Content-Type": "application/json"})

    def job(self, job_id):
        r = self.request("GET", f"/v1/jobs/{job_id}")
        assert r.status == 200, r
        return r.json()

    def wait_job(self, job_id, statuses=("succeeded", "failed", "cancelled"), timeout=120):
        return wait_until(f"job {job_id} to reach one of {statuses}",
                          lambda: (lambda j: j if j["status"] in statuses else None)(
                              self.job(job_id)), timeout)

    def metric(self, name):
        text = self.request("GET", "/metrics").body.decode()
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def connect(self, source=None, timeout=30):
        """A raw TCP connection to the daemon (optionally from another
        loopback address, e.g. 127.0.0.2: another client IP)."""
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout,
                                        source_address=(source, 0) if source else None)


@pytest.fixture
def start_daemon(tmp_path):
    """Factory: start_daemon(*args, data_dir=None) -> a started Daemon; every
    daemon still running at the end of the test is killed."""
    started = []

    def make(*args, data_dir=None, start=True):
        d = Daemon(data_dir or (tmp_path / f"data{len(started)}"), args)
        started.append(d)
        return d.start() if start else d

    yield make
    for d in started:
        if d.alive():
            d.stop(signal.SIGKILL)


def chain_request(n_ops, seed=0, devices=2, mode="pipeline", name=None):
    """A chain x -> n0 -> ... -> out that fits `devices` devices."""
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": 1000}]
    prev = "x"
    for i in range(n_ops):
        nodes.append({"name": f"n{i}", "op": "call_module", "inputs": [prev],
                      "output_bytes": 100 + (i * 7 + seed) % 900,
                      "param_bytes": 1000 + (i * 13 + seed) % 5000,
                      "latency_ms": 0.1 + ((i + seed) % 10) / 10})
        prev = f"n{i}"
    nodes.append({"name": "out", "op": "output", "inputs": [prev]})
    mem = 8000 * n_ops // devices + 100000
    return {"graph": {"name": name or f"chain{n_ops}-{seed}", "nodes": nodes},
            "devices": [{"name": f"d{k}", "memory_bytes": mem} for k in range(devices)],
            "options": {"mode": mode}}
