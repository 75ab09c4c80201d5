"""Parity of `partd plan` (FX's modes) with PyTorch's own Partitioner.

For torchvision models and device inventories sized relative to each
model (fitting on one device, homogeneous and heterogeneous splits, devices
running out, not enough memory, a node larger than every device), both
planners run on the same traced graph:

* PyTorch: torch.fx.experimental.accelerator_partitioner.Partitioner,
  PartitionMode.size_based, after ShapeProp, sizes from get_size_of_all_nodes;
* partd: the graph exported with --fx-sizes, `partd plan`.

They must give the same partitions (as sets of operation nodes, partition
numbering ignored) on the same logical devices, and fail in the same cases
(PyTorch RuntimeError <-> partd exit 3).

torch.fx's get_size_of_node needs one tensor per node; for the transformer
(tuples from MultiheadAttention, None from torch._assert) the test extends
it the way the exporter measures (tensors of a tuple summed, 0 for no tensor)
and leaves PyTorch's partitioning algorithm untouched.

FX's other modes on the same traced models, with the same node latencies
on both sides (a fixed cycle over graph order): cost_aware where PyTorch
finishes in seconds (vit_small, resnet18; resnet50 and mobilenet_v2 take it
minutes), aot_based with the map of PyTorch's own size_based plan, sparse_nn
on a small network of EmbeddingBags and Linears (torchvision's models have
no embedding, where FX's sparse_nn pops from an empty list). Partitions,
logical devices and FX's cost (summary.latency_ms) must agree.
"""

import copy

import json
import math
import os

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from torch.fx.experimental import accelerator_partitioner as fx_partitioner  # noqa: E402
from torch.fx.experimental.partitioner_utils import (  # noqa: E402
    Device,
    NodeLatency,
    PartitionerConfig,
    PartitionMode,
    get_extra_size_of,
    get_latency_of_partitioned_graph,
    get_partition_to_latency_mapping,
)
from torch.fx.passes.graph_manipulation import size_bytes  # noqa: E402

from partd import exporter as pe  # noqa: E402
from partd_testlib import ROOT, run_exported  # noqa: E402

OPS = ("call_module", "call_function", "call_method")


def _small_vit():
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(0)
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                             hidden_dim=64, mlp_dim=128, num_classes=10)


# name -> (factory, input shape, needs the extended size function)
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(), (1, 3, 64, 64), False),
    "resnet50": (lambda: torchvision.models.resnet50(), (1, 3, 64, 64), False),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), (1, 3, 64, 64), False),
    "vit_small": (_small_vit, (1, 3, 32, 32), True),
}


def _extended_sizes(fx_module, args=None):
    """get_size_of_all_nodes for nodes with tuple or no tensor output."""
    named = dict(fx_module.named_modules())
    for node in fx_module.graph.nodes:
        if node.op == "output":
            break
        meta = node.meta.get("tensor_meta")
        out = pe._meta_bytes(meta)
        total = out
        if node.op == "call_module":
            first = pe._first_meta(meta)
            elem = pe._element_size(first.dtype) if first is not None else 4
            total += elem * sum(p.numel() for _, p in named[node.target].named_parameters())
        node.size_bytes = size_bytes(out, total)


class Exported:
    """One model traced once: the GraphModule (for PyTorch) and the graph
    exported from that very trace (for partd)."""

    def __init__(self, name):
        factory, shape, extended = MODELS[name]
        torch.manual_seed(0)
        self.model = factory().eval()
        self.gm = pe.trace(self.model)
        x = torch.randn(*shape)
        self.graph = pe.export_traced(self.gm, x, name=name, timing=False,
                                      fx_sizes=True, shapes=False)
        self.extended = extended
        self._apply_sizes()
        nodes = list(self.gm.graph.nodes)
        self.total = sum(n.size_bytes.total_size for n in nodes if n.op != "output")
        self.largest = max(get_extra_size_of(n, set()) for n in nodes if n.op in OPS)

    def _apply_sizes(self):
        if self.extended:
            _extended_sizes(self.gm)
        else:
            fx_partitioner.get_size_of_all_nodes(self.gm)


