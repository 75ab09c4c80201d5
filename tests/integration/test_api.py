"""Routes, status codes and headers of the HTTP API against the real daemon."""
import json
import random
import re

from conftest import chain_request, plan_offline, shuffle_members

JOB_KEYS = {"id", "status", "created_at", "started_at", "finished_at", "graph_hash",
            "cache_key", "cached", "links"}
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def test_round_trip_submit_poll_result_etag(daemon, tmp_path):
    doc = chain_request(40, seed=1)
    r = daemon.post_job(doc)
    assert r.status == 202, r
    job = r.json()
    assert JOB_KEYS <= set(job)
    assert re.fullmatch(r"[0-9a-f]{32}", job["id"])
    assert r.header("Location") == f"/v1/jobs/{job['id']}"
    assert r.header("Retry-After") is not None
    assert job["cached"] is False and job["status"] in ("queued", "running", "succeeded")
    assert RFC3339.match(job["created_at"])
    assert job["graph_hash"].startswith("sha256:") and job["cache_key"].startswith("sha256:")

    done = daemon.wait_job(job["id"])
    assert done["status"] == "succeeded", done
    assert RFC3339.match(done["started_at"]) and RFC3339.match(done["finished_at"])
    assert done["links"] == {"self": f"/v1/jobs/{job['id']}",
                             "result": f"/v1/jobs/{job['id']}/result"}

    res = daemon.get(done["links"]["result"])
    assert res.status == 200
    assert res.header("Content-Type") == "application/json"
    expected = plan_offline(doc, tmp_path)
    assert res.body == expected
    assert json.loads(res.body)["summary"] == done["summary"]
    etag = res.header("ETag")
    assert re.fullmatch(r'"sha256:[0-9a-f]{64}"', etag)

    again = daemon.get(done["links"]["result"], headers={"If-None-Match": etag})
    assert again.status == 304 and again.body == b""
    assert again.header("ETag") == etag
    listed = daemon.get(done["links"]["result"], headers={"If-None-Match": '"other", ' + etag})
    assert listed.status == 304
    other = daemon.get(done["links"]["result"], headers={"If-None-Match": '"sha256:00"'})
    assert other.status == 200 and other.body == expected


def test_resubmission_with_shuffled_members_is_a_cache_hit(daemon, tmp_path):
    doc = chain_request(30, seed=2)
    first = daemon.post_job(doc).json()
    daemon.wait_job(first["id"])
    hits = daemon.metric("partd_cache_hits_total")
    shuffled = shuffle_members(doc, random.Random(7))
    assert json.dumps(shuffled) != json.dumps(doc)
    r = daemon.post_job(shuffled)
    assert r.status == 200, r
    job = r.json()
    assert job["cached"] is True and job["status"] == "succeeded"
    assert r.header("Location") is None  # final already: links.self names it (api/openapi.yaml)
    assert job["links"]["self"] == f"/v1/jobs/{job['id']}"
    assert job["id"] != first["id"]
    assert job["cache_key"] == first["cache_key"]
    assert daemon.metric("partd_cache_hits_total") == hits + 1
    a = daemon.get(f"/v1/jobs/{first['id']}/result")
    b = daemon.get(f"/v1/jobs/{job['id']}/result")
    assert a.body == b.body == plan_offline(doc, tmp_path)
    assert a.header("ETag") == b.header("ETag")
    # The cached job is a real job: it can be fetched and listed.
    assert daemon.get(f"/v1/jobs/{job['id']}").json()["cached"] is True


def test_idempotent_retry_returns_the_same_job(daemon):
    doc = chain_request(20, seed=3)
    body = json.dumps(doc).encode()
    r1 = daemon.post_job(body, headers={"Idempotency-Key": "order-42"})
    assert r1.status == 202
    r2 = daemon.post_job(body, headers={"Idempotency-Key": "order-42"})
    assert r2.status in (200, 202)
    assert r2.json()["id"] == r1.json()["id"]
    daemon.wait_job(r1.json()["id"])
    r3 = daemon.post_job(body, headers={"Idempotency-Key": "order-42"})
    assert r3.status == 200 and r3.json()["id"] == r1.json()["id"]
    other = json.dumps(chain_request(21, seed=3)).encode()
    r4 = daemon.post_job(other, headers={"Idempotency-Key": "order-42"})
    assert r4.status == 422
    assert r4.header("Content-Type") == "application/problem+json"
    bad = daemon.post_job(body, headers={"Idempotency-Key": "x" * 300})
    assert bad.status == 400


def assert_problem(r, status):
    assert r.status == status, r
    assert r.header("Content-Type") == "application/problem+json"
    p = r.json()
    assert p["status"] == status
    assert {"type", "title", "detail"} <= set(p)
    return p


