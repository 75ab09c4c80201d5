"""partd.apply on real models with Debian's torch, no mocks: a GPT-like model
with nn.MultiheadAttention, a causal mask buffer, a position table and tied
embeddings, and torchvision's ResNet-18. Each plan is made by the real
`partd plan` on the exporter's request; the split model must give the
unsplit model's outputs and gradients, checkpointed units must recompute in
backward, and a plan for another model must be refused."""

import copy
import json
import warnings

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import models  # noqa: E402
from partd import apply as pa  # noqa: E402
from partd import exporter as pe  # noqa: E402
from partd_testlib import run_exported  # noqa: E402


def plan(binary, model, x, devices, options, **export):
    request = pe.export_request(model, x, devices, options, timing=False, **export)
    status, result, problem, stderr = run_exported(binary, request)
    assert status == 0, stderr[:1000]
    return result


def tokens(batch=4, context=16, vocab=128, seed=1):
    return torch.randint(0, vocab, (batch, context), generator=torch.Generator().manual_seed(seed))


def step(module, x, seed=0):
    """Output and gradients of one training step (loss: the output's mean
    square), dropout drawn from `seed`."""
    module.train()
    module.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    out = module(x)
    (out.float() ** 2).mean().backward()
    return out.detach(), {n: p.grad.clone() for n, p in _params(module).items()}


def _params(module):
    """The model's parameters by name, found in a split module through the
    very same tensors (a split holds the model's own objects)."""
    return {n: p for n, p in module.named_parameters()}


def grads_by_tensor(model, module, x, seed=0):
    out, _ = step(module, x, seed)
    return out, {n: p.grad.clone() for n, p in model.named_parameters()}


def assert_same(a, b):
    assert a.shape == b.shape
    assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), (a - b).abs().max()


def assert_same_step(model, split_module, x):
    want, want_grads = grads_by_tensor(model, model, x)
    got, got_grads = grads_by_tensor(model, split_module, x)
    assert_same(want, got)
    assert want_grads.keys() == got_grads.keys()
    for name in want_grads:
        assert_same(want_grads[name], got_grads[name])


# -- split ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt():
    return models.gpt_mha()


@pytest.fixture(scope="module")
def gpt_pipeline_plan(partd_plan_bin, gpt):
    return plan(partd_plan_bin, gpt, tokens(), "4x1GiB",
                {"mode": "pipeline", "pipeline": {"balance_by": "uniform"}})


def test_gpt_split_reproduces_outputs_and_gradients(gpt, gpt_pipeline_plan):
    x = tokens()
    split = pa.split(gpt, gpt_pipeline_plan, x)
    assert [name for name, _ in split.named_children()] == \
        ["stage_0", "stage_1", "stage_2", "stage_3"]
    for k, p in enumerate(gpt_pipeline_plan["partitions"]):
        ops = [n.name for n in getattr(split, f"stage_{k}").graph.nodes
               if n.op in pa.OPERATIONS]
        assert ops == p["nodes"]
    assert_same_step(gpt, split, x)  # dropout on: the same draws in the same order


def test_stages_pass_on_what_later_stages_read(gpt, gpt_pipeline_plan):
    split = pa.split(gpt, gpt_pipeline_plan, tokens())
    for k, boundary in enumerate(gpt_pipeline_plan["boundaries"]):
        stage = getattr(split, f"stage_{k}")
        # the tensors live across the cut, as partd's liveness says
        assert set(stage.partd_outputs) == set(boundary["tensors"]), k
        assert getattr(split, f"stage_{k + 1}").partd_inputs == stage.partd_outputs


def test_tied_embedding_is_one_tensor_and_listed(gpt, gpt_pipeline_plan):
    split = pa.split(gpt, gpt_pipeline_plan, tokens())
    assert split.stage_0.tok.weight is split.stage_3.head.weight is gpt.tok.weight
    assert pa.tied(gpt_pipeline_plan) == [{"param": "tok.weight", "stages": [0, 3]},
                                          {"param": "mask", "stages": [0, 1, 2, 3]}]
    # with the module: what takes gradients, and its name in each stage
    assert pa.tied(gpt_pipeline_plan, split) == [
        {"param": "tok.weight", "stages": [0, 3], "names": {0: "tok.weight", 3: "head.weight"}}]
    # a get_attr parameter (the position table) is held by the stage reading it
    assert split.stage_0.pos is gpt.pos


def test_resnet_split_reproduces_outputs_and_gradients(partd_plan_bin):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    x = torch.randn(4, 3, 32, 32)
    result = plan(partd_plan_bin, model, x, "3x1GiB",
                  {"mode": "pipeline", "pipeline": {"balance_by": "params"}})
    split = pa.split(model, result, x)
    assert [name for name, _ in split.named_children()] == ["stage_0", "stage_1", "stage_2"]
    assert_same_step(model, split, x)  # batch norm in training mode too


def test_size_based_plan_splits(partd_plan_bin):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    x = torch.randn(2, 3, 32, 32)
    result = plan(partd_plan_bin, model, x, "a=20MiB,b=20MiB,c=20MiB", {"mode": "size_based"},
                  fx_sizes=True)
    assert len(result["partitions"]) >= 2
    assert_same_step(model, pa.split(model, result, x), x)


