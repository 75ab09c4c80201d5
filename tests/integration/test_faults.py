"""Faults under the store: the data directory filling up or turning read-only
while jobs run, and kill -9 while a result is being written.

Mechanisms (root only; each test skips with the reason when its mechanism is
unavailable here):
  full       a small tmpfs as the data directory, filled with a file until
             ENOSPC, then emptied again;
  read-only  a loop-mounted ext4 image with errors=remount-ro, switched to
             read-only by the kernel through /sys/fs/ext4/<dev>/trigger_fs_error
             (what a real disk error does); afterwards e2fsck and a fresh mount.
The jobs whose results cannot be stored are "fan-in" graphs (the output reads
every node, so every pipeline boundary carries many tensors): their result
documents are several times larger than their requests, so writing one
needs space that earlier writes did not already reserve in SQLite's WAL.
Every wait is a bounded poll.
"""
import errno
import http.client
import json
import os
import pathlib
import signal
import sqlite3
import subprocess

import pytest

from conftest import sanitizer_runtime
from hardening_support import PARTD_BIN, chain_request, wait_until  # noqa: F401
from partd_daemon import sqlite_only

STORE_PROBLEM = "store-unavailable"


def fanin_request(n_ops, devices, seed):
    doc = chain_request(n_ops, seed=seed, devices=devices, name=f"fanin{n_ops}-{seed}")
    doc["graph"]["nodes"][-1]["inputs"] = [f"n{i}" for i in range(n_ops)]
    for d in doc["devices"]:
        d["memory_bytes"] *= 40
    return doc


def plan_offline(doc, tmp_path):
    req = tmp_path / f"offline-{doc['graph']['name']}.json"
    req.write_text(json.dumps(doc))
    p = subprocess.run([PARTD_BIN, "plan", str(req)], capture_output=True)
    assert p.returncode == 0, p.stderr[:500]
    return p.stdout


def integrity_ok(data_dir):
    db = sqlite3.connect(os.path.join(data_dir, "partd.db"))
    try:
        return db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()


def run_cmd(*cmd):
    return subprocess.run(list(cmd), capture_output=True, text=True)


def mount_tmpfs(tmp_path, size):
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    p = run_cmd("mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mnt))
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {p.stderr.strip()}")
    return mnt


@pytest.fixture
def tmpfs(tmp_path):
    """A 96 MiB tmpfs; skipped when it cannot be mounted here."""
    mnt = mount_tmpfs(tmp_path, "96m")
    yield mnt
    run_cmd("umount", "-l", str(mnt))


@pytest.fixture
def small_tmpfs(tmp_path):
    """An 8 MiB tmpfs; skipped when it cannot be mounted here."""
    mnt = mount_tmpfs(tmp_path, "8m")
    yield mnt
    run_cmd("umount", "-l", str(mnt))


@pytest.fixture
def ext4(tmp_path):
    """A loop-mounted ext4 (errors=remount-ro) and its error trigger; skipped
    when loop devices, mkfs.ext4 or the trigger are unavailable here."""
    image = tmp_path / "ext4.img"
    mnt = tmp_path / "ext4"
    mnt.mkdir()
    with open(image, "wb") as f:
        f.truncate(192 << 20)
    p = run_cmd("mkfs.ext4", "-q", "-F", str(image))
    if p.returncode != 0:
        pytest.skip(f"mkfs.ext4 unavailable: {p.stderr.strip()}")

    def mount():
        return run_cmd("mount", "-o", "loop,errors=remount-ro", str(image), str(mnt))

    p = mount()
    if p.returncode != 0:
        pytest.skip(f"cannot loop-mount an ext4 image here: {p.stderr.strip()}")
    dev = os.path.basename(run_cmd("findmnt", "-no", "SOURCE", str(mnt)).stdout.strip())
    trigger = pathlib.Path(f"/sys/fs/ext4/{dev}/trigger_fs_error")
    if not trigger.exists():
        run_cmd("umount", str(mnt))
        pytest.skip(f"{trigger} is not available on this kernel")

    class Ext4:
        path = mnt

        def break_it(self):
            trigger.write_text("1\n")

        def repair(self):
            assert run_cmd("umount", str(mnt)).returncode == 0
            assert run_cmd("e2fsck", "-fy", str(image)).returncode in (0, 1)
            assert mount().returncode == 0

    yield Ext4()
    run_cmd("umount", "-l", str(mnt))


def fill(path):
    """Writes a file until the file system says ENOSPC; returns its path."""
    filler = path / "filler"
    with open(filler, "wb") as f:
        block = b"\0" * (1 << 20)
        try:
            while True:
                f.write(block)
                f.flush()
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    return filler


def finished_job(d, job_id):
    return d.wait_job(job_id, timeout=120)


def assert_store_failure(d, job):
    """A job whose result could not be stored: failed, with a problem
    document saying so, also on its result link."""
    assert job["status"] == "failed", job
    assert job["error"]["type"].endswith(STORE_PROBLEM), job["error"]
    assert job["error"]["status"] == 503
    r = d.request("GET", f"/v1/jobs/{job['id']}/result")
    assert r.status == 503 and r.json()["type"].endswith(STORE_PROBLEM), r


def submit_stored_job(d):
    r = d.post_job(chain_request(10, name="stored-before"))
    job = d.wait_job(r.json()["id"])
    assert job["status"] == "succeeded"
    res = d.request("GET", f"/v1/jobs/{job['id']}/result")
    assert res.status == 200
    return job, res


def assert_still_served(d, job, res):
    again = d.request("GET", f"/v1/jobs/{job['id']}/result")
    assert again.status == 200 and again.body == res.body
    assert again.headers["etag"] == res.headers["etag"]
    assert d.job(job["id"])["status"] == "succeeded"


def runs_ended(d):
    """How many runs have ended (their jobs' planning time observed),
    whether or not the store took their ends."""
    return d.metric("partd_job_duration_seconds_count") or 0


def db_status(data_dir, job_id):
    db = sqlite3.connect(f"file:{os.path.join(data_dir, 'partd.db')}?mode=ro", uri=True)
    try:
        return db.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]
    finally:
        db.close()


