"""Fixtures for the daemon's integration tests.

Every test talks to the real `partd serve` binary (env PARTD_BIN, default
build/partd) on a free loopback port (the daemon binds port 0 and logs the
address it got) with a temporary data directory, over Python's http.client.
Synchronisation is by polling the API, never by sleeping a fixed time.
"""
import http.client
import json
import random
import re
import signal
import subprocess
import time

import pytest

from daemon_process import PARTD_BIN, START_TIMEOUT_S, DaemonProcess


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def __repr__(self):
        return f"<Response {self.status} {self.body[:300]!r}>"


class Daemon(DaemonProcess):
    """One `partd serve` process with the API helpers of these tests."""

    def __init__(self, data_dir, args=(), env=None):
        super().__init__(data_dir, args, env)
        self.token = None

    # -- process ---------------------------------------------------------
    def start(self, expect_exit=False):
        ready = self._launch()
        if expect_exit:
            self.proc.wait(timeout=START_TIMEOUT_S)
            self._reader.join(timeout=5)
            return self.proc.returncode
        self._wait_listening(ready)
        return None

    def wait_log(self, pattern, timeout=30):
        """Waits for a log line matching the regex (request lines are written
        after the answer is sent, so they may trail the client)."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            for line in list(self.lines):
                if rx.search(line):
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"no log line matches {pattern!r}:\n{self.log()}")
            time.sleep(0.01)

    # -- HTTP --------------------------------------------------------------
    def conn(self, timeout=60):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, auth=True, timeout=120):
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        if isinstance(body, str):
            body = body.encode()
        if auth and self.token and "Authorization" not in hdrs:
            hdrs["Authorization"] = "Bearer " + self.token
        c = self.conn(timeout)
        try:
            c.request(method, path, body=body, headers=hdrs)
            r = c.getresponse()
            return Response(r.status, r.getheaders(), r.read())
        finally:
            c.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post_job(self, doc, headers=None):
        body = doc if isinstance(doc, (bytes, str)) else json.dumps(doc).encode()
        hdrs = {"Content-Type": "application/json"}
        hdrs.update(headers or {})
        return self.request("POST", "/v1/jobs", body=body, headers=hdrs)

    def wait_job(self, job_id, statuses=("succeeded", "failed", "cancelled"), timeout=300):
        """Polls the job until its status is one of `statuses`."""
        deadline = time.monotonic() + timeout
        while True:
            r = self.get(f"/v1/jobs/{job_id}")
            assert r.status == 200, r
            job = r.json()
            if job["status"] in statuses:
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} stuck in {job['status']}")
            time.sleep(0.005)  # polling interval, not synchronisation

    def metric(self, name, labels=None):
        text = self.get("/metrics").body.decode()
        want = name + ("{" + labels + "}" if labels else "")
        for line in text.splitlines():
            if line.startswith(want + " "):
                return float(line.split()[-1])
        return None


@pytest.fixture
def make_daemon(tmp_path):
    """Factory: make_daemon(*args, env=None, data_dir=None) -> started Daemon."""
    started = []

    def make(*args, env=None, data_dir=None, start=True):
        d = Daemon(data_dir or (tmp_path / f"data{len(started)}"), args, env)
        started.append(d)
        if start:
            d.start()
        return d

    yield make
    for d in started:
        if d.proc and d.proc.poll() is None:
            d.stop(signal.SIGKILL)


@pytest.fixture
def daemon(make_daemon):
    return make_daemon()


# -- request documents --------------------------------------------------------

def chain_request(n_ops, seed=0, devices=3, mode="size_based", slack=2.0):
    """A chain graph x -> n0 -> ... -> out with seeded sizes; fits the devices."""
    rnd = random.Random(seed)
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": 1000}]
    prev = "x"
    total = 1000
    for i in range(n_ops):
        out_b = rnd.randint(100, 2000)
        par_b = rnd.randint(1000, 8000)
        total += out_b + par_b
        nodes.append({"name": f"n{i}", "op": "call_module", "target": "layer",
                      "inputs": [prev], "output_bytes": out_b, "param_bytes": par_b,
                      "latency_ms": rnd.randint(1, 50) / 10})
        prev = f"n{i}"
    nodes.append({"name": "out", "op": "output", "inputs": [prev]})
    mem = int(total / devices * slack) + 20000
    return {"graph": {"name": f"chain{seed}", "nodes": nodes},
            "devices": [{"name": f"gpu{d}", "memory_bytes": mem} for d in range(devices)],
            "options": {"mode": mode}}


def shuffle_members(value, rnd):
    """Same document with every object's members in another order."""
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: shuffle_members(v, rnd) for k, v in items}
    if isinstance(value, list):
        return [shuffle_members(v, rnd) for v in value]
    return value


def plan_offline(doc, tmp_path):
    """The result `partd plan` gives for the document (bytes)."""
    req = tmp_path / f"req-{random.getrandbits(64):x}.json"
    out = req.with_suffix(".out.json")
    req.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    p = subprocess.run([PARTD_BIN, "plan", str(req), "-o", str(out)], capture_output=True)
    assert p.returncode == 0, p.stderr
    return out.read_bytes()


# Exact pipeline search over many stages, balancing memory: seconds of
# planning for a few MB of JSON, and the planner honours the cancel flag
# within 100 ms. The tests use them to have a job running (or others waiting)
# while they act; they act right after seeing the state, far inside those
# seconds. (If the planner gets much faster, raise the stage counts.)
def pipeline_request(n_ops, stages, seed):
    doc = chain_request(n_ops, seed=seed, devices=stages, mode="pipeline", slack=1.5)
    doc["options"]["pipeline"] = {"balance_by": "memory"}
    return doc


@pytest.fixture(scope="session")
def slow_body():
    """~18 s of planning on this machine (100k nodes, 8192 stages)."""
    return json.dumps(pipeline_request(100_000, 8192, seed=77)).encode()


@pytest.fixture(scope="session")
def medium_body():
    """Several seconds of planning (100k nodes, 5000 stages); run to completion."""
    return json.dumps(pipeline_request(100_000, 5000, seed=78)).encode()
