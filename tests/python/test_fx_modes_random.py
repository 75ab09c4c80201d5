"""FX's other partitioning modes (aot_based, sparse_nn, cost_aware,
kl_based) against PyTorch's own Partitioner on random graphs with
latencies.

Each request is built in torch.fx as test_size_based_fx_random builds it
(same sizes, NodeLatency from latency_ms and mem_latency_ms). Where FX's
answer is valid (every operation in a partition, every partition on a
device, no device over its memory, no cycle between partitions), partd
must give the same partitions, logical devices and memory, in FX's order
(aot_based: by partition id), and the same cost (summary.latency_ms is
FX's get_latency_of_partitioned_graph). Where FX raises, partd must fail
too, unless the case is one where FX is wrong (README, "Where partd departs
from FX"): then partd's plan must be valid. Where FX hands back a broken
plan, partd must fail or plan validly, never cheaper than... nothing: FX
has no valid answer to beat.
"""
import json
import random

import pytest

torch = pytest.importorskip("torch")
from torch.fx.experimental.partitioner_utils import PartitionMode  # noqa: E402

from test_size_based_fx_random import (PARTD, partd_partition, random_request,  # noqa: E402
                                       torch_partition)


def with_latencies(rng, req, mode):
    for n in req["graph"]["nodes"]:
        if n["op"].startswith("call"):
            n["latency_ms"] = rng.choice([0, 0.5, 1, 2, 3.25, 7])
            if rng.random() < 0.3:
                n["mem_latency_ms"] = rng.choice([0.25, 1, 4])
    req["options"] = {"mode": mode, "transfer_bytes_per_sec": rng.choice([1e10, 64.0, 1000.0])}
    return req


def random_aot(rng, req):
    ops = [n["name"] for n in req["graph"]["nodes"] if n["op"].startswith("call")]
    k = rng.randint(1, min(4, len(ops)))
    ids = rng.sample(range(9), k)
    if rng.random() < 0.6:
        # contiguous runs in graph order: no cycle between partitions
        cuts = sorted(rng.sample(range(1, len(ops)), min(k - 1, len(ops) - 1)))
        part, j = {}, 0
        for i, name in enumerate(ops):
            while j < len(cuts) and i >= cuts[j]:
                j += 1
            part[name] = ids[min(j, k - 1)]
    else:
        part = {name: rng.choice(ids) for name in ops}
    names = [d["name"] for d in req["devices"]]
    if rng.random() < 0.8:
        for d in req["devices"]:
            d["memory_bytes"] *= 4
    device_of = {}
    for pid in set(part.values()):
        if rng.random() < 0.2 and len(names) > 1:
            device_of[str(pid)] = rng.sample(names, 2)
        else:
            device_of[str(pid)] = rng.choice(names)
    req["options"]["aot"] = {"partition_of": part, "device_of": device_of}
    return req


def fx_valid(req, parts):
    """FX's own rules: every operation placed once, every partition on a
    device, each device within its memory, no cycle between partitions."""
    nodes = {n["name"]: n for n in req["graph"]["nodes"]}
    where = {}
    for i, p in enumerate(parts):
        if not p["logical_ids"]:
            return False
        for v in p["nodes"]:
            if v in where:
                return False
            where[v] = i
    if sorted(where) != sorted(v for v, n in nodes.items() if n["op"].startswith("call")):
        return False
    logical = {d.get("logical_id", i): d["memory_bytes"] for i, d in enumerate(req["devices"])}

    def size(v, total):
        n = nodes[v]
        out = n.get("output_bytes", 0)
        return out + n.get("param_bytes", 0) if total else out
    # a device holds the union of its partitions' node sets (placeholders
    # and get_attrs with the operations that read them), each node with its
    # inputs from outside the union
    for d, mem in logical.items():
        ops = {v for p in parts if d in p["logical_ids"] for v in p["nodes"]}
        consts = {u for v in ops for u in nodes[v].get("inputs", [])
                  if not nodes[u]["op"].startswith("call")}
        held = sum(size(v, True) for v in ops | consts) + sum(
            size(u, False) for v in ops for u in nodes[v].get("inputs", [])
            if u not in ops and u not in consts)
        if held > mem:
            return False
    edges = {(where[u], where[v]) for v in where for u in nodes[v].get("inputs", [])
             if u in where and where[u] != where[v]}
    children = {}
    for a, b in edges:
        children.setdefault(a, set()).add(b)
    state = {}

    def cyclic(a):
        state[a] = 1
        for b in children.get(a, ()):
            if state.get(b) == 1 or (b not in state and cyclic(b)):
                return True
        state[a] = 2
        return False
    return not any(a not in state and cyclic(a) for a in range(len(parts)))