def views(d, ids):
    """Each job's status as GET /v1/jobs/{id} and as the list show it."""
    listed = {j["id"]: j["status"] for j in d.get("/v1/jobs?limit=100").json()["jobs"]}
    return [(d.job(i)["status"], listed[i]) for i in ids]


def readyz_reason(d):
    r = d.request("GET", "/readyz")
    return r.status == 503 and r.json()["detail"]


@sqlite_only
def test_full_data_dir_fails_jobs_keeps_what_is_stored_and_recovers(tmpfs, make_daemon,
                                                                    tmp_path):
    data = tmpfs / "data"
    d = make_daemon("--workers", "1", data_dir=data)
    stored, stored_result = submit_stored_job(d)

    # Two big-result jobs; with one worker the second waits for the first.
    docs = [fanin_request(5000, 256, seed) for seed in (1, 2)]
    ids = []
    for doc in docs:
        r = d.post_job(doc)
        assert r.status == 202, r
        ids.append(r.json()["id"])
    wait_until("the first big job to start",
               lambda: d.job(ids[0])["status"] in ("running", "succeeded"))
    filler = fill(tmpfs)

    # Both runs end while the disk is full. A state the store could not
    # take is not shown: each job reads as the database holds it, in its
    # own view and in the list alike, and none reads final unless the
    # database has it so.
    wait_until("both big runs to end", lambda: runs_ended(d) >= 3, timeout=120)
    for job_id, (got, listed) in zip(ids, views(d, ids)):
        assert got == listed == db_status(data, job_id), (got, listed)
    assert views(d, ids)[1][0] != "succeeded"
    reason = wait_until("/readyz to report the full data directory", lambda: readyz_reason(d))
    assert "free" in reason or "store" in reason, reason
    assert_still_served(d, stored, stored_result)
    assert d.request("GET", "/livez").status == 200

    # Space returns: readiness comes back by itself, the final states the
    # store refused are written (the second job's result never was: it
    # failed), and that job, submitted again, is planned and stored.
    filler.unlink()
    wait_until("/readyz to be 200 again", lambda: d.status("/readyz") == 200)
    jobs = [finished_job(d, i) for i in ids]
    assert_store_failure(d, jobs[1])
    if jobs[0]["status"] != "succeeded":
        assert_store_failure(d, jobs[0])
    r = d.post_job(docs[1])
    assert r.status == 202, r
    again = finished_job(d, r.json()["id"])
    assert again["status"] == "succeeded", again
    result = d.request("GET", f"/v1/jobs/{again['id']}/result")
    assert result.status == 200 and result.body == plan_offline(docs[1], tmp_path)

    # A restart finds a consistent store holding everything stored so far.
    assert d.stop() == 0
    assert integrity_ok(data)
    d.start()
    assert_still_served(d, stored, stored_result)
    assert d.request("GET", f"/v1/jobs/{again['id']}/result").body == result.body
    for job in jobs:  # a state shown final stays so
        assert d.job(job["id"])["status"] == job["status"]


