"""Replicas on one PostgreSQL store: throughput and failover.

Starts a throw-away PostgreSQL server (tests/support/partd_pg.py) and
`partd serve` replicas on it (PARTD_BIN, default build/partd), each with one
planner thread (--workers 1), and measures:
  1. throughput of small jobs (distinct requests, no cache hits) with one
     replica and with two, clients posting to the replicas in turn; the time
     is the store's, from the first job created to the last finished.
     Measured twice:
     - a core for each replica (the replica's process pinned to a CPU of
       its own, as a replica on a machine or container of one core would
       run; PostgreSQL and the clients run anywhere): how the fleet scales
       when a replica is added, the figure the target is checked on:
       two replicas >= 1.6x one;
     - replicas sharing every core: one replica already spreads over more
       than one core here (its planner, the HTTP threads decoding the next
       requests, PostgreSQL), so two on this machine can get at most its
       cores / one replica's; printed with the cores kept busy;
  2. failover: a replica is killed (SIGKILL) while it plans; the time until
     the other has started the job again; target: <= lease + 2 s.
Settings: BENCH_JOBS (default 200), BENCH_RUNS (default 3: the throughput
is measured that many times, alternating one and two replicas, and the
medians are printed with every run's figures; the machine may be shared,
so the load average is printed with them). The test server runs with
fsync off (tests/support/partd_pg.py), so commits cost no disk flush.
Prints one line per figure; exits non-zero only when it cannot measure.
"""
import concurrent.futures
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

import partd_pg  # noqa: E402
from conftest import pipeline_request  # noqa: E402
from partd_daemon import DaemonFactory, wait_until  # noqa: E402

N_JOBS = int(os.environ.get("BENCH_JOBS", "200"))
N_RUNS = max(1, int(os.environ.get("BENCH_RUNS", "3")))
LEASE_MS = 2000


def small_job(i, run):
    return json.dumps(pipeline_request(5000, 200, seed=run * 100000 + i)).encode()


def succeeded(replica):
    """Jobs this replica finished with success (its /metrics counter)."""
    text = replica.get("/metrics").body.decode()
    for line in text.splitlines():
        if line.startswith('partd_jobs_finished_total{status="succeeded"}'):
            return int(line.rsplit(" ", 1)[1])
    return 0


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds():
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "postgres":
                    total += cpu_seconds(pid)
        except OSError:
            pass  # gone meanwhile
    return total


def throughput(srv, base, n_replicas, run, pinned):
    """Jobs per second, and the cores the replicas and PostgreSQL kept busy.
    pinned: replica k runs on CPU k alone."""
    url = srv.fresh_db()
    where = pathlib.Path(base) / f"tp{n_replicas}-{run}{'-pinned' if pinned else ''}"
    where.mkdir(parents=True)
    factory = DaemonFactory(where)
    cpus = sorted(os.sched_getaffinity(0))
    try:
        reps = [factory.make("--store", url, "--workers", "1", "--name", f"r{k}",
                             "--log-format", "json", cpus={cpus[k]} if pinned else None)
                for k in range(n_replicas)]
        bodies = [small_job(i, run) for i in range(N_JOBS)]
        cpu_before = sum(cpu_seconds(r.pid) for r in reps) + postgres_cpu_seconds()
        wall_before = time.monotonic()

        def post(i):
            r = reps[i % n_replicas].post_job(bodies[i])
            assert r.status == 202, r

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(post, range(N_JOBS)))
        db = url.rsplit("/", 1)[1]
        # Watched through the replicas' own counters: a psql process every
        # poll would take a tenth of this machine's CPU from the replicas.
        wait_until("every job finished",
                   lambda: sum(succeeded(r) for r in reps) >= N_JOBS,
                   timeout=600, interval=0.1)
        cores = (sum(cpu_seconds(r.pid) for r in reps) + postgres_cpu_seconds() - cpu_before) / (
            time.monotonic() - wall_before)
        span_ms = int(srv.psql("SELECT max(finished_ms) - min(created_ms) FROM jobs", db=db))
        return N_JOBS / (span_ms / 1000.0), cores
    finally:
        factory.close()


