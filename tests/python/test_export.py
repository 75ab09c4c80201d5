"""Tests of partd.exporter (python/partd/exporter.py): graph export, sizes, shared parameters,
module ownership, timing switch, device specs, module info, command line."""

import io
import json
import os
import subprocess
from contextlib import redirect_stderr, redirect_stdout

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import models  # noqa: E402
from partd import exporter as pe  # noqa: E402
from partd_testlib import PYPKG, PYTHON, ROOT  # noqa: E402

EXPORTER = ["-m", "partd.exporter"]


def _nodes(graph):
    return {n["name"]: n for n in graph["nodes"]}


@pytest.fixture(scope="module")
def resnet18_graph():
    torch.manual_seed(0)
    return pe.export_graph(torchvision.models.resnet18(), torch.randn(1, 3, 32, 32),
                           timing=False)


@pytest.fixture(scope="module")
def gpt2_tiny():
    return models.gpt2_tiny()


@pytest.fixture(scope="module")
def gpt2_graph(gpt2_tiny):
    return pe.export_graph(gpt2_tiny, torch.zeros(1, 16, dtype=torch.long), timing=False)


@pytest.fixture(scope="module")
def gpt2_module_info(gpt2_tiny):
    return pe.gather_module_info(gpt2_tiny, torch.zeros(1, 16, dtype=torch.long),
                                 timing_runs=1)


# -- graph ------------------------------------------------------------------


def test_every_fx_node_is_exported_in_order(resnet18_graph):
    gm = pe.trace(torchvision.models.resnet18())
    assert [n["name"] for n in resnet18_graph["nodes"]] == [n.name for n in gm.graph.nodes]
    ops = {n["op"] for n in resnet18_graph["nodes"]}
    assert ops == {"placeholder", "call_module", "call_function", "output"}
    assert resnet18_graph["name"] == "ResNet"


def test_output_bytes_are_tensor_bytes(resnet18_graph):
    nodes = _nodes(resnet18_graph)
    assert nodes["x"]["output_bytes"] == 1 * 3 * 32 * 32 * 4
    assert nodes["conv1"]["output_bytes"] == 1 * 64 * 16 * 16 * 4
    assert nodes["fc"]["output_bytes"] == 1000 * 4
    assert nodes["output"]["output_bytes"] == 0


def test_inputs_name_the_read_nodes(resnet18_graph):
    nodes = _nodes(resnet18_graph)
    assert nodes["conv1"]["inputs"] == ["x"]
    # the residual add of the first block reads the block's bn2 and its input
    adds = [n for n in resnet18_graph["nodes"] if n["target"] == "_operator.add"]
    assert adds and len(adds[0]["inputs"]) == 2


def test_module_params_include_buffers_by_default(resnet18_graph):
    names = [p["name"] for p in _nodes(resnet18_graph)["bn1"]["params"]]
    assert names == ["bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
                     "bn1.num_batches_tracked"]
    conv = _nodes(resnet18_graph)["conv1"]["params"]
    assert conv == [{"name": "conv1.weight", "bytes": 64 * 3 * 7 * 7 * 4}]


def test_fx_sizes_leave_out_buffers():
    g = pe.export_graph(torchvision.models.resnet18(), torch.randn(1, 3, 32, 32),
                        timing=False, fx_sizes=True)
    assert [p["name"] for p in _nodes(g)["bn1"]["params"]] == ["bn1.weight", "bn1.bias"]


def test_functions_and_methods_carry_no_params(gpt2_graph):
    for n in gpt2_graph["nodes"]:
        if n["op"] in ("call_function", "call_method", "placeholder", "output"):
            assert "params" not in n, n["name"]


def test_tuple_outputs_are_summed():
    class Split(torch.nn.Module):
        def forward(self, x):
            a, b = x.split([2, 6], dim=1)
            return a.sum() + b.sum()

    g = pe.export_graph(Split(), torch.randn(3, 8), timing=False)
    split = [n for n in g["nodes"] if n["op"] == "call_method" and n["target"] == "split"][0]
    assert split["output_bytes"] == 3 * 8 * 4
    getitems = [n for n in g["nodes"] if n["target"] == "_operator.getitem"]
    assert sorted(n["output_bytes"] for n in getitems) == [3 * 2 * 4, 3 * 6 * 4]


def test_tied_weights_are_one_named_parameter(gpt2_graph):
    nodes = _nodes(gpt2_graph)
    assert nodes["wte"]["params"] == [{"name": "wte.weight", "bytes": 1000 * 64 * 4}]
    assert nodes["lm_head"]["params"] == [{"name": "wte.weight", "bytes": 1000 * 64 * 4}]


def test_module_called_twice_names_the_same_parameters():
    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(torch.relu(self.lin(x)))

    g = pe.export_graph(Twice(), torch.randn(2, 4), timing=False)
    calls = [n for n in g["nodes"] if n["op"] == "call_module"]
    assert len(calls) == 2
    assert calls[0]["params"] == calls[1]["params"] == [
        {"name": "lin.weight", "bytes": 64}, {"name": "lin.bias", "bytes": 16}]


