"""The job engine: cancel, queue limit, timeouts, shared runs, concurrency."""
import json
import os
import sqlite3
import threading

import pytest

from conftest import chain_request, plan_offline
from partd_daemon import ON_POSTGRESQL, sqlite_only

def wait_running(daemon, job_id):
    return daemon.wait_job(job_id, statuses=("running", "succeeded", "failed", "cancelled"))


@pytest.mark.skipif(ON_POSTGRESQL, reason="the local queue's gauges: on a shared store the "
                    "queue is every replica's (test_replicas.py)")
def test_cancel_queued_and_running_and_queue_full(make_daemon, slow_body):
    d = make_daemon("--workers", "1", "--queue-max", "1")
    big = d.post_job(slow_body)
    assert big.status == 202
    big_id = big.json()["id"]
    assert wait_running(d, big_id)["status"] == "running"

    small = chain_request(10, seed=11)
    queued = d.post_job(small)
    assert queued.status == 202
    q_id = queued.json()["id"]
    assert d.get(f"/v1/jobs/{q_id}").json()["status"] == "queued"

    # The one waiting place is taken: 429 with Retry-After; still ready (a
    # full queue is no reason to stop routing polls here).
    full = d.post_job(chain_request(10, seed=12))
    assert full.status == 429, full
    assert full.header("Retry-After")
    assert full.header("Content-Type") == "application/problem+json"
    assert d.get("/readyz").status == 200
    assert d.metric("partd_ready") == 1
    assert d.metric("partd_jobs_queued") == 1
    assert d.metric("partd_jobs_running") == 1

    # Result of an unfinished job: 409.
    assert d.get(f"/v1/jobs/{q_id}/result").status == 409

    # Cancel the queued job: removed from the queue at once.
    r = d.request("DELETE", f"/v1/jobs/{q_id}")
    assert r.status == 200, r
    assert r.json()["status"] == "cancelled"
    assert d.get(f"/v1/jobs/{q_id}").json()["status"] == "cancelled"
    assert d.get(f"/v1/jobs/{q_id}/result").status == 409
    assert d.request("DELETE", f"/v1/jobs/{q_id}").status == 409

    # Cancel the running job.
    r = d.request("DELETE", f"/v1/jobs/{big_id}")
    assert r.status == 200, r
    assert r.json()["status"] == "cancelled"
    assert d.get(f"/v1/jobs/{big_id}").json()["status"] == "cancelled"

    # The single worker is free again: a new job runs to completion.
    after = d.post_job(chain_request(10, seed=13))
    assert after.status == 202
    assert d.wait_job(after.json()["id"])["status"] == "succeeded"
    assert d.metric("partd_jobs_finished_total", 'status="cancelled"') == 2
    assert d.metric("partd_jobs_queued") == 0


def store_sql(d, sql):
    """Runs SQL on the daemon's store through a connection of the test's own."""
    db = sqlite3.connect(os.path.join(d.data_dir, "partd.db"))
    try:
        db.executescript(sql)
    finally:
        db.close()


@sqlite_only  # refuses the cancel with a trigger in the SQLite file
def test_a_cancel_the_store_refuses_is_503_and_changes_nothing(make_daemon, slow_body):
    d = make_daemon("--workers", "1")
    big_id = d.post_job(slow_body).json()["id"]
    assert wait_running(d, big_id)["status"] == "running"
    q_id = d.post_job(chain_request(10, seed=31)).json()["id"]
    # The store refuses every cancel, as a full disk would.
    store_sql(d, "CREATE TRIGGER refuse_cancel BEFORE UPDATE OF status ON jobs "
                 "WHEN NEW.status = 'cancelled' BEGIN SELECT RAISE(ABORT, 'disk full'); END;")
    for job_id in (q_id, big_id):
        r = d.request("DELETE", f"/v1/jobs/{job_id}")
        assert r.status == 503, r
        assert r.json()["type"].endswith("store-unavailable")
        assert r.header("Retry-After")
    assert d.job(q_id)["status"] == "queued"
    assert d.job(big_id)["status"] == "running"
    assert d.metric("partd_jobs_queued") == 1

    # Recorded now: both cancelled, and after a restart neither runs.
    store_sql(d, "DROP TRIGGER refuse_cancel;")
    for job_id in (q_id, big_id):
        r = d.request("DELETE", f"/v1/jobs/{job_id}")
        assert r.status == 200, r
        assert r.json()["status"] == "cancelled"
    assert d.stop() == 0
    d.start()
    for job_id in (q_id, big_id):
        job = d.job(job_id)
        assert job["status"] == "cancelled", job
    assert d.job(q_id)["started_at"] is None


def test_job_timeout_fails_the_job_with_a_problem(make_daemon, slow_body):
    d = make_daemon("--workers", "1", "--job-timeout-ms", "300")
    r = d.post_job(slow_body)
    assert r.status == 202
    job = d.wait_job(r.json()["id"])
    assert job["status"] == "failed"
    assert job["error"]["type"].endswith("job-timeout")
    assert "--job-timeout-ms" in job["error"]["detail"]
    res = d.get(f"/v1/jobs/{job['id']}/result")
    assert res.status == job["error"]["status"]


def test_a_result_over_max_result_bytes_fails_its_job_with_a_problem(make_daemon, tmp_path):
    doc = chain_request(40, seed=41)
    size = len(plan_offline(doc, tmp_path))
    d = make_daemon("--max-result-bytes", str(size - 1))
    job = d.wait_job(d.post_job(doc).json()["id"])
    assert job["status"] == "failed", job
    problem = job["error"]
    assert problem["type"].endswith("result-too-large")
    assert f"--max-result-bytes = {size - 1}" in problem["detail"]
    assert 'options.result.detail: "summary"' in problem["detail"]
    assert d.get(f"/v1/jobs/{job['id']}/result").status == problem["status"]
    # Exactly at the limit it fits.
    assert d.stop() == 0
    d = make_daemon("--max-result-bytes", str(size))
    job = d.wait_job(d.post_job(doc).json()["id"])
    assert job["status"] == "succeeded", job
    assert d.get(f"/v1/jobs/{job['id']}/result").body == plan_offline(doc, tmp_path)