# -- training plans: units and checkpointing ----------------------------------------


@pytest.fixture(scope="module")
def gpt_training_plan(partd_plan_bin, gpt):
    return plan(partd_plan_bin, gpt, tokens(), "2x1GiB",
                {"mode": "training", "training": {"stages": 2, "microbatches": 2,
                                                  "checkpoint": "always", "unit_depth": 2}})


def test_training_plan_splits_by_units(gpt, gpt_training_plan):
    x = tokens()
    # the units alone (a result without nodes) give the same stages
    by_units = copy.deepcopy(gpt_training_plan)
    for p in by_units["partitions"]:
        del p["nodes"]
    a, b = pa.split(gpt, gpt_training_plan, x), pa.split(gpt, by_units, x)
    for (_, sa), (_, sb) in zip(pa.stages(a), pa.stages(b)):
        assert [n.name for n in sa.graph.nodes] == [n.name for n in sb.graph.nodes]
    units = [u for p in gpt_training_plan["partitions"] for u in p["units"]]
    assert [n for n, _ in pa.units(pa.trace(gpt).graph.nodes, 2)] == units
    assert "layers.0" in units and "layers.3" in units
    assert_same_step(gpt, b, x)


def _count_calls(model, fqns):
    calls = {f: 0 for f in fqns}
    for f in fqns:
        def hook(*args, f=f):
            calls[f] += 1
        model.get_submodule(f).register_forward_hook(hook)
    return calls


def test_checkpointed_units_recompute_in_backward(partd_plan_bin, gpt_training_plan):
    model = models.gpt_mha()
    x = tokens()
    reference = copy.deepcopy(model)
    split = pa.checkpoint(pa.split(model, gpt_training_plan, x), gpt_training_plan)
    checkpointed = [u for p in gpt_training_plan["partitions"] for u in p["checkpointed"]]
    assert "layers.1" in checkpointed  # checkpoint "always": every unit
    calls = _count_calls(model, ["layers.1.mlp.c_fc", "layers.1.attn"])
    out, grads = step(split, x)
    # a forward, then the recomputation in backward
    assert calls == {"layers.1.mlp.c_fc": 2, "layers.1.attn": 2}
    want, want_grads = step(reference, x)
    assert_same(want, out)
    names = dict(zip([id(p) for p in model.parameters()],
                     [n for n, _ in model.named_parameters()]))
    got = {names[id(p)]: p.grad for p in split.parameters()}
    for name, g in want_grads.items():
        assert_same(g, got[name])


def test_copies_keep_the_split_and_its_checkpoints(gpt_training_plan):
    model = models.gpt_mha()
    x = tokens()
    split = pa.checkpoint(pa.split(model, gpt_training_plan, x), gpt_training_plan)
    copied = copy.deepcopy(split)
    assert [k for k, _ in pa.stages(copied)] == [0, 1]
    assert copied.stage_1.partd_inputs == split.stage_1.partd_inputs
    with pytest.raises(pa.ApplyError, match="applied to this module already"):
        pa.checkpoint(copied, gpt_training_plan)
    # a layer the plan checkpoints on the second stage, whichever it is
    layer = next(u for u in gpt_training_plan["partitions"][1]["checkpointed"]
                 if u.startswith("layers."))
    calls = {"n": 0}
    leaf = next(m for n, m in copied.stage_1.named_modules() if n.endswith(layer + ".mlp.c_fc"))
    leaf.register_forward_hook(lambda *a: calls.update(n=calls["n"] + 1))
    step(copied, x)
    assert calls["n"] == 2  # the copy recomputes too
    assert leaf is not model.get_submodule(layer + ".mlp.c_fc")


def test_checkpoint_on_the_model_itself(gpt_training_plan):
    model = models.gpt_mha()
    x = tokens()
    reference = copy.deepcopy(model)
    result = copy.deepcopy(gpt_training_plan)
    for p in result["partitions"]:  # units that are modules
        p["checkpointed"] = [u for u in p["checkpointed"] if u.startswith("layers.")]
    pa.checkpoint(model, result)
    calls = _count_calls(model, ["layers.2.mlp.c_fc"])
    out, grads = step(model, x)
    assert calls == {"layers.2.mlp.c_fc": 2}
    want, want_grads = step(reference, x)
    assert_same(want, out)
    for name in want_grads:
        assert_same(want_grads[name], grads[name])
    # the parameters keep their names
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in reference.named_parameters()]
    with pytest.raises(pa.ApplyError, match="applied to this module already"):
        pa.checkpoint(model, result)
    copied = copy.deepcopy(model)
    calls = _count_calls(copied, ["layers.2.mlp.c_fc"])
    step(copied, x)
    assert calls == {"layers.2.mlp.c_fc": 2}


