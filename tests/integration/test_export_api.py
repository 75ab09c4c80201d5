"""GET /v1/jobs/{id}/export/{format} (contract v3, "Plan export" and the HTTP
API's export row) against the real daemon: every format answers the very
bytes (or the very problem) `partd export` makes of the job's result, with
the format's Content-Type and the result's ETag + "-" + format (304 on
If-None-Match); `?strict=1` is `--strict`; 404 for an unknown id or
format, 409 while the job has no plan, 422 when the format cannot say
the plan, 401 without the token."""
import json
import subprocess

import pytest

from conftest import PARTD_BIN, assert_problem, chain_request, infeasible_doc, submit_and_wait

TOKEN = "export-token-77c0a1"
FORMATS = {"torchtitan": "application/toml", "pytorch": "text/csv",
           "pytorch-split": "application/json", "megatron": "text/plain",
           "deepspeed": "application/json", "fairscale": "application/json",
           "fx": "application/json"}


def training_request(seed, checkpoint="auto"):
    """Six layers of two nodes on two ranks, 1F1B over 4 microbatches."""
    doc = chain_request(12, seed=seed, devices=3, mode="training", slack=8.0)
    for i, node in enumerate(doc["graph"]["nodes"][1:-1]):
        node["module"] = f"layers.{i // 2}.op{i % 2}"
    doc["options"]["training"] = {"microbatches": 4, "device_order": "auto", "stages": 2,
                                  "schedule": "1F1B", "checkpoint": checkpoint}
    return doc


