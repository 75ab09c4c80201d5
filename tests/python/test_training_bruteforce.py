"""The training planner against an independent brute force.

The reference below is written from the contract ("Training mode"), not
from partd's C code: it enumerates every stage count, device order, split
into whole units and checkpoint set on small random graphs (skip
connections, shared parameters, get_attr tensors, placeholders,
heterogeneous and identical devices, both schedules, all four checkpoint
modes; and stacks of identical blocks on tight memory, where the planner
merges identical units and checkpointing decides), and
  * compares partd's step_ms with the enumerated optimum (relative 1e-9),
    or partd's exit 3 with "no plan fits";
  * re-derives every figure of every stage of partd's plan from the
    contract (units, in_flight, forward/backward/recompute/comm/time,
    memory_bytes, device_memory_bytes) and checks that it fits.
On stacks too large to enumerate (up to 14 blocks, 7 devices, 9
microbatches): with identical devices the given order and device_order auto
find the same step, equal to the best fixed stage count; with mixed devices
auto is never worse. Also the fairscale correspondence of the fixed
checkpoint modes.

One point of arithmetic the contract leaves to the implementation:
memory_bytes is the contract's pf * params + N / M rounded up, computed as
N // M + ceil(pf * params + (N % M) / M) in double precision (api/ says so);
the reference computes it the same way.
"""

import itertools
import json
import math
import random
import re

import pytest

from partd_testlib import partd_bin, run_plan

N_CASES = 400
N_STACKS = 100
REL = 1e-9


# -- random requests -----------------------------------------------------------

