#!/usr/bin/env python3
"""FX's partitioning modes: partd against PyTorch's own Partitioner.

For each mode (size_based, aot_based, sparse_nn, cost_aware, kl_based)
and graph,
the same request is planned by PyTorch 1.13's Partitioner (in this
process, the graph built in torch.fx with the request's sizes and
latencies, as tests/python/test_fx_modes_random.py builds it) and by
`build/partd plan` (a process, end to end: reading the request, planning,
writing the result). Prints both wall-clock times, their ratio and whether
the answers agree (partitions and logical devices; FX's cost).

Graphs: random DAGs with latencies (the tests' generator) of growing size,
and large ones for partd alone. PyTorch runs get BENCH_FX_LIMIT seconds
(default 60) each: a mode that does not finish is shown as such (its
cost_aware is cubic and more in the number of nodes). partd's cost_aware
rows alone get the same limit (it keeps FX's rounds: a merge per round, a
try per pair).

    PARTD_BIN=build/partd python3 bench/bench_fx_modes.py
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import multiprocessing as mp

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
PARTD = os.environ.get("PARTD_BIN", os.path.join(ROOT, "build", "partd"))
LIMIT = float(os.environ.get("BENCH_FX_LIMIT", "60"))


def chain_dag(rng, n_ops, mode):
    """A layered DAG: each operation reads one or two of the last eight."""
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": 4096}]
    ops = []
    for i in range(n_ops):
        back = ops[-8:] or ["x"]
        inputs = rng.sample(back, min(len(back), rng.choice([1, 1, 2])))
        emb = mode == "sparse_nn" and i < 4
        node = {"name": f"op{i}", "op": "call_module" if emb or i % 3 == 0 else "call_function",
                "inputs": inputs, "output_bytes": rng.choice([1024, 2048, 4096]),
                "latency_ms": rng.choice([0.1, 0.2, 0.5, 1.0])}
        if node["op"] == "call_module":
            node["param_bytes"] = rng.choice([8192, 16384])
            node["module_type"] = "EmbeddingBag" if emb else "Linear"
        nodes.append(node)
        ops.append(node["name"])
    nodes.append({"name": "out", "op": "output", "inputs": [ops[-1]]})
    total = sum(n.get("output_bytes", 0) + n.get("param_bytes", 0) for n in nodes)
    n_dev = 4
    size = int(total * 0.4)
    if mode == "sparse_nn":
        # four embedding tables, each more than half a device: one per device,
        # the dense rest (2/5 of a device) beside each
        size = int(total * 2.5)
        for node in nodes[1:5]:
            node["param_bytes"] = int(size * 0.55)
    req = {"graph": {"nodes": nodes},
           "devices": [{"name": f"d{j}", "memory_bytes": size} for j in range(n_dev)],
           "options": {"mode": mode, "transfer_bytes_per_sec": 1e9}}
    if mode == "aot_based":
        k = 4
        req["options"]["aot"] = {
            "partition_of": {o: min(k - 1, i * k // n_ops) for i, o in enumerate(ops)},
            "device_of": {str(j): f"d{j}" for j in range(k)}}
        for d in req["devices"]:
            d["memory_bytes"] = total
    return req


def pin_set_order(req):
    """FX's kl_based picks among swaps of equal cost by the iteration order
    of a Python set of nodes (memory addresses); partd picks the first in
    graph order, so FX's partitions iterate in graph order here, as in
    tests/python/test_fx_modes_random.py."""
    from torch.fx.experimental import partitioner_utils
    order = {n["name"]: i for i, n in enumerate(req["graph"]["nodes"])}

    class GraphOrder(set):
        def __iter__(self):
            return iter(sorted(set.__iter__(self), key=lambda n: order[n.partd_name]))
    init = partitioner_utils.Partition.__init__

    def partition_init(self, partition_id):
        init(self, partition_id)
        self.nodes = GraphOrder()
    partitioner_utils.Partition.__init__ = partition_init


def fx_run(req, mode, q):
    from torch.fx.experimental.partitioner_utils import PartitionMode
    from test_size_based_fx_random import torch_partition
    if mode == "kl_based":
        pin_set_order(req)
    t = time.perf_counter()
    try:
        parts = torch_partition(req, getattr(PartitionMode, mode), latency=mode != "size_based")
        if mode == "size_based":
            parts = (parts, None)
    except Exception as e:  # FX's failures are answers too
        parts = repr(e)
    q.put((time.perf_counter() - t, parts))


def fx_time(req, mode):
    q = mp.Queue()
    p = mp.Process(target=fx_run, args=(req, mode, q))
    p.start()
    p.join(LIMIT)
    if p.is_alive():
        p.kill()
        p.join()
        return None, None
    return q.get()


FX_SCRIPT = """
import json, sys, time
sys.path.insert(0, {tests!r})
from torch.fx.experimental.partitioner_utils import PartitionMode
from test_size_based_fx_random import torch_partition
req = json.load(open(sys.argv[1]))
try:
    torch_partition(req, getattr(PartitionMode, sys.argv[2]), latency=sys.argv[2] != "size_based")