def cli_export(result, fmt, *args):
    """`partd export` of the result bytes: (exit code, stdout, stderr)."""
    p = subprocess.run([PARTD_BIN, "export", "-", "--format", fmt, *args], input=result,
                       capture_output=True)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def token_daemon(make_daemon, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    d = make_daemon("--workers", "1", "--token-file", str(token_file))
    d.token = TOKEN
    return d


def test_every_format_is_partd_export_of_the_result(token_daemon):
    d = token_daemon
    done = submit_and_wait(d, training_request(3))
    assert done["status"] == "succeeded"
    result = d.get(f"/v1/jobs/{done['id']}/result")
    tag = result.header("ETag")[:-1]
    answered = set()
    for fmt, ctype in FORMATS.items():
        path = f"/v1/jobs/{done['id']}/export/{fmt}"
        r = d.get(path)
        code, out, err = cli_export(result.body, fmt)
        answered.add(r.status)
        if code == 0:
            assert r.status == 200, (fmt, r)
            assert r.header("Content-Type") == ctype
            assert r.body == out  # the very bytes of `partd export`
            assert r.header("ETag") == tag + "-" + fmt + '"'
            assert r.header("X-Content-Type-Options") == "nosniff"
            again = d.get(path, headers={"If-None-Match": r.header("ETag")})
            assert again.status == 304 and again.body == b""
            assert again.header("ETag") == r.header("ETag")
            # the result's own tag, or another format's, is not this one
            assert d.get(path, headers={"If-None-Match": result.header("ETag")}).status == 200
            head = d.request("HEAD", path)
            assert head.status == 200 and head.body == b""
            assert head.header("Content-Type") == ctype
        else:
            assert code == 2
            doc = assert_problem(r, 422, "export-not-expressible")
            assert doc == json.loads(err)  # the very problem of `partd export`
            assert doc["errors"] and all("pointer" in e for e in doc["errors"])
    # this plan has formats that say it and formats that cannot (fairscale:
    # Pipe runs GPipe; megatron: no embedding or head)
    assert answered == {200, 422}
    assert d.get(f"/v1/jobs/{done['id']}/export/pytorch", auth=False).status == 401
    assert d.metric("partd_http_requests_total",
                    'method="GET",route="/v1/jobs/{id}/export/{format}",code="304"') >= 4


def test_strict_refuses_what_the_format_approximates(token_daemon):
    d = token_daemon
    # except_last: torchtitan checkpoints every microbatch, more than planned
    done = submit_and_wait(d, training_request(3, checkpoint="except_last"))
    assert done["status"] == "succeeded"
    result = d.get(f"/v1/jobs/{done['id']}/result").body
    path = f"/v1/jobs/{done['id']}/export/torchtitan"
    lenient = d.get(path)
    code, out, _ = cli_export(result, "torchtitan")
    assert code == 0 and lenient.status == 200 and lenient.body == out
    assert b"# warning (" in lenient.body
    for query in ("?strict=1", "?strict=true", "?strict"):
        strict = d.get(path + query, headers={"If-None-Match": lenient.header("ETag")})
        doc = assert_problem(strict, 422, "export-not-expressible")
        code, _, err = cli_export(result, "torchtitan", "--strict")
        assert code == 2 and doc == json.loads(err)
    for query in ("?strict=0", "?strict=false"):
        r = d.get(path + query)
        assert r.status == 200 and r.body == lenient.body
        assert r.header("ETag") == lenient.header("ETag")
    assert_problem(d.get(path + "?strict=yes"), 400, "bad-query")
    # what is exact exports under strict too, tagged apart from the lenient
    exact = f"/v1/jobs/{done['id']}/export/pytorch"
    r = d.get(exact + "?strict=1")
    assert r.status == 200 and r.body == d.get(exact).body
    assert r.header("ETag").endswith('-pytorch-strict"')
    assert d.get(exact + "?strict=1", headers={"If-None-Match": r.header("ETag")}).status == 304


def test_unknown_ids_and_formats_are_404(token_daemon):
    d = token_daemon
    done = submit_and_wait(d, training_request(4))
    for fmt in ("toml", "PyTorch", "py%74orch", "x" * 32):
        doc = assert_problem(d.get(f"/v1/jobs/{done['id']}/export/{fmt}"), 404, "not-found")
        if fmt == "toml":
            assert "torchtitan" in doc["detail"]
    assert_problem(d.get("/v1/jobs/" + "0" * 32 + "/export/pytorch"), 404, "not-found")
    assert_problem(d.get(f"/v1/jobs/{done['id']}/export/"), 404, "not-found")
    assert_problem(d.get(f"/v1/jobs/{done['id']}/export"), 404, "not-found")
    assert_problem(d.get(f"/v1/jobs/{done['id']}/export/pytorch/x"), 404, "not-found")
    r = d.request("POST", f"/v1/jobs/{done['id']}/export/pytorch", body=b"{}",
                  headers={"Content-Type": "application/json"})
    assert r.status == 405 and r.header("Allow") == "GET, HEAD"


def test_jobs_without_a_plan_are_409(token_daemon, slow_body):
    d = token_daemon
    failed = submit_and_wait(d, infeasible_doc(seed=22))
    assert failed["status"] == "failed"
    assert_problem(d.get(f"/v1/jobs/{failed['id']}/export/fx"), 409, "job-failed")
    big = d.post_job(slow_body).json()["id"]
    d.wait_job(big, statuses=("running",))
    queued = d.post_job(training_request(5)).json()["id"]
    assert d.job(queued)["status"] == "queued"
    for job_id in (big, queued):
        r = d.get(f"/v1/jobs/{job_id}/export/pytorch")
        p = assert_problem(r, 409, "job-not-finished")
        assert r.header("Retry-After") == "1" and job_id in p["detail"]
    for job_id in (queued, big):
        assert d.request("DELETE", f"/v1/jobs/{job_id}").status == 200
        assert_problem(d.get(f"/v1/jobs/{job_id}/export/pytorch"), 409, "job-cancelled")


def test_node_level_results(daemon):
    """A pipeline result: fx and fairscale say it (in nodes); pytorch-split
    names the module whose call begins each stage; the formats of training
    plans refuse it with a problem naming /mode."""
    doc = chain_request(20, seed=9, devices=3, mode="pipeline")
    for i, node in enumerate(doc["graph"]["nodes"][1:-1]):
        node["module"] = node["target"] = f"blocks.{i}"
    doc["options"]["pipeline"] = {"schedule": "gpipe", "microbatches": 4}
    done = submit_and_wait(daemon, doc)
    assert done["status"] == "succeeded"
    result = daemon.get(f"/v1/jobs/{done['id']}/result").body
    parts = json.loads(result)["partitions"]
    fx = daemon.get(f"/v1/jobs/{done['id']}/export/fx")
    assert fx.status == 200 and fx.body == cli_export(result, "fx")[1]
    mapping = fx.json()["node_to_partition"]
    assert set(mapping) == {f"n{i}" for i in range(20)}
    fs = daemon.get(f"/v1/jobs/{done['id']}/export/fairscale")
    assert fs.status == 200 and fs.json()["balance"] == [len(p["nodes"]) for p in parts]
    assert fs.json()["chunks"] == 4 and "warnings" not in fs.json()
    split = daemon.get(f"/v1/jobs/{done['id']}/export/pytorch-split")
    assert split.status == 200 and split.body == cli_export(result, "pytorch-split")[1]
    # blocks.i is node n<i>: each stage's first node names its module
    assert split.json()["split_spec"] == {
        "blocks." + p["nodes"][0][1:]: "BEGINNING" for p in parts[1:]}
    assert (split.json()["schedule"], split.json()["n_microbatches"]) == ("GPipe", 4)
    doc = assert_problem(daemon.get(f"/v1/jobs/{done['id']}/export/torchtitan"), 422,
                         "export-not-expressible")
    assert doc["errors"][0]["pointer"] == "/mode"