def test_get_attr_holds_its_tensor():
    class Bias(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.offset = torch.nn.Parameter(torch.zeros(5, 7))

        def forward(self, x):
            return x + self.offset

    g = pe.export_graph(Bias(), torch.randn(5, 7), timing=False)
    attr = [n for n in g["nodes"] if n["op"] == "get_attr"][0]
    assert attr["params"] == [{"name": "offset", "bytes": 140}]
    assert attr["output_bytes"] == 140


def test_nodes_of_inlined_modules_name_their_owner(gpt2_graph):
    nodes = _nodes(gpt2_graph)
    assert nodes["h_0_attn_c_attn"]["module"] == "h.0.attn.c_attn"
    softmax = [n for n in gpt2_graph["nodes"] if n["target"] == "torch.softmax"]
    assert [n["module"] for n in softmax] == ["h.0.attn", "h.1.attn"]
    assert "module" not in nodes["idx"]


def test_vit_traces_with_tuple_unpacking():
    from torchvision.models.vision_transformer import VisionTransformer
    vit = VisionTransformer(image_size=32, patch_size=8, num_layers=1, num_heads=2,
                            hidden_dim=32, mlp_dim=64, num_classes=10)
    g = pe.export_graph(vit, torch.randn(1, 3, 32, 32), timing=False)
    attn = [n for n in g["nodes"] if n["target"].endswith("self_attention")][0]
    # (attn_output, None): only the tensor counts
    assert attn["output_bytes"] == 1 * 17 * 32 * 4
    assert any(n["target"] == "torch._assert" and n["output_bytes"] == 0 for n in g["nodes"])


def test_no_timing_is_reproducible(resnet18_graph):
    again = pe.export_graph(torchvision.models.resnet18(), torch.randn(1, 3, 32, 32),
                            timing=False)
    assert pe.dumps(again) == pe.dumps(resnet18_graph)
    assert all(n["latency_ms"] == 0 for n in resnet18_graph["nodes"])


def test_timing_measures_operations():
    g = pe.export_graph(torchvision.models.resnet18(), torch.randn(1, 3, 32, 32),
                        timing=True, timing_runs=2)
    nodes = _nodes(g)
    assert nodes["conv1"]["latency_ms"] > 0
    assert nodes["x"]["latency_ms"] == 0 and nodes["output"]["latency_ms"] == 0


def test_export_keeps_the_modules_mode():
    m = torchvision.models.resnet18().eval()
    pe.export_graph(m, torch.randn(1, 3, 32, 32), timing=False)
    assert not any(x.training for x in m.modules())
    m.train()
    pe.export_graph(m, torch.randn(1, 3, 32, 32), timing=False)
    assert all(x.training for x in m.modules())


def test_export_request_shape():
    req = pe.export_request(torch.nn.Linear(4, 2), torch.randn(1, 4), "2x1GiB",
                            {"mode": "size_based"}, timing=False)
    assert set(req) == {"graph", "devices", "options"}
    assert req["devices"] == [{"name": "gpu0", "memory_bytes": 2**30},
                              {"name": "gpu1", "memory_bytes": 2**30}]
    with pytest.raises(ValueError):
        pe.export_request(torch.nn.Linear(4, 2), torch.randn(1, 4), [], timing=False)


# -- devices and sizes -------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("16GiB", 16 * 2**30), ("80GB", 80 * 10**9), ("1024", 1024), ("1.5KiB", 1536),
    ("512MiB", 512 * 2**20), ("2g", 2 * 2**30)])
def test_parse_bytes(text, expected):
    assert pe.parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "GiB", "-1GiB", "0", "1.5", "3 parsecs", "0.1B"])
def test_parse_bytes_rejects(text):
    with pytest.raises(ValueError):
        pe.parse_bytes(text)


def test_parse_devices():
    assert pe.parse_devices("4x16GiB") == [
        {"name": f"gpu{i}", "memory_bytes": 16 * 2**30} for i in range(4)]
    assert pe.parse_devices("a100=80GiB,t4=16GiB@0.25") == [
        {"name": "a100", "memory_bytes": 80 * 2**30},
        {"name": "t4", "memory_bytes": 16 * 2**30, "speed": 0.25}]
    assert pe.parse_devices("2x8GiB,24GiB@2") == [
        {"name": "gpu0", "memory_bytes": 8 * 2**30},
        {"name": "gpu1", "memory_bytes": 8 * 2**30},
        {"name": "gpu2", "memory_bytes": 24 * 2**30, "speed": 2.0}]


@pytest.mark.parametrize("spec", ["", "4x", "a=1GiB,a=2GiB", "1GiB@0", "1GiB@fast",
                                  "0x1GiB", "1GiB,,2GiB"])
def test_parse_devices_rejects(spec):
    with pytest.raises(ValueError):
        pe.parse_devices(spec)


# -- module info --------------------------------------------------------------

STAT_KEYS = {"fqn", "param_per_module", "grad_per_module", "grad_total",
             "act_fw_per_module", "act_bw_per_module", "act_grad_per_module",
             "act_total", "input_per_module", "output_per_module",
             "fw_runtime_per_module", "bw_runtime_per_module", "is_leaf",
             "sac_runtime", "sac_memory", "n_segments", "slopes", "intercepts",
             "breakpoints", "tradeoff_curve"}


def test_module_info_orders(gpt2_module_info):
    order = gpt2_module_info["mod_order"]
    fqns = [s["fqn"] for s in gpt2_module_info["mod_stats"]]
    assert fqns[0] == "GPT2" and "GPT2.h.0.attn" in fqns
    for key in ("fw_pre_order", "fw_post_order", "bw_pre_order", "bw_post_order"):
        assert sorted(order[key]) == sorted(fqns), key
    assert order["fw_pre_order"] == fqns
    assert order["fw_post_order"][-1] == "GPT2"
    assert order["bw_pre_order"][0] == "GPT2"
    # a child finishes its forward before its parent
    post = order["fw_post_order"]
    assert post.index("GPT2.h.0.attn.c_attn") < post.index("GPT2.h.0.attn") < post.index("GPT2.h.0")