def failover(srv, base):
    url = srv.fresh_db()
    (pathlib.Path(base) / "failover").mkdir(parents=True)
    factory = DaemonFactory(pathlib.Path(base) / "failover")
    try:
        a = factory.make("--store", url, "--workers", "1", "--name", "A",
                         "--lease-ms", str(LEASE_MS))
        job_id = a.post_job(pipeline_request(100_000, 5000, seed=90)).json()["id"]
        wait_until("job running on A", lambda: a.job(job_id)["status"] == "running")
        b = factory.make("--store", url, "--workers", "1", "--name", "B",
                         "--lease-ms", str(LEASE_MS))
        db = url.rsplit("/", 1)[1]
        a.kill9()
        killed_ms = int(srv.psql("SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint",
                                 db=db))
        wait_until("B runs the job", lambda: b.job(job_id)["runner"] == "B", timeout=60,
                   interval=0.02)
        started_ms = int(srv.psql(f"SELECT started_ms FROM jobs WHERE id = '{job_id}'", db=db))
        return started_ms - killed_ms
    finally:
        factory.close()


def measure(srv, base, pinned):
    """Medians of N_RUNS throughput runs: (one, two, ones, twos, cores1, cores2)."""
    ones, twos, cores1, cores2 = [], [], [], []
    for k in range(N_RUNS):
        rate, cores = throughput(srv, base, 1, 2 * k + 1, pinned)
        ones.append(rate)
        cores1.append(cores)
        rate, cores = throughput(srv, base, 2, 2 * k + 2, pinned)
        twos.append(rate)
        cores2.append(cores)
    return (statistics.median(ones), statistics.median(twos), ones, twos,
            statistics.median(cores1), statistics.median(cores2))


def runs(rates):
    return " ".join(f"{x:.1f}" for x in rates)


def main():
    why = partd_pg.missing_reason()
    if why:
        print(f"bench_replicas: skipped: {why}")
        return 0
    srv = partd_pg.PgServer().start()
    base = tempfile.mkdtemp(prefix="partd-bench-replicas-")
    try:
        n_cpus = len(os.sched_getaffinity(0))
        if n_cpus >= 2:
            one, two, ones, twos, _, _ = measure(srv, base, pinned=True)
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())
            verdict = "met" if two >= 1.6 * one else "NOT met"
            print(f"replicas, a core each: {N_JOBS} small jobs, --workers 1 each, median of "
                  f"{N_RUNS}: one replica {one:.1f} jobs/s, two {two:.1f} jobs/s, ratio "
                  f"{two / one:.2f} (target >= 1.6: {verdict}; load average {load}; runs: one "
                  f"{runs(ones)}, two {runs(twos)})")
        else:
            print("replicas, a core each: skipped: fewer than 2 CPUs to pin replicas to")
        one, two, ones, twos, cores1, cores2 = measure(srv, base, pinned=False)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"replicas, sharing every core: median of {N_RUNS}: one replica {one:.1f} jobs/s, "
              f"two {two:.1f} jobs/s, ratio {two / one:.2f} (load average {load}; runs: one "
              f"{runs(ones)}, two {runs(twos)})")
        # One replica keeps a core busy with its planner and part of another
        # with HTTP decoding and PostgreSQL; two replicas cannot get more
        # than the machine's cores, which bounds the ratio when they share them.
        print(f"replicas, sharing every core: cores kept busy by the replicas and PostgreSQL: "
              f"one replica {cores1:.2f}, two {cores2:.2f} (this machine has {n_cpus}; "
              f"ceiling of the ratio when sharing them about {n_cpus / cores1:.2f})")
        ms = failover(srv, base)
        print(f"replicas: failover of a killed replica's running job: {ms} ms "
              f"(lease {LEASE_MS} ms; target <= {LEASE_MS + 2000} ms)")
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
