"""Replicas sharing a PostgreSQL store (partd serve --store postgresql://...).

Against a throw-away PostgreSQL server the suite starts itself (partd_pg.py;
skipped, saying why, when the server binaries are not installed): two
replicas sharing 30 jobs, each run once with results byte-identical to
`partd plan`; kill -9 of a replica while it plans (the other takes its jobs
over within the lease + 2 s, same bytes); cancel from the other replica and
from the runner itself;
shared cache and idempotency keys; a database restart (readiness 503 and
back on its own, POST answered 503 promptly, /livez and /version answered
while claims and renewals fail, nothing accepted lost); the round trips a
job costs; partd_jobs_queued reporting the shared queue; the end of a run
written while the replica goes on answering, and a cancel meanwhile; a
claimed request that no longer decodes, and one whose decoding is under way
at shutdown; the postgres:// scheme.
"""
import contextlib
import datetime
import os
import re
import struct
import subprocess
import time

import pytest

from conftest import chain_request, pipeline_request, plan_offline
from partd_daemon import wait_until
from partd_pg import pg_server, pg_url  # noqa: F401  (fixtures)

pytestmark = pytest.mark.slow

LEASE_MS = 2000


def replicas(make_daemon, url, *extra, names=("A", "B")):
    return [make_daemon("--store", url, "--name", n, "--lease-ms", str(LEASE_MS), *extra)
            for n in names]


def result_bytes(d, job_id):
    r = d.get(f"/v1/jobs/{job_id}/result", headers={"Accept-Encoding": "identity"})
    assert r.status == 200, r
    return r.body


def test_two_replicas_share_30_jobs(make_daemon, pg_url, tmp_path):
    a, b = replicas(make_daemon, pg_url, "--workers", "1")
    docs = [pipeline_request(20000, 400, seed=100 + i) for i in range(30)]
    ids = []
    for i, doc in enumerate(docs):
        r = (a, b)[i % 2].post_job(doc)
        assert r.status == 202, r
        ids.append(r.json()["id"])
    runners = set()
    for i, job_id in enumerate(ids):
        job = (b, a)[i % 2].wait_job(job_id, timeout=120)
        assert job["status"] == "succeeded", job
        assert job["attempts"] == 1, job  # each ran once
        runners.add(job["runner"])
        # Every replica answers the same for every job.
        assert a.job(job_id) == b.job(job_id)
    assert runners == {"A", "B"}
    for i in (0, 7, 29):
        assert result_bytes(a, ids[i]) == plan_offline(docs[i], tmp_path)
        assert result_bytes(b, ids[i]) == result_bytes(a, ids[i])