def settled_readyz(d):
    """/readyz once recovery is over: (status, detail or None)."""
    def settled():
        r = d.request("GET", "/readyz")
        return (r.status == 200 or "starting" not in r.json()["detail"]) and r
    r = wait_until("/readyz past starting", settled)
    return r.status, (r.json()["detail"] if r.status == 503 else None)


@sqlite_only
def test_small_data_dir_is_ready_for_small_jobs(small_tmpfs, make_daemon):
    # Free space is weighed against what a job needs, not a fixed amount
    # larger than this whole file system.
    d = make_daemon(data_dir=small_tmpfs / "data", ready=False)
    assert settled_readyz(d) == (200, None)
    assert finished_job(d, d.post_job(chain_request(12)).json()["id"])["status"] == "succeeded"
    assert d.status("/readyz") == 200


@sqlite_only
def test_readyz_is_503_at_the_store_cap(make_daemon):
    d = make_daemon("--store-max-bytes", "3000000")
    refused = None
    for seed in range(200):  # distinct jobs until the store is full
        r = d.post_job(chain_request(4000, seed=seed, mode="pipeline"))
        if r.status == 503:
            refused = r
            break
        assert r.status == 202, r
        if finished_job(d, r.json()["id"])["status"] == "failed":
            break
    assert refused is not None or seed < 199
    # The first probe rewrites one page, which fits and heals the store's
    # health; readiness must still say the store is full.
    for _ in range(2):
        status, detail = settled_readyz(d)
        assert status == 503 and "store-max-bytes" in detail, detail
    assert d.request("GET", "/livez").status == 200


@sqlite_only
def test_read_only_data_dir_shows_jobs_as_stored_and_keeps_what_is_stored(ext4, make_daemon, tmp_path):
    data = ext4.path / "data"
    d = make_daemon("--workers", "1", data_dir=data)
    stored, stored_result = submit_stored_job(d)
    doc = fanin_request(5000, 256, 3)
    r = d.post_job(doc)
    assert r.status == 202, r
    job_id = r.json()["id"]
    wait_until("the big job to start", lambda: d.job(job_id)["status"] == "running")
    ext4.break_it()

    # Its end cannot be written: it reads as stored (running), in its own
    # view and in the list, never failed. (It may have finished in the
    # instant before the file system turned.)
    wait_until("the big run to end", lambda: runs_ended(d) >= 2, timeout=120)
    (got, listed), = views(d, [job_id])
    print("job when the file system turned read-only:", got)
    assert got == listed and got in ("running", "succeeded"), (got, listed)
    wait_until("/readyz to report the read-only store", lambda: readyz_reason(d))
    assert_still_served(d, stored, stored_result)
    r = d.post_job(chain_request(12, name="while-read-only"))
    assert r.status == 503 and r.json()["type"].endswith(STORE_PROBLEM), r

    # After repair and a restart: nothing stored is lost, the interrupted
    # job runs again and gives the offline plan.
    d.stop()
    ext4.repair()
    assert integrity_ok(data)
    d.start()
    assert_still_served(d, stored, stored_result)
    job = finished_job(d, job_id)
    assert job["status"] == "succeeded", job
    result = d.request("GET", f"/v1/jobs/{job_id}/result")
    assert result.body == plan_offline(doc, tmp_path)