def test_summary_detail_has_no_node_lists_and_its_own_cache_key(make_daemon, tmp_path):
    full_doc = chain_request(40, seed=43, mode="pipeline")
    summary_doc = json.loads(json.dumps(full_doc))
    summary_doc["options"]["result"] = {"detail": "summary"}
    full_size = len(plan_offline(full_doc, tmp_path))
    summary_text = plan_offline(summary_doc, tmp_path)
    assert len(summary_text) < full_size
    # The detail the too-large problem suggests fits where the full one does not.
    d = make_daemon("--max-result-bytes", str(full_size - 1))
    full_job = d.wait_job(d.post_job(full_doc).json()["id"])
    assert full_job["status"] == "failed", full_job
    r = d.post_job(summary_doc)
    assert r.status == 202, r
    job = d.wait_job(r.json()["id"])
    assert job["status"] == "succeeded", job
    assert job["cache_key"] != full_job["cache_key"]
    assert job["graph_hash"] == full_job["graph_hash"]
    res = d.get(f"/v1/jobs/{job['id']}/result")
    assert res.status == 200
    assert res.body == summary_text
    result = json.loads(res.body)
    assert result["partitions"] and result["boundaries"]
    for part in result["partitions"]:
        assert not {"nodes", "inputs", "outputs"} & set(part), part
        assert "children" in part and "time_ms" in part
    for boundary in result["boundaries"]:
        assert set(boundary) == {"after", "bytes"}
    # The job's summary is the result's (captured while written, not re-parsed).
    assert job["summary"] == result["summary"]
    # The same request again is answered from the cache, with the summary.
    again = d.post_job(summary_doc)
    assert again.status == 200 and again.json()["cached"], again
    assert again.json()["cache_key"] == job["cache_key"]



@pytest.mark.skipif(ON_POSTGRESQL, reason="on a shared store each job is claimed on its own; "
                    "identical jobs share the stored result, not one run")
def test_identical_concurrent_submissions_share_one_run(make_daemon, slow_body, tmp_path):
    d = make_daemon("--workers", "1")
    blocker = d.post_job(slow_body).json()
    assert wait_running(d, blocker["id"])["status"] == "running"
    doc = chain_request(30, seed=21)
    first = d.post_job(doc)
    second = d.post_job(doc)
    assert first.status == second.status == 202
    a_id, b_id = first.json()["id"], second.json()["id"]
    assert a_id != b_id
    assert second.json()["cache_key"] == first.json()["cache_key"]
    assert d.request("DELETE", f"/v1/jobs/{blocker['id']}").status == 200
    a = d.wait_job(a_id)
    b = d.wait_job(b_id)
    assert a["status"] == b["status"] == "succeeded"
    assert a["summary"] == b["summary"]
    assert a["started_at"] == b["started_at"]  # one run started both
    assert f"job id={b_id} status=queued" in d.log() and "shared_run=1" in d.log()
    expected = plan_offline(doc, tmp_path)
    assert d.get(f"/v1/jobs/{a_id}/result").body == expected
    assert d.get(f"/v1/jobs/{b_id}/result").body == expected


def test_fifty_concurrent_submissions_complete_correctly(daemon, tmp_path):
    docs = [chain_request(50 + i, seed=1000 + i, devices=2 + i % 3) for i in range(50)]
    ids = [None] * 50
    errors = []

    def submit(i):
        try:
            r = daemon.post_job(docs[i])
            assert r.status == 202, r
            ids[i] = r.json()["id"]
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(set(ids)) == 50
    for i, job_id in enumerate(ids):
        job = daemon.wait_job(job_id)
        assert job["status"] == "succeeded", job
        body = daemon.get(f"/v1/jobs/{job_id}/result").body
        assert body == plan_offline(docs[i], tmp_path), i
    assert daemon.metric("partd_jobs_submitted_total") == 50
    assert daemon.metric("partd_jobs_finished_total", 'status="succeeded"') == 50


GPT2_SAC = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "gpt2-sac", "request.json")


def test_sac_budget_below_the_least_peak_fails_the_job(make_daemon, tmp_path):
    """An infeasible SAC budget is a failed job whose problem document says
    the least peak; the daemon then plans a fitting budget as `partd plan`."""
    d = make_daemon("--workers", "2")
    with open(GPT2_SAC) as f:
        request = json.load(f)
    request["options"]["sac"]["memory_budget_bytes"] = 1000
    r = d.post_job(request)
    assert r.status == 202, r
    job = d.wait_job(r.json()["id"])
    assert job["status"] == "failed", job
    error = job["error"]
    assert error["type"] == "urn:partd:problem:infeasible"
    assert error["status"] == 422
    least = error["min_peak_memory_bytes"]
    assert 1000 < least < error["baseline_peak_memory_bytes"]
    assert error["budget_bytes"] == 1000
    res = d.get(f"/v1/jobs/{job['id']}/result")
    assert res.header("Content-Type") == "application/problem+json"
    assert res.json()["min_peak_memory_bytes"] == least

    request["options"]["sac"]["memory_budget_bytes"] = least
    r = d.post_job(request)
    assert r.status == 202, r
    job = d.wait_job(r.json()["id"])
    assert job["status"] == "succeeded", job
    body = d.get(f"/v1/jobs/{job['id']}/result").body
    assert body == plan_offline(request, tmp_path)
