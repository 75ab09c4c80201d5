"""Mode training through the HTTP API: a job plans what `partd plan` plans,
its summary carries the step figures, no plan that fits is a failed job
naming the stage short of memory, and a bad training option is a 422 with
its pointer before any job exists."""
from conftest import chain_request, plan_offline


def training_request(seed, **training):
    doc = chain_request(12, seed=seed, devices=3, mode="training", slack=8.0)
    for i, node in enumerate(doc["graph"]["nodes"][1:-1]):
        node["module"] = f"blocks.{i // 2}.op{i % 2}"
    doc["options"]["training"] = dict({"microbatches": 4, "device_order": "auto"}, **training)
    return doc


def test_training_job_matches_partd_plan(daemon, tmp_path):
    doc = training_request(1)
    r = daemon.post_job(doc)
    assert r.status == 202, r
    done = daemon.wait_job(r.json()["id"])
    assert done["status"] == "succeeded", done
    res = daemon.get(done["links"]["result"])
    assert res.status == 200
    assert res.body == plan_offline(doc, tmp_path)
    summary = res.json()["summary"]
    assert summary == done["summary"]
    assert summary["checkpoint"] == "auto" and summary["microbatches"] == 4
    assert summary["step_ms"] == summary["total_ms"] > 0
    for part in res.json()["partitions"]:
        assert part["memory_bytes"] <= part["device_memory_bytes"]
        assert part["units"] and "in_flight" in part


def test_training_without_a_fitting_plan_fails_the_job(daemon):
    doc = training_request(2, checkpoint="always")
    for d in doc["devices"]:
        d["memory_bytes"] = 1000
    r = daemon.post_job(doc)
    assert r.status == 202, r
    failed = daemon.wait_job(r.json()["id"])
    assert failed["status"] == "failed"
    err = failed["error"]
    assert err["type"].endswith(":infeasible")
    assert "short by" in err["detail"]
    assert any(e["pointer"].startswith("/devices/") for e in err["errors"])


def test_bad_training_option_is_422_with_pointer(daemon):
    doc = training_request(3, microbatches=0, checkpoint="sometimes")
    r = daemon.post_job(doc)
    assert r.status == 422, r
    pointers = {e["pointer"] for e in r.json()["errors"]}
    assert {"/options/training/microbatches", "/options/training/checkpoint"} <= pointers
