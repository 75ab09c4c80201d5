"""Parity of `partd plan` (mode size_based) with PyTorch's own Partitioner.

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
"""

import json
import math
import os

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from torch.fx.experimental import accelerator_partitioner as fx_partitioner  # noqa: E402
from torch.fx.experimental.partitioner_utils import (  # noqa: E402
    Device,
    PartitionerConfig,
    PartitionMode,
    get_extra_size_of,
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
