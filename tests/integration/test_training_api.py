"""Mode training through the HTTP API (contract v3): a job plans what
`partd plan` plans and its result carries the plan a runtime runs (every
rank's actions, per stage its rank and durations, ranks[], the proof);
schedule takes a name, v2's names, a list or auto, virtual_stages a number
or auto; no plan that fits is a failed job naming the rank short of
memory; and every option the graph cannot run is a 422 with its pointer
before any job exists."""
import re

from conftest import chain_request, plan_offline


def training_request(seed, **training):
    doc = chain_request(12, seed=seed, devices=3, mode="training", slack=8.0)
    for i, node in enumerate(doc["graph"]["nodes"][1:-1]):
        node["module"] = f"blocks.{i // 2}.op{i % 2}"
    doc["options"]["training"] = dict({"microbatches": 4, "device_order": "auto"}, **training)
    return doc


def planned(daemon, doc):
    r = daemon.post_job(doc)
    assert r.status == 202, r
    done = daemon.wait_job(r.json()["id"])
    assert done["status"] == "succeeded", done
    res = daemon.get(done["links"]["result"])
    assert res.status == 200
    return done, res


def test_training_job_matches_partd_plan(daemon, tmp_path):
    doc = training_request(1, schedule="auto")
    done, res = planned(daemon, doc)
    assert res.body == plan_offline(doc, tmp_path)
    result = res.json()
    summary = result["summary"]
    assert summary == done["summary"]
    assert summary["checkpoint"] == "auto" and summary["microbatches"] == 4
    assert summary["step_ms"] == summary["total_ms"] > 0
    assert summary["optimal"] is True and summary["gap"] == 0
    assert summary["lower_bound_ms"] == summary["step_ms"]
    S, v = summary["stages"], summary["virtual_stages"]
    assert len(result["partitions"]) == S * v == summary["partitions"]
    assert result["schedule"]["name"] == summary["schedule"]
    assert len(result["schedule"]["actions"]) == len(result["ranks"]) == S
    for part in result["partitions"]:
        assert part["units"] and 0 <= part["rank"] < S
        assert abs(part["time_ms"] - part["forward_ms"] - part["backward_ms"] -
                   part["recompute_ms"]) < 1e-9
    for k, rank in enumerate(result["ranks"]):
        assert rank["rank"] == k and rank["memory_bytes"] <= rank["device_memory_bytes"]
        mine = {p["id"] for p in result["partitions"] if p["rank"] == k}
        assert set(rank["stages"]) == mine
        acts = result["schedule"]["actions"][k]
        # one F, and a B or an I and a W, per stage and microbatch
        assert len(acts) >= 2 * v * 4
        assert {int(re.match(r"\d+", a).group()) for a in acts} == mine


def test_schedule_names_lists_and_v(daemon):
    """A name (PyTorch's or v2's) plans that schedule; a list chooses
    among its members; virtual_stages fixes the looped schedules' v."""
    _, res = planned(daemon, training_request(4, schedule="gpipe", stages=2))
    assert res.json()["summary"]["schedule"] == "GPipe"
    _, res = planned(daemon, training_request(4, schedule="ZBVZeroBubble", stages=2))
    assert res.json()["summary"]["virtual_stages"] == 2
    assert res.json()["schedule"]["actions"][0][0] == "0F0"
    assert any(a.endswith("W0") for a in res.json()["schedule"]["actions"][0])
    _, res = planned(daemon, training_request(4, schedule=["LoopedBFS", "Interleaved1F1B"],
                                              virtual_stages=2, stages=2))
    summary = res.json()["summary"]
    assert summary["schedule"] in ("LoopedBFS", "Interleaved1F1B")
    assert summary["virtual_stages"] == 2 and len(res.json()["partitions"]) == 4


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
    assert "short by" in err["detail"] and "rank" in err["detail"]
    assert any(e["pointer"].startswith("/devices/") for e in err["errors"])


def problem_pointers(daemon, doc):
    r = daemon.post_job(doc)
    assert r.status == 422, r
    return {e["pointer"]: e["message"] for e in r.json()["errors"]}


def test_bad_training_option_is_422_with_pointer(daemon):
    pointers = problem_pointers(daemon, training_request(3, microbatches=0,
                                                         checkpoint="sometimes"))
    assert {"/options/training/microbatches", "/options/training/checkpoint"} <= set(pointers)
    pointers = problem_pointers(daemon, training_request(3, schedule=["GPipe", "Zero"],
                                                         virtual_stages=9,
                                                         weight_grad_fraction=2))
    assert {"/options/training/schedule/1", "/options/training/virtual_stages",
            "/options/training/weight_grad_fraction"} <= set(pointers)


def test_what_the_graph_cannot_run_is_422_before_a_job(daemon):
    """Conditions of a named schedule (PyTorch's), v a schedule cannot take,
    and weight_grad_ms above the node's backward: 422s naming the member,
    no job made."""
    before = len(daemon.get("/v1/jobs").json()["jobs"])
    pointers = problem_pointers(daemon, training_request(5, schedule="1F1B", stages=3,
                                                         microbatches=2))
    assert "microbatches >= stages" in pointers["/options/training/schedule"]
    pointers = problem_pointers(daemon, training_request(5, schedule="DualPipeV", stages=2,
                                                         microbatches=3))
    assert "2 x stages" in pointers["/options/training/schedule"]
    pointers = problem_pointers(daemon, training_request(5, schedule="GPipe",
                                                         virtual_stages=2))
    assert "/options/training/virtual_stages" in pointers
    doc = training_request(5)
    doc["graph"]["nodes"][3]["weight_grad_ms"] = 1000
    assert "/graph/nodes/3/weight_grad_ms" in problem_pointers(daemon, doc)
    assert len(daemon.get("/v1/jobs").json()["jobs"]) == before
