#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz drivers (tests/fuzz/corpus/<driver>/).

Seeds are valid and near-valid inputs: small requests in every planning mode
and option, requests with one thing wrong (the paths a validator takes), the
graph.modules objects of those requests and variants of them, and HTTP
requests for every route in the harness's text format (see http_harness.h).
`export_tiny_sac.json` (a two-block MLP exported with partd.exporter
--module-info --sac --sac-op-level) is kept as is and feeds the modules seeds.

The files named by a SHA-1 (no extension) are not written here: they are
what libFuzzer's -merge=1 kept from ten-minute campaigns of each driver (the
inputs that reach coverage the named seeds do not); they stay in the tree
so that fuzz-smoke starts from that coverage and the replay test
(tests/fuzz/test_regressions.c) runs them on every `make test`.

Deterministic: running it again rewrites the same files. Usage:
    /usr/bin/python3 tests/fuzz/make_corpus.py
"""
import copy
import json
import pathlib
import random

HERE = pathlib.Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
TINY = CORPUS / "request" / "export_tiny_sac.json"


def dump(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


def write(driver, name, data):
    path = CORPUS / driver / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def chain(n_ops, mode="pipeline", devices=2, seed=0, options=None):
    rnd = random.Random(seed)
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": 64}]
    prev = "x"
    for i in range(n_ops):
        nodes.append({"name": f"n{i}", "op": ["call_module", "call_function", "call_method"][i % 3],
                      "target": f"layer{i}", "inputs": [prev],
                      "output_bytes": rnd.randint(1, 500), "param_bytes": rnd.randint(0, 2000),
                      "latency_ms": rnd.randint(0, 40) / 8,
                      "mem_latency_ms": rnd.randint(0, 40) / 8})
        prev = f"n{i}"
    nodes.append({"name": "out", "op": "output", "inputs": [prev]})
    opts = {"mode": mode}
    opts.update(options or {})
    return {"graph": {"name": f"chain{n_ops}", "nodes": nodes},
            "devices": [{"name": f"d{k}", "memory_bytes": 100000, "speed": 1.0 + k / 2}
                        for k in range(devices)],
            "options": opts}


def tied():
    """get_attr, named and shared parameters, fan-out, module fqns, meta."""
    return {"graph": {"name": "tied", "meta": {"src": [1, {"k": None}]}, "nodes": [
        {"name": "ids", "op": "placeholder", "output_bytes": 32},
        {"name": "wte", "op": "get_attr", "target": "wte.weight",
         "params": [{"name": "wte.weight", "bytes": 4096}]},
        {"name": "emb", "op": "call_function", "target": "embedding", "inputs": ["ids", "wte"],
         "output_bytes": 256, "module": "wte"},
        {"name": "h0", "op": "call_module", "target": "h.0", "module": "h.0", "inputs": ["emb"],
         "output_bytes": 256, "params": [{"name": "h.0.w", "bytes": 1024}], "latency_ms": 2},
        {"name": "h1", "op": "call_module", "target": "h.1", "module": "h.1",
         "inputs": ["h0", "emb"], "output_bytes": 256,
         "params": [{"name": "h.1.w", "bytes": 1024}], "latency_ms": 2, "meta": {"x": 1}},
        {"name": "head", "op": "call_function", "target": "linear", "inputs": ["h1", "wte"],
         "output_bytes": 128, "module": "lm_head", "latency_ms": 1},
        {"name": "out", "op": "output", "inputs": ["head"]}]},
        "devices": [{"name": "a", "memory_bytes": 40000, "logical_id": 3},
                    {"name": "b", "memory_bytes": 40000, "logical_id": 1, "speed": 2,
                     "meta": {"kind": "t4"}}],
        "options": {"mode": "pipeline", "transfer_bytes_per_sec": 1e9,
                    "pipeline": {"stages": 2, "balance_by": "memory", "schedule": "1f1b",
                                 "microbatches": 4, "param_factor": 4.0,
                                 "cut_after": ["h0"]}}}


def request_seeds():
    seeds = {}
    seeds["size_based_chain.json"] = chain(6, "size_based", 3)
    seeds["size_based_split.json"] = chain(12, "size_based", 4, options=None)
    small = chain(8, "size_based", 3, seed=1)
    for d in small["devices"]:
        d["memory_bytes"] = 2500
    seeds["size_based_tight.json"] = small
    for by in ("time", "memory", "params", "uniform"):
        seeds[f"pipeline_{by}.json"] = chain(9, "pipeline", 3, seed=2,
                                             options={"pipeline": {"balance_by": by}})
    seeds["pipeline_gpipe.json"] = chain(7, options={"pipeline": {
        "schedule": "gpipe", "microbatches": 8, "stages": 2}})
    seeds["pipeline_cut_after_module.json"] = chain(7, options={"pipeline": {
        "cut_after": ["n2"], "param_factor": 2.5}})
    seeds["tied_params.json"] = tied()
    train = tied()
    train["options"] = {"mode": "training", "training": {
        "schedule": "gpipe", "microbatches": 3, "stages": "auto", "device_order": "auto",
        "checkpoint": "auto", "unit_depth": 1, "backward_factor": 1.5, "param_factor": 2.0}}
    train["graph"]["nodes"][3]["backward_ms"] = 3.5
    seeds["training_auto.json"] = train
    layered = chain(8, "training", 3, seed=4, options={
        "training": {"checkpoint": "except_last", "schedule": "1f1b", "stages": 2}})
    for i, node in enumerate(layered["graph"]["nodes"][1:-1]):
        node["module"] = f"layers.{i // 2}"
    seeds["training_except_last.json"] = layered
    # Nodes out of topological order (planned in a stable topological order).
    shuffled = chain(5, seed=3)
    shuffled["graph"]["nodes"].reverse()
    seeds["not_topological.json"] = shuffled
    # One thing wrong each.
    bad = chain(3)
    bad["graph"]["nodes"][2]["inputs"] = ["nowhere"]
    seeds["bad_unknown_input.json"] = bad
    bad = chain(3)
    bad["graph"]["nodes"][1]["inputs"] = ["n2"]
    seeds["bad_cycle.json"] = bad
    bad = chain(3)
    bad["graph"]["nodes"][2]["name"] = "n0"
    seeds["bad_duplicate_name.json"] = bad
    bad = chain(3)
    bad["graph"]["nodes"][1]["colour"] = "red"
    bad["devices"][0]["memory_bytes"] = 0
    bad["options"]["pipeline"] = {"stages": 99, "microbatches": 0}
    seeds["bad_members.json"] = bad
    bad = chain(3, "size_based")
    for d in bad["devices"]:
        d["memory_bytes"] = 10
    seeds["infeasible_size_based.json"] = bad
    bad = chain(3, "pipeline")
    for d in bad["devices"]:
        d["memory_bytes"] = 10
    seeds["infeasible_pipeline.json"] = bad
    bad = chain(3, "training")
    for d in bad["devices"]:
        d["memory_bytes"] = 10
    seeds["infeasible_training.json"] = bad
    seeds["bad_types.json"] = {"graph": {"nodes": [{"name": 1, "op": "call_function",
                                                    "output_bytes": -1, "latency_ms": "x"}]},
                               "devices": [{"name": "d", "memory_bytes": 1.5}],
                               "options": {"mode": "kl_based"}}
    seeds["no_operations.json"] = {"graph": {"nodes": [{"name": "x", "op": "placeholder"}]},
                                   "devices": [{"name": "d", "memory_bytes": 1}]}
    tiny = json.loads(TINY.read_text())
    sac = copy.deepcopy(tiny)
    sac["options"] = {"mode": "size_based",
                      "sac": {"memory_budget_bytes": 12000, "time_limit_ms": 200,
                              "ac_units": ["Tiny.layers.0", "Tiny.layers.1"]}}
    seeds["sac_budget_units.json"] = sac
    sac = copy.deepcopy(tiny)
    sac["options"] = {"sac": {"world_size": 2, "fsdp_units": ["Tiny", "Tiny.layers.0"],
                              "relative_gap": 0.01, "op_level": True}}
    seeds["sac_fsdp_oplevel.json"] = sac
    out = {name: dump(doc) for name, doc in seeds.items()}
    # Not JSON, or JSON the request rules reject early.
    out["malformed_truncated.json"] = dump(chain(2))[:-7]
    out["malformed_duplicate_key.json"] = b'{"graph":{},"graph":{}}'
    out["number_overflow.json"] = dump(chain(1)).replace(b'"latency_ms":', b'"latency_ms":1e400,"x":', 1)
    out["negative_zero.json"] = dump(chain(1)).replace(b'"output_bytes":64', b'"output_bytes":-0', 1)
    out["invalid_utf8.json"] = dump(chain(1)).replace(b'"chain1"', b'"ch\xc3\x28in"', 1)
    out["deep_nesting.json"] = b'{"graph":{"meta":' + b"[" * 300 + b"]" * 300 + b"}}"
    out["not_object.json"] = b"[1,2,3]"
    return out


def modules_seeds():
    tiny = json.loads(TINY.read_text())
    mods = tiny["graph"]["modules"]
    out = {"tiny_export.json": dump(mods)}
    no_sac = copy.deepcopy(mods)
    for st in no_sac["mod_stats"]:
        st.pop("sac_stats", None)
    out["tiny_no_sac_stats.json"] = dump(no_sac)
    one = {"mod_order": {k: ["M"] for k in mods["mod_order"]},
           "mod_stats": [dict(copy.deepcopy(mods["mod_stats"][0]), fqn="M")]}
    out["single_module.json"] = dump(one)
    bad = copy.deepcopy(mods)
    bad["mod_order"]["fw_post_order"].pop()
    out["bad_order_missing.json"] = dump(bad)
    bad = copy.deepcopy(mods)
    bad["mod_stats"][1]["n_segments"] = 5
    bad["mod_stats"][2]["fqn"] = "Tiny"
    out["bad_segments_duplicate.json"] = dump(bad)
    bad = copy.deepcopy(mods)
    st = next(s for s in bad["mod_stats"] if "sac_stats" in s)
    st["sac_stats"]["saved_autograd_ops"] = [99]
    st["sac_stats"]["inplace_ops"] = [[0, 7], [1]]
    out["bad_sac_stats_indices.json"] = dump(bad)
    out["not_object.json"] = b'["mod_order"]'
    out["empty_stats.json"] = b'{"mod_order":{},"mod_stats":[]}'
    return out


def http_seeds():
    body = dump(chain(4, seed=5))
    sac_body = TINY.read_bytes()
    auth = "Authorization: Bearer {token}\n"
    js = "Content-Type: application/json\n"
    seeds = {
        "livez.txt": "GET /livez\n\n",
        "readyz.txt": "GET /readyz\n\n",
        "metrics.txt": "GET /metrics\n\n",
        "version_head.txt": "HEAD /version\n\n",
        "list.txt": "GET /v1/jobs?status=succeeded&limit=2\n" + auth + "\n",
        "list_page.txt": "GET /v1/jobs?limit=1&page_token=999999\n" + auth + "\n",
        "list_bad.txt": "GET /v1/jobs?status=done&limit=0\n" + auth + "\n",
        "job.txt": "GET /v1/jobs/{id}\n" + auth + "\n",
        "job_unknown.txt": "GET /v1/jobs/0123456789abcdef0123456789abcdef\n" + auth + "\n",
        "result.txt": "GET /v1/jobs/{id}/result\n" + auth + "\n",
        "result_304.txt": "GET /v1/jobs/{id}/result\n" + auth + "If-None-Match: W/\"x\", {etag}\n\n",
        "result_star.txt": "GET /v1/jobs/{id}/result\n" + auth + "If-None-Match: *\n\n",
        "delete_finished.txt": "DELETE /v1/jobs/{id}\n" + auth + "\n",
        "wrong_method.txt": "PUT /v1/jobs/{id}\n" + auth + "\n",
        "no_token.txt": "GET /v1/jobs\n\n",
        "bad_token.txt": "GET /v1/jobs\nAuthorization: Bearer nope\n\n",
        "not_found.txt": "GET /v2/anything\n\n",
        "wrong_type.txt": "POST /v1/jobs\n" + auth + "Content-Type: text/plain\n\n" + body.decode(),
    }
    out = {k: v.encode() for k, v in seeds.items()}
    out["post.txt"] = ("POST /v1/jobs\n" + auth + js + "\n").encode() + body
    out["post_chunked.txt"] = ("POST /v1/jobs chunked\n" + auth + js + "\n").encode() + body
    out["post_idempotent.txt"] = ("POST /v1/jobs\n" + auth + js +
                                  "Idempotency-Key: key-1\n\n").encode() + body
    out["post_sac.txt"] = ("POST /v1/jobs\n" + auth + js + "\n").encode() + sac_body
    out["post_malformed.txt"] = ("POST /v1/jobs\n" + auth + js + "\n").encode() + body[:-9]
    out["post_invalid.txt"] = ("POST /v1/jobs\n" + auth +
                               "Content-Type: application/json; charset=utf-8\n\n"
                               ).encode() + b'{"graph":{"nodes":[]},"devices":[]}'
    return out


def main():
    for driver, seeds in (("request", request_seeds()), ("modules", modules_seeds()),
                          ("http", http_seeds())):
        (CORPUS / driver).mkdir(parents=True, exist_ok=True)
        for name, data in seeds.items():
            write(driver, name, data)


if __name__ == "__main__":
    main()