def test_a_unit_that_is_no_module_needs_the_split(gpt_training_plan):
    result = copy.deepcopy(gpt_training_plan)
    result["partitions"][0]["checkpointed"] = ["add"]  # the root's own addition
    with pytest.raises(pa.ApplyError, match="'add' is not a module of GPTMHA"):
        pa.checkpoint(models.gpt_mha(), result)


# -- SAC plans ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def sac_plan(partd_plan_bin):
    model = models.gpt2(vocab=200, positions=32, width=32, layers=3, heads=2)
    x = torch.zeros(4, 32, dtype=torch.long)
    request = pe.export_request(model, x, "2x1GiB", None, module_info=True, timing_runs=1)
    stats = {s["fqn"]: s for s in request["graph"]["modules"]["mod_stats"]}
    # a budget a little under the unconstrained peak: some blocks checkpointed
    budget = int(sum(s["act_fw_per_module"] for f, s in stats.items()
                     if f.count(".") == 2 and f.startswith("GPT2.h.")) * 0.5)
    budget += sum(s["param_per_module"] for s in stats.values() if s["fqn"] == "GPT2") * 4
    request["options"] = {"mode": "pipeline", "pipeline": {"stages": 2},
                          "sac": {"memory_budget_bytes": budget, "op_level": True}}
    status, result, problem, stderr = run_exported(partd_plan_bin, request)
    assert status == 0, stderr[:1000]
    assert result["sac"]["ac_decisions"], result["sac"]
    return model, x, result


def test_sac_names_are_the_models_modules(sac_plan):
    model, x, result = sac_plan
    for name in result["sac"]["ac_decisions"]:
        assert name.startswith("GPT2.")
        model.get_submodule(name[len("GPT2."):])


@pytest.mark.parametrize("on", ["model", "split"])
def test_sac_checkpoints_modules_and_warns_about_op_level(sac_plan, on):
    model0, x, result = sac_plan
    model = copy.deepcopy(model0)
    reference = copy.deepcopy(model0)
    target = model if on == "model" else pa.split(model, result, x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pa.checkpoint(target, result)
    if not hasattr(torch.utils.checkpoint, "create_selective_checkpoint_contexts"):
        assert any("create_selective_checkpoint_contexts" in str(w.message) and
                   "whole-module" in str(w.message) for w in caught)
    fqn = next(iter(result["sac"]["ac_decisions"]))[len("GPT2."):]
    leaf = next(f"{fqn}.{n}" for n, m in model.get_submodule(fqn).named_modules()
                if isinstance(m, torch.nn.Linear))
    calls = _count_calls(model, [leaf])
    out, _ = step(target, x)
    assert calls == {leaf: 2}  # the forward and its recomputation
    want, want_grads = step(reference, x)
    assert_same(want, out)
    got = dict(model.named_parameters())
    for name, g in want_grads.items():
        assert_same(g, got[name].grad)


def test_sac_names_outside_the_model_are_refused(sac_plan):
    model, x, result = sac_plan
    bad = json.loads(json.dumps(result))
    bad["sac"]["ac_decisions"] = {"Other.h.1": 0.5}
    with pytest.raises(pa.ApplyError, match="not inside the model's root 'GPT2'"):
        pa.checkpoint(copy.deepcopy(model), bad)


def test_op_policy_decisions_count_forward_and_recomputation_apart():
    decide = pa.op_policy_decisions([1, 0, 1])
    assert [decide(False), decide(False), decide(True), decide(False), decide(True)] == \
        [True, False, True, True, False]
    with pytest.raises(pa.ApplyError, match="more operations than its op-level policy"):
        decide(False)


# -- plans for another model -------------------------------------------------------


def test_a_plan_for_another_model_is_refused(gpt, gpt_pipeline_plan):
    other = models.gpt_mha(layers=3)
    with pytest.raises(pa.ApplyError, match="leaves out|lacks"):
        pa.split(other, gpt_pipeline_plan, tokens())
    bigger = models.gpt_mha(layers=5)
    with pytest.raises(pa.ApplyError, match="leaves out"):
        pa.split(bigger, gpt_pipeline_plan, tokens())


def test_units_that_disagree_with_the_nodes_are_refused(gpt, gpt_training_plan):
    bad = copy.deepcopy(gpt_training_plan)
    bad["partitions"][0]["nodes"] = bad["partitions"][0]["nodes"][:-1]
    bad["partitions"][1]["nodes"].insert(0, gpt_training_plan["partitions"][0]["nodes"][-1])
    with pytest.raises(pa.ApplyError, match="disagree"):
        pa.split(gpt, bad, tokens())
    unknown = copy.deepcopy(gpt_training_plan)
    for p in unknown["partitions"]:
        del p["nodes"]
    unknown["partitions"][0]["units"][0] = "nonesuch"
    with pytest.raises(pa.ApplyError, match="'nonesuch'"):
        pa.split(gpt, unknown, tokens())


def test_a_summary_result_without_nodes_or_units_is_refused(gpt, gpt_pipeline_plan):
    bad = copy.deepcopy(gpt_pipeline_plan)
    for p in bad["partitions"]:
        del p["nodes"]
    with pytest.raises(pa.ApplyError, match="result.detail"):
        pa.split(gpt, bad, tokens())