def random_request(rng):
    nodes = []
    n_ph = rng.randint(1, 2)
    for i in range(n_ph):
        nodes.append({"name": f"x{i}", "op": "placeholder",
                      "output_bytes": rng.choice([0, 8, 64, 100])})
    attrs = []
    param_sizes = {"p_tied": 64, "p_emb": 24}
    for i in range(rng.randint(0, 2)):
        a = {"name": f"w{i}", "op": "get_attr", "output_bytes": rng.choice([16, 40, 96])}
        if rng.random() < 0.5:
            pname = rng.choice(["p_tied", "p_emb", f"pa{i}"])
            a["params"] = [{"name": pname, "bytes": param_sizes.get(pname, 48)}]
        attrs.append(a["name"])
        nodes.append(a)
    n_ops = rng.randint(2, 8)
    n_blocks = rng.randint(1, 4)
    ops = []
    for i in range(n_ops):
        block = min(n_blocks - 1, i * n_blocks // n_ops)
        node = {"name": f"op{i}", "op": rng.choice(["call_module", "call_function",
                                                     "call_method"]),
                "output_bytes": rng.choice([0, 10, 50, 300, 900, 2000]),
                "latency_ms": rng.choice([0.0, 0.5, 1.0, 2.5, 4.0]),
                "mem_latency_ms": rng.choice([0.0, 0.0, 1.5])}
        r = rng.random()
        if r < 0.75:
            sub = rng.choice(["attn", "mlp", "mlp.fc", "ln"])
            node["module"] = f"layers.{block}.{sub}" if rng.random() < 0.8 else "head"
        if rng.random() < 0.3:
            node["backward_ms"] = rng.choice([0.0, 1.0, 3.0])
        if rng.random() < 0.3:
            names = rng.sample(["p_tied", "p_emb", f"own{i}"], rng.randint(1, 2))
            node["params"] = [{"name": n, "bytes": param_sizes.get(n, 40)} for n in names]
        elif rng.random() < 0.5:
            node["param_bytes"] = rng.choice([0, 16, 60])
        # inputs: the previous op (chain), maybe a skip, maybe a placeholder
        # or get_attr
        inputs = []
        if ops:
            inputs.append(ops[-1])
            if len(ops) >= 2 and rng.random() < 0.4:
                inputs.append(rng.choice(ops[:-1]))
        if not ops or rng.random() < 0.25:
            inputs.append(f"x{rng.randrange(n_ph)}")
        if attrs and rng.random() < 0.4:
            inputs.append(rng.choice(attrs))
        node["inputs"] = list(dict.fromkeys(inputs))
        ops.append(node["name"])
        nodes.append(node)
    outs = [ops[-1]] + ([rng.choice(ops)] if rng.random() < 0.3 else [])
    nodes.append({"name": "output", "op": "output", "inputs": list(dict.fromkeys(outs))})

    # Memory around what the graph needs, so that plans are tight: some
    # infeasible, many needing checkpoints or more stages.
    need = sum(n.get("output_bytes", 0) + n.get("param_bytes", 0) for n in nodes) + 200
    n_dev = rng.randint(1, 4)
    kinds = [(rng.choice([1.0, 2.0, 0.5]), int(need * rng.choice([0.3, 0.5, 0.8, 1.5])))
             for _ in range(2)]
    devices = []
    for i in range(n_dev):
        speed, mem = kinds[rng.randrange(2)] if rng.random() < 0.6 else (
            rng.choice([1.0, 1.5, 0.75]), int(need * rng.choice([0.2, 0.4, 0.6, 1.0, 2.0])))
        devices.append({"name": f"d{i}", "memory_bytes": max(mem, 1), "speed": speed})

    training = {}
    if rng.random() < 0.7:
        training["schedule"] = rng.choice(["gpipe", "1f1b"])
    if rng.random() < 0.8:
        training["microbatches"] = rng.randint(1, 5)
    if rng.random() < 0.3:
        training["stages"] = rng.randint(1, n_dev)
    if rng.random() < 0.6:
        training["device_order"] = rng.choice(["given", "auto"])
    training["checkpoint"] = rng.choice(["never", "always", "except_last"] + ["auto"] * 4)
    if rng.random() < 0.4:
        training["unit_depth"] = rng.randint(1, 3)
    if rng.random() < 0.3:
        training["backward_factor"] = rng.choice([1.0, 1.5, 3.0])
    if rng.random() < 0.5:
        training["param_factor"] = rng.choice([1.0, 2.0, 4.0, 1.1, 0.3])
    options = {"mode": "training", "training": training}
    if rng.random() < 0.5:
        options["transfer_bytes_per_sec"] = rng.choice([1e4, 1e5, 1e6])
    return {"graph": {"name": "rand", "nodes": nodes}, "devices": devices, "options": options}


def stack_request(rng, blocks=(2, 5)):
    """A stack of identical blocks (the planner merges identical units into
    one class), with an embedding and a head, on tight memory so that
    checkpointing decides."""
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": rng.choice([0, 64])}]
    nodes.append({"name": "emb", "op": "call_module", "module": "emb", "inputs": ["x"],
                  "output_bytes": 200, "latency_ms": 0.5, "param_bytes": 100})
    size = rng.randint(1, 3)
    outs = [rng.choice([100, 300, 800]) for _ in range(size)]
    lats = [rng.choice([0.5, 1.0, 2.0]) for _ in range(size)]
    skip = rng.random() < 0.5
    prev = "emb"
    for b in range(rng.randint(*blocks)):
        first = prev
        for k in range(size):
            name = f"b{b}_{k}"
            inputs = [prev] + ([first] if skip and k == size - 1 and k > 0 else [])
            nodes.append({"name": name, "op": "call_module", "module": f"blocks.{b}.n{k}",
                          "inputs": inputs, "output_bytes": outs[k], "latency_ms": lats[k],
                          "param_bytes": 20})
            prev = name
    nodes.append({"name": "head", "op": "call_module", "module": "head", "inputs": [prev],
                  "output_bytes": 50, "latency_ms": 1.0, "param_bytes": 100})
    nodes.append({"name": "output", "op": "output", "inputs": ["head"]})
    act = sum(n.get("output_bytes", 0) for n in nodes)
    n_dev = rng.randint(1, 3)
    devices = [{"name": f"d{i}", "memory_bytes": int(act * rng.choice([0.4, 0.6, 0.8, 1.2])),
                "speed": rng.choice([1.0, 1.0, 2.0])} for i in range(n_dev)]
    training = {"checkpoint": rng.choice(["auto", "auto", "auto", "always", "except_last"]),
                "microbatches": rng.randint(1, 3), "param_factor": 1.0,
                "unit_depth": 2, "schedule": rng.choice(["gpipe", "1f1b"]),
                "device_order": rng.choice(["given", "auto"])}
    return {"graph": {"name": "stack", "nodes": nodes}, "devices": devices,
            "options": {"mode": "training", "transfer_bytes_per_sec": 1e6,
                        "training": training}}


# -- the reference, from the contract ------------------------------------------

class Ref:
    def __init__(self, req):
        self.req = req
        self.nodes = req["graph"]["nodes"]
        self.by_name = {n["name"]: n for n in self.nodes}
        self.devices = req["devices"]
        opts = req.get("options", {})
        t = opts.get("training", {})
        self.rate = opts.get("transfer_bytes_per_sec", 1e10)
        self.schedule = t.get("schedule", "1f1b")
        self.M = t.get("microbatches", len(self.devices))
        self.stages = t.get("stages", "auto")
        self.order = t.get("device_order", "given")
        self.ckpt = t.get("checkpoint", "auto")
        self.bf = t.get("backward_factor", 2.0)
        self.pf = t.get("param_factor", 4.0)
        self.ops = [n for n in self.nodes
                    if n["op"] in ("call_module", "call_function", "call_method")]
        self.readers = {n["name"]: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.get("inputs", []):
                self.readers[i].append(n["name"])
        depth = t.get("unit_depth")
        self.depth = depth if depth is not None else self.default_depth()
        self.units, self.unit_names = self.make_units(self.depth)

    # units
    @staticmethod
    def key(node, d):
        m = node.get("module")
        return "" if m is None else ".".join(m.split(".")[:d])

    def runs(self, d):
        runs = []
        for n in self.ops:
            k = self.key(n, d)
            if runs and runs[-1][0] == k:
                runs[-1][1].append(n["name"])
            else:
                runs.append((k, [n["name"]]))
        return runs

    def default_depth(self):
        deepest = max([len(n["module"].split(".")) for n in self.ops if "module" in n],
                      default=0)
        for d in range(1, deepest + 1):
            if len(self.runs(d)) >= 2 * len(self.devices):
                return d
        return max(deepest, 1)

    def make_units(self, d):
        units, names, seen = [], [], {}
        for k, members in self.runs(d):
            base = k if k != "" else members[0]
            seen[base] = seen.get(base, 0) + 1
            names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
            units.append(members)
        return units, names

    # figures
    def fwd(self, n):
        return max(n.get("latency_ms", 0.0), n.get("mem_latency_ms", 0.0))

    def bwd(self, n):
        return n["backward_ms"] if "backward_ms" in n else self.bf * self.fwd(n)

    def params(self, stage_nodes):
        named, total = {}, 0
        for name in stage_nodes:
            n = self.by_name[name]
            if "params" in n:
                for p in n["params"]:
                    named[p["name"]] = p["bytes"]
            else:
                total += n.get("param_bytes", 0)
        attrs = {i for name in stage_nodes for i in self.by_name[name].get("inputs", [])
                 if self.by_name[i]["op"] == "get_attr"}
        for a in attrs:
            n = self.by_name[a]
            if "params" in n:
                for p in n["params"]:
                    named[p["name"]] = p["bytes"]
            else:
                total += max(n.get("output_bytes", 0), n.get("param_bytes", 0))
        return total + sum(named.values())

    def k_of(self, S, p):
        return self.M if self.schedule == "gpipe" else min(self.M, S - p)

    def c_of(self):
        return {"auto": self.M, "always": self.M, "except_last": self.M - 1,
                "never": 0}[self.ckpt]

    def stage(self, unit_ids, later_nodes, dev, S, p, X):
        """Figures of the stage holding units unit_ids on device dev at
        position p of S, checkpointing the set X of unit ids (for
        always/except_last: the whole stage as one unit)."""
        M, speed = self.M, dev.get("speed", 1.0)
        members = [nm for u in unit_ids for nm in self.units[u]]
        mset = set(members)
        f = sum(self.fwd(self.by_name[nm]) / speed for nm in members)
        b = sum(self.bwd(self.by_name[nm]) / speed for nm in members)
        outside = {i for nm in members for i in self.by_name[nm].get("inputs", [])
                   if i not in mset and self.by_name[i]["op"] != "get_attr"}
        inb = sum(self.by_name[i].get("output_bytes", 0) for i in outside)
        outb = sum(self.by_name[nm].get("output_bytes", 0) for nm in members
                   if any(r in later_nodes for r in self.readers[nm]))
        comm = 1000.0 * (inb + outb) / self.rate
        params = self.params(members)
        act = sum(self.by_name[nm].get("output_bytes", 0) for nm in members)
        # checkpoint groups: units, or the whole stage
        if self.ckpt in ("always", "except_last"):
            groups = [members]
            chosen = [members]
        elif self.ckpt == "never":
            groups, chosen = [], []
        else:
            groups = [self.units[u] for u in unit_ids]
            chosen = [self.units[u] for u in X]
        kept, recompute, transient = 0, 0.0, 0
        chosen_nodes = {nm for g in chosen for nm in g}
        for nm in members:
            if nm not in chosen_nodes:
                kept += self.by_name[nm].get("output_bytes", 0)
        for g in chosen:
            gs = set(g)
            disc = 0
            for nm in g:
                recompute += self.fwd(self.by_name[nm]) / speed
                if any(r in mset and r not in gs for r in self.readers[nm]):
                    kept += self.by_name[nm].get("output_bytes", 0)
                else:
                    disc += self.by_name[nm].get("output_bytes", 0)
            transient = max(transient, disc)
        c = self.c_of()
        k = self.k_of(S, p)
        kc = k - min(k, M - c)
        N = k * inb + kc * kept + (k - kc) * act + (transient if kc > 0 and chosen else 0)
        mem = N // M + math.ceil(self.pf * params + (N % M) / M)
        rec = c / M * recompute / M if chosen else 0.0
        fig = {"forward_ms": f / M, "backward_ms": b / M, "recompute_ms": rec,
               "comm_ms": comm / M, "in_flight": k, "memory_bytes": mem,
               "device_memory_bytes": dev["memory_bytes"],
               # the extension's breakdown: inputs and activations rounded
               # down, the parameters' share the rest
               "input_memory_bytes": k * inb // M,
               "activation_memory_bytes": (N - k * inb) // M}
        fig["param_memory_bytes"] = (mem - fig["input_memory_bytes"] -
                                     fig["activation_memory_bytes"])
        assert fig["param_memory_bytes"] >= math.ceil(self.pf * params)
        fig["time_ms"] = fig["forward_ms"] + fig["backward_ms"] + rec + fig["comm_ms"]
        return fig

    def best_stage(self, unit_ids, later_nodes, dev, S, p):
        """Least time over the checkpoint sets allowed, among those that fit."""
        sets = [()]
        if self.ckpt == "auto":
            sets = [X for r in range(len(unit_ids) + 1)
                    for X in itertools.combinations(unit_ids, r)]
        best = None
        for X in sets:
            fig = self.stage(unit_ids, later_nodes, dev, S, p, X)
            if fig["memory_bytes"] <= dev["memory_bytes"]:
                if best is None or fig["time_ms"] < best["time_ms"]:
                    best = fig
        return best

    def least_memory(self, unit_ids, later_nodes, dev, S, p):
        sets = [()]
        if self.ckpt == "auto":
            sets = [X for r in range(len(unit_ids) + 1)
                    for X in itertools.combinations(unit_ids, r)]
        return min(self.stage(unit_ids, later_nodes, dev, S, p, X)["memory_bytes"]
                   for X in sets)

    def least_shortfall(self):
        """The least, over all plans, of the largest memory shortfall of a
        stage (each stage with its least-memory checkpoint set)."""
        best = None
        for S, order, ranges, later in self.plans():
            worst = max(self.least_memory(ranges[p], later[p], self.devices[order[p]], S, p) -
                        self.devices[order[p]]["memory_bytes"] for p in range(S))
            if best is None or worst < best:
                best = worst
        return best

    def plans(self):
        n_u, n_dev = len(self.units), len(self.devices)
        counts = ([self.stages] if self.stages != "auto"
                  else range(1, min(n_dev, n_u) + 1))
        for S in counts:
            if S > n_u:
                continue
            orders = ([tuple(range(S))] if self.order == "given"
                      else list(itertools.permutations(range(n_dev), S)))
            for cuts in itertools.combinations(range(1, n_u), S - 1):
                bounds = (0,) + cuts + (n_u,)
                ranges = [list(range(bounds[i], bounds[i + 1])) for i in range(S)]
                later = [set(nm for u in range(bounds[i + 1], n_u) for nm in self.units[u])
                         for i in range(S)]
                for order in orders:
                    yield S, order, ranges, later

    def optimum(self):
        n_u, n_dev = len(self.units), len(self.devices)
        counts = ([self.stages] if self.stages != "auto"
                  else range(1, min(n_dev, n_u) + 1))
        best = None
        for S in counts:
            if S > n_u:
                continue
            orders = ([tuple(range(S))] if self.order == "given"
                      else itertools.permutations(range(n_dev), S))
            orders = list(orders)
            for cuts in itertools.combinations(range(1, n_u), S - 1):
                bounds = (0,) + cuts + (n_u,)
                ranges = [list(range(bounds[i], bounds[i + 1])) for i in range(S)]
                later = [set(nm for u in range(bounds[i + 1], n_u) for nm in self.units[u])
                         for i in range(S)]
                cache = {}
                for order in orders:
                    times = []
                    for p in range(S):
                        key = (p, order[p])
                        if key not in cache:
                            cache[key] = self.best_stage(ranges[p], later[p],
                                                         self.devices[order[p]], S, p)
                        fig = cache[key]
                        if fig is None:
                            break
                        times.append(fig["time_ms"])
                    else:
                        step = sum(times) + (self.M - 1) * max(times)
                        if best is None or step < best:
                            best = step
        return best


# -- the comparison ------------------------------------------------------------

def close(a, b):
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)


def check_plan(ref, result):
    parts = result["partitions"]
    S = len(parts)
    summ = result["summary"]
    assert summ["stages"] == S
    assert summ["microbatches"] == ref.M
    assert summ["schedule"] == ref.schedule and summ["checkpoint"] == ref.ckpt
    assert summ["unit_depth"] == ref.depth
    names = ref.unit_names
    # the stages are the units, in order, whole
    flat = [u for p in parts for u in p["units"]]
    assert flat == names
    devs = [p["device"] for p in parts]
    assert len(set(devs)) == S
    dev_by_name = {d["name"]: d for d in ref.devices}
    if ref.order == "given":
        assert devs == [d["name"] for d in ref.devices[:S]]
    if ref.stages != "auto":
        assert S == ref.stages
    pos = 0
    times = []
    for p_i, part in enumerate(parts):
        ids = list(range(pos, pos + len(part["units"])))
        pos += len(part["units"])
        later = set(nm for u in range(pos, len(names)) for nm in ref.units[u])
        assert part["nodes"] == [nm for u in ids for nm in ref.units[u]]
        X = [names.index(u) for u in part["checkpointed"]]
        assert all(u in ids for u in X)
        if ref.ckpt == "never" or (ref.ckpt == "except_last" and ref.M < 2):
            assert X == []
        elif ref.ckpt in ("always", "except_last"):
            assert X == ids
        fig = ref.stage(ids, later, dev_by_name[part["device"]], S, p_i, X)
        for key in ("forward_ms", "backward_ms", "recompute_ms", "comm_ms", "time_ms"):
            assert close(part[key], fig[key]), (p_i, key, part[key], fig[key])
        for key in ("in_flight", "memory_bytes", "device_memory_bytes", "input_memory_bytes",
                    "activation_memory_bytes", "param_memory_bytes"):
            assert part[key] == fig[key], (p_i, key, part[key], fig[key])
        assert part["memory_bytes"] <= part["device_memory_bytes"]
        assert close(part["time_ms"], part["forward_ms"] + part["backward_ms"] +
                     part["recompute_ms"] + part["comm_ms"])
        times.append(fig["time_ms"])
    step = sum(times) + (ref.M - 1) * max(times)
    assert close(summ["step_ms"], step)
    assert close(summ["bottleneck_ms"], max(times))
    assert close(summ["bubble_fraction"], 1 - ref.M * sum(times) / (S * step)) or step == 0


def cases():
    rng = random.Random(20261123)
    return ([random_request(rng) for _ in range(N_CASES - N_STACKS)] +
            [stack_request(rng) for _ in range(N_STACKS)])


CASES = cases()


@pytest.mark.parametrize("index", range(N_CASES))
def test_random_case_matches_brute_force(index):
    req = CASES[index]
    ref = Ref(req)
    status, result, problem, stderr = run_plan(partd_bin(), req)
    want = ref.optimum() if not (ref.stages != "auto" and ref.stages > len(ref.units)) else "422"
    if want == "422":
        assert status == 2, stderr
        assert problem["errors"][0]["pointer"] == "/options/training/stages"
        return
    if want is None:
        assert status == 3, (stderr, result)
        assert problem["type"].endswith("infeasible")
        # the stage named is short by the least largest shortfall of any plan
        short = int(re.search(r"short by (\d+) bytes", problem["detail"]).group(1))
        assert short == ref.least_shortfall(), (problem["detail"], ref.least_shortfall())
        return
    assert status == 0, stderr
    assert close(result["summary"]["step_ms"], want), (result["summary"]["step_ms"], want)
    check_plan(ref, result)


def test_cases_cover_the_interesting_outcomes():
    """The seeded cases exercise feasible, infeasible and checkpointed plans
    in every mode (so the comparison above is not vacuous)."""
    modes = {c["options"]["training"]["checkpoint"] for c in CASES}
    assert modes == {"never", "always", "except_last", "auto"}
    assert any(c["options"]["training"].get("device_order") == "auto" for c in CASES)
    assert any(c["options"]["training"].get("schedule") == "gpipe" for c in CASES)


# -- fairscale ------------------------------------------------------------------

FAIRSCALE_CHECKPOINTED = {  # fairscale.nn.Pipe(checkpoint=...): microbatches checkpointed
    "always": lambda chunks: chunks,
    "except_last": lambda chunks: chunks - 1,
    "never": lambda chunks: 0,
}


def chain_request(mode, chunks):
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": 0}]
    prev = "x"
    for i in range(4):
        nodes.append({"name": f"l{i}", "op": "call_module", "module": f"layers.{i}",
                      "inputs": [prev], "output_bytes": 100, "latency_ms": 1.0,
                      "backward_ms": 2.0})
        prev = f"l{i}"
    nodes.append({"name": "output", "op": "output", "inputs": [prev]})
    return {"graph": {"nodes": nodes},
            "devices": [{"name": "d0", "memory_bytes": 10 ** 9}],
            "options": {"mode": "training", "transfer_bytes_per_sec": 1e18,
                        "training": {"checkpoint": mode, "microbatches": chunks,
                                     "schedule": "gpipe", "stages": 1}}}


@pytest.mark.parametrize("mode", ["always", "except_last", "never"])
@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_fairscale_checkpoint_counts(mode, chunks):
    """With fairscale's modes the recompute time is that of fairscale's
    number of checkpointed microbatches (chunks, chunks - 1, 0), each
    recomputing the whole stage's forward once."""
    status, result, _, stderr = run_plan(partd_bin(), chain_request(mode, chunks))
    assert status == 0, stderr
    part = result["partitions"][0]
    per_microbatch_forward = 4.0 / chunks
    checkpointed = FAIRSCALE_CHECKPOINTED[mode](chunks)
    assert close(part["recompute_ms"] * chunks,
                 checkpointed * per_microbatch_forward) or (
        checkpointed == 0 and part["recompute_ms"] == 0)
    # the stage is one checkpoint: listed whole when any microbatch is
    if checkpointed:
        assert part["checkpointed"] == part["units"]
    else:
        assert part["checkpointed"] == []


# -- consistency on graphs too large to enumerate -------------------------------

def larger_request(rng, identical):
    req = stack_request(rng, blocks=(6, 14))
    # more blocks and devices than the brute force takes
    n_dev = rng.randint(4, 7)
    act = sum(n.get("output_bytes", 0) for n in req["graph"]["nodes"])
    if identical:
        mem = int(act * rng.choice([0.3, 0.5, 1.0]))
        req["devices"] = [{"name": f"d{i}", "memory_bytes": mem} for i in range(n_dev)]
    else:
        req["devices"] = [{"name": f"d{i}", "memory_bytes": int(act * rng.choice([0.3, 0.6, 1.0])),
                           "speed": rng.choice([1.0, 2.0])} for i in range(n_dev)]
    t = req["options"]["training"]
    t["microbatches"] = rng.randint(1, 9)
    t["checkpoint"] = rng.choice(["auto", "auto", "never", "always", "except_last"])
    t.pop("device_order", None)
    return req


def step_of(req, **training):
    r = json.loads(json.dumps(req))
    r["options"]["training"].update(training)
    status, result, _, stderr = run_plan(partd_bin(), r)
    assert status in (0, 3), stderr
    return result["summary"]["step_ms"] if status == 0 else None


@pytest.mark.parametrize("index", range(30))
def test_given_and_auto_order_agree_on_identical_devices(index):
    """With identical devices the order cannot matter: the two searches
    (counts per device kind, and the given order's front/tail DP) must find
    the same step; with fixed stage counts too."""
    req = larger_request(random.Random(1000 + index), identical=True)
    given, auto = step_of(req, device_order="given"), step_of(req, device_order="auto")
    assert (given is None) == (auto is None)
    if given is not None:
        assert close(given, auto), (given, auto)
    per_count = [step_of(req, stages=S) for S in range(1, len(req["devices"]) + 1)
                 if S <= len(Ref(req).units)]
    feasible = [s for s in per_count if s is not None]
    assert (given is None) == (not feasible)
    if feasible:
        assert close(given, min(feasible))


@pytest.mark.parametrize("index", range(30))
def test_auto_order_is_never_worse_than_given(index):
    req = larger_request(random.Random(2000 + index), identical=False)
    given, auto = step_of(req, device_order="given"), step_of(req, device_order="auto")
    if given is not None:
        assert auto is not None and auto <= given * (1 + REL)
