"""A job whose runs keep ending with the process (kill -9 while it plans,
as a crashing planner would) is retried at most twice, then fails with a
planner-crashed problem: no request can make the daemon crash-loop. The
attempts are kept in the store, so this holds across restarts (SQLite, or
PostgreSQL under PARTD_TEST_STORE=postgresql) and across replicas
(test_replicas.py)."""
from partd_daemon import wait_until


def test_job_killing_its_runs_fails_after_three_attempts(make_daemon, medium_body):
    d = make_daemon("--workers", "1")
    job_id = d.post_job(medium_body).json()["id"]
    for attempt in (1, 2, 3):
        job = wait_until(f"attempt {attempt} running",
                         lambda: (lambda j: j if j["status"] == "running"
                                  and j["attempts"] == attempt else None)(d.job(job_id)),
                         timeout=60)
        assert job["runner"]
        d.kill9()
        d.start()
    job = d.wait_job(job_id, timeout=60)
    assert job["status"] == "failed", job
    assert job["attempts"] == 3
    assert job["error"]["type"].endswith("planner-crashed"), job
    assert "3 times" in job["error"]["detail"]
    assert d.get(f"/v1/jobs/{job_id}/result").status == 500
    # The daemon serves on: other work runs.
    assert d.status("/readyz") == 200