except Exception:
    pass
"""


def fx_process_time(req, mode):
    """FX end to end as a user runs it: a Python process importing torch,
    building the graph and partitioning it (kl_based's set order left as
    Python has it: the time, not the answer, is measured here)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(req, f)
    try:
        script = FX_SCRIPT.format(tests=os.path.join(ROOT, "tests", "python"))
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", script, f.name, mode], capture_output=True,
                       timeout=LIMIT + 30, check=True)
        return time.perf_counter() - t
    finally:
        os.unlink(f.name)


def partd_time(req, limit=None):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(req, f)
    try:
        t = time.perf_counter()
        try:
            r = subprocess.run([PARTD, "plan", f.name], capture_output=True, text=True,
                               timeout=limit)
        except subprocess.TimeoutExpired:
            return None, f"did not finish in {limit:.0f} s"
        dt = time.perf_counter() - t
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        return dt, r.stderr.strip()[:80]
    res = json.loads(r.stdout)
    parts = [{"nodes": p["nodes"], "logical_ids": p["logical_ids"],
              "memory_bytes": p["memory_bytes"]} for p in res["partitions"]]
    return dt, (parts, res["summary"].get("latency_ms"))


def agree(mode, ours, theirs):
    if theirs is None:
        return "FX did not finish"
    if isinstance(theirs, str) and theirs.startswith("RecursionError") and not isinstance(ours, str):
        # kl_based: FX's swaps leave a cycle between partitions, and its
        # cost walks it without end; partd plans validly instead
        return "FX: cycle; partd plans"
    if isinstance(theirs, str) or isinstance(ours, str):
        return "both fail" if isinstance(theirs, str) and isinstance(ours, str) else "DIFFER"
    a, b = ours[0], theirs[0]
    if mode == "aot_based":
        a, b = sorted(a, key=lambda p: p["nodes"]), sorted(b, key=lambda p: p["nodes"])
    same = a == b and (theirs[1] is None or abs(ours[1] - theirs[1]) <= 1e-9 * max(1, theirs[1]))
    return "same" if same else "DIFFER"


def main():
    print(f"partd: {PARTD}; PyTorch limit {LIMIT:.0f} s per run; "
          f"load average {os.getloadavg()[0]:.2f}")
    print("PyTorch s: FX's Partitioner call in a process that has imported torch;"
          " PyTorch run s: the whole Python run (import torch, graph, partition);"
          " partd s: the whole `partd plan` process (start, read, plan, write).")
    print("speedup: PyTorch s / partd s (the call against partd's whole run); run speedup:"
          " PyTorch run s / partd s (run against run).")
    print(f"{'mode':<11} {'ops':>6} {'PyTorch s':>10} {'PyTorch run s':>14} {'partd s':>9} "
          f"{'speedup':>9} {'run speedup':>12}  answers")
    sizes = {"size_based": [100, 1000], "aot_based": [100, 1000], "sparse_nn": [100, 1000],
             "cost_aware": [20, 40, 80], "kl_based": [20, 50, 100, 200]}
    for mode, ns in sizes.items():
        for n in ns:
            req = chain_dag(random.Random(n), n, mode)
            theirs_t, theirs = fx_time(req, mode)
            ours_t, ours = partd_time(req)
            run_t = fx_process_time(req, mode) if theirs_t is not None else None
            fx = f"{theirs_t:10.3f}" if theirs_t is not None else f"{'>' + str(int(LIMIT)):>10}"
            run = f"{run_t:14.3f}" if run_t is not None else f"{'>' + str(int(LIMIT)):>14}"
            speed = f"{theirs_t / ours_t:8.1f}x" if theirs_t is not None else f"{'>' + str(int(LIMIT / ours_t)) + 'x':>9}"
            run_speed = f"{run_t / ours_t:11.1f}x" if run_t is not None else f"{'>' + str(int(LIMIT / ours_t)) + 'x':>12}"
            print(f"{mode:<11} {n:>6} {fx} {run} {ours_t:9.3f} {speed} {run_speed}  "
                  f"{agree(mode, ours, theirs)}", flush=True)
    for mode, n in (("aot_based", 10000), ("sparse_nn", 10000), ("size_based", 10000),
                    ("cost_aware", 300), ("cost_aware", 1000), ("cost_aware", 2000),
                    ("cost_aware", 10000),
                    ("kl_based", 2000), ("kl_based", 10000)):
        req = chain_dag(random.Random(n), n, mode)
        ours_t, ours = partd_time(req, LIMIT if mode == "cost_aware" else None)
        what = ours if isinstance(ours, str) else f"{len(ours[0])} partitions"
        took = f"{ours_t:9.3f}" if ours_t is not None else f"{'>' + str(int(LIMIT)):>9}"
        print(f"{mode:<11} {n:>6} {'-':>10} {'-':>14} {took} {'':>9} {'':>12}  partd alone: {what}",
              flush=True)


if __name__ == "__main__":
    main()