def test_malformed_truncated_and_non_json_bodies(daemon):
    body = json.dumps(chain_request(5)).encode()
    assert_problem(daemon.post_job(body[: len(body) // 2]), 400)
    assert_problem(daemon.post_job(b"this is not json"), 400)
    assert_problem(daemon.post_job(b""), 400)
    assert_problem(daemon.post_job(b"\xff\xfe{}"), 400)
    # JSON, but not the media type
    r = daemon.request("POST", "/v1/jobs", body=body, headers={"Content-Type": "text/plain"})
    assert_problem(r, 415)
    r = daemon.request("POST", "/v1/jobs", body=body)
    assert_problem(r, 415)
    r = daemon.request("POST", "/v1/jobs", body=body,
                       headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status == 202


def test_invalid_request_is_422_with_pointers(daemon):
    doc = chain_request(3)
    doc["devices"] = []
    doc["graph"]["nodes"][1]["inputs"] = ["nope"]
    p = assert_problem(daemon.post_job(doc), 422)
    pointers = {e["pointer"] for e in p["errors"]}
    assert "/graph/nodes/1/inputs/0" in pointers
    assert any(ptr.startswith("/devices") for ptr in pointers)


def test_unknown_ids_routes_and_methods(daemon):
    assert_problem(daemon.get("/v1/jobs/" + "0" * 32), 404)
    assert_problem(daemon.get("/v1/jobs/" + "0" * 32 + "/result"), 404)
    assert_problem(daemon.request("DELETE", "/v1/jobs/" + "0" * 32), 404)
    assert_problem(daemon.get("/v1/jobs/not-an-id"), 404)
    assert_problem(daemon.get("/nope"), 404)
    r = daemon.request("PUT", "/v1/jobs")
    assert_problem(r, 405)
    assert r.header("Allow") == "GET, HEAD, POST"
    r = daemon.request("POST", "/v1/jobs/" + "0" * 32, body=b"{}",
                       headers={"Content-Type": "application/json"})
    assert_problem(r, 405)
    assert r.header("Allow") == "GET, HEAD, DELETE"
    r = daemon.request("DELETE", "/livez")
    assert_problem(r, 405)
    assert r.header("Allow") == "GET, HEAD"


def test_conflicts_on_finished_and_failed_jobs(daemon):
    job = daemon.post_job(chain_request(10, seed=4)).json()
    daemon.wait_job(job["id"])
    p = assert_problem(daemon.request("DELETE", f"/v1/jobs/{job['id']}"), 409)
    assert "finished" in p["detail"]
    # A job that fails: no device can hold the graph.
    doc = chain_request(10, seed=5)
    for d in doc["devices"]:
        d["memory_bytes"] = 10
    r = daemon.post_job(doc)
    assert r.status == 202
    failed = daemon.wait_job(r.json()["id"])
    assert failed["status"] == "failed"
    assert failed["error"]["status"] >= 400
    res = daemon.get(f"/v1/jobs/{failed['id']}/result")
    assert res.status == failed["error"]["status"]
    assert res.json() == failed["error"]


def test_listing_is_newest_first_and_paginated(daemon):
    ids = []
    for seed in range(5):
        ids.append(daemon.post_job(chain_request(5, seed=100 + seed)).json()["id"])
    for i in ids:
        daemon.wait_job(i)
    seen, token, pages = [], None, 0
    while True:
        q = "/v1/jobs?limit=2" + (f"&page_token={token}" if token else "")
        page = daemon.get(q).json()
        pages += 1
        assert len(page["jobs"]) <= 2
        seen += [j["id"] for j in page["jobs"]]
        token = page["next_page_token"]
        if token is None:
            break
    assert seen == list(reversed(ids)) and pages == 3
    ok = daemon.get("/v1/jobs?status=succeeded&limit=100").json()
    assert [j["id"] for j in ok["jobs"]] == list(reversed(ids))
    assert daemon.get("/v1/jobs?status=running").json()["jobs"] == []
    assert_problem(daemon.get("/v1/jobs?status=bogus"), 400)
    assert_problem(daemon.get("/v1/jobs?limit=0"), 400)
    assert_problem(daemon.get("/v1/jobs?limit=abc"), 400)
    assert_problem(daemon.get("/v1/jobs?page_token=-1"), 400)


def test_health_version_and_metrics(daemon):
    assert daemon.get("/livez").status == 200
    r = daemon.get("/readyz")
    assert r.status == 200 and r.json()["status"] == "ready"
    v = daemon.get("/version").json()
    assert v["name"] == "partd" and v["version"] and v["planner_version"] and "build" in v
    job = daemon.post_job(chain_request(5, seed=9)).json()
    daemon.wait_job(job["id"])
    text = daemon.get("/metrics").body.decode()
    for name in ["partd_http_requests_total", "partd_http_request_duration_seconds_bucket",
                 "partd_jobs_submitted_total", "partd_jobs_finished_total",
                 "partd_job_duration_seconds_bucket", "partd_job_queue_wait_seconds_bucket",
                 "partd_jobs_queued", "partd_jobs_running", "partd_cache_hits_total",
                 "partd_cache_misses_total", "partd_cache_bytes", "partd_build_info",
                 "process_resident_memory_bytes", "process_open_fds",
                 "process_cpu_seconds_total", "process_start_time_seconds"]:
        assert re.search(rf"^{name}[{{ ]", text, re.M), name
    assert 'partd_http_requests_total{method="POST",route="/v1/jobs",code="202"} 1' in text
    assert 'partd_jobs_finished_total{status="succeeded"} 1' in text
    assert daemon.metric("partd_jobs_submitted_total") == 1
    assert daemon.metric("partd_cache_bytes") > 0


def test_every_request_logs_one_line_without_bodies(daemon):
    secret = "do-not-log-this-name"
    doc = chain_request(3)
    doc["graph"]["nodes"][1]["name"] = secret
    doc["graph"]["nodes"][2]["inputs"] = [secret]
    job = daemon.post_job(doc).json()
    daemon.wait_job(job["id"])
    daemon.get("/livez")
    daemon.wait_log(r"request method=GET path=/livez .*status=200")
    daemon.wait_log(r"request method=POST path=/v1/jobs .*status=202")
    daemon.wait_log(rf"job id={job['id']} status=succeeded")
    assert secret not in daemon.log()


def test_model_over_max_model_bytes_is_422_with_the_figure(make_daemon):
    d = make_daemon("--max-model-bytes", "20000")
    p = assert_problem(d.post_job(chain_request(2000)), 422)
    assert "20000" in json.dumps(p)
    assert d.post_job(chain_request(3)).status == 202


def test_retention_sweep_deletes_old_jobs_and_results(make_daemon):
    d = make_daemon("--retention-hours", "0", "--sweep-interval-s", "1")
    job = d.post_job(chain_request(8, seed=60)).json()
    # Followed in the log: a poll could race with the sweep itself.
    d.wait_log(rf"job id={job['id']} status=succeeded")
    d.wait_log(r"retention jobs_deleted=[1-9]")
    assert d.get(f"/v1/jobs/{job['id']}").status == 404
    assert d.get(f"/v1/jobs/{job['id']}/result").status == 404
    # The result left the cache too: resubmitting plans again.
    again = d.post_job(chain_request(8, seed=60))
    assert again.status == 202 and again.json()["cached"] is False


def test_checks_that_need_only_the_request_are_422_on_post(daemon):
    """cut_after names, stages against devices, SAC units, number ranges and
    integers are answered on POST, never by a failed job later."""
    import pathlib
    cases = []
    doc = chain_request(6, mode="pipeline")
    doc["options"]["pipeline"] = {"cut_after": ["n1", "nope"]}
    cases.append((doc, "/options/pipeline/cut_after/1", "names no node and no module"))
    doc = chain_request(6, mode="pipeline")
    doc["options"]["pipeline"] = {"stages": 4}
    cases.append((doc, "/options/pipeline/stages", "must be between 1 and 3"))
    doc = chain_request(6, mode="pipeline")
    doc["options"]["pipeline"] = {"cut_after": ["n5"]}
    cases.append((doc, "/options/pipeline/cut_after/0", "leaves the last stage empty"))
    doc = chain_request(6)
    doc["devices"][0]["speed"] = 1e-308
    cases.append((doc, "/devices/0/speed", "at least 1e-09 and at most 1e+09"))
    doc = chain_request(6)
    doc["graph"]["nodes"][2]["output_bytes"] = 4096.5
    cases.append((doc, "/graph/nodes/2/output_bytes", "an integer is needed"))
    doc = chain_request(6)
    for node in doc["graph"]["nodes"]:
        node.pop("output_bytes", None)
        node.pop("param_bytes", None)
    doc["graph"]["nodes"][2]["output_bytes"] = 2 ** 53
    doc["graph"]["nodes"][3]["output_bytes"] = 1
    cases.append((doc, "/graph/nodes/3/output_bytes", "more than 2^53"))
    root = pathlib.Path(__file__).resolve().parents[2]
    doc = json.loads((root / "examples" / "gpt2-sac" / "request.json").read_text())
    doc["options"]["sac"]["ac_units"] = ["nope"]
    cases.append((doc, "/options/sac/ac_units/0", "no module \"nope\""))
    for doc, pointer, words in cases:
        p = assert_problem(daemon.post_job(doc), 422)
        assert any(e["pointer"] == pointer and words in e["message"] for e in p["errors"]), \
            (pointer, p["errors"])
    # An integral number written with a fraction part is an integer.
    doc = chain_request(6)
    doc["graph"]["nodes"][2]["output_bytes"] = 4096.0
    r = daemon.post_job(doc)
    assert r.status in (200, 202), r
    assert daemon.wait_job(r.json()["id"])["status"] == "succeeded"


def test_first_mistakes_are_answered_with_what_to_do(daemon):
    """The mistakes a new user makes first get answers that say what was
    meant: an unknown or cut-short job id, an integer too big for any
    integer type (named by pointer, as 1e30 is), a misspelt member, and a
    block of options for another mode."""
    zero = "0" * 32
    for method, path in [("GET", f"/v1/jobs/{zero}"), ("GET", f"/v1/jobs/{zero}/result"),
                         ("DELETE", f"/v1/jobs/{zero}"), ("GET", f"/v1/jobs/{zero}/plan.svg")]:
        p = assert_problem(daemon.request(method, path), 404)
        assert p["detail"] == f"no job with id {zero}", (method, path)
    p = assert_problem(daemon.get("/v1/jobs/0123456789ab"), 404)
    assert p["detail"] == "no job with id 0123456789ab: job ids are 32 lowercase hex digits"
    assert assert_problem(daemon.get("/nope"), 404)["detail"] == "no such resource"

    cases = []
    for big in (10 ** 20, 1e30):
        doc = chain_request(4)
        doc["graph"]["nodes"][2]["output_bytes"] = big
        cases.append((doc, "/graph/nodes/2/output_bytes", "must be between 0 and 2^53"))
    doc = chain_request(4)
    doc["graph"]["nodes"][2]["latency"] = 1.5
    cases.append((doc, "/graph/nodes/2/latency", 'unknown member; did you mean "latency_ms"?'))
    doc = chain_request(4, mode="training")
    doc["options"]["pipeline"] = {"microbatches": 16}
    cases.append((doc, "/options/pipeline", "is read by mode pipeline only, not by mode training"))
    doc = chain_request(4, mode="size_based")
    doc["options"]["pipeline"] = {"stages": 2}
    cases.append((doc, "/options/pipeline", "is read by mode pipeline only, not by mode size_based"))
    for doc, pointer, words in cases:
        p = assert_problem(daemon.post_job(doc), 422)
        assert any(e["pointer"] == pointer and words in e["message"] for e in p["errors"]), \
            (pointer, p["errors"])


def test_training_result_warns_when_microbatches_exceed_the_batch(daemon):
    doc = chain_request(6, mode="training", slack=8.0)
    doc["graph"]["batch_size"] = 1
    doc["options"]["training"] = {"microbatches": 4}
    r = daemon.post_job(doc)
    assert r.status == 202, r
    assert daemon.wait_job(r.json()["id"])["status"] == "succeeded"
    result = daemon.get(f"/v1/jobs/{r.json()['id']}/result").json()
    assert [w["code"] for w in result["warnings"]] == ["microbatches-above-batch"]
    assert "graph.batch_size (1)" in result["warnings"][0]["message"]
    doc["graph"]["batch_size"] = 8
    result = daemon.get(f"/v1/jobs/{daemon.wait_job(daemon.post_job(doc).json()['id'])['id']}"
                        "/result").json()
    assert "warnings" not in result


def test_jobs_say_what_was_asked(daemon):
    """A job names the request's graph, mode and devices (in its document
    and in the list), so that a person tells jobs apart without hashes;
    two requests that share a cached result keep their own names."""
    doc = chain_request(5, seed=11, mode="pipeline")
    doc["graph"]["name"] = "first"
    first = daemon.post_job(doc).json()
    assert (first["graph_name"], first["mode"], first["n_devices"], first["devices"]) == \
        ("first", "pipeline", 3, ["gpu0", "gpu1", "gpu2"])
    daemon.wait_job(first["id"])
    doc["graph"]["name"] = "second"
    second = daemon.post_job(doc)
    assert second.status == 200 and second.json()["cached"] is True
    assert second.json()["graph_name"] == "second"
    assert daemon.get(f"/v1/jobs/{first['id']}").json()["graph_name"] == "first"
    listed = {j["id"]: j for j in daemon.get("/v1/jobs").json()["jobs"]}
    assert listed[first["id"]]["graph_name"] == "first"
    assert listed[second.json()["id"]]["devices"] == ["gpu0", "gpu1", "gpu2"]
    del doc["graph"]["name"]
    assert daemon.post_job(doc).json()["graph_name"] is None
