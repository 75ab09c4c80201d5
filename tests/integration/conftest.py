"""Fixtures and request documents of the daemon's integration tests.

Every test talks to the real `partd serve` binary through the one daemon
fixture of the Python tests, `make_daemon` (tests/support/partd_daemon.py):
a free loopback port, a temporary data directory, Python's http.client.
Synchronisation is by polling the API, never by sleeping a fixed time.
"""
import json
import pathlib
import random
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))

from partd_daemon import (PARTD_BIN, ROOT, Daemon, daemon, make_daemon,  # noqa: E402,F401
                          sanitizer_runtime, wait_until)


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


def infeasible_doc(seed):
    """Valid, but no split fits: the job fails in planning (not a 422)."""
    doc = chain_request(10, seed=seed, devices=2, mode="pipeline")
    for dev in doc["devices"]:
        dev["memory_bytes"] = 5000
    return doc


def submit_and_wait(d, doc):
    """Submits the document and waits for the job to finish."""
    r = d.post_job(doc)
    assert r.status in (200, 202), r
    return d.wait_job(r.json()["id"])


def assert_problem(r, status, slug):
    """r is a problem document of that status whose type ends with slug."""
    assert r.status == status, r
    assert r.header("Content-Type") == "application/problem+json"
    doc = r.json()
    assert doc["status"] == status and doc["type"].endswith(slug), doc
    return doc


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
