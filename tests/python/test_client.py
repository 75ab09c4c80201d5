"""Tests of partd.client (python/partd/client.py) and its command line.

Against a small in-process fake of the HTTP API (http.server) that follows
the contract's routes, statuses and headers, with job progress driven by the
number of polls (never by time), and a fake clock so waiting is checked
without sleeping. The real daemon is covered by test_daemon.py.
"""

import gzip
import io
import json
import os
import subprocess
import threading
from contextlib import redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from partd import client as pc
from partd_testlib import PYPKG, PYTHON

CLIENT = ["-m", "partd.client"]
RESULT = {"mode": "size_based", "partitions": [], "tied_params": [],
          "summary": {"partitions": 1}}


def problem(status, slug, detail, errors=None):
    doc = {"type": f"urn:partd:problem:{slug}", "title": slug, "status": status,
           "detail": detail}
    if errors:
        doc["errors"] = errors
    return doc


class FakePartd:
    """State of the fake daemon. A job becomes running on its first poll and
    finishes on poll number `polls_to_finish`."""

    def __init__(self, token=None, polls_to_finish=3, queue_full=0, retry_after="2",
                 result_coding=None):
        self.token = token
        # Content-Encoding of results ("gzip", or a coding the client cannot
        # read), used when the request's Accept-Encoding names gzip.
        self.result_coding = result_coding
        self.retry_after = retry_after
        self.polls_to_finish = polls_to_finish
        self.queue_full = queue_full
        self.jobs = {}        # id -> job
        self.order = []       # ids, oldest first
        self.polls = {}
        self.idempotency = {}  # key -> (body, id)
        self.requests = []    # (method, path, headers)
        self.lock = threading.Lock()

    def new_job(self, body):
        job_id = f"{len(self.order) + 1:032x}"
        job = {"id": job_id, "status": "queued", "created_at": "2026-01-01T00:00:00Z",
               "started_at": None, "finished_at": None,
               "graph_hash": "sha256:" + "a" * 64, "cache_key": "sha256:" + "b" * 64,
               "cached": False,
               "links": {"self": f"/v1/jobs/{job_id}", "result": f"/v1/jobs/{job_id}/result"},
               "_outcome": body.get("graph", {}).get("name", "ok")}
        self.jobs[job_id] = job
        self.order.append(job_id)
        self.polls[job_id] = 0
        return job

    def advance(self, job):
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return
        self.polls[job["id"]] += 1
        n = self.polls[job["id"]]
        if n >= 1:
            job["status"], job["started_at"] = "running", "2026-01-01T00:00:01Z"
        if n >= self.polls_to_finish:
            job["finished_at"] = "2026-01-01T00:00:02Z"
            if job["_outcome"] == "infeasible":
                job["status"] = "failed"
                job["error"] = problem(422, "infeasible", "Devices have no enough memory")
            else:
                job["status"] = "succeeded"
                job["summary"] = RESULT["summary"]


def public(job):
    return {k: v for k, v in job.items() if not k.startswith("_")}


