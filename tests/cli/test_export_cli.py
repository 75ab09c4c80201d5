"""`partd export` as a user runs it, each format checked with the rules of
the runtime that reads it (runtime_rules.py, written from the runtimes'
sources): the schedule CSV loaded and lowered as PyTorch's _load_csv does,
the torchtitan TOML parsed with tomllib and read as torchtitan reads it,
the Megatron layout parsed with Megatron-Core's grammar, DeepSpeed's parts
and fairscale's balance checked as those classes check them. Training
results are built as contract v3 describes them (partd's own training
planner still writes v2 results); pipeline and size_based ones are planned
by `partd plan` from the examples. Exit codes, stdin and -o, --strict."""
import copy
import json
import os
import subprocess
import tomllib

import pytest

import runtime_rules as rr

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PARTD = os.environ.get("PARTD_BIN", os.path.join(ROOT, "build", "partd"))
EXAMPLES = os.path.join(ROOT, "examples")


def run(args, stdin=None):
    return subprocess.run([PARTD] + args, input=stdin, capture_output=True)


def export(result, fmt, *extra):
    """The export of a result document (dict), with its exit code."""
    p = run(["export", "--format", fmt, *extra], json.dumps(result).encode())
    return p


def exported(result, fmt, *extra):
    p = export(result, fmt, *extra)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode()


def problem(p):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    doc = json.loads(p.stderr)
    assert doc["status"] in (400, 422)
    return doc


def llm_units(n_stages, layers_per_stage):
    """torchtitan's and Megatron's module names, split evenly: the embedding
    on stage 0, norm and output on the last."""
    units, k = [], 0
    for j in range(n_stages):
        stage = ["tok_embeddings"] if j == 0 else []
        stage += ["layers.%d" % (k + i) for i in range(layers_per_stage)]
        k += layers_per_stage
        if j == n_stages - 1:
            stage += ["norm", "output"]
        units.append(stage)
    return units


def training_result(schedule, ranks, v, m, units, checkpointed=None, checkpoint="auto",
                    actions=True):
    """A v3 training result (contract, "The training result")."""
    n = ranks * v
    assert len(units) == n
    rank_of = rr.stage_to_rank(ranks, n, rr.style_of(schedule))
    parts = []
    for j in range(n):
        r = rank_of[j]
        parts.append({
            "id": j, "device": "gpu%d" % r, "logical_ids": [r],
            "nodes": ["n_" + u.replace(".", "_").replace("#", "_") for u in units[j]],
            "memory_bytes": 1 << 30, "device_memory_bytes": 8 << 30, "param_bytes": 1 << 28,
            "compute_ms": 4.0, "transfer_in_bytes": 0, "time_ms": 3.0, "inputs": [],
            "outputs": [], "parents": [j - 1] if j else [], "children": [j + 1] if j + 1 < n else [],
            "rank": r, "units": units[j],
            "checkpointed": (checkpointed or [[]] * n)[j],
            "forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
            "recompute_ms": 0.0, "send_ms": 0.1, "param_memory_bytes": 1 << 30,
            "input_memory_bytes": 1 << 20, "activation_memory_bytes": 1 << 24})
    sched = {"name": schedule, "virtual_stages": v}
    if actions:
        sched["actions"] = [[rr.action_str(a) for a in rr.class_order(schedule, ranks, v, m, r)]
                            for r in range(ranks)]
    return {
        "mode": "training", "partitions": parts, "boundaries": [], "tied_params": [],
        "ranks": [{"rank": r, "device": "gpu%d" % r, "stages": [j for j in range(n) if rank_of[j] == r],
                   "memory_bytes": 1 << 30, "device_memory_bytes": 8 << 30, "busy_ms": 30.0}
                  for r in range(ranks)],
        "schedule": sched,
        "summary": {"partitions": n, "total_ms": 40.0, "transfer_bytes": 0,
                    "peak_memory_bytes": 1 << 30, "optimal": True, "step_ms": 40.0,
                    "bottleneck_ms": 30.0, "bubble_fraction": 0.25, "stages": ranks,
                    "virtual_stages": v, "microbatches": m, "schedule": schedule,
                    "checkpoint": checkpoint, "unit_depth": 2, "gap": 0.0,
                    "lower_bound_ms": 40.0}}


