"""api/: the JSON Schemas and the OpenAPI document against the contract,
the examples, and what partd really answers.

* every schema is a valid JSON Schema 2020-12; every $ref of openapi.yaml
  resolves; every route, method and status of the contract is documented;
* examples/*/request.json and result.json validate, and `partd plan`
  reproduces each example result byte for byte;
* the request schema and partd's decoder agree on valid and invalid
  requests (unknown members rejected everywhere but inside `meta`), and
  partd's problem documents validate against problem.json.
"""

import copy
import glob
import json
import os
import subprocess

import pytest

jsonschema = pytest.importorskip("jsonschema")
yaml = pytest.importorskip("yaml")

from partd_testlib import ROOT, TINY_REQUEST, run_plan  # noqa: E402

API = os.path.join(ROOT, "api")
SCHEMAS = os.path.join(API, "schemas")
EXAMPLES = os.path.join(ROOT, "examples")


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def schemas():
    return {os.path.splitext(os.path.basename(p))[0]: _load(p)
            for p in sorted(glob.glob(os.path.join(SCHEMAS, "*.json")))}


@pytest.fixture(scope="module")
def validator(schemas):
    store = {s["$id"]: s for s in schemas.values()}

    def make(name):
        schema = schemas[name]
        resolver = jsonschema.RefResolver.from_schema(schema, store=store)
        return jsonschema.Draft202012Validator(schema, resolver=resolver)
    return make


def _errors(validator, name, doc):
    return sorted(e.message for e in validator(name).iter_errors(doc))


# -- the schemas themselves ----------------------------------------------------


def test_four_schemas(schemas):
    assert sorted(schemas) == ["job", "problem", "request", "result"]