class Handler(BaseHTTPRequestHandler):
    server_version = "fake-partd"

    def log_message(self, *args):
        pass

    def _send(self, status, doc=None, headers=None, content_type="application/json",
              coding=None):
        body = b"" if doc is None else (json.dumps(doc) + "\n").encode()
        if coding:
            body = gzip.compress(body) if coding == "gzip" else b"\x28\xb5\x2f\xfd junk"
            headers = {**(headers or {}), "Content-Encoding": coding}
        if doc is not None and status >= 400:
            content_type = "application/problem+json"
        self.send_response(status)
        if doc is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _route(self, method):
        state = self.server.state
        url = urlparse(self.path)
        with state.lock:
            state.requests.append((method, self.path, dict(self.headers.items())))
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if url.path == "/livez":
                return self._send(200, {"status": "ok"})
            if url.path == "/readyz":
                return self._send(503, problem(503, "not-ready", "draining"), {"Retry-After": "1"})
            if url.path == "/version":
                return self._send(200, {"name": "partd", "version": "0.1.0",
                                        "planner_version": "partd-planner/1", "build": "x"})
            if state.token and self.headers.get("Authorization") != f"Bearer {state.token}":
                return self._send(401, problem(401, "unauthorized", "bad token"),
                                  {"WWW-Authenticate": 'Bearer realm="partd"'})
            parts = url.path.strip("/").split("/")
            if parts[:2] != ["v1", "jobs"]:
                return self._send(404, problem(404, "not-found", "no such resource"))
            if len(parts) == 2 and method == "POST":
                return self._submit(state, body)
            if len(parts) == 2 and method == "GET":
                return self._list(state, parse_qs(url.query))
            job = state.jobs.get(parts[2]) if len(parts) >= 3 else None
            if job is None:
                return self._send(404, problem(404, "not-found", "no such job"))
            if len(parts) == 3 and method == "GET":
                state.advance(job)
                return self._send(200, public(job))
            if len(parts) == 3 and method == "DELETE":
                if job["status"] in ("succeeded", "failed", "cancelled"):
                    return self._send(409, problem(409, "job-finished", "already finished"))
                job["status"] = "cancelled"
                return self._send(200, public(job))
            if len(parts) == 4 and parts[3] == "result":
                return self._result(job)
            return self._send(405, problem(405, "method-not-allowed", method))

    def _submit(self, state, body):
        if self.headers.get("Content-Type") != "application/json":
            return self._send(415, problem(415, "unsupported-media-type", "json only"))
        try:
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            doc = json.loads(body)
        except (ValueError, OSError):
            return self._send(400, problem(400, "malformed", "not JSON"))
        if "devices" not in doc:
            return self._send(422, problem(422, "invalid-request", "1 error",
                                           [{"pointer": "/devices", "message": "is required"}]))
        if state.queue_full > 0:
            state.queue_full -= 1
            return self._send(429, problem(429, "queue-full", "full"), {"Retry-After": "7"})
        key = self.headers.get("Idempotency-Key")
        if key in state.idempotency:
            old_body, job_id = state.idempotency[key]
            if old_body != body:
                return self._send(422, problem(422, "idempotency-key-reused", "other body"))
            job = state.jobs[job_id]
        else:
            job = state.new_job(doc)
            if key:
                state.idempotency[key] = (body, job["id"])
        return self._send(202, public(job), {"Location": job["links"]["self"],
                                                "Retry-After": state.retry_after})

    def _list(self, state, query):
        limit = int(query.get("limit", ["50"])[0])
        ids = list(reversed(state.order))
        start = int(query.get("page_token", ["0"])[0])
        page = ids[start:start + limit]
        nxt = str(start + limit) if start + limit < len(ids) else None
        return self._send(200, {"jobs": [public(state.jobs[i]) for i in page],
                                "next_page_token": nxt})

    def _result(self, job):
        if job["status"] in ("queued", "running"):
            return self._send(409, problem(409, "job-not-finished", "poll"), {"Retry-After": "1"})
        if job["status"] == "failed":
            return self._send(422, job["error"])
        if job["status"] == "cancelled":
            return self._send(409, problem(409, "job-cancelled", "cancelled"))
        etag = '"r1"'
        if self.headers.get("If-None-Match") == etag:
            return self._send(304, None, {"ETag": etag})
        coding = self.server.state.result_coding
        if "gzip" not in (self.headers.get("Accept-Encoding") or ""):
            coding = None
        return self._send(200, RESULT, {"ETag": etag}, coding=coding)

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def do_DELETE(self):
        self._route("DELETE")


@pytest.fixture
def fake():
    """(state, url) of a running fake daemon."""
    servers = []

    def start(**kwargs):
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.state = FakePartd(**kwargs)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                                  daemon=True)
        thread.start()
        servers.append((server, thread))
        return server.state, f"http://127.0.0.1:{server.server_address[1]}"
    yield start
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join()