@pytest.fixture(scope="module")
def exported():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = Exported(name)
        return cache[name]
    return get


def _pytorch_plan(ex, devices, monkeypatch):
    return _pytorch_partition(ex.gm, ex.model, devices, monkeypatch, ex.extended)


def _pytorch_partition(gm, model, devices, monkeypatch, extended=False):
    """[(frozenset of op node names, logical ids)] or the RuntimeError."""
    if extended:
        monkeypatch.setattr(fx_partitioner, "get_size_of_all_nodes", _extended_sizes)
    fx_devices = [Device(d["name"], d["memory_bytes"], d["logical_id"]) for d in devices]
    config = PartitionerConfig(fx_devices, PartitionMode.size_based)
    partitioner = fx_partitioner.Partitioner()
    try:
        partitioner.partition_graph(gm, model, config)
    except RuntimeError as e:
        return e
    return sorted((frozenset(n.name for n in p.nodes if n.op in OPS),
                   tuple(sorted(p.logical_device_ids)))
                  for p in partitioner.partitions)


def _partd_plan(binary, ex, devices):
    request = {"graph": ex.graph, "devices": devices, "options": {"mode": "size_based"}}
    status, result, problem, stderr = run_exported(binary, request)
    if status != 0:
        return status, problem or stderr
    return 0, sorted((frozenset(p["nodes"]), tuple(sorted(p["logical_ids"])))
                     for p in result["partitions"])


def _devices(sizes, logical_ids=None):
    ids = logical_ids or list(range(len(sizes)))
    return [{"name": f"dev{i}", "memory_bytes": int(s), "logical_id": ids[i]}
            for i, s in enumerate(sizes)]


CASE_NAMES = [
    "fits-one", "fits-exactly-largest", "not-enough-memory", "node-too-large",
    "homogeneous-2", "homogeneous-3", "homogeneous-4", "heterogeneous",
    "heterogeneous-small-first", "two-of-0.52", "two-of-0.6", "two-of-0.75",
]