def test_killed_replica_jobs_finish_on_the_other(make_daemon, pg_url, tmp_path):
    a, = replicas(make_daemon, pg_url, "--workers", "2", names=("A",))
    docs = [pipeline_request(100_000, 5000, seed=s) for s in (78, 79)]
    ids = [a.post_job(doc).json()["id"] for doc in docs]
    for job_id in ids:
        wait_until("job running on A",
                   lambda: a.job(job_id)["status"] == "running" and a.job(job_id)["runner"] == "A")
    b, = replicas(make_daemon, pg_url, "--workers", "2", names=("B",))
    a.kill9()
    killed = time.time()
    for job_id, doc in zip(ids, docs):
        job = b.wait_job(job_id, timeout=120)
        assert job["status"] == "succeeded", job
        assert job["runner"] == "B" and job["attempts"] == 2, (job, b.log())
        started = datetime.datetime.strptime(job["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ") \
            .replace(tzinfo=datetime.timezone.utc).timestamp()
        # The takeover time is a figure, not a condition: bench/bench_replicas.py
        # measures it against lease + 2 s; here it is only printed.
        print(f"job {job_id} running again {started - killed:.2f} s after the kill")
        assert started > killed - 1, (started - killed, job)  # this attempt began after it
        assert result_bytes(b, job_id) == plan_offline(doc, tmp_path)


def test_cancel_on_another_replica_stops_the_run(make_daemon, pg_url, slow_body):
    a, = replicas(make_daemon, pg_url, "--workers", "1", names=("A",))
    job_id = a.post_job(slow_body).json()["id"]
    wait_until("job running on A", lambda: a.job(job_id)["status"] == "running")
    b, = replicas(make_daemon, pg_url, "--workers", "1", names=("B",))
    r = b.request("DELETE", f"/v1/jobs/{job_id}")
    assert r.status == 200, r
    assert r.json()["status"] == "cancelled"
    # A sees it at its next lease renewal and stops planning.
    a.wait_log(rf"job {job_id} is no longer ours", timeout=LEASE_MS / 1000 + 5)
    wait_until("A's planner is free", lambda: a.metric("partd_jobs_running") == 0)
    for d in (a, b):
        assert d.job(job_id)["status"] == "cancelled"
        assert d.get(f"/v1/jobs/{job_id}/result").status == 409
    assert b.request("DELETE", f"/v1/jobs/{job_id}").status == 409
    # A is free for other work, and claims it.
    small = chain_request(10, seed=3)
    job = a.wait_job(b.post_job(small).json()["id"], timeout=60)
    assert job["status"] == "succeeded"


def test_cancel_on_the_runner_stops_the_run_at_once(make_daemon, pg_url, slow_body):
    """A DELETE on the replica that runs the job stops the run there and
    then, not at a lease renewal (the lease here outlasts the test)."""
    a = make_daemon("--store", pg_url, "--name", "A", "--workers", "1", "--lease-ms", "600000")
    job_id = a.post_job(slow_body).json()["id"]
    # Its request decoded, A's planner is on it (a sanitizer build decodes
    # slowly: the timeout allows for it).
    wait_until("A's planner on the job", lambda: a.metric("partd_jobs_running") == 1,
               timeout=180)
    r = a.request("DELETE", f"/v1/jobs/{job_id}")
    assert r.status == 200 and r.json()["status"] == "cancelled", r
    a.wait_log(rf"job {job_id} is no longer ours .*; stopped")
    wait_until("A's planner is free", lambda: a.metric("partd_jobs_running") == 0)
    assert a.metric("partd_jobs_finished_total", 'status="cancelled"') == 1
    job = a.wait_job(a.post_job(chain_request(10, seed=4)).json()["id"], timeout=60)
    assert job["status"] == "succeeded"
    assert a.job(job_id)["status"] == "cancelled"


def test_cache_and_idempotency_are_shared(make_daemon, pg_url):
    a, b = replicas(make_daemon, pg_url, "--workers", "1")
    doc = chain_request(30, seed=11)
    first = a.post_job(doc, headers={"Idempotency-Key": "k-1"})
    assert first.status == 202, first
    job_id = first.json()["id"]
    assert a.wait_job(job_id)["status"] == "succeeded"
    again = b.post_job(doc, headers={"Idempotency-Key": "k-1"})
    assert again.status == 200 and again.json()["id"] == job_id, again
    other = b.post_job(chain_request(30, seed=12), headers={"Idempotency-Key": "k-1"})
    assert other.status == 422, other
    cached = b.post_job(doc)
    assert cached.status == 200, cached
    assert cached.json()["cached"] is True
    assert result_bytes(b, cached.json()["id"]) == result_bytes(a, job_id)


def test_database_restart(make_daemon, pg_server, pg_url, tmp_path):
    a, = replicas(make_daemon, pg_url, "--workers", "1", names=("A",))
    doc = pipeline_request(100_000, 5000, seed=80)
    job_id = a.post_job(doc).json()["id"]
    wait_until("job running", lambda: a.job(job_id)["status"] == "running")
    pg_server.stop_server()
    try:
        wait_until("/readyz 503 while the database is down",
                   lambda: a.status("/readyz") == 503, timeout=30)
        assert a.status("/livez") == 200
        # While claims, renewals and reconnects keep failing, what needs no
        # database answers (the bound is one only a hang would break).
        tries = a.log().count("cannot connect to PostgreSQL")

        def answered_while_failing():
            for path in ("/livez", "/version"):
                t = time.monotonic()
                assert a.status(path) == 200
                assert time.monotonic() - t < 10.0
            return a.log().count("cannot connect to PostgreSQL") >= tries + 3
        wait_until("three reconnects failed while /livez and /version answered",
                   answered_while_failing, timeout=60)
        t = time.monotonic()
        r = a.post_job(chain_request(10, seed=4))
        assert r.status == 503, r
        assert r.json()["status"] == 503
        # Prompt, not a hang: far below the client's own time-out; the figure
        # itself depends on the machine, so the bound is loose.
        assert time.monotonic() - t < 20.0
    finally:
        pg_server.start_server()
    wait_until("/readyz 200 again", lambda: a.status("/readyz") == 200, timeout=30)
    # The job accepted before finishes (run again if its end was not written).
    job = a.wait_job(job_id, timeout=120)
    assert job["status"] == "succeeded", job
    assert result_bytes(a, job_id) == plan_offline(doc, tmp_path)
    later = a.post_job(chain_request(10, seed=5))
    assert later.status in (200, 202), later
    assert a.wait_job(later.json()["id"])["status"] == "succeeded"


def test_newer_schema_is_refused(make_daemon, pg_server, pg_url):
    a = make_daemon("--store", pg_url)  # creates the schema
    assert a.stop() == 0
    db = pg_url.rsplit("/", 1)[1]
    pg_server.psql("UPDATE partd_schema SET version = 99", db=db)
    b = make_daemon("--store", pg_url, start=False)
    assert b.start(expect_exit=True) == 1  # not a store this partd can use (contract: exit 1)
    assert "newer than this partd" in b.log()
    assert "version 99" in b.log()


def test_attempt_cap_holds_across_replicas(make_daemon, pg_url, medium_body):
    """Replicas that die planning a job (as a crashing planner takes its
    process down) hand it on at most twice; the next one fails it."""
    job_id = None
    for attempt, name in enumerate(("A", "B", "C"), start=1):
        d, = replicas(make_daemon, pg_url, "--workers", "1", names=(name,))
        if job_id is None:
            job_id = d.post_job(medium_body).json()["id"]
        wait_until(f"attempt {attempt} running on {name}",
                   lambda: (lambda j: j["status"] == "running" and j["runner"] == name
                            and j["attempts"] == attempt)(d.job(job_id)), timeout=60)
        d.kill9()
    last, = replicas(make_daemon, pg_url, "--workers", "1", names=("D",))
    job = last.wait_job(job_id, timeout=60)
    assert job["status"] == "failed", job
    assert job["attempts"] == 3 and job["runner"] == "D", job
    assert job["error"]["type"].endswith("planner-crashed"), job


def wait_succeeded(pg_server, url, n):
    db = url.rsplit("/", 1)[1]
    wait_until(f"{n} jobs succeeded", lambda: pg_server.psql(
        "SELECT count(*) FROM jobs WHERE status = 'succeeded'", db=db) == str(n),
        timeout=120, interval=0.05)


def test_round_trips_per_job(make_daemon, pg_server, pg_url):
    """What a job costs in round trips to the database, counted by the
    replica: at submission a look for a stored result and the insert, then
    its claim and its end (result and final state together): 4, and 5 at
    most (a claim that finds the queue empty, when an announcement crossed
    the claim before). Besides, the poll timer
    claims twice a second (it finds jobs whose replica died), and the queue
    is counted at most once a second. Progress is watched in the database
    itself: a GET would be a round trip too."""
    a = make_daemon("--store", pg_url, "--name", "A", "--workers", "1", "--lease-ms", "600000")
    n = 12
    start = time.monotonic()
    before = a.metric("partd_store_round_trips_total")
    assert before is not None
    for i in range(n):
        r = a.post_job(chain_request(10, seed=500 + i))
        assert r.status == 202, r
    wait_succeeded(pg_server, pg_url, n)
    trips = a.metric("partd_store_round_trips_total") - before
    elapsed = time.monotonic() - start
    allowance = 2 * (elapsed + 1) + (elapsed + 2)  # poll timer, queue counts
    print(f"{trips:.0f} round trips for {n} jobs in {elapsed:.2f} s")
    assert trips <= 5 * n + allowance, (trips, elapsed)


def test_queued_metric_counts_the_shared_queue(make_daemon, pg_url, slow_body):
    """partd_jobs_queued is the store's queue, not this replica's share of
    it: with the only planner busy, jobs posted stay queued in the store
    (a replica's own count of them is 0 once they are handed on)."""
    a, = replicas(make_daemon, pg_url, "--workers", "1", names=("A",))
    slow = a.post_job(slow_body).json()["id"]
    wait_until("slow job running", lambda: a.job(slow)["status"] == "running")
    for i in range(3):
        assert a.post_job(chain_request(10, seed=600 + i)).status == 202
    wait_until("three queued", lambda: a.metric("partd_jobs_queued") == 3, timeout=30)
    b, = replicas(make_daemon, pg_url, "--workers", "1", names=("B",))
    wait_until("B took them", lambda: b.metric("partd_jobs_queued") == 0, timeout=60)
    assert a.request("DELETE", f"/v1/jobs/{slow}").status == 200


@contextlib.contextmanager
def results_locked(pg_server, pg_url):
    """Holds a SHARE lock on the results table: reads of it go on, writes
    (the end of a successful run) wait until the block is left."""
    db = pg_url.rsplit("/", 1)[1]
    holder = subprocess.Popen(["psql", "-h", "127.0.0.1", "-p", str(pg_server.port), "-U",
                               "partd", "-d", db, "-qAt", "-v", "ON_ERROR_STOP=1"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        holder.stdin.write("BEGIN; LOCK TABLE results IN SHARE MODE; SELECT 'locked';\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.stdin.write("COMMIT;\n")
        holder.stdin.close()
        holder.wait(timeout=30)


def test_the_loop_answers_while_an_end_waits_for_the_database(make_daemon, pg_server, pg_url):
    """The end of a run (its result and final state) is written on a thread
    of its own: while that write waits for the database (here on a lock
    held on the results table), the replica goes on with what its event
    loop does, such as cancelling a queued job; the end is written once the
    database lets it, under the same claim."""
    a, = replicas(make_daemon, pg_url, "--workers", "1", names=("A",))
    with results_locked(pg_server, pg_url):
        first = a.post_job(chain_request(10, seed=800)).json()["id"]
        wait_until("its end waits for the database",
                   lambda: a.metric("partd_store_ends_unwritten") == 1)
        # The only planner is taken until that end is written: this one
        # stays queued.
        second = a.post_job(chain_request(10, seed=801)).json()["id"]
        r = a.request("DELETE", f"/v1/jobs/{second}")
        assert r.status == 200 and r.json()["status"] == "cancelled", r
        # Answered while the end still waited.
        assert a.metric("partd_store_ends_unwritten") == 1
        assert a.job(first)["status"] == "running"
    job = a.wait_job(first)
    assert job["status"] == "succeeded" and job["attempts"] == 1, job
    # The writer thread counts the end written just after its transaction
    # commits, which a read of the job from the store can already see.
    wait_until("no end left unwritten", lambda: a.metric("partd_store_ends_unwritten") == 0)


def test_cancel_while_the_end_is_written(make_daemon, pg_server, pg_url):
    """A job cancelled while its run's end waits for the database stays
    cancelled: the end's write leaves it as the cancel made it, the replica
    counts it as cancelled (not succeeded), and the plan it made is kept
    for the cache."""
    a, = replicas(make_daemon, pg_url, "--workers", "1", names=("A",))
    doc = chain_request(10, seed=802)
    with results_locked(pg_server, pg_url):
        job_id = a.post_job(doc).json()["id"]
        wait_until("its end waits for the database",
                   lambda: a.metric("partd_store_ends_unwritten") == 1)
        r = a.request("DELETE", f"/v1/jobs/{job_id}")
        assert r.status == 200 and r.json()["status"] == "cancelled", r
    a.wait_log(rf"job {job_id} is no longer ours")
    wait_until("the end written", lambda: a.metric("partd_store_ends_unwritten") == 0)
    assert a.job(job_id)["status"] == "cancelled"
    assert a.get(f"/v1/jobs/{job_id}/result").status == 409
    assert a.metric("partd_jobs_finished_total", 'status="cancelled"') == 1
    assert a.metric("partd_jobs_finished_total", 'status="succeeded"') == 0
    assert a.metric("partd_jobs_running") == 0
    again = a.post_job(doc).json()
    assert again["status"] == "succeeded" and again["cached"] is True, again


def test_a_claimed_request_that_no_longer_decodes_fails(make_daemon, pg_server, pg_url,
                                                        slow_body):
    """A claimed job whose stored request does not decode (here cut short in
    the database while it waited) fails with the decoder's problem, under
    its claim, and the replica goes on with the next job."""
    a, = replicas(make_daemon, pg_url, "--workers", "1", names=("A",))
    busy = a.post_job(slow_body).json()["id"]
    wait_until("the planner busy", lambda: a.job(busy)["status"] == "running")
    broken = a.post_job(chain_request(10, seed=901)).json()["id"]
    db = pg_url.rsplit("/", 1)[1]
    assert pg_server.psql("WITH cut AS (UPDATE jobs SET request = convert_to('{\"graph\":', "
                          f"'UTF8') WHERE id = '{broken}' AND status = 'queued' RETURNING id) "
                          "SELECT count(*) FROM cut", db=db) == "1"
    assert a.request("DELETE", f"/v1/jobs/{busy}").status == 200
    job = a.wait_job(broken, timeout=60)
    assert job["status"] == "failed", job
    assert job["attempts"] == 1 and job["runner"] == "A", job
    assert job["error"]["status"] == 400, job
    a.wait_log(rf"job {broken} failed: its request no longer decodes")
    assert a.metric("partd_jobs_finished_total", 'status="failed"') == 1
    after = a.post_job(chain_request(10, seed=902)).json()["id"]
    assert a.wait_job(after)["status"] == "succeeded"


def zstd_bomb_sql(n_strings, string_bytes):
    """SQL for a zstd frame (RLE blocks, as test_decode_stopped.py builds
    it) holding {"meta":{"s":[...]}}, n_strings strings of string_bytes
    'a's: built by the server, since the frame is megabytes."""
    def block(kind, size, payload, last=0):
        return (struct.pack("<I", last | kind << 1 | size << 3)[:3] + payload).hex()
    rle = block(1, 1 << 17, b"a")
    one = f"repeat('{rle}', {string_bytes >> 17})"
    head = "28b52ffd0038" + block(0, 15, b'{"meta":{"s":["')
    sep, end = block(0, 3, b'","'), block(0, 4, b'"]}}', last=1)
    return (f"decode('{head}' || repeat({one} || '{sep}', {n_strings - 1}) || {one} || "
            f"'{end}', 'hex')")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_claimed_request_being_decoded_at_shutdown_is_handed_back(make_daemon, pg_server,
                                                                    pg_url, slow_body):
    """A claimed job whose stored request is still being decoded when the
    shutdown's grace runs out (here 256 GiB of string text in an 8 MiB
    zstd frame: minutes of decoding) stops decoding, goes back to the queue
    without its attempt counted, and the replica exits at once."""
    a, = replicas(make_daemon, pg_url, "--workers", "1", "--shutdown-grace-ms", "500",
                  names=("A",))
    busy = a.post_job(slow_body).json()["id"]
    wait_until("the planner busy", lambda: a.job(busy)["status"] == "running")
    big = a.post_job(chain_request(10, seed=903)).json()["id"]
    db = pg_url.rsplit("/", 1)[1]
    bomb = zstd_bomb_sql(4096, 64 << 20)
    assert pg_server.psql(f"WITH bomb AS (UPDATE jobs SET request = {bomb} WHERE id = '{big}' "
                          "AND status = 'queued' RETURNING id) SELECT count(*) FROM bomb",
                          db=db) == "1"
    assert a.request("DELETE", f"/v1/jobs/{busy}").status == 200
    wait_until("the busy job cancelled", lambda: a.job(busy)["status"] == "cancelled")
    wait_until("the job claimed", lambda: pg_server.psql(
        f"SELECT status || '|' || runner FROM jobs WHERE id = '{big}'", db=db) == "running|A", 60)
    # the claim's decoding (the replica's only work) is under way once it
    # uses CPU time
    start = cpu_seconds(a.pid)
    wait_until("the claimed request being decoded", lambda: cpu_seconds(a.pid) > start + 0.5, 60)
    assert a.stop(timeout=60) == 0
    assert f"job {big}: decoding its request stopped; handed back" in a.log()
    row = pg_server.psql(f"SELECT status, attempts FROM jobs WHERE id = '{big}'", db=db)
    assert row == "queued|0", row


def test_postgres_scheme(make_daemon, pg_url):
    """libpq's other spelling of the scheme works for --store too."""
    assert pg_url.startswith("postgresql://")
    a = make_daemon("--store", "postgres://" + pg_url[len("postgresql://"):], "--name", "A")
    job_id = a.post_job(chain_request(10, seed=700)).json()["id"]
    assert a.wait_job(job_id)["status"] == "succeeded"


FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def test_retention_counts_on_the_database_clock(make_daemon, pg_server, pg_url):
    """A replica whose clock runs 2 h ahead, keeping jobs 1 h, deletes only
    what the database's clock says is older than that."""
    if not os.path.exists(FAKETIME_LIB):
        pytest.skip("libfaketime is not installed (Debian package faketime)")
    b, = replicas(make_daemon, pg_url, names=("B",))
    fresh = b.post_job(chain_request(5, seed=1)).json()["id"]
    old = b.post_job(chain_request(5, seed=2)).json()["id"]
    for job_id in (fresh, old):
        assert b.wait_job(job_id)["status"] == "succeeded"
    # Finished 3 h ago by the database's clock: the one job to delete.
    db = pg_url.rsplit("/", 1)[1]
    pg_server.psql("UPDATE jobs SET finished_ms = finished_ms - 3 * 3600 * 1000 "
                   f"WHERE id = '{old}'", db=db)
    env = {"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": "+2h", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    # Under ASan, libfaketime is preloaded ahead of the ASan runtime, which
    # would otherwise refuse to start; it only wraps the clock functions.
    asan = os.environ.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
    a = make_daemon("--store", pg_url, "--name", "A", "--retention-hours", "1",
                    "--sweep-interval-s", "1", env=env)
    a.wait_log(r"jobs_deleted=\d")
    assert re.search(r"jobs_deleted=(\d+)", a.log()).group(1) == "1", a.log()
    assert b.status(f"/v1/jobs/{old}") == 404
    assert b.job(fresh)["status"] == "succeeded"