def test_module_info_stats(gpt2_module_info, gpt2_tiny):
    stats = {s["fqn"]: s for s in gpt2_module_info["mod_stats"]}
    for s in stats.values():
        assert STAT_KEYS <= set(s) <= STAT_KEYS | {"sac_stats"}
        assert len(s["slopes"]) == len(s["intercepts"]) == s["n_segments"]
        if s["n_segments"]:
            assert len(s["breakpoints"]) == s["n_segments"] + 1
        # every module that keeps activations has a trade-off, leaves too
        # (PyTorch's SACEstimator measures them; sac_milp never picks them)
        if s["act_fw_per_module"] > 0:
            assert s["n_segments"] >= 1 and s["sac_stats"]["func_names"], s["fqn"]
    root = stats["GPT2"]
    assert root["param_per_module"] == sum(p.numel() * 4 for p in gpt2_tiny.parameters())
    assert stats["GPT2.h.0.attn.c_attn"]["is_leaf"] is True
    assert stats["GPT2.h.0.attn.c_attn"]["param_per_module"] == (64 * 192 + 192) * 4
    assert stats["GPT2.h.0"]["is_leaf"] is False
    assert stats["GPT2.h.0"]["sac_memory"] > 0 and stats["GPT2.h.0"]["n_segments"] >= 1
    # the first block's backward runs after the second's: more grads exist then
    assert stats["GPT2.h.0"]["grad_total"] > stats["GPT2.h.1"]["grad_total"]
    assert stats["GPT2.h.0"]["output_per_module"] == 16 * 64 * 4


def test_sac_stats_indices_are_in_range(gpt2_module_info):
    for s in gpt2_module_info["mod_stats"]:
        ops = s.get("sac_stats")
        if not ops:
            continue
        n = len(ops["func_names"])
        assert len(ops["runtimes"]) == len(ops["memory"]) == n
        for key in ("view_like_ops", "rand_ops", "saved_autograd_ops"):
            assert all(0 <= i < n for i in ops[key]), key
        assert all(0 <= a < n and 0 <= b < n for a, b in ops["inplace_ops"])
        if s["act_fw_per_module"] > 0:
            assert ops["saved_autograd_ops"], s["fqn"]


def test_tradeoff_model_bounds_the_curve_from_above():
    # convex: slopes 0.1, 0.5, 2, 4
    xs = [0.0, 0.4, 0.6, 0.8, 0.9]
    ys = [0.0, 0.04, 0.14, 0.54, 0.94]
    n, slopes, intercepts, breaks = pe._fit_max_of_lines(list(zip(xs, ys)))
    assert n == 2 and len(breaks) == 3 and breaks[0] == 0.0 and breaks[-1] == 0.9
    assert slopes[0] <= slopes[1]
    for x, y in zip(xs, ys):
        model = max(s * x + c for s, c in zip(slopes, intercepts))
        assert model >= y - 1e-12
    # exact at the end points and at the breakpoint
    for x in breaks:
        y = dict(zip(xs, ys))[x]
        assert max(s * x + c for s, c in zip(slopes, intercepts)) == pytest.approx(y)


def test_greedy_order_discards_most_memory_per_ms_first():
    stats = {"func_names": ["a", "b", "c", "v"], "runtimes": [1.0, 1.0, 4.0, 0.1],
             "memory": [100, 10, 100, 0], "view_like_ops": [3], "rand_ops": [],
             "saved_autograd_ops": [], "inplace_ops": [], "force_store_random": False}
    points = pe._greedy_tradeoff(stats)
    # start: the view op only; then a (100/ms), c (25/ms), b (10/ms)
    assert [round(x, 6) for x, _ in points] == [0.0, round(100 / 210, 6),
                                                round(200 / 210, 6), 1.0]
    assert points[-1][1] == pytest.approx(1.0)


# -- command line --------------------------------------------------------------