@sqlite_only
@pytest.mark.slow
def test_kill9_while_a_result_is_written_leaves_a_consistent_store(make_daemon, tmp_path):
    data = tmp_path / "data"
    d = make_daemon("--workers", "1", data_dir=data)
    stored, stored_result = submit_stored_job(d)
    wal = data / "partd.db-wal"
    outcomes = []
    for seed in (11, 12, 13):
        doc = fanin_request(5000, 256, seed)
        r = d.post_job(doc)
        assert r.status == 202, r
        job_id = r.json()["id"]
        wait_until("the job to start", lambda: d.job(job_id)["status"] == "running")
        # Planning writes nothing: the next change to the WAL is the result.
        before = os.stat(wal)

        def result_write_began():
            now = os.stat(wal)
            return (now.st_size, now.st_mtime_ns) != (before.st_size, before.st_mtime_ns)

        wait_until("the result write to begin", result_write_began, timeout=120, interval=0)
        d.kill9()
        assert integrity_ok(data)
        d.start()
        # Committed before the kill (succeeded) or not at all (queued again).
        outcomes.append(d.job(job_id)["status"])
        job = finished_job(d, job_id)
        assert job["status"] == "succeeded", job
        result = d.request("GET", f"/v1/jobs/{job_id}/result")
        assert result.status == 200 and result.body == plan_offline(doc, tmp_path)
        assert_still_served(d, stored, stored_result)
    assert d.stop() == 0
    assert integrity_ok(data)
    print("status right after each restart:", outcomes)


def build_failmalloc(tmp_path):
    """The test-only allocation-failure shim (failmalloc_shim.c) as a shared
    library; skipped when no C compiler is here."""
    runtime = sanitizer_runtime()
    if runtime:
        pytest.skip(f"an allocation shim cannot be preloaded before {runtime}; "
                    "the plain build runs this test")
    src = pathlib.Path(__file__).with_name("failmalloc_shim.c")
    so = tmp_path / "failmalloc.so"
    p = run_cmd("cc", "-shared", "-fPIC", "-O1", "-o", str(so), str(src))
    if p.returncode != 0:
        pytest.skip(f"cannot build the allocation-failure shim: {p.stderr.strip()}")
    return so


@pytest.mark.slow
def test_allocation_failures_while_answering_are_503s_and_the_daemon_keeps_serving(
        make_daemon, tmp_path):
    """One allocation fails at a time, at every position over a fixed set of
    requests that read jobs, results (from the store: no result cache),
    lists, metrics and readiness: each answer is what it would be, or a 503
    problem document, or (inside libmicrohttpd itself) a closed connection;
    the daemon never dies and answers normally once allocations work."""
    so = build_failmalloc(tmp_path)
    control = tmp_path / "failmalloc"
    control.write_text("0 0")
    d = make_daemon("--workers", "1", "--cache-max-bytes", "0",
                    env={"LD_PRELOAD": str(so), "PARTD_FAILMALLOC_FILE": str(control)})
    job = d.wait_job(d.post_job(chain_request(12, seed=80)).json()["id"])
    assert job["status"] == "succeeded"
    requests = [("GET", f"/v1/jobs/{job['id']}", 200), ("GET", "/v1/jobs?limit=5", 200),
                ("GET", f"/v1/jobs/{job['id']}/result", 200), ("GET", "/metrics", 200),
                ("GET", "/readyz", 200), ("DELETE", f"/v1/jobs/{job['id']}", 409),
                ("GET", "/v1/jobs/" + "0" * 32, 404)]
    good = {(method, path): d.request(method, path) for method, path, _ in requests}
    for method, path, status in requests:
        assert good[method, path].status == status, (path, good[method, path])

    def arm(text):
        control.write_text(text)
        os.kill(d.pid, signal.SIGUSR2)

    seen = {"503": 0, "closed": 0, "same": 0}
    for n in range(1, 240):
        arm(f"{n} 1")
        for method, path, status in requests:
            try:
                r = d.request(method, path, timeout=30)
            except (OSError, http.client.HTTPException):
                seen["closed"] += 1
                continue
            if r.status == status:
                seen["same"] += 1
                if path.endswith("/result"):
                    assert r.body == good[method, path].body, n
            else:
                assert r.status == 503, (n, path, r.status, r.body[:300])
                assert r.json()["status"] == 503, (n, path, r.body[:300])
                seen["503"] += 1
        arm("0 0")
        assert d.alive(), (n, d.log()[-3000:])
        assert d.status("/livez") == 200, n
    print("answers under allocation failure:", seen)
    assert seen["503"] > 0
    for method, path, status in requests:
        assert d.request(method, path).status == status, path
    # Every request that reached partd got an answer: a connection is only
    # closed when libmicrohttpd itself could not set the request up. (After
    # the stop every log line has been read.)
    assert d.stop() == 0
    unanswered = [l for l in d.log().splitlines() if "request" in l and " status=0 " in l]
    assert not unanswered, unanswered[:5]