def compare(req, mode, tmp_path, sort=False, fx_bugs=()):
    """'plan', 'fail', 'fx-broken' (FX planned, but not validly) or 'fx-bug'
    (FX raised one of fx_bugs on a valid request: partd must plan validly
    or fail)."""
    bug = None
    try:
        theirs = torch_partition(req, mode, latency=True)
    except fx_bugs as e:
        theirs, bug = None, e
    except Exception:  # RuntimeError; TypeError where FX words "too large" with a function
        theirs = None
    if theirs is not None and mode == PartitionMode.kl_based:
        # partitions kl_based's swaps leave empty are not partitions to partd
        theirs = ([p for p in theirs[0] if p["nodes"]], theirs[1])
    ours = partd_partition(req, tmp_path, latency=True)
    what = json.dumps(req)
    if bug is not None:
        assert ours is None or fx_valid(req, ours[0]), f"partd's plan is not valid: {what}"
        return "fx-bug" if ours is not None else "fail"
    if theirs is None:
        assert ours is None, f"FX raised, partd planned: {what}"
        return "fail"
    if not fx_valid(req, theirs[0]):
        if ours is not None:
            assert fx_valid(req, ours[0]), f"partd's plan is not valid: {what}"
        return "fx-broken"
    assert ours is not None, f"FX planned, partd failed: {what}"
    key = (lambda p: p["nodes"]) if sort else None
    got = sorted(ours[0], key=key) if sort else ours[0]
    want = sorted(theirs[0], key=key) if sort else theirs[0]
    assert got == want, what
    assert ours[1] == pytest.approx(theirs[1], rel=1e-13, abs=1e-12), what
    return "split" if len(want) > 1 else "plan"


@pytest.mark.slow
@pytest.mark.skipif(not __import__("os").path.exists(PARTD), reason="partd binary not built")
def test_aot_based_matches_pytorch(tmp_path):
    rng = random.Random(2026)
    seen = {}
    for _ in range(150):
        req = random_aot(rng, with_latencies(rng, random_request(rng, 12), "aot_based"))
        outcome = compare(req, PartitionMode.aot_based, tmp_path, sort=True)
        seen[outcome] = seen.get(outcome, 0) + 1
    assert seen.get("split", 0) >= 40 and seen.get("fx-broken", 0) >= 10, seen


def random_sparse(rng, req):
    """A sparse network: embedding tables (large, module_type EmbeddingBag)
    among the first operations, dense ones after them (none or all
    embeddings in some graphs), devices of one size (FX's sparse_nn plans
    nothing else)."""
    ops = [n for n in req["graph"]["nodes"] if n["op"].startswith("call")]
    k = int(len(ops) * rng.choice([0.0, 0.3, 0.5, 0.7, 1.0]))
    for i, n in enumerate(ops):
        if i < k and rng.random() < 0.9:
            n["op"] = "call_module"
            n["module_type"] = "EmbeddingBag"
            n["param_bytes"] = rng.choice([40, 64, 96])
        elif n["op"] == "call_module":
            n["module_type"] = "Linear"
            n["param_bytes"] = rng.choice([0, 4, 8])
    if rng.random() < 0.9:
        total = graph_total(req)
        n_dev = rng.randint(2, 5)
        size = max(1, int(total * rng.uniform(max(0.3, 1.0 / n_dev), 0.98)))
        req["devices"] = [{"name": f"d{j}", "memory_bytes": size} for j in range(n_dev)]
    return req