def _export(*args):
    return subprocess.run([PYTHON, *EXPORTER, *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": PYPKG})


def test_cli_writes_a_request(tmp_path):
    out = tmp_path / "req.json"
    proc = _export("torchvision.models:resnet18", "--input", "1,3,32,32",
                   "--devices", "2x1GiB", "--no-timing", "--mode", "pipeline",
                   "--stages", "2", "--balance-by", "memory", "--schedule", "gpipe",
                   "--microbatches", "4", "--cut-after", "layer2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    req = json.loads(out.read_text())
    assert req["devices"][1] == {"name": "gpu1", "memory_bytes": 2**30}
    assert req["options"] == {"mode": "pipeline", "pipeline": {
        "stages": 2, "balance_by": "memory", "cut_after": ["layer2"],
        "schedule": "gpipe", "microbatches": 4}}


def test_cli_file_model_with_module_info(tmp_path):
    out = tmp_path / "req.json"
    proc = _export("tests/python/models.py:gpt2", "--kwargs",
                   '{"vocab": 100, "positions": 8, "width": 16, "layers": 1, "heads": 2}',
                   "--input", "1,8:int64", "--devices", "1GiB", "--no-timing",
                   "--module-info", "--sac-budget", "1MiB", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    req = json.loads(out.read_text())
    assert req["graph"]["modules"]["mod_stats"][0]["fqn"] == "GPT2"
    assert req["options"] == {"sac": {"memory_budget_bytes": 2**20}}


def test_cli_every_sac_option(tmp_path):
    out = tmp_path / "req.json"
    code = pe.main([os.path.join(ROOT, "tests/python/models.py") + ":gpt2_tiny", "--input", "1,8:int64",
                    "--devices", "2x1GiB", "--no-timing", "--module-info",
                    "--sac-budget", "64MiB", "--sac-op-level", "--sac-world-size", "2",
                    "--sac-ac-unit", "GPT2.h.0", "--sac-ac-unit", "GPT2.h.1",
                    "--sac-fsdp-unit", "GPT2", "--sac-time-limit-ms", "500",
                    "--sac-relative-gap", "0.01", "--sac-frontier-points", "3",
                    "--transfer-rate", "2.5e10", "--param-factor", "4", "-o", str(out)])
    assert code == 0
    options = json.loads(out.read_text())["options"]
    assert options == {
        "transfer_bytes_per_sec": 2.5e10, "pipeline": {"param_factor": 4.0},
        "sac": {"memory_budget_bytes": 64 * 2**20, "op_level": True, "world_size": 2,
                "ac_units": ["GPT2.h.0", "GPT2.h.1"], "fsdp_units": ["GPT2"],
                "time_limit_ms": 500.0, "relative_gap": 0.01, "frontier_points": 3}}


def test_cli_graph_only_to_stdout():
    proc = _export("torch.nn:Identity", "--input", "2,2", "--graph-only", "--no-timing")
    assert proc.returncode == 0, proc.stderr
    graph = json.loads(proc.stdout)
    assert [n["op"] for n in graph["nodes"]] == ["placeholder", "output"]


@pytest.mark.parametrize("args,message", [
    (["torchvision.models:resnet18", "--input", "1,3,32,32"], "--devices"),
    (["torchvision.models:resnet18", "--input", "1,x", "--devices", "1GiB"], "bad shape"),
    (["torchvision.models:resnet18", "--input", "1,3:int3", "--devices", "1GiB"], "dtype"),
    (["torchvision.models", "--input", "1", "--devices", "1GiB"], "MODULE:FACTORY"),
    (["no.such.module:f", "--input", "1", "--devices", "1GiB"], "No module"),
    (["torch.nn:Identity", "--input", "1", "--devices", "1GiBs"], "byte size"),
    (["torch.nn:Identity", "--input", "1", "--devices", "1GiB", "--sac"], "--module-info"),
    (["torch.nn:Identity", "--input", "1", "--devices", "1GiB", "--kwargs", "[]"], "JSON object"),
])
def test_cli_rejects_bad_arguments(args, message):
    # in-process: the messages come before any tracing
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = pe.main(args)
    assert code == 2
    assert message in err.getvalue()


def test_cli_bad_arguments_exit_2_as_a_program():
    proc = _export("torch.nn:Identity", "--input", "1", "--devices", "1GiBs")
    assert proc.returncode == 2 and "byte size" in proc.stderr


# -- modules torch.fx cannot look into -------------------------------------------


class AttentionBlock(torch.nn.Module):
    """nn.MultiheadAttention is one leaf call_module node to torch.fx: its
    work happens in F.multi_head_attention_forward, outside hooked modules
    (its out_proj child is never called)."""

    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(32, 32)
        self.attn = torch.nn.MultiheadAttention(32, 4, batch_first=True)
        self.ln = torch.nn.LayerNorm(32)

    def forward(self, x):
        x = self.inp(x)
        y, _ = self.attn(x, x, x)
        return self.ln(x + y)


@pytest.fixture(scope="module")
def attention_module_info():
    torch.manual_seed(0)
    return pe.gather_module_info(AttentionBlock(), torch.randn(2, 16, 32), timing_runs=1)


def test_multihead_attention_is_measured(attention_module_info):
    stats = {s["fqn"]: s for s in attention_module_info["mod_stats"]}
    attn = stats["AttentionBlock.attn"]
    assert attn["is_leaf"] is False
    assert attn["act_fw_per_module"] > 0
    assert attn["n_segments"] >= 1
    assert attn["sac_memory"] > 0
    ops = attn["sac_stats"]
    # the aten operations inside it: both batched products and the softmax
    assert ops["func_names"].count("bmm") == 2 and "_softmax" in ops["func_names"]
    assert ops["saved_autograd_ops"]
    # its parent counts the attention's inside too, not one opaque node
    assert stats["AttentionBlock"]["sac_memory"] > attn["sac_memory"]


def _attend(x, w):
    """Self-attention in one function that torch.fx keeps whole (wrapped)."""
    scores = torch.softmax((x @ w) @ x.transpose(-2, -1), dim=-1)
    return scores @ x


torch.fx.wrap("_attend")


class WrappedAttention(torch.nn.Module):
    """Its work happens in a function outside every hooked module: to
    torch.fx it is one call_function node, whose output is the module's."""

    def __init__(self):
        super().__init__()
        self.pre = torch.nn.Identity()
        self.w = torch.nn.Parameter(torch.randn(16, 16))

    def forward(self, x):
        return _attend(self.pre(x), self.w)


class TwoAttentions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = WrappedAttention()
        self.b = WrappedAttention()

    def forward(self, x):
        return self.b(self.a(x))


def test_work_inside_a_wrapped_function_is_measured():
    torch.manual_seed(0)
    info = pe.gather_module_info(TwoAttentions(), torch.randn(2, 8, 16), timing_runs=1)
    stats = {s["fqn"]: s for s in info["mod_stats"]}
    for fqn in ("TwoAttentions.a", "TwoAttentions.b"):
        s = stats[fqn]
        assert s["is_leaf"] is False and s["act_fw_per_module"] > 0
        assert s["n_segments"] >= 1 and s["sac_memory"] > 0, fqn
        assert "_softmax" in s["sac_stats"]["func_names"]


@pytest.mark.parametrize("case", ["attention", "gpt2", "vit"])
def test_every_module_holding_activations_has_a_tradeoff(case, attention_module_info,
                                                         gpt2_module_info):
    if case == "attention":
        info = attention_module_info
    elif case == "gpt2":
        info = gpt2_module_info
    else:
        from torchvision.models.vision_transformer import VisionTransformer
        torch.manual_seed(0)
        vit = VisionTransformer(image_size=32, patch_size=8, num_layers=1, num_heads=2,
                                hidden_dim=32, mlp_dim=64, num_classes=10)
        info = pe.gather_module_info(vit, torch.randn(1, 3, 32, 32), timing_runs=1)
    for s in info["mod_stats"]:
        if s["act_fw_per_module"] > 0:
            assert s["n_segments"] >= 1 and s["sac_memory"] > 0, s["fqn"]


# -- module ownership ------------------------------------------------------------


def test_every_operation_node_names_its_module(gpt2_graph, gpt2_tiny):
    fqns = {name for name, _ in gpt2_tiny.named_modules() if name}
    ops = [n for n in gpt2_graph["nodes"]
           if n["op"] in ("call_module", "call_function", "call_method")]
    for n in ops:
        if n["op"] == "call_module":
            assert n["module"] == n["target"]
        if "module" in n:
            assert n["module"] in fqns, n
    # only the root's own operations (embeddings added, positions) have none
    assert sorted(n["name"] for n in ops if "module" not in n) == ["add", "positions_like"]
    # call_function/call_method nodes: the innermost module they were traced in
    nodes = _nodes(gpt2_graph)
    assert nodes["causal_fill"]["module"] == "h.0.attn"
    assert nodes["add_1"]["module"] == "h.0"  # the block's residual add
    assert nodes["transpose"]["module"] == "h.0.attn"


# -- timing ----------------------------------------------------------------------


class _FakeClock:
    """perf_counter replacement: every call advances 1 ms, so every timed
    call measures exactly 1 ms and the calls can be counted."""

    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.calls * 1e-3


def test_median_of_the_runs_after_a_warm_up(monkeypatch):
    now = [0.0]
    durations = [0.100, 0.005, 0.001, 0.003]  # warm-up, then three runs
    calls = []

    def fn():
        calls.append(1)
        now[0] += durations[len(calls) - 1]

    monkeypatch.setattr(pe, "_perf_counter", lambda: now[0])
    assert pe._Clock("cpu").median_ms(fn, 3) == pytest.approx(3.0)
    assert len(calls) == 4
    now[0], calls[:] = 0.0, []
    durations[:] = [0.100, 0.004, 0.001, 0.003, 0.002]
    assert pe._Clock("cpu").median_ms(fn, 4) == pytest.approx(2.5)


@pytest.mark.parametrize("runs", [1, 3, 5])
def test_timing_runs_is_honoured(monkeypatch, runs):
    clock = _FakeClock()
    monkeypatch.setattr(pe, "_perf_counter", clock)
    g = pe.export_graph(torch.nn.Sequential(torch.nn.Linear(4, 2)), torch.randn(3, 4),
                        timing_runs=runs)
    # one operation node: 2 clock readings per timed run, forward and backward
    assert [n["op"] for n in g["nodes"]] == ["placeholder", "call_module", "output"]
    assert clock.calls == 4 * runs
    assert g["nodes"][-1]["meta"]["timing"]["runs"] == runs
    linear = g["nodes"][1]
    assert linear["latency_ms"] == pytest.approx(1.0)
    # its input needs no gradient: the backward is its weight gradient
    assert linear["backward_ms"] == pytest.approx(1.0)
    assert linear["weight_grad_ms"] == pytest.approx(1.0)


def test_backward_ms_is_measured_per_node(monkeypatch, gpt2_tiny):
    monkeypatch.setattr(pe, "_perf_counter", _FakeClock())
    g = pe.export_graph(gpt2_tiny, torch.zeros(1, 16, dtype=torch.long), timing_runs=2)
    nodes = _nodes(g)
    for n in g["nodes"]:
        assert 0 <= n["weight_grad_ms"] <= n["backward_ms"], n["name"]
    # 1 ms on the fake clock per timed gradient: the inputs' and, apart,
    # the weights'
    expected = {"wte": (1, 1), "h_0_attn_c_attn": (2, 1), "lm_head": (2, 1),
                "softmax": (1, 0), "add_1": (1, 0)}
    for name, (backward, weight) in expected.items():
        assert nodes[name]["backward_ms"] == pytest.approx(backward), name
        assert nodes[name]["weight_grad_ms"] == pytest.approx(weight), name
    # no gradient: integer positions, shapes, the placeholder
    for name in ("idx", "positions_like", "size", "output"):
        assert nodes[name]["backward_ms"] == nodes[name]["weight_grad_ms"] == 0, name


def test_real_backward_times_are_positive():
    g = pe.export_graph(torchvision.models.resnet18(), torch.randn(2, 3, 32, 32),
                        timing=True, timing_runs=1)
    nodes = _nodes(g)
    assert nodes["conv1"]["backward_ms"] > 0 and nodes["fc"]["backward_ms"] > 0
    assert 0 < nodes["fc"]["weight_grad_ms"] <= nodes["fc"]["backward_ms"]
    timing = g["nodes"][-1]["meta"]["timing"]
    assert timing["mode"] == "train" and timing["autograd"] is True


def test_no_backward_and_no_timing_leave_backward_ms_out(resnet18_graph):
    assert all("backward_ms" not in n for n in resnet18_graph["nodes"])
    g = pe.export_graph(torch.nn.Linear(4, 2), torch.randn(3, 4), timing_runs=1,
                        backward=False)
    assert all("backward_ms" not in n for n in g["nodes"])
    assert g["nodes"][-1]["meta"]["timing"]["device"] == "cpu"


def test_meta_names_the_device_and_warns_on_cpu(resnet18_graph):
    g = pe.export_graph(torch.nn.Linear(4, 2), torch.randn(3, 4), timing_runs=1)
    output = [n for n in g["nodes"] if n["op"] == "output"][0]
    timing = output["meta"]["timing"]
    assert timing["device"] == "cpu" and timing["runs"] == 1
    assert timing["statistic"] == "median"
    assert "relative balance" in timing["warning"]
    # nothing measured, nothing said
    out = [n for n in resnet18_graph["nodes"] if n["op"] == "output"][0]
    assert "timing" not in out.get("meta", {})


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_is_an_error():
    with pytest.raises(pe.ExportError, match="CUDA is not available"):
        pe.export_graph(torch.nn.Linear(4, 2), torch.randn(3, 4), device="cuda")
    proc = _export("torch.nn:Identity", "--input", "2,2", "--devices", "1GiB",
                   "--device", "cuda")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "CUDA is not available" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_timing_names_the_gpu():
    g = pe.export_graph(torch.nn.Linear(4, 2), torch.randn(3, 4), device="cuda",
                        timing_runs=1)
    timing = g["nodes"][-1]["meta"]["timing"]
    assert timing["device"] == "cuda" and timing["device_name"] and "warning" not in timing


def test_cli_warns_that_cpu_timings_are_relative(tmp_path):
    proc = _export("torch.nn:Identity", "--input", "2,2", "--devices", "1GiB",
                   "--timing-runs", "1", "-o", str(tmp_path / "r.json"))
    assert proc.returncode == 0, proc.stderr
    assert "relative balance" in proc.stderr
    quiet = _export("torch.nn:Identity", "--input", "2,2", "--devices", "1GiB",
                    "--no-timing", "-o", str(tmp_path / "q.json"))
    assert quiet.returncode == 0 and quiet.stderr == ""


# -- models the exporter cannot trace or run -------------------------------------

UNTRACEABLE = '''
import torch


class Branchy(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow
            return x * 2
        return x


def branchy():
    return Branchy()


def broken():
    raise RuntimeError("factory failed\\nsecond line")
'''


@pytest.mark.parametrize("factory,args,message", [
    ("branchy", ["--input", "2,2"], "cannot trace Branchy with torch.fx"),
    ("broken", ["--input", "2,2"], "factory failed"),
])
def test_untraceable_model_is_one_line_and_exit_2(tmp_path, factory, args, message):
    model = tmp_path / "untraceable.py"
    model.write_text(UNTRACEABLE)
    proc = _export(f"{model}:{factory}", *args, "--devices", "1GiB")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("partd-export: ")
    assert message in proc.stderr
    assert proc.stdout == ""


def test_model_failing_on_its_inputs_is_one_line_and_exit_2():
    proc = _export("torch.nn:Linear", "--kwargs", '{"in_features": 4, "out_features": 2}',
                   "--input", "3,5", "--devices", "1GiB")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert "cannot run Linear on the example inputs (node linear:" in proc.stderr


def test_untraceable_model_raises_export_error():
    class Branchy(torch.nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    with pytest.raises(pe.ExportError) as info:
        pe.export_graph(Branchy(), torch.randn(2), timing=False)
    assert "\n" not in str(info.value)
    assert isinstance(info.value.__cause__, torch.fx.proxy.TraceError)


# -- training requests -----------------------------------------------------------


@pytest.fixture(scope="module")
def request_validator():
    jsonschema = pytest.importorskip("jsonschema")
    with open(os.path.join(ROOT, "api", "schemas", "request.json"), encoding="utf-8") as f:
        return jsonschema.Draft202012Validator(json.load(f))


def test_cli_training_request(tmp_path, request_validator):
    out = tmp_path / "req.json"
    code = pe.main([os.path.join(ROOT, "tests/python/models.py") + ":gpt2_tiny",
                    "--input", "1,8:int64", "--devices", "4x1GiB", "--timing-runs", "1",
                    "--mode", "training", "--training-schedule", "gpipe",
                    "--training-microbatches", "8", "--training-stages", "auto",
                    "--training-device-order", "auto", "--training-checkpoint", "except_last",
                    "--training-unit-depth", "2", "--training-backward-factor", "2.5",
                    "--training-param-factor", "4", "-o", str(out)])
    assert code == 0
    req = json.loads(out.read_text())
    assert req["options"] == {"mode": "training", "training": {
        "schedule": "gpipe", "microbatches": 8, "stages": "auto", "device_order": "auto",
        "checkpoint": "except_last", "unit_depth": 2, "backward_factor": 2.5,
        "param_factor": 4.0}}
    assert list(request_validator.iter_errors(req)) == []
    ops = [n for n in req["graph"]["nodes"] if n["op"].startswith("call_")]
    assert all("backward_ms" in n and n["backward_ms"] >= 0 for n in ops)
    assert sum(1 for n in ops if "module" in n) == len(ops) - 2  # root: add, positions_like


def test_cli_training_stages_take_an_integer(tmp_path, request_validator):
    out = tmp_path / "req.json"
    code = pe.main(["torch.nn:Identity", "--input", "2,2", "--devices", "2x1GiB",
                    "--no-timing", "--mode", "training", "--training-stages", "2",
                    "-o", str(out)])
    assert code == 0
    req = json.loads(out.read_text())
    assert req["options"] == {"mode": "training", "training": {"stages": 2}}
    assert list(request_validator.iter_errors(req)) == []


def test_schema_rejects_bad_training_options(request_validator):
    base = {"graph": {"nodes": [{"name": "x", "op": "placeholder"}]},
            "devices": [{"name": "d", "memory_bytes": 1}]}
    for training in ({"stages": 0}, {"stages": "many"}, {"schedule": "inference"},
                     {"checkpoint": "sometimes"}, {"microbatches": 0}, {"unit_depth": 0},
                     {"backward_factor": -1}, {"param_factor": 0}, {"chunks": 2}):
        req = dict(base, options={"mode": "training", "training": training})
        assert list(request_validator.iter_errors(req)), training
    node = {"name": "x", "op": "placeholder", "backward_ms": -1}
    assert list(request_validator.iter_errors(dict(base, graph={"nodes": [node]})))


@pytest.mark.parametrize("args,message", [
    (["--training-microbatches", "4"], "need --mode training"),
    (["--mode", "training", "--microbatches", "4"], "--training-microbatches"),
    (["--mode", "pipeline", "--training-checkpoint", "auto"], "need --mode training"),
    (["--mode", "size_based", "--stages", "1"], "which --mode size_based does not read"),
    (["--mode", "training", "--sac"], "which --mode training does not read"),
])
def test_cli_training_flags_need_training_mode(args, message):
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = pe.main(["torch.nn:Identity", "--input", "1", "--devices", "1GiB", *args])
    assert code == 2
    assert message in err.getvalue()


@pytest.mark.parametrize("flag,value", [("--training-stages", "0"),
                                        ("--training-stages", "some"),
                                        ("--training-microbatches", "0"),
                                        ("--training-unit-depth", "x"),
                                        ("--training-backward-factor", "-1"),
                                        ("--training-param-factor", "0"),
                                        ("--training-checkpoint", "sometimes"),
                                        ("--training-schedule", "Zigzag"),
                                        ("--training-schedule", "1F1B,Zigzag"),
                                        ("--training-virtual-stages", "9"),
                                        ("--training-weight-grad-fraction", "1.5")])
def test_cli_rejects_bad_training_values(flag, value):
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as e:
        pe.main(["torch.nn:Identity", "--input", "1", "--devices", "1GiB",
                 "--mode", "training", flag, value])
    assert e.value.code == 2 and flag in err.getvalue()


def test_model_file_that_fails_to_load_is_one_line_and_exit_2(tmp_path):
    model = tmp_path / "bad.py"
    model.write_text('raise RuntimeError("import failed\\nsecond line")\n')
    for spec, message in ((f"{model}:f", "cannot load"), (f"{tmp_path}/none.py:f", "no such file")):
        proc = _export(spec, "--input", "1", "--devices", "1GiB")
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
        assert message in proc.stderr


# -- truth and speed of the measurements ------------------------------------------


def test_weight_gradient_is_timed_apart_from_the_input_gradient(monkeypatch):
    clock = _FakeClock()
    monkeypatch.setattr(pe, "_perf_counter", clock)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    params = {id(p) for p in model.parameters()}
    asked = []  # (clock readings so far, what each gradient is taken for)
    real_grad = torch.autograd.grad

    def grad(outputs, inputs, *args, **kwargs):
        asked.append((clock.calls, ["weight" if id(t) in params else "input" for t in inputs]))
        return real_grad(outputs, inputs, *args, **kwargs)

    monkeypatch.setattr(torch.autograd, "grad", grad)
    x = torch.randn(3, 4, requires_grad=True)  # an input that needs its gradient
    g = pe.export_graph(model, x, timing_runs=3, timing_budget_ms=0)
    linear = _nodes(g)["_0"]
    # per run: forward (readings 1-2), input gradient (3-4), weight gradient (5-6)
    assert clock.calls == 6 * 3
    assert asked == [(6 * r + k, kind) for r in range(3)
                     for k, kind in ((3, ["input"]), (5, ["weight", "weight"]))]
    assert linear["backward_ms"] == pytest.approx(2.0)
    assert linear["weight_grad_ms"] == pytest.approx(1.0)


def test_real_weight_gradient_times():
    g = pe.export_graph(models.gpt2_tiny(), torch.zeros(2, 16, dtype=torch.long),
                        timing_runs=1)
    for n in g["nodes"]:
        assert 0 <= n["weight_grad_ms"] <= n["backward_ms"], n["name"]
        if n["op"] in ("call_function", "call_method"):
            assert n["weight_grad_ms"] == 0, n["name"]
    assert _nodes(g)["h_0_mlp_c_fc"]["weight_grad_ms"] > 0


def test_batch_size_is_the_traced_batch():
    model = models.gpt2_tiny()
    assert pe.export_graph(model, torch.zeros(3, 8, dtype=torch.long),
                           timing=False)["batch_size"] == 3
    assert pe.export_graph(model, torch.zeros(3, 8, dtype=torch.long), timing=False,
                           batch_size=12)["batch_size"] == 12
    assert "batch_size" not in pe.export_graph(torch.nn.Identity(), torch.tensor(1.0),
                                               timing=False)
    with pytest.raises(ValueError, match="batch_size"):
        pe.export_graph(model, torch.zeros(3, 8, dtype=torch.long), timing=False,
                        batch_size=0)
    code = pe.main(["torch.nn:Identity", "--input", "5,2", "--graph-only", "--no-timing",
                    "--batch-size", "20", "-o", os.devnull])
    assert code == 0


def test_cli_writes_the_batch_size(tmp_path):
    out = tmp_path / "g.json"
    assert pe.main(["torch.nn:Identity", "--input", "5,2", "--graph-only", "--no-timing",
                    "-o", str(out)]) == 0
    assert json.loads(out.read_text())["batch_size"] == 5
    assert pe.main(["torch.nn:Identity", "--input", "5,2", "--graph-only", "--no-timing",
                    "--batch-size", "20", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["batch_size"] == 20


def _forward_calls(model):
    calls = []
    for m in model.modules():
        if not list(m.children()):
            m.register_forward_hook(lambda *a: calls.append(1))
    return calls


@pytest.mark.parametrize("mode,backward", [("pipeline", False), ("size_based", False),
                                           ("training", True)])
def test_backward_is_timed_only_where_the_mode_reads_it(mode, backward):
    req = pe.export_request(torch.nn.Sequential(torch.nn.Linear(4, 2)), torch.randn(3, 4),
                            "1GiB", {"mode": mode}, timing_runs=1)
    linear = req["graph"]["nodes"][1]
    assert ("backward_ms" in linear) is backward
    assert ("weight_grad_ms" in linear) is backward
    timing = req["graph"]["nodes"][-1]["meta"]["timing"]
    assert timing["autograd"] is backward
    assert timing["mode"] == ("train" if backward else "eval")


def test_cli_skips_backward_timing_outside_training(tmp_path):
    out = tmp_path / "r.json"
    for args, backward in ((["--mode", "pipeline"], False), ([], False),
                           (["--mode", "training"], True), (["--graph-only"], True)):
        devices = [] if "--graph-only" in args else ["--devices", "1GiB"]
        assert pe.main(["torch.nn:Linear", "--kwargs", '{"in_features": 4, "out_features": 2}',
                        "--input", "3,4", "--timing-runs", "1", *devices, *args,
                        "-o", str(out)]) == 0
        doc = json.loads(out.read_text())
        nodes = doc.get("graph", doc)["nodes"]
        assert ("backward_ms" in nodes[1]) is backward, args


@pytest.mark.parametrize("backward", [False, True])
def test_each_node_runs_once_per_timed_run(backward):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    calls = _forward_calls(model)
    pe.export_graph(model, torch.randn(3, 4), timing_runs=3, timing_budget_ms=0,
                    backward=backward)
    # 2 modules x (the recording forward + 3 timed runs), no warm-ups
    assert len(calls) == 2 * (1 + 3)


def test_a_spent_budget_stops_the_runs(monkeypatch):
    monkeypatch.setattr(pe, "_perf_counter", _FakeClock())  # every run takes 1 ms
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    calls = _forward_calls(model)
    g = pe.export_graph(model, torch.randn(3, 4), timing_runs=5, timing_budget_ms=0.5,
                        backward=False)
    assert len(calls) == 2 * (1 + 1)
    assert g["nodes"][-1]["meta"]["timing"]["budget_ms"] == 0.5
    calls.clear()
    pe.gather_module_info(model, torch.randn(3, 4), timing_runs=5, timing_budget_ms=0.5)
    # one measured step (it took more than the budget) and the recording one
    assert len(calls) == 2 * 2


def test_module_info_steps(monkeypatch):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    calls = _forward_calls(model)
    pe.gather_module_info(model, torch.randn(3, 4), timing_runs=3, timing_budget_ms=0)
    # three measured training steps and one recording the aten operations
    assert len(calls) == 2 * (3 + 1)


def test_timing_uses_every_cpu_thread_and_restores_the_count():
    seen = []

    class Probe(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), Probe())
    model[0].register_forward_hook(lambda *a: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        g = pe.export_graph(model, torch.randn(3, 4), timing_runs=1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert seen and set(seen) == {pe.cpu_threads()}
    assert g["nodes"][-1]["meta"]["timing"]["threads"] == pe.cpu_threads()


def test_measuring_leaves_buffers_and_the_random_generator_as_they_were():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4),
                                torch.nn.Dropout(0.5))
    x = torch.randn(8, 4)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.random.get_rng_state()
    pe.export_graph(model, x, timing_runs=2, module_info=True)
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k]), k
    assert torch.equal(torch.random.get_rng_state(), rng)
    assert model.training  # and its mode


def test_module_names_agree_between_nodes_and_module_stats(gpt2_graph, gpt2_module_info):
    """mod_stats names are PyTorch's (the root's class, then the fqn); a
    node's `module` is the fqn itself: Root + "." + module is a module."""
    fqns = {s["fqn"] for s in gpt2_module_info["mod_stats"]}
    root = gpt2_module_info["mod_order"]["fw_pre_order"][0]
    for n in gpt2_graph["nodes"]:
        if "module" in n:
            assert f"{root}.{n['module']}" in fqns, n["name"]


def test_cli_v3_training_options(tmp_path):
    out = tmp_path / "req.json"
    code = pe.main(["torch.nn:Identity", "--input", "2,2", "--devices", "2x1GiB", "--no-timing",
                    "--mode", "training", "--training-schedule", "Interleaved1F1B,ZBVZeroBubble",
                    "--training-virtual-stages", "2", "--training-weight-grad-fraction", "0.25",
                    "-o", str(out)])
    assert code == 0
    assert json.loads(out.read_text())["options"]["training"] == {
        "schedule": ["Interleaved1F1B", "ZBVZeroBubble"], "virtual_stages": 2,
        "weight_grad_fraction": 0.25}
    for schedule in ("DualPipeV", "auto", "1f1b"):
        assert pe.main(["torch.nn:Identity", "--input", "2,2", "--devices", "1GiB", "--no-timing",
                        "--mode", "training", "--training-schedule", schedule,
                        "-o", str(out)]) == 0
        assert json.loads(out.read_text())["options"]["training"] == {"schedule": schedule}