class FakeClock:
    """Monotonic clock that only moves when the client sleeps."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self):
        return self.now


def client(url, clock=None, **kwargs):
    clock = clock or FakeClock()
    return pc.Client(url, sleep=clock.sleep, clock=clock, **kwargs), clock


REQUEST = {"graph": {"name": "ok", "nodes": []}, "devices": [{"name": "d", "memory_bytes": 1}]}


# -- API ----------------------------------------------------------------------


def test_submit_wait_result(fake):
    state, url = fake()
    c, clock = client(url)
    job = c.submit(REQUEST)
    assert job["status"] == "queued"
    done = c.wait(job)
    assert done["status"] == "succeeded"
    assert state.polls[job["id"]] == 3
    # the first poll 50 ms after the 202 (not its whole Retry-After of 2 s),
    # then backing off
    assert clock.sleeps == [0.05, 0.1, 0.2]
    assert c.result(job["id"]) == RESULT
    assert c.last_etag == '"r1"'
    assert c.result(job["id"], etag='"r1"') is None


def test_results_are_fetched_gzip_compressed_and_decoded(fake):
    state, url = fake(polls_to_finish=1, result_coding="gzip")
    c, _ = client(url)
    job = c.wait(c.submit(REQUEST))
    assert c.result(job["id"]) == RESULT
    assert c.result_bytes(job["id"]) == (json.dumps(RESULT) + "\n").encode()
    sent = [h for m, path, h in state.requests if path.endswith("/result")]
    assert sent and all(h.get("Accept-Encoding") == "gzip" for h in sent)


def test_an_answer_in_an_unrequested_coding_is_an_error(fake):
    state, url = fake(polls_to_finish=1, result_coding="zstd")
    c, _ = client(url)
    job = c.wait(c.submit(REQUEST))
    with pytest.raises(pc.PartdError, match="unrequested coding 'zstd'"):
        c.result(job["id"])


def test_large_requests_are_sent_gzip_compressed(fake):
    state, url = fake(polls_to_finish=1)
    c, _ = client(url)
    small = dict(REQUEST)
    c.submit(small)
    big = dict(REQUEST, graph={"name": "x" * pc.COMPRESS_BODY_BYTES, "nodes": []})
    c.submit(big)
    posts = [h for m, path, h in state.requests if m == "POST"]
    assert "Content-Encoding" not in posts[0]
    assert posts[1]["Content-Encoding"] == "gzip"
    sent_bytes = [int(h["Content-Length"]) for h in posts]
    assert sent_bytes[1] < pc.COMPRESS_BODY_BYTES // 100
    decoded = state.idempotency[posts[1]["Idempotency-Key"]][0]
    assert json.loads(decoded) == big


def test_every_submission_has_an_idempotency_key(fake):
    state, url = fake()
    c, _ = client(url)
    a, b = c.submit(REQUEST), c.submit(REQUEST)
    assert a["id"] != b["id"]
    keys = [h.get("Idempotency-Key") for m, p, h in state.requests if m == "POST"]
    assert all(keys) and keys[0] != keys[1]
    same = c.submit(REQUEST, idempotency_key="k1")
    again = c.submit(REQUEST, idempotency_key="k1")
    assert same["id"] == again["id"]


def test_queue_full_is_retried_after_retry_after(fake):
    state, url = fake(queue_full=2)
    c, clock = client(url)
    job = c.submit(REQUEST, retry_for=60)
    assert job["status"] == "queued"
    assert clock.sleeps == [1.0, 1.0]  # Retry-After 7 capped to 1 s per pause
    keys = {h["Idempotency-Key"] for m, p, h in state.requests if m == "POST"}
    assert len(keys) == 1  # the retries reuse the key: one job at most


def test_queue_full_without_retry_raises(fake):
    _, url = fake(queue_full=1)
    c, _ = client(url)
    with pytest.raises(pc.PartdError) as e:
        c.submit(REQUEST)
    assert e.value.status == 429 and e.value.retry_after == 7
    assert e.value.problem["type"] == "urn:partd:problem:queue-full"


def test_invalid_request_raises_with_problem(fake):
    _, url = fake()
    c, _ = client(url)
    with pytest.raises(pc.PartdError) as e:
        c.submit({"graph": {}})
    assert e.value.status == 422
    assert e.value.problem["errors"] == [{"pointer": "/devices", "message": "is required"}]


def test_failed_job_raises_job_failed(fake):
    _, url = fake()
    c, _ = client(url)
    job = c.submit({"graph": {"name": "infeasible"}, "devices": [{}]})
    with pytest.raises(pc.JobFailed) as e:
        c.wait(job["id"])
    assert e.value.problem["type"] == "urn:partd:problem:infeasible"
    for fetch in (c.result, c.result_bytes):
        with pytest.raises(pc.JobFailed) as e:
            fetch(job["id"])
        assert e.value.problem["type"] == "urn:partd:problem:infeasible"


def test_wait_times_out_on_the_clock(fake):
    _, url = fake(polls_to_finish=10**6)
    c, clock = client(url)
    job = c.submit(REQUEST)
    with pytest.raises(pc.WaitTimeout) as e:
        c.wait(job, timeout=3.0, poll_max=0.5)
    assert e.value.job["status"] == "running"
    assert clock.now == pytest.approx(3.0)
    assert max(clock.sleeps[1:]) <= 0.5


def test_cancel(fake):
    _, url = fake(polls_to_finish=10**6)
    c, _ = client(url)
    job = c.submit(REQUEST)
    assert c.cancel(job["id"])["status"] == "cancelled"
    with pytest.raises(pc.JobCancelled):
        c.wait(job["id"])
    for fetch in (c.result, c.result_bytes):
        with pytest.raises(pc.JobCancelled):
            fetch(job["id"])
    # cancelling again is no error: the job is cancelled
    assert c.cancel(job["id"])["status"] == "cancelled"


def test_cancel_of_a_finished_job_is_409(fake):
    _, url = fake(polls_to_finish=1)
    c, _ = client(url)
    job = c.wait(c.submit(REQUEST))
    with pytest.raises(pc.PartdError) as e:
        c.cancel(job["id"])
    assert e.value.status == 409


def test_polling_backs_off_up_to_a_shorter_retry_after(fake):
    state, url = fake(polls_to_finish=4, retry_after="0.15")
    c, clock = client(url)
    c.wait(c.submit(REQUEST))
    assert clock.sleeps == [0.05, 0.1, 0.15, 0.15]


def test_result_before_finish_is_409_with_retry_after(fake):
    _, url = fake(polls_to_finish=10**6)
    c, _ = client(url)
    job = c.submit(REQUEST)
    with pytest.raises(pc.PartdError) as e:
        c.result(job["id"])
    assert e.value.status == 409 and e.value.retry_after == 1


def test_list_and_pagination(fake):
    _, url = fake()
    c, _ = client(url)
    ids = [c.submit(REQUEST)["id"] for _ in range(5)]
    page = c.list(limit=2)
    assert [j["id"] for j in page["jobs"]] == ids[::-1][:2]
    assert page["next_page_token"]
    assert [j["id"] for j in c.jobs(limit=2)] == ids[::-1]


def test_bearer_token(fake):
    state, url = fake(token="s3cret")
    with pytest.raises(pc.PartdError) as e:
        client(url)[0].list()
    assert e.value.status == 401
    c, _ = client(url, token="s3cret")
    assert c.list()["jobs"] == []
    # probes never carry the token
    c.health()
    probe_headers = [h for m, p, h in state.requests if p in ("/livez", "/readyz")]
    assert probe_headers and all("Authorization" not in h for h in probe_headers)


def test_health_and_version(fake):
    _, url = fake()
    c, _ = client(url)
    assert c.health() == {"live": True, "ready": False, "ready_detail": "draining"}
    assert c.version()["name"] == "partd"


def test_unknown_job_is_404(fake):
    _, url = fake()
    c, _ = client(url)
    with pytest.raises(pc.PartdError) as e:
        c.job("f" * 32)
    assert e.value.status == 404


# -- command line -----------------------------------------------------------------


def run_cli(*args, env=None):
    proc = subprocess.run([PYTHON, *CLIENT, *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": PYPKG, **(env or {})})
    return proc.returncode, proc.stdout, proc.stderr


def test_cli_submit_wait_writes_the_result(fake, tmp_path):
    _, url = fake(polls_to_finish=1, retry_after="0")
    req = tmp_path / "req.json"
    req.write_text(json.dumps(REQUEST))
    out = tmp_path / "plan.json"
    code, stdout, stderr = run_cli("--url", url, "submit", str(req), "--wait", "-o", str(out))
    assert code == 0, stderr
    assert json.loads(out.read_text()) == RESULT


def test_cli_exit_codes(fake, tmp_path):
    _, url = fake(polls_to_finish=1, retry_after="0")
    bad = tmp_path / "bad.json"
    bad.write_text('{"graph": {}}')
    code, _, stderr = run_cli("--url", url, "submit", str(bad))
    assert code == 2 and json.loads(stderr)["status"] == 422
    inf = tmp_path / "inf.json"
    inf.write_text(json.dumps({"graph": {"name": "infeasible"}, "devices": [{}]}))
    code, _, stderr = run_cli("--url", url, "submit", str(inf), "--wait")
    assert code == 3 and "infeasible" in stderr
    code, _, stderr = run_cli("--url", "http://127.0.0.1:1", "health")
    assert code == 1 and "cannot reach" in stderr
    code, stdout, _ = run_cli("--url", url, "health")
    assert code == 1 and json.loads(stdout)["live"] is True


def test_cli_result_and_cancel_exit_as_the_readme_says(fake, tmp_path):
    state, url = fake(polls_to_finish=1, retry_after="0")
    inf = pc.Client(url).submit({"graph": {"name": "infeasible"}, "devices": [{}]})
    assert pc.Client(url).job(inf["id"])["status"] == "failed"
    code, _, stderr = run_cli("--url", url, "result", inf["id"])
    assert code == 3 and json.loads(stderr)["type"] == "urn:partd:problem:infeasible"
    state.polls_to_finish = 10**6
    job = pc.Client(url).submit(REQUEST)
    code, stdout, _ = run_cli("--url", url, "cancel", job["id"])
    assert code == 0 and json.loads(stdout)["status"] == "cancelled"
    code, stdout, stderr = run_cli("--url", url, "cancel", job["id"])
    assert code == 0, stderr
    assert json.loads(stdout)["status"] == "cancelled"
    code, _, stderr = run_cli("--url", url, "result", job["id"])
    assert code == 4 and "cancelled" in stderr


def test_cli_token_from_environment(fake):
    _, url = fake(token="t0k")
    code, _, _ = run_cli("--url", url, "list")
    assert code == 1
    code, stdout, stderr = run_cli("list", env={"PARTD_URL": url, "PARTD_TOKEN": "t0k"})
    assert code == 0, stderr
    assert json.loads(stdout) == {"jobs": [], "next_page_token": None}


def test_cli_in_process_wait_timeout(fake, monkeypatch):
    """`wait --timeout` exits 5; run in-process with a fake clock."""
    state, url = fake(polls_to_finish=10**6)
    job = pc.Client(url).submit(REQUEST)
    clock = FakeClock()
    real = pc.Client.__init__

    def init(self, *a, **k):
        real(self, *a, **k, sleep=clock.sleep, clock=clock)
    monkeypatch.setattr(pc.Client, "__init__", init)
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = pc.main(["--url", url, "wait", job["id"], "--timeout", "2"])
    assert code == 5 and "still running" in err.getvalue()