def graph_total(req):
    return sum(n.get("output_bytes", 0) + n.get("param_bytes", 0)
               for n in req["graph"]["nodes"] if n["op"] not in ("output", "get_attr")) + \
        sum(n["output_bytes"] for n in req["graph"]["nodes"] if n["op"] == "get_attr")


@pytest.mark.slow
@pytest.mark.skipif(not __import__("os").path.exists(PARTD), reason="partd binary not built")
def test_sparse_nn_matches_pytorch(tmp_path):
    rng = random.Random(7)
    seen = {}
    for _ in range(500):
        req = random_sparse(rng, with_latencies(rng, random_request(rng, 14), "sparse_nn"))
        # FX's combining pops from an empty list when a graph has no
        # embedding node, or only embeddings (IndexError)
        outcome = compare(req, PartitionMode.sparse_nn, tmp_path, fx_bugs=(IndexError,))
        seen[outcome] = seen.get(outcome, 0) + 1
    assert seen.get("split", 0) >= 40 and seen.get("fail", 0) >= 20 and \
        seen.get("fx-bug", 0) >= 20, seen


@pytest.mark.slow
@pytest.mark.skipif(not __import__("os").path.exists(PARTD), reason="partd binary not built")
def test_cost_aware_matches_pytorch(tmp_path):
    rng = random.Random(11)
    seen = {}
    for _ in range(200):
        req = with_latencies(rng, random_request(rng, 10), "cost_aware")
        if rng.random() < 0.8:
            total = graph_total(req)
            for d in req["devices"]:
                d["memory_bytes"] = max(1, int(total * rng.uniform(0.3, 0.98)))
        outcome = compare(req, PartitionMode.cost_aware, tmp_path)
        seen[outcome] = seen.get(outcome, 0) + 1
    assert seen.get("split", 0) >= 50 and seen.get("fail", 0) >= 5 and \
        seen.get("fx-broken", 0) >= 5, seen


@pytest.mark.slow
@pytest.mark.skipif(not __import__("os").path.exists(PARTD), reason="partd binary not built")
def test_kl_based_matches_pytorch(tmp_path, monkeypatch):
    """FX picks among swaps of equal cost by the iteration order of a Python
    set of nodes, which follows their memory addresses; partd takes the
    first in graph order, so FX's partitions iterate in graph order here."""
    from torch.fx.experimental import partitioner_utils
    order = {}

    class GraphOrder(set):
        def __iter__(self):
            return iter(sorted(set.__iter__(self), key=lambda n: order[n.partd_name]))
    init = partitioner_utils.Partition.__init__

    def partition_init(self, partition_id):
        init(self, partition_id)
        self.nodes = GraphOrder()
    monkeypatch.setattr(partitioner_utils.Partition, "__init__", partition_init)
    rng = random.Random(1)
    seen = {}
    for _ in range(150):
        req = with_latencies(rng, random_request(rng, 10), "kl_based")
        if rng.random() < 0.8:
            total = graph_total(req)
            for d in req["devices"]:
                d["memory_bytes"] = max(1, int(total * rng.uniform(0.3, 0.98)))
        order.clear()
        order.update((n["name"], i) for i, n in enumerate(req["graph"]["nodes"]))
        # FX's cost walks a cycle its swaps made without end (RecursionError)
        outcome = compare(req, PartitionMode.kl_based, tmp_path, fx_bugs=(RecursionError,))
        seen[outcome] = seen.get(outcome, 0) + 1
    assert seen.get("split", 0) >= 40 and seen.get("fail", 0) >= 20 and \
        seen.get("fx-broken", 0) >= 4, seen