# Every schedule on shapes PyTorch's class runs (1F1B needs M >= S,
# Interleaved M a multiple of its rounds, DualPipeV M >= 2S).
SHAPES = [("GPipe", 1, 1, 3), ("GPipe", 3, 1, 5), ("1F1B", 2, 1, 2), ("1F1B", 4, 1, 7),
          ("LoopedBFS", 2, 3, 3), ("LoopedBFS", 3, 2, 4),
          ("Interleaved1F1B", 2, 2, 4), ("Interleaved1F1B", 4, 2, 10), ("Interleaved1F1B", 3, 3, 2),
          ("InterleavedZeroBubble", 2, 2, 4), ("InterleavedZeroBubble", 4, 2, 8),
          ("InterleavedZeroBubble", 3, 1, 6),
          ("ZBVZeroBubble", 2, 2, 2), ("ZBVZeroBubble", 3, 2, 8),
          ("DualPipeV", 2, 2, 4), ("DualPipeV", 3, 2, 9)]


def shape_id(s):
    return "%s-S%d-v%d-M%d" % s


# ---- pytorch: the schedule CSV ---------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_schedule_csv_loads_in_pytorch(shape):
    name, ranks, v, m = shape
    result = training_result(name, ranks, v, m, llm_units(ranks * v, 1))
    text = exported(result, "pytorch")
    actions, owner = rr.check_schedule_csv(text, ranks, ranks * v, m)
    assert owner == rr.stage_to_rank(ranks, ranks * v, rr.style_of(name))
    for r in range(ranks):
        assert [a for a in actions[r]] == rr.class_order(name, ranks, v, m, r)
    # a result that lists no actions gets the class's own order
    result["schedule"].pop("actions")
    assert exported(result, "pytorch") == text


def test_schedule_csv_is_the_plans_order_and_refuses_pytorchs_errors():
    units = llm_units(2, 1)
    result = training_result("GPipe", 2, 1, 3, units)
    # a valid order of the plan's own (backwards last-in first-out)
    for r, row in enumerate(result["schedule"]["actions"]):
        row[3:] = list(reversed(row[3:]))
    text = exported(result, "pytorch")
    rr.check_schedule_csv(text, 2, 2, 3)
    assert text.splitlines()[0] == "0F0,0F1,0F2,0B2,0B1,0B0"
    # an order that stalls PyTorch's lowering
    bad = copy.deepcopy(result)
    bad["schedule"]["actions"] = [["0F0", "0B0", "0F1", "0B1", "0F2", "0B2"],
                                  ["1F1", "1B1", "1F0", "1B0", "1F2", "1B2"]]
    with pytest.raises(AssertionError, match="Malformed"):
        rr.check_schedule_csv("0F0,0B0,0F1,0B1,0F2,0B2\n1F1,1B1,1F0,1B0,1F2,1B2\n", 2, 2, 3)
    doc = problem(export(bad, "pytorch"))
    assert doc["type"] == "urn:partd:problem:export-not-expressible"
    assert any("waits forever" in e["message"] for e in doc["errors"])


# ---- torchtitan -----------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_torchtitan_config_reads_as_torchtitan_reads_it(shape, tmp_path):
    name, ranks, v, m = shape
    units = llm_units(ranks * v, 2)
    result = training_result(name, ranks, v, m, units)
    text = exported(result, "torchtitan", "--strict")
    cfg = tomllib.loads(text)
    per_rank, n_micro = rr.check_torchtitan(cfg, {u for s in units for u in s})
    par = cfg["parallelism"]
    assert par["pipeline_parallel_degree"] == ranks
    assert par["pipeline_parallel_schedule"] == name
    assert par["module_fqns_per_model_part"] == units
    assert (per_rank, n_micro) == (v, m)
    assert "pipeline_parallel_schedule_csv" not in par
    assert cfg["activation_checkpoint"]["mode"] == "none"


def test_torchtitan_names_the_csv_of_a_custom_order(tmp_path):
    units = llm_units(3, 2)
    result = training_result("1F1B", 3, 1, 4, units)
    # rank 0 runs all its forwards first: valid, not 1F1B's (on the last
    # rank it would stall: rank 1 waits for 2B0 before sending 1F2)
    result["schedule"]["actions"][0] = ["0F%d" % i for i in range(4)] + ["0B%d" % i for i in range(4)]
    src = tmp_path / "result.json"
    src.write_text(json.dumps(result))
    p = run(["export", str(src), "--format", "torchtitan", "-o", str(tmp_path / "job.toml")])
    assert p.returncode == 0, p.stderr
    cfg = tomllib.loads((tmp_path / "job.toml").read_text())
    csv_name = cfg["parallelism"]["pipeline_parallel_schedule_csv"]
    rr.check_torchtitan(cfg, {u for s in units for u in s})
    # the command the comment gives writes the file build_pipeline_schedule loads
    p = run(["export", str(src), "--format", "pytorch", "-o", str(tmp_path / csv_name)])
    assert p.returncode == 0
    actions, _ = rr.check_schedule_csv((tmp_path / csv_name).read_text(), 3, 3, 4)
    assert [rr.action_str(a) for a in actions[0]] == result["schedule"]["actions"][0]


