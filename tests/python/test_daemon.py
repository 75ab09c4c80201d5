"""The client and the API documents against the real daemon.

Starts `partd serve` through the tests' one daemon fixture
(tests/support/partd_daemon.py) on loopback port 0 with a temporary
--data-dir, and waits for its READY=1 on a NOTIFY_SOCKET of our own (the
systemd notify protocol), whose STATUS names the bound address, so no test
sleeps or guesses a port. Every job, list page, result and problem document
the daemon answers is validated against api/schemas.
"""

import json
import os
import subprocess
import time

import pytest

jsonschema = pytest.importorskip("jsonschema")

from partd import client as pc  # noqa: E402
from partd_daemon import DaemonFactory  # noqa: E402
from partd_testlib import PYPKG, PYTHON, ROOT, TINY_REQUEST, partd_bin  # noqa: E402

SCHEMAS = os.path.join(ROOT, "api", "schemas")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """One daemon for the module, found through its systemd READY=1."""
    factory = DaemonFactory(tmp_path_factory.mktemp("partd"))
    d = factory.make(notify=True)
    yield d
    status = d.stop()
    factory.close()
    assert status == 0, "partd serve must exit 0 on SIGTERM"


@pytest.fixture(scope="module")
def validate():
    store = {}
    for name in ("request", "result", "job", "problem"):
        with open(os.path.join(SCHEMAS, f"{name}.json")) as f:
            schema = json.load(f)
        store[schema["$id"]] = schema

    def check(name, doc):
        schema = next(s for s in store.values() if s["$id"].endswith(f"/{name}.json"))
        resolver = jsonschema.RefResolver.from_schema(schema, store=store)
        errors = [e.message for e in
                  jsonschema.Draft202012Validator(schema, resolver=resolver).iter_errors(doc)]
        assert errors == [], f"{name}: {errors}"
    return check


SIZE_BASED = dict(TINY_REQUEST, options={"mode": "size_based"})


def test_submit_wait_result_validate(daemon, validate):
    c = pc.Client(daemon.url)
    job = c.submit(SIZE_BASED)
    validate("job", job)
    done = c.wait(job, timeout=60)
    validate("job", done)
    assert done["status"] == "succeeded"
    result = c.result(done["id"])
    validate("result", result)
    planned = subprocess.run([partd_bin(), "plan", "-"], input=json.dumps(SIZE_BASED).encode(),
                             capture_output=True, timeout=60)
    assert c.result_bytes(done["id"]) == planned.stdout  # the same planner, byte for byte
    etag = c.last_etag
    assert etag and c.result(done["id"], etag=etag) is None


def test_cached_resubmission(daemon, validate):
    c = pc.Client(daemon.url)
    first = c.wait(c.submit(SIZE_BASED), timeout=60)
    again = c.submit(SIZE_BASED)
    validate("job", again)
    assert again["cached"] is True and again["status"] == "succeeded"
    assert again["cache_key"] == first["cache_key"]


def test_idempotency_key(daemon):
    c = pc.Client(daemon.url)
    body = dict(SIZE_BASED, devices=[{"name": "gpu0", "memory_bytes": 4096}])
    a = c.submit(body, idempotency_key="same-key-1")
    b = c.submit(body, idempotency_key="same-key-1")
    assert a["id"] == b["id"]
    with pytest.raises(pc.PartdError) as e:
        c.submit(SIZE_BASED, idempotency_key="same-key-1")
    assert e.value.status == 422


def test_invalid_request_problem(daemon, validate):
    c = pc.Client(daemon.url)
    bad = dict(SIZE_BASED, devices=[{"name": "gpu0", "memory_bytes": 0, "colour": "red"}])
    with pytest.raises(pc.PartdError) as e:
        c.submit(bad)
    assert e.value.status == 422
    validate("problem", e.value.problem)
    pointers = {x["pointer"] for x in e.value.problem["errors"]}
    assert {"/devices/0/memory_bytes", "/devices/0/colour"} <= pointers


def test_infeasible_job_fails_with_problem(daemon, validate):
    c = pc.Client(daemon.url)
    job = c.submit(dict(SIZE_BASED, devices=[{"name": "gpu0", "memory_bytes": 1}]))
    with pytest.raises(pc.JobFailed) as e:
        c.wait(job, timeout=60)
    validate("job", e.value.job)
    validate("problem", e.value.problem)


def test_unknown_job_and_finished_cancel(daemon, validate):
    c = pc.Client(daemon.url)
    with pytest.raises(pc.PartdError) as e:
        c.job("0" * 32)
    assert e.value.status == 404
    validate("problem", e.value.problem)
    done = c.wait(c.submit(SIZE_BASED), timeout=60)
    with pytest.raises(pc.PartdError) as e:
        c.cancel(done["id"])
    assert e.value.status == 409


def test_list_validates(daemon, validate):
    c = pc.Client(daemon.url)
    c.wait(c.submit(SIZE_BASED), timeout=60)
    page = c.list(limit=1)
    assert set(page) == {"jobs", "next_page_token"}
    for job in page["jobs"]:
        validate("job", job)
    assert len(list(c.jobs(limit=1))) >= 1


def test_health_and_version(daemon):
    c = pc.Client(daemon.url)
    assert c.health() == {"live": True, "ready": True, "ready_detail": None}
    assert c.version()["name"] == "partd"


def test_cli_submit_wait(daemon, tmp_path):
    req = tmp_path / "req.json"
    req.write_text(json.dumps(SIZE_BASED))
    out = tmp_path / "plan.json"
    proc = subprocess.run([PYTHON, "-m", "partd.client",
                           "--url", daemon.url, "submit", str(req), "--wait", "-o", str(out)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": PYPKG})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["mode"] == "size_based"


def test_bearer_token(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("t0ken-0123456789abcdef\n")
    factory = DaemonFactory(tmp_path)
    d = factory.make("--token-file", str(token_file), notify=True)
    try:
        with pytest.raises(pc.PartdError) as e:
            pc.Client(d.url).list()
        assert e.value.status == 401
        assert pc.Client(d.url, token="t0ken-0123456789abcdef").list()["jobs"] == []
        assert pc.Client(d.url).health()["live"] is True
    finally:
        assert d.stop() == 0
        factory.close()