@pytest.mark.parametrize("name", ["job", "problem", "request", "result"])
def test_schema_is_valid_2020_12(schemas, name):
    jsonschema.Draft202012Validator.check_schema(schemas[name])
    assert schemas[name]["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def _objects(node, path=""):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _objects(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _objects(v, f"{path}/{i}")


@pytest.mark.parametrize("name", ["job", "problem", "request", "result"])
def test_every_object_schema_closes_its_members(schemas, name):
    """The contract rejects unknown members everywhere except inside `meta`
    (and the free-form maps keyed by module fqn or curve point)."""
    for path, node in _objects(schemas[name]):
        if node.get("type") == "object" and "properties" in node:
            assert node.get("additionalProperties") is False, f"{name}{path}"


# -- openapi.yaml ---------------------------------------------------------------


@pytest.fixture(scope="module")
def openapi():
    with open(os.path.join(API, "openapi.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def _resolve_pointer(doc, fragment):
    node = doc
    for token in fragment.lstrip("/").split("/") if fragment.strip("/") else []:
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def test_openapi_refs_resolve(openapi, schemas):
    refs = [(p, n["$ref"]) for p, n in _objects(openapi) if "$ref" in n]
    assert len(refs) > 40
    for path, ref in refs:
        target, _, fragment = ref.partition("#")
        if target:
            file = os.path.join(API, target)
            assert os.path.exists(file), f"{path}: {ref}"
            _resolve_pointer(_load(file), fragment)
        else:
            _resolve_pointer(openapi, fragment)


def test_openapi_is_3_1_with_the_schema_dialect(openapi):
    assert openapi["openapi"].startswith("3.1.")
    assert openapi["info"]["title"] == "partd"


# Every route, method and status the contract names.
CONTRACT = {
    ("/v1/jobs", "post"): {"200", "202", "400", "401", "413", "415", "422", "429"},
    ("/v1/jobs", "get"): {"200"},
    ("/v1/jobs/{id}", "get"): {"200", "404"},
    ("/v1/jobs/{id}", "delete"): {"200", "409"},
    ("/v1/jobs/{id}/result", "get"): {"200", "304", "409"},
    ("/v1/jobs/{id}/plan.svg", "get"): {"200", "304", "401", "404", "409"},
    ("/v1/jobs/{id}/export/{format}", "get"): {"200", "304", "401", "404", "409", "422"},
    ("/", "get"): {"200"},
    ("/livez", "get"): {"200"},
    ("/readyz", "get"): {"200", "503"},
    ("/metrics", "get"): {"200"},
    ("/version", "get"): {"200"},
}


@pytest.mark.parametrize("route,method", sorted(CONTRACT))
def test_openapi_documents_the_contract(openapi, route, method):
    op = openapi["paths"][route][method]
    assert CONTRACT[(route, method)] <= set(op["responses"]), route
    assert op.get("operationId")


def test_openapi_documents_the_headers(openapi):
    post = openapi["paths"]["/v1/jobs"]["post"]
    assert {"Location", "Retry-After"} <= set(post["responses"]["202"]["headers"])
    params = [p if "$ref" not in p else _resolve_pointer(openapi, p["$ref"][1:])
              for p in post["parameters"]]
    assert [p["name"] for p in params] == ["Idempotency-Key", "Content-Encoding"]
    result = openapi["paths"]["/v1/jobs/{id}/result"]["get"]
    assert {"ETag", "Content-Encoding", "Vary"} <= set(result["responses"]["200"]["headers"])
    assert {"ETag", "Vary"} <= set(result["responses"]["304"]["headers"])
    assert [p["name"] for p in result["parameters"]] == ["If-None-Match", "Accept-Encoding"]
    assert "406" in result["responses"]
    svg = openapi["paths"]["/v1/jobs/{id}/plan.svg"]["get"]
    assert "ETag" in svg["responses"]["200"]["headers"] and "image/svg+xml" in svg["responses"]["200"]["content"]
    assert "ETag" in svg["responses"]["304"]["headers"]
    page = openapi["paths"]["/"]["get"]["responses"]["200"]
    assert {"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy"} <= set(page["headers"])
    queue_full = openapi["components"]["responses"]["QueueFull"]
    assert "Retry-After" in queue_full["headers"]
    assert openapi["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


# -- examples ------------------------------------------------------------------

EXAMPLE_REQUESTS = sorted(glob.glob(os.path.join(EXAMPLES, "*", "request.json")))
EXAMPLE_IDS = [os.path.basename(os.path.dirname(p)) for p in EXAMPLE_REQUESTS]


def _result_path(request_path):
    return os.path.join(os.path.dirname(request_path), "result.json")


def test_examples_exist():
    assert {"resnet50", "resnet50-size_based", "gpt2-small", "gpt2-sac", "vit_b_16"} <= set(EXAMPLE_IDS)
    for req in EXAMPLE_REQUESTS:
        assert os.path.exists(_result_path(req)), req


@pytest.mark.parametrize("path", EXAMPLE_REQUESTS, ids=EXAMPLE_IDS)
def test_example_request_validates(validator, path):
    assert _errors(validator, "request", _load(path)) == []


@pytest.mark.parametrize("path", EXAMPLE_REQUESTS, ids=EXAMPLE_IDS)
def test_example_result_validates(validator, path):
    result = _load(_result_path(path))
    assert _errors(validator, "result", result) == []


@pytest.mark.parametrize("path", EXAMPLE_REQUESTS, ids=EXAMPLE_IDS)
def test_example_result_is_what_partd_plans(partd_plan_bin, path):
    """Determinism, and the examples stay current: planning the example
    request again gives the stored result byte for byte."""
    proc = subprocess.run([partd_plan_bin, "plan", path], capture_output=True, timeout=300)
    if proc.returncode == 2 and b"unsupported-mode" in proc.stderr:
        pytest.skip("this partd build cannot plan the example's mode yet")
    assert proc.returncode == 0, proc.stderr.decode()
    with open(_result_path(path), "rb") as f:
        assert proc.stdout == f.read(), (
            "the stored result is stale: after a planner change run "
            "`examples/generate.sh --plan-only` and review the diff")


# -- schema and decoder agree -------------------------------------------------------


def _tiny():
    return copy.deepcopy(TINY_REQUEST)


def _with(mutate):
    req = _tiny()
    mutate(req)
    return req


VALID = {
    "tiny": _tiny(),
    "meta-anywhere-it-is-allowed": _with(lambda r: (
        r["graph"]["nodes"][0].update(meta={"anything": [1, {"x": None}]}),
        r["devices"][0].update(meta={"rack": 3}))),
    "every-option": _with(lambda r: r.update(options={
        "mode": "pipeline", "transfer_bytes_per_sec": 2.5e10,
        "pipeline": {"stages": 1, "balance_by": "memory", "cut_after": [],
                     "schedule": "1f1b", "microbatches": 8, "param_factor": 4.0}})),
    "params-instead-of-param-bytes": _with(lambda r: r["graph"]["nodes"][1].update(
        params=[{"name": "w", "bytes": 16}])),
    "device-with-speed-and-logical-id": _with(lambda r: r["devices"][0].update(
        speed=2.0, logical_id=7)),
    "integers-written-with-a-fraction-part": _with(lambda r: (
        r["graph"]["nodes"][1].update(output_bytes=64.0),
        r["devices"][0].update(logical_id=3.0),
        r["options"].update(mode="pipeline", pipeline={"microbatches": 2.0}))),
    "batch-size": _with(lambda r: r["graph"].update(batch_size=8)),
    "training-with-its-block": _with(lambda r: r.update(options={
        "mode": "training", "training": {"microbatches": 1}, "result": {"detail": "full"}})),
    "slowest-speed-and-rate": _with(lambda r: (
        r["devices"][0].update(speed=1e-9),
        r["options"].update(transfer_bytes_per_sec=1))),
}

INVALID = {
    "unknown-root-member": (_with(lambda r: r.update(extra=1)), "/extra"),
    "unknown-node-member": (_with(lambda r: r["graph"]["nodes"][1].update(shape=[1])),
                            "/graph/nodes/1/shape"),
    "unknown-option": (_with(lambda r: r["options"].update(fast=True)), "/options/fast"),
    "unknown-pipeline-option": (_with(lambda r: r["options"].update(
        mode="pipeline", pipeline={"stage": 2})), "/options/pipeline/stage"),
    "unknown-device-member": (_with(lambda r: r["devices"][0].update(memory=1)),
                              "/devices/0/memory"),
    "meta-not-an-object": (_with(lambda r: r["graph"]["nodes"][0].update(meta=[])),
                           "/graph/nodes/0/meta"),
    "zero-memory": (_with(lambda r: r["devices"][0].update(memory_bytes=0)),
                    "/devices/0/memory_bytes"),
    "negative-bytes": (_with(lambda r: r["graph"]["nodes"][1].update(output_bytes=-1)),
                       "/graph/nodes/1/output_bytes"),
    "fractional-bytes": (_with(lambda r: r["graph"]["nodes"][1].update(output_bytes=1.5)),
                         "/graph/nodes/1/output_bytes"),
    "bad-op": (_with(lambda r: r["graph"]["nodes"][1].update(op="call")),
               "/graph/nodes/1/op"),
    "empty-name": (_with(lambda r: r["graph"]["nodes"][1].update(name="")),
                   "/graph/nodes/1/name"),
    "name-too-long": (_with(lambda r: r["devices"][0].update(name="d" * 1025)),
                      "/devices/0/name"),
    "no-devices": (_with(lambda r: r.update(devices=[])), "/devices"),
    "bad-mode": (_with(lambda r: r["options"].update(mode="greedy")), "/options/mode"),
    "zero-speed": (_with(lambda r: r["devices"][0].update(speed=0)), "/devices/0/speed"),
    "zero-microbatches": (_with(lambda r: r["options"].update(
        mode="pipeline", pipeline={"microbatches": 0})), "/options/pipeline/microbatches"),
    "param-without-bytes": (_with(lambda r: r["graph"]["nodes"][1].update(
        params=[{"name": "w"}])), "/graph/nodes/1/params/0/bytes"),
    "negative-latency": (_with(lambda r: r["graph"]["nodes"][1].update(latency_ms=-1)),
                         "/graph/nodes/1/latency_ms"),
    "frontier-points-too-few": (_with(lambda r: r["options"].update(
        sac={"frontier_points": 1})), "/options/sac/frontier_points"),
    "a-fraction-of-a-byte": (_with(lambda r: r["graph"]["nodes"][1].update(
        output_bytes=4096.5)), "/graph/nodes/1/output_bytes"),
    "fractional-microbatches": (_with(lambda r: r["options"].update(
        mode="pipeline", pipeline={"microbatches": 2.5})), "/options/pipeline/microbatches"),
    "speed-so-small-times-overflow": (_with(lambda r: r["devices"][0].update(speed=1e-308)),
                                      "/devices/0/speed"),
    "rate-below-one-byte-per-second": (_with(lambda r: r["options"].update(
        transfer_bytes_per_sec=0.5)), "/options/transfer_bytes_per_sec"),
    "zero-batch-size": (_with(lambda r: r["graph"].update(batch_size=0)),
                        "/graph/batch_size"),
    "integer-too-big-for-any-integer-type": (_with(lambda r: r["graph"]["nodes"][1].update(
        output_bytes=10 ** 20)), "/graph/nodes/1/output_bytes"),
    # each mode reads only its own options block
    "pipeline-block-under-training": (_with(lambda r: r.update(options={
        "mode": "training", "pipeline": {"microbatches": 16}})), "/options/pipeline"),
    "pipeline-block-under-size_based": (_with(lambda r: r["options"].update(
        pipeline={"stages": 1})), "/options/pipeline"),
    "training-block-under-the-default-mode": (_with(lambda r: r.update(options={
        "training": {"microbatches": 4}})), "/options/training"),
    "sac-under-training": (_with(lambda r: r.update(options={
        "mode": "training", "sac": {}})), "/options/sac"),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_requests_pass_schema_and_partd(validator, partd_plan_bin, name):
    assert _errors(validator, "request", VALID[name]) == []
    status, result, problem, stderr = run_plan(partd_plan_bin, VALID[name])
    assert status == 0, stderr


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_requests_fail_schema_and_partd(validator, partd_plan_bin, name):
    request, pointer = INVALID[name]
    assert _errors(validator, "request", request) != []
    status, _, problem, stderr = run_plan(partd_plan_bin, request)
    assert status == 2, stderr
    assert _errors(validator, "problem", problem) == []
    assert problem["status"] == 422
    assert pointer in [e["pointer"] for e in problem["errors"]], problem


def test_infeasible_problem_validates(validator, partd_plan_bin):
    request = _with(lambda r: r["devices"][0].update(memory_bytes=1))
    status, _, problem, stderr = run_plan(partd_plan_bin, request)
    assert status == 3, stderr
    assert _errors(validator, "problem", problem) == []


def test_infeasible_sac_budget_problem_validates(validator, partd_plan_bin):
    """A SAC budget below the least peak fails with a problem carrying
    min_peak_memory_bytes (an extension member the schema lists)."""
    with open(os.path.join(EXAMPLES, "gpt2-sac", "request.json")) as f:
        request = json.load(f)
    request["options"]["sac"]["memory_budget_bytes"] = 1
    status, result, problem, stderr = run_plan(partd_plan_bin, request)
    assert status == 3, stderr
    assert result is None
    assert _errors(validator, "problem", problem) == []
    assert problem["type"] == "urn:partd:problem:infeasible"
    assert problem["min_peak_memory_bytes"] > 1


def test_warnings_of_a_real_plan_validate(validator, partd_plan_bin):
    """A training plan whose microbatches exceed graph.batch_size has a
    `warnings` list; the schema documents it."""
    request = _with(lambda r: (r["graph"].update(batch_size=1), r.update(options={
        "mode": "training", "training": {"microbatches": 2}})))
    status, result, _, stderr = run_plan(partd_plan_bin, request)
    assert status == 0, stderr
    assert [w["code"] for w in result["warnings"]] == ["microbatches-above-batch"]
    assert _errors(validator, "result", result) == []


def test_result_of_a_real_plan_validates(validator, partd_plan_bin):
    status, result, _, stderr = run_plan(partd_plan_bin, TINY_REQUEST)
    assert status == 0, stderr
    assert _errors(validator, "result", result) == []
    assert "solve_ms" not in json.dumps(result)


@pytest.mark.parametrize("example", ["gpt2-training", "resnet50"])
def test_summary_detail_results_validate(validator, partd_plan_bin, example):
    """options.result.detail "summary": valid request and result, without
    the node lists, and otherwise the full result's members."""
    with open(os.path.join(ROOT, "examples", example, "request.json"), encoding="utf-8") as f:
        request = json.load(f)
    request.setdefault("options", {})["result"] = {"detail": "summary"}
    assert _errors(validator, "request", request) == []
    status, result, _, stderr = run_plan(partd_plan_bin, request)
    assert status == 0, stderr
    assert _errors(validator, "result", result) == []
    with open(os.path.join(ROOT, "examples", example, "result.json"), encoding="utf-8") as f:
        full = json.load(f)
    for part, full_part in zip(result["partitions"], full["partitions"]):
        assert not {"nodes", "inputs", "outputs"} & set(part)
        assert {k: v for k, v in full_part.items()
                if k not in ("nodes", "inputs", "outputs")} == part
    assert all("tensors" not in b for b in result["boundaries"])
    assert result["summary"] == full["summary"]


def test_schemas_reject_what_the_contract_forbids(validator):
    job = {"id": "0" * 32, "status": "done", "created_at": "2026-01-01T00:00:00Z",
           "started_at": None, "finished_at": None, "graph_hash": "sha256:" + "0" * 64,
           "cache_key": "sha256:" + "1" * 64, "cached": False, "attempts": 0, "runner": None,
           "links": {"self": "/v1/jobs/" + "0" * 32, "result": "/v1/jobs/" + "0" * 32 + "/result"}}
    assert _errors(validator, "job", job)  # unknown status
    job["status"] = "queued"
    assert _errors(validator, "job", job) == []
    job["status"] = "succeeded"
    assert _errors(validator, "job", job)  # summary required
    problem = {"type": "urn:partd:problem:x", "title": "t", "status": 422, "detail": "d",
               "errors": [{"pointer": "/a/b~1c", "message": "m"}]}
    assert _errors(validator, "problem", problem) == []
    problem["errors"][0]["pointer"] = "a/b"
    assert _errors(validator, "problem", problem)