def _cases(ex):
    """case name -> (devices, expected outcome: 'plan', 'fail' or None).

    Sizes are fractions of the model's FX total size S; L is the largest
    memory a single operation needs. None: whatever PyTorch does (the
    sweep covers greedy splits, devices running out with single-node
    partitions, and failed partition-to-device mappings)."""
    S, L = ex.total, ex.largest
    cases = {
        "fits-one": (_devices([S + 1]), "plan"),
        "fits-exactly-largest": (_devices([S // 3, S, S // 2], [5, 3, 9]), "plan"),
        "not-enough-memory": (_devices([S // 3, S // 3]), "fail"),
        "node-too-large": (_devices([L - 1] * (S // max(L - 1, 1) + 2)), "fail"),
        "heterogeneous": (_devices([S * 0.5, S * 0.3, S * 0.45], [2, 0, 1]), None),
        "heterogeneous-small-first": (_devices([S * 0.2, S * 0.9]), None),
    }
    for k in (2, 3, 4):
        cases[f"homogeneous-{k}"] = (_devices([math.ceil(S * 1.25 / k)] * k), None)
    for frac in (0.52, 0.6, 0.75):
        cases[f"two-of-{frac}"] = (_devices([S * frac] * 2), None)
    assert sorted(cases) == sorted(CASE_NAMES)
    return cases


CASES = [(m, c) for m in MODELS for c in CASE_NAMES]


@pytest.mark.parametrize("model,case", CASES, ids=[f"{m}-{c}" for m, c in CASES])
def test_size_based_matches_pytorch(model, case, exported, partd_plan_bin, monkeypatch):
    ex = exported(model)
    devices, expected = _cases(ex)[case]
    ours_status, ours = _partd_plan(partd_plan_bin, ex, devices)
    theirs = _pytorch_plan(ex, devices, monkeypatch)
    if isinstance(theirs, RuntimeError):
        assert ours_status == 3, (
            f"{model}/{case}: PyTorch raised {theirs!r}, partd exited {ours_status}: {ours}")
        outcome = "fail"
    else:
        assert ours_status == 0, (
            f"{model}/{case}: PyTorch planned {len(theirs)} partitions, "
            f"partd exited {ours_status}: {ours}")
        assert ours == theirs, f"{model}/{case}: partitions differ"
        outcome = "plan"
    if expected is not None:
        assert outcome == expected, f"{model}/{case}: case meant to {expected}"


def test_sweep_covers_every_outcome(exported, monkeypatch):
    """The device sets exercise each branch of PyTorch's size_based: one
    partition, greedy splits, single-node partitions once devices run out,
    and each failure."""
    seen = set()
    for model in MODELS:
        ex = exported(model)
        for devices, _ in _cases(ex).values():
            r = _pytorch_plan(ex, devices, monkeypatch)
            if isinstance(r, RuntimeError):
                seen.add("too-large" if "too large" in str(r) else str(r))
            else:
                seen.add("single" if len(r) == 1 else
                         "run-out" if len(r) > len(devices) else "split")
    assert {"single", "split", "run-out", "too-large",
            "Devices have no enough memory for the module",
            "Cannot Get a Valid Partition to Logical Device Mapping"} <= seen


def test_exported_sizes_are_fx_sizes(exported):
    """The exported graph carries exactly torch.fx's sizes: output_bytes is
    FX's output_size and output + params of call_module is its total_size."""
    ex = exported("resnet18")
    by_name = {n["name"]: n for n in ex.graph["nodes"]}
    for node in ex.gm.graph.nodes:
        if node.op == "output":
            continue
        ours = by_name[node.name]
        assert ours["output_bytes"] == node.size_bytes.output_size, node.name
        params = sum(p["bytes"] for p in ours.get("params", []))
        if node.op == "get_attr":
            assert params == ours["output_bytes"]
        else:
            assert ours["output_bytes"] + params == node.size_bytes.total_size, node.name
        if node.op in ("call_function", "call_method"):
            assert "params" not in ours


def test_size_based_example_matches_pytorch(monkeypatch):
    """examples/resnet50-size_based: the stored result is PyTorch's plan."""
    base = os.path.join(ROOT, "examples", "resnet50-size_based")
    with open(os.path.join(base, "request.json")) as f:
        request = json.load(f)
    with open(os.path.join(base, "result.json")) as f:
        result = json.load(f)
    torch.manual_seed(0)
    model = torchvision.models.resnet50().eval()
    gm = pe.trace(model)
    graph = pe.export_traced(gm, torch.randn(1, 3, 224, 224), timing=False, fx_sizes=True)
    assert [n["output_bytes"] for n in graph["nodes"]] == \
        [n["output_bytes"] for n in request["graph"]["nodes"]]
    devices = [dict(d, logical_id=i) for i, d in enumerate(request["devices"])]
    theirs = _pytorch_partition(gm, model, devices, monkeypatch)
    ours = sorted((frozenset(p["nodes"]), tuple(p["logical_ids"])) for p in result["partitions"])
    assert ours == theirs


# FX's other modes

RATE = 1e9  # bytes per second between devices


class _SparseNet(torch.nn.Module):
    """Embedding tables first, a dense tower after them: what FX's sparse_nn
    is for."""

    def __init__(self):
        super().__init__()
        self.emb0 = torch.nn.EmbeddingBag(3000, 16, mode="sum")
        self.emb1 = torch.nn.EmbeddingBag(2000, 16, mode="sum")
        self.emb2 = torch.nn.EmbeddingBag(2500, 16, mode="sum")
        self.bottom = torch.nn.Linear(3, 16)
        self.top0 = torch.nn.Linear(64, 32)
        self.top1 = torch.nn.Linear(32, 1)

    def forward(self, x):
        e = torch.cat([self.emb0(x), self.emb1(x), self.emb2(x), self.bottom(x.float())], 1)
        return torch.sigmoid(self.top1(torch.relu(self.top0(e))))


MODELS_FX = dict(MODELS, sparse_net=(lambda: _SparseNet(),
                                     lambda: torch.randint(0, 2000, (4, 3)), False))


class ExportedFx(Exported):
    def __init__(self, name):
        factory, shape, extended = MODELS_FX[name]
        torch.manual_seed(0)
        self.model = factory().eval()
        self.gm = pe.trace(self.model)
        x = shape() if callable(shape) else torch.randn(*shape)
        self.graph = pe.export_traced(self.gm, x, name=name, timing=False,
                                      fx_sizes=True, shapes=False)
        self.extended = extended
        self._apply_sizes()
        nodes = list(self.gm.graph.nodes)
        self.total = sum(n.size_bytes.total_size for n in nodes if n.op != "output")
        self.largest = max(get_extra_size_of(n, set()) for n in nodes if n.op in OPS)
        # latencies, the same on both sides; module_type as FX's sparse_nn
        # reads it (the module's printed form)
        named = dict(self.gm.named_modules())
        for i, n in enumerate(self.graph["nodes"]):
            if n["op"] in OPS:
                n["latency_ms"] = (0.5, 1, 2, 3.25)[i % 4]
                if i % 5 == 0:
                    n["mem_latency_ms"] = 1.5
            if n["op"] == "call_module":
                n["module_type"] = type(named[n["target"] if "target" in n else n["name"]]).__name__


@pytest.fixture(scope="module")
def exported_fx():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = ExportedFx(name)
        return cache[name]
    return get


def _fx_latencies(ex):
    by_name = {n["name"]: n for n in ex.graph["nodes"]}
    return {node: NodeLatency(by_name[node.name].get("mem_latency_ms", 0) / 1000.0,
                              by_name[node.name].get("latency_ms", 0) / 1000.0)
            for node in ex.gm.graph.nodes if node.op != "output"}


def _pytorch_mode(ex, devices, mode, monkeypatch, aot=None):
    """FX's partitions in its list order [(op names, logical ids)] and its
    cost in ms, or the exception it raised."""
    if ex.extended:
        monkeypatch.setattr(fx_partitioner, "get_size_of_all_nodes", _extended_sizes)
    lat = _fx_latencies(ex)
    config = dict(mode=mode, transfer_rate_bytes_per_sec=RATE, node_to_latency_mapping=lat)
    if aot is not None:
        by_name = {n.name: n for n in ex.gm.graph.nodes}
        logical = {d["name"]: d["logical_id"] for d in devices}
        config["node_to_partition_mapping"] = {by_name[k]: v
                                               for k, v in aot["partition_of"].items()}
        config["partition_to_logical_device_mapping"] = {
            int(k): [logical[v]] for k, v in aot["device_of"].items()}
    fx_devices = [Device(d["name"], d["memory_bytes"], d["logical_id"]) for d in devices]
    partitioner = fx_partitioner.Partitioner()
    # the partitions are the answer; splitting the module after them is
    # not compared (split_module fails on some of these plans)
    partitioner.do_partition = lambda: None
    partitioner.dump_dag = lambda module: None
    try:
        partitioner.partition_graph(ex.gm, ex.model, PartitionerConfig(fx_devices, **config))
    except (RuntimeError, IndexError) as e:
        return e
    parts = partitioner.partitions
    fx_partitioner.set_parents_and_children(parts)
    cost = get_latency_of_partitioned_graph(parts, get_partition_to_latency_mapping(parts, lat),
                                            RATE)
    return [(frozenset(n.name for n in p.nodes if n.op in OPS), tuple(p.logical_device_ids))
            for p in parts], cost * 1000.0


def _partd_mode(binary, ex, devices, mode, aot=None):
    options = {"mode": mode, "transfer_bytes_per_sec": RATE}
    if aot is not None:
        options["aot"] = aot
    status, result, problem, stderr = run_exported(
        binary, {"graph": ex.graph, "devices": devices, "options": options})
    if status != 0:
        return status, problem or stderr
    return 0, ([(frozenset(p["nodes"]), tuple(p["logical_ids"])) for p in result["partitions"]],
               result["summary"]["latency_ms"])


def _same_answer(ex, devices, mode, binary, monkeypatch, aot=None, ordered=True):
    theirs = _pytorch_mode(ex, devices, mode, monkeypatch, aot)
    ours_status, ours = _partd_mode(binary, ex, devices, mode.name, aot)
    assert not isinstance(theirs, Exception), f"PyTorch raised {theirs!r}"
    assert ours_status == 0, f"PyTorch planned, partd exited {ours_status}: {ours}"
    if not ordered:
        def key(part):
            return sorted(part[0]), part[1]
        ours, theirs = (sorted(ours[0], key=key), ours[1]), (sorted(theirs[0], key=key), theirs[1])
    assert ours[0] == theirs[0], "partitions differ"
    assert ours[1] == pytest.approx(theirs[1], rel=1e-13, abs=1e-12)
    return theirs[0]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["vit_small", "resnet18"])
def test_cost_aware_matches_pytorch(model, exported_fx, partd_plan_bin, monkeypatch):
    """PyTorch takes 10 to 20 s a model (cubic and more in the nodes)."""
    ex = exported_fx(model)
    parts = _same_answer(ex, _devices([ex.total * 0.6] * 2), PartitionMode.cost_aware,
                         partd_plan_bin, monkeypatch)
    assert 1 < len(parts) < len([n for n in ex.graph["nodes"] if n["op"] in OPS])


AOT_CASES = [(m, c) for m in MODELS for c in ("homogeneous-3", "heterogeneous")]


@pytest.mark.parametrize("model,case", AOT_CASES, ids=[f"{m}-{c}" for m, c in AOT_CASES])
def test_aot_based_matches_pytorch(model, case, exported_fx, partd_plan_bin, monkeypatch):
    """The map is PyTorch's own size_based plan of the model."""
    ex = exported_fx(model)
    devices = _cases(ex)[case][0]
    if ex.extended:
        monkeypatch.setattr(fx_partitioner, "get_size_of_all_nodes", _extended_sizes)
    sb = fx_partitioner.Partitioner()
    sb.do_partition = lambda: None
    sb.dump_dag = lambda module: None
    sb.partition_graph(ex.gm, ex.model, PartitionerConfig(
        [Device(d["name"], d["memory_bytes"], d["logical_id"]) for d in devices]))
    name_of = {d["logical_id"]: d["name"] for d in devices}
    aot = {"partition_of": {n.name: p.partition_id for p in sb.partitions for n in p.nodes
                            if n.op in OPS},
           "device_of": {str(p.partition_id): name_of[p.logical_device_ids[0]]
                         for p in sb.partitions}}
    assert len(sb.partitions) > 1
    _same_answer(ex, devices, PartitionMode.aot_based, partd_plan_bin, monkeypatch, aot,
                 ordered=False)


@pytest.mark.parametrize("frac,n_parts", [(0.45, 4), (0.6, None), (0.7, 3)])
def test_sparse_nn_matches_pytorch(frac, n_parts, exported_fx, partd_plan_bin, monkeypatch):
    """Three devices of frac of the model: a table per device, two tables
    on one, or (0.6) an embedding partition that cannot share a device with
    the dense one, where FX raises and partd refuses."""
    ex = exported_fx("sparse_net")
    assert [n["name"] for n in ex.graph["nodes"] if n.get("module_type") == "EmbeddingBag"] == \
        ["emb0", "emb1", "emb2"]
    devices = _devices([ex.total * frac] * 3)
    if n_parts is None:
        theirs = _pytorch_mode(ex, devices, PartitionMode.sparse_nn, monkeypatch)
        assert isinstance(theirs, RuntimeError), theirs
        status, problem = _partd_mode(partd_plan_bin, ex, devices, "sparse_nn")
        assert status == 3, problem
        return
    parts = _same_answer(ex, devices, PartitionMode.sparse_nn, partd_plan_bin, monkeypatch)
    assert len(parts) == n_parts