def test_torchtitan_checkpointing_all_layers_or_refused(tmp_path):
    units = llm_units(2, 3)
    some = [["layers.0"], []]
    result = training_result("GPipe", 2, 1, 4, units, checkpointed=some)
    text = exported(result, "torchtitan")
    assert tomllib.loads(text)["activation_checkpoint"]["mode"] == "full"
    assert "# warning (checkpoint-all-layers)" in text
    assert "# checkpointed units: stage 0: layers.0; stage 1: none" in text
    doc = problem(export(result, "torchtitan", "--strict"))
    assert doc["errors"][0]["pointer"] == "/partitions"
    result = training_result("GPipe", 2, 1, 4, units, checkpointed=[["tok_embeddings"], []])
    doc = problem(export(result, "torchtitan"))
    assert doc["errors"][0]["pointer"] == "/partitions/0/units/0"


# ---- Megatron-LM -------------------------------------------------------------------

@pytest.mark.parametrize("name,ranks,v,m", [("1F1B", 4, 1, 8), ("Interleaved1F1B", 2, 3, 4),
                                            ("Interleaved1F1B", 4, 2, 8)])
def test_megatron_layout_parses_and_counts_every_layer_once(name, ranks, v, m):
    n = ranks * v
    units = llm_units(n, 3)
    units[1].insert(2, units[1][1] + "#2")  # a second run of one layer
    # the first two layers of the even stages
    ck = [[u for u in s if u.startswith("layers.")][:2] if j % 2 == 0 else []
          for j, s in enumerate(units)]
    result = training_result(name, ranks, v, m, units, checkpointed=ck)
    text = exported(result, "megatron")
    args = rr.megatron_args(text)
    assert int(args["--pipeline-model-parallel-size"]) == ranks
    grid = rr.megatron_layout(args["--pipeline-model-parallel-layout"], ranks,
                              int(args["--num-layers"]))
    assert int(args["--num-layers"]) == 3 * n
    for j in range(n):  # plan stage j = Megatron's [j mod P][j // P]
        assert grid[j % ranks][j // ranks].count("decoder") == 3
    assert args["--recompute-granularity"] == "full"
    assert args["--recompute-method"] == "block"
    # the first two of every stage: the odd ones' too, listed
    assert int(args["--recompute-num-layers"]) == 2
    assert "# warning (recompute-first-layers)" in text


def test_megatron_refuses_a_gpt2_plan_with_its_embedding_split():
    # GPT-2's token and position embeddings, the second after the cut: both
    # come before the first layer, so both belong to Megatron's E on stage 0.
    units = [["wte"], ["wpe", "h.0", "h.1"], ["h.2", "h.3"], ["h.4", "ln_f", "lm_head"]]
    doc = problem(export(training_result("1F1B", 4, 1, 8, units), "megatron"))
    pointers = {e["pointer"] for e in doc["errors"]}
    assert "/partitions/1/units/0" in pointers  # wpe, after the cut


# ---- DeepSpeed, fairscale -------------------------------------------------------------

def test_deepspeed_parts_own_every_layer_where_the_plan_put_it():
    units = llm_units(4, 2)
    units[2].append(units[2][-1] + "#2")
    result = training_result("1F1B", 4, 1, 8, units)
    d = json.loads(exported(result, "deepspeed", "--strict"))
    assert d["num_stages"] == 4 and d["micro_batches"] == 8
    assert d["activation_checkpoint_interval"] == 0
    for j, stage in enumerate(units):
        for u in stage:
            if "#" not in u:
                assert rr.deepspeed_stage_owner(d["parts"], 4, d["layers"].index(u)) == j
    assert len(d["layers"]) == d["parts"][-1] == sum(len(s) for s in units) - 1


def test_fairscale_balance_and_checkpoint_modes():
    units = llm_units(2, 2)
    for mode, ck, want in [("never", None, "never"), ("always", units, "always"),
                           ("except_last", units, "except_last"), ("auto", None, "never")]:
        result = training_result("GPipe", 2, 1, 4, units, checkpointed=ck, checkpoint=mode)
        d = json.loads(exported(result, "fairscale", "--strict"))
        rr.fairscale_check_balance(len(d["layers"]), d["balance"])
        assert d["balance"] == [len(s) for s in units]
        assert (d["chunks"], d["checkpoint"]) == (4, want)
    doc = problem(export(training_result("1F1B", 2, 1, 4, units), "fairscale"))
    assert doc["errors"][0]["pointer"] == "/schedule/name"


# ---- node-level results, planned by partd ---------------------------------------------

def planned(name, tmp_path):
    out = tmp_path / (name + ".json")
    p = run(["plan", os.path.join(EXAMPLES, name, "request.json"), "-o", str(out)])
    assert p.returncode == 0, p.stderr
    request = json.load(open(os.path.join(EXAMPLES, name, "request.json")))
    return json.loads(out.read_text()), request, out


def op_nodes(request):
    return [n["name"] for n in request["graph"]["nodes"] if n["op"].startswith("call_")]


@pytest.mark.parametrize("name", ["resnet50", "resnet50-size_based", "gpt2-small", "vit_b_16"])
def test_fx_and_fairscale_of_planned_results(name, tmp_path):
    result, request, path = planned(name, tmp_path)
    fx = json.loads(run(["export", str(path), "--format", "fx"]).stdout)
    mapping = fx["node_to_partition"]
    assert sorted(mapping) == sorted(op_nodes(request))
    for j, part in enumerate(result["partitions"]):
        assert all(mapping[n] == j for n in part["nodes"])
        assert fx["partition_to_logical_device_mapping"][str(j)] == part["logical_ids"]
    check_split_of_planned_result(result, request, path)
    schedule = result["summary"].get("schedule")
    p = run(["export", str(path), "--format", "fairscale"])
    apart = [i for i, t in enumerate(result["tied_params"])
             if len({result["partitions"][j]["device"] for j in t["partitions"]}) > 1]
    refused = ["/tied_params/%d" % i for i in apart]
    if schedule == "1f1b":  # Pipe runs GPipe: more in flight than planned
        refused.append("/summary/schedule")
    if refused:  # and Pipe refuses shared parameters on distinct devices
        assert [e["pointer"] for e in problem(p)["errors"]] == refused
        return
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    rr.fairscale_check_balance(len(op_nodes(request)), d["balance"])
    assert d["checkpoint"] == "never"
    opts = request.get("options", {})
    if result["mode"] == "pipeline":
        assert d["chunks"] == opts.get("pipeline", {}).get("microbatches", 1)
        assert d["chunks"] == result["summary"]["microbatches"]
    if schedule == "inference":  # listed: a training step holds more
        assert [w["code"] for w in d["warnings"]] == ["pipe-runs-gpipe"]
    else:
        assert "warnings" not in d


def check_split_of_planned_result(result, request, path):
    """pytorch-split of a node-level result: each cut is named by the module
    whose call begins the partition after it, or refused at that partition;
    the module's first operation is the partition's first node and no node
    of an earlier partition is under it; the schedule is the pipeline's."""
    p = run(["export", str(path), "--format", "pytorch-split"])
    parts = result["partitions"]
    if result["summary"].get("schedule") == "inference":
        assert [e["pointer"] for e in problem(p)["errors"]] == ["/summary/schedule"]
        return
    missing = ["/partitions/%d" % j for j, part in enumerate(parts)
               if j and "first_module" not in part]
    if missing:
        assert [e["pointer"] for e in problem(p)["errors"]] == missing
        return
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    firsts = [part["first_module"] for part in parts[1:]]
    assert list(d["split_spec"].items()) == [(m, "BEGINNING") for m in firsts]
    module = {n["name"]: n.get("module", "") for n in request["graph"]["nodes"]}
    for j, m in enumerate(firsts, start=1):
        under = [n for part in parts for n in part["nodes"]
                 if module[n] == m or module[n].startswith(m + ".")]
        assert under[0] == parts[j]["nodes"][0]
    assert d["stage_to_rank"] == list(range(len(parts)))
    assert d["devices"] == [part["device"] for part in parts]
    want = {"gpipe": ("GPipe", result["summary"].get("microbatches")),
            "1f1b": ("1F1B", result["summary"].get("microbatches")),
            None: ("GPipe", 1)}[result["summary"].get("schedule")]
    assert (d["schedule"], d["n_microbatches"]) == want
    assert d["tied_params"] == result["tied_params"]


def test_v2_training_result_exports_with_its_class_order(tmp_path):
    result, request, path = planned("gpt2-training", tmp_path)
    text = run(["export", str(path), "--format", "pytorch"]).stdout.decode()
    m, n = result["summary"]["microbatches"], len(result["partitions"])
    actions, owner = rr.check_schedule_csv(text, n, n, m)
    assert actions[0] == rr.class_order("1F1B", n, 1, m, 0)
    # GPT-2 ties wte to lm_head across the first and the last stage: torchtitan would
    # train two copies apart
    doc = problem(run(["export", str(path), "--format", "torchtitan"]))
    assert [e["pointer"] for e in doc["errors"]] == ["/tied_params/0"]
    untied = dict(result, tied_params=[])
    cfg = tomllib.loads(exported(untied, "torchtitan"))
    rr.check_torchtitan(cfg, {u for p in result["partitions"] for u in p["units"]})


# ---- training plans made by partd's own planner ---------------------------------------------

def llm_request(schedule, memory, virtual_stages=None, ranks=4, layers=8, microbatches=8):
    """A decoder-only model named as torchtitan names its modules
    (tok_embeddings, layers.<i>, norm, output), each layer an attention, a
    feed-forward and two residual adds, on `ranks` equal devices."""
    nodes = [{"name": "tokens", "op": "placeholder", "output_bytes": 4096},
             {"name": "tok_embeddings", "op": "call_module", "module": "tok_embeddings",
              "inputs": ["tokens"], "output_bytes": 8 << 20, "param_bytes": 64 << 20,
              "latency_ms": 2.0}]
    prev = "tok_embeddings"
    for i in range(layers):
        for name, module, size, params, ms in (("attention", ".attention", 8, 16, 5.0),
                                               ("add", "", 8, 0, 0.5),
                                               ("feed_forward", ".feed_forward", 32, 32, 8.0),
                                               ("add_1", "", 8, 0, 0.5)):
            node = "layers_%d_%s" % (i, name)
            inputs = [prev] if params else [prev, nodes[-1]["name"]]
            nodes.append({"name": node, "op": "call_module" if params else "call_function",
                          "module": "layers.%d%s" % (i, module), "inputs": inputs,
                          "output_bytes": size << 20, "param_bytes": params << 20,
                          "latency_ms": ms})
            prev = node if name.startswith("add") else prev
    nodes += [{"name": "norm", "op": "call_module", "module": "norm", "inputs": [prev],
               "output_bytes": 8 << 20, "param_bytes": 1 << 16, "latency_ms": 0.5},
              {"name": "output", "op": "call_module", "module": "output", "inputs": ["norm"],
               "output_bytes": 64 << 20, "param_bytes": 64 << 20, "latency_ms": 6.0},
              {"name": "out", "op": "output", "inputs": ["output"]}]
    training = {"schedule": schedule, "microbatches": microbatches, "stages": ranks,
                "checkpoint": "auto", "unit_depth": 2}
    if virtual_stages:
        training["virtual_stages"] = virtual_stages
    return {"graph": {"name": "llm", "nodes": nodes},
            "devices": [{"name": "gpu%d" % i, "memory_bytes": memory} for i in range(ranks)],
            "options": {"mode": "training", "training": training}}


@pytest.mark.parametrize("schedule,v", [("GPipe", None), ("1F1B", None), ("LoopedBFS", 2),
                                        ("Interleaved1F1B", 2), ("InterleavedZeroBubble", 2),
                                        ("ZBVZeroBubble", None), ("DualPipeV", None)])
@pytest.mark.parametrize("memory_mib", [3072, 600])
def test_planned_training_results(schedule, v, memory_mib, tmp_path):
    """What partd's training planner writes, exported and read back with
    each runtime's rules: the order PyTorch's class runs, a TOML torchtitan
    reads, a layout Megatron-Core parses, bounds DeepSpeed owns its layers
    by (each where the format can say the plan at all)."""
    req = tmp_path / "request.json"
    req.write_text(json.dumps(llm_request(schedule, memory_mib << 20, v)))
    out = tmp_path / "result.json"
    p = run(["plan", str(req), "-o", str(out)])
    if p.returncode == 2 or (p.returncode == 0 and "schedule" not in json.loads(out.read_text())):
        pytest.skip("partd's training planner writes v2 results (no schedule.actions)")
    if p.returncode == 3:
        pytest.skip("no plan fits %d MiB" % memory_mib)
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    S, v, M = d["summary"]["stages"], d["summary"]["virtual_stages"], d["summary"]["microbatches"]
    name = d["schedule"]["name"]
    units = [part["units"] for part in d["partitions"]]

    def export_of(fmt):
        return run(["export", str(out), "--format", fmt])

    actions, owner = rr.check_schedule_csv(export_of("pytorch").stdout.decode(), S, S * v, M)
    assert owner == rr.stage_to_rank(S, S * v, rr.style_of(name))
    for r in range(S):
        assert actions[r] == rr.class_order(name, S, v, M, r)
    p = export_of("torchtitan")
    if p.returncode == 0:
        cfg = tomllib.loads(p.stdout.decode())
        assert rr.check_torchtitan(cfg, {u for s in units for u in s}) == (v, M)
        assert cfg["parallelism"]["module_fqns_per_model_part"] == units
    else:  # only a checkpointed unit outside model.layers
        assert {e["pointer"].rsplit("/", 2)[0] for e in problem(p)["errors"]} <= {
            "/partitions/%d" % j for j in range(S * v)}
    p = export_of("megatron")
    if p.returncode == 0:
        args = rr.megatron_args(p.stdout.decode())
        grid = rr.megatron_layout(args["--pipeline-model-parallel-layout"], S, 8)
        for j, stage in enumerate(units):
            assert grid[j % S][j // S].count("decoder") == sum(u.startswith("layers.") for u in stage)
    p = export_of("deepspeed")
    if v == 1:
        ds = json.loads(p.stdout)
        for j, stage in enumerate(units):
            assert all(rr.deepspeed_stage_owner(ds["parts"], S, ds["layers"].index(u)) == j
                       for u in stage)
    else:
        assert problem(p)["errors"][0]["pointer"] == "/schedule/virtual_stages"
    p = export_of("fairscale")
    assert p.returncode == (0 if name == "GPipe" else 2)
    fx = json.loads(export_of("fx").stdout)["node_to_partition"]
    assert all(fx[n] == j for j, part in enumerate(d["partitions"]) for n in part["nodes"])


# ---- the command ------------------------------------------------------------------------

def test_stdin_stdout_file_and_output_file(tmp_path):
    result = training_result("1F1B", 2, 1, 2, llm_units(2, 1))
    src = tmp_path / "r.json"
    src.write_text(json.dumps(result))
    via_stdin = export(result, "pytorch")
    via_file = run(["export", str(src), "--format", "pytorch"])
    via_dash = run(["export", "-", "--format", "pytorch"], src.read_bytes())
    assert via_stdin.stdout == via_file.stdout == via_dash.stdout
    assert run(["export", str(src), "--format", "pytorch", "-o", str(tmp_path / "o.csv")]).returncode == 0
    assert (tmp_path / "o.csv").read_bytes() == via_file.stdout


def test_exit_codes(tmp_path):
    result = training_result("1F1B", 2, 1, 2, llm_units(2, 1))
    assert run(["export", str(tmp_path / "missing.json"), "--format", "fx"]).returncode == 1
    p = export(result, "fx", "-o", str(tmp_path / "no" / "such" / "dir" / "x.json"))
    assert p.returncode == 1 and b"cannot write" in p.stderr
    assert export(result, "nosuchformat").returncode == 1
    assert run(["export"], b"{}").returncode == 1  # --format is required
    assert run(["export", "--help"]).returncode == 0
    doc = problem(run(["export", "--format", "fx"], b"{not json"))
    assert doc["status"] == 400
    doc = problem(run(["export", "--format", "fx"], b'{"mode": "training"}'))
    assert doc["type"] == "urn:partd:problem:not-a-result"
    doc = problem(export({"mode": "pipeline", "partitions": [{"id": 0, "device": "a"}]}, "megatron"))
    assert doc["type"] == "urn:partd:problem:export-not-expressible"
    assert doc["errors"][0]["pointer"] == "/mode"


def test_same_bytes_on_every_run():
    result = training_result("Interleaved1F1B", 2, 2, 4, llm_units(4, 2),
                             checkpointed=[["layers.0"], [], [], []])
    for fmt in ("torchtitan", "pytorch", "pytorch-split", "megatron", "fairscale", "fx"):
        a, b = export(result, fmt), export(result, fmt)
        assert a.returncode == b.returncode
        assert a.stdout == b.stdout and a.stderr == b.stderr
