"""The training planner against a brute force of the whole space.

On small random graphs (skip connections, shared parameters, get_attr
tensors, placeholders, weight_grad_ms on some nodes; identical and mixed
devices; tight memory) the reference (training_reference.py, written from
the contract) tries every schedule allowed, every v, every rank count,
every device order, every split into S x v stages and every checkpoint set
of every stage, times each plan by running every rank's list, reads each
rank's memory from its order, and keeps the best by the contract's order
(step_ms, then the largest memory fraction, the schedule listed first, the
smaller v, then ranks, cuts, devices and checkpoint sets). partd must
  * find the same plan (the same step_ms, within 1e-9), say it is optimal,
    or exit 3 naming the least shortfall when nothing fits, or exit 2 with
    the member's pointer when the options cannot run on the graph;
  * report figures the contract derives again: every stage's units, rank,
    checkpointed units, forward/backward/input/weight/recompute/send ms and
    memory figures, every rank's memory and busy time, and the actions of
    the schedule it names;
  * carry everything needed to time the plan again: the step re-timed from
    the result document alone is summary.step_ms.
"""

import itertools
import json
import math
import random
import re

import pytest

import training_reference as ref
from partd_testlib import partd_bin, run_plan

N_CASES = 80
REL = 1e-9


# -- random requests ---------------------------------------------------------------------

def random_request(rng):
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": rng.choice([0, 40, 100])}]
    if rng.random() < 0.3:
        w = {"name": "w0", "op": "get_attr", "output_bytes": 30}
        if rng.random() < 0.5:
            w["params"] = [{"name": "tied", "bytes": 50}]
        nodes.append(w)
    n_units = rng.randint(2, 4)
    ops = []
    for u in range(n_units):
        for k in range(rng.randint(1, 2)):
            name = f"u{u}_{k}"
            node = {"name": name, "op": "call_module", "module": f"layers.{u}.m{k}",
                    "output_bytes": rng.choice([20, 100, 300, 800]),
                    "latency_ms": rng.choice([0.5, 1.0, 2.0, 3.0])}
            if rng.random() < 0.3:
                node["backward_ms"] = rng.choice([0.5, 2.0, 4.0])
            r = rng.random()
            if r < 0.25:
                node["params"] = [{"name": rng.choice(["tied", f"p{u}{k}"]), "bytes": 50}]
            elif r < 0.7:
                node["param_bytes"] = rng.choice([10, 60])
            if rng.random() < 0.25:
                b = node.get("backward_ms", 2.0 * node["latency_ms"])
                node["weight_grad_ms"] = rng.choice([0.0, b / 3, b])
            inputs = [ops[-1]] if ops else ["x"]
            if len(ops) >= 2 and rng.random() < 0.3:
                inputs.append(rng.choice(ops[:-1]))
            if len(nodes) > 1 and nodes[1]["op"] == "get_attr" and rng.random() < 0.3:
                inputs.append("w0")
            node["inputs"] = list(dict.fromkeys(inputs))
            ops.append(name)
            nodes.append(node)
    nodes.append({"name": "output", "op": "output", "inputs": [ops[-1]]})
    act = sum(n.get("output_bytes", 0) for n in nodes)
    n_dev = rng.randint(1, 3)
    devices = []
    for i in range(n_dev):
        devices.append({"name": f"d{i}", "speed": rng.choice([1.0, 1.0, 2.0]),
                        "memory_bytes": int(act * rng.choice([0.3, 0.5, 0.8, 1.5, 3.0])) + 300})
    if rng.random() < 0.3:  # identical devices
        devices = [dict(devices[0], name=f"d{i}") for i in range(n_dev)]
    t = {"microbatches": rng.randint(1, 4), "unit_depth": 2,
         "param_factor": rng.choice([1.0, 2.0])}
    t["schedule"] = rng.choice(["auto", "auto", "auto", rng.choice(ref.SCHEDULES),
                                rng.sample(ref.SCHEDULES, 2), "gpipe", "1f1b"])
    if rng.random() < 0.3:
        t["virtual_stages"] = rng.choice([1, 2])
    t["checkpoint"] = rng.choice(["auto", "auto", "never", "always", "except_last"])
    t["device_order"] = rng.choice(["given", "auto"])
    if rng.random() < 0.3:
        t["stages"] = rng.randint(1, n_dev)
    if rng.random() < 0.3:
        t["weight_grad_fraction"] = rng.choice([0.0, 0.3, 1.0])
    return {"graph": {"name": "rand", "nodes": nodes}, "devices": devices,
            "options": {"mode": "training",
                        "transfer_bytes_per_sec": rng.choice([1e5, 1e6, 1e10]),
                        "training": t}}


# -- the brute force ---------------------------------------------------------------------

def close(a, b):
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)


def invalid_pointer(g):
    """The pointer of the first 422 the contract asks for, or None."""
    for i, n in enumerate(g.nodes):
        if "weight_grad_ms" in n and n["weight_grad_ms"] > g.b(n):
            return f"/graph/nodes/{i}/weight_grad_ms"
    units, n_dev = len(g.units), len(g.devices)
    if g.stages != "auto" and g.stages > units:
        return "/options/training/stages"
    counts = [g.stages] if g.stages != "auto" else range(1, min(n_dev, units) + 1)
    any_runs = False
    for s in g.schedules:
        fixed = ref.fixed_v(s)
        if g.named and fixed and g.vs != "auto" and g.vs != fixed:
            return "/options/training/virtual_stages"
        vs = [fixed] if fixed else ([g.vs] if g.vs != "auto" else range(1, 9))
        runs = any(ref.allows(s, S, v, g.M) and S * v <= units for S in counts for v in vs)
        if not runs and g.named:
            return "/options/training/schedule"
        any_runs |= runs
    return None if any_runs else "/options/training/schedule"


def configurations(g):
    units, n_dev = len(g.units), len(g.devices)
    counts = [g.stages] if g.stages != "auto" else range(1, min(n_dev, units) + 1)
    for S in counts:
        for s in g.schedules:
            fixed = ref.fixed_v(s)
            vs = [fixed] if fixed else ([g.vs] if g.vs != "auto" else range(1, 9))
            for v in vs:
                if ref.allows(s, S, v, g.M) and S * v <= units:
                    orders = ([tuple(range(S))] if g.order == "given"
                              else list(itertools.permutations(range(n_dev), S)))
                    yield s, S, v, orders


def plans_of(g, s, S, v, order, cuts):
    """Every plan of one split: (key, plan) for the feasible ones, or the
    least largest shortfall when none fits."""
    V, M, c = S * v, g.M, g.c()
    lists = ref.actions(s, S, v, M)
    rk = [ref.rank_of(s, S, j) for j in range(V)]
    bounds = (0,) + cuts + (len(g.units),)
    figs, sets = [], []
    for j in range(V):
        fig = g.stage(bounds[j], bounds[j + 1])
        figs.append(fig)
        sets.append(g.checkpoint_sets(bounds[j], bounds[j + 1], fig))
    delta = [1000 * g.live(bounds[j + 1]) / M / g.rate if j + 1 < V and rk[j] != rk[j + 1]
             else 0.0 for j in range(V)]
    per_rank, short = [], []
    for r in range(S):
        mine = [j for j in range(V) if rk[j] == r]
        dev = g.devices[order[r]]
        P = g.pf * g.params([x for j in mine for x in figs[j]["members"]])
        fits, least = [], None
        for combo in itertools.product(*[range(len(sets[j])) for j in mine]):
            X = dict(zip(mine, combo))

            def held(j, m, X=X):
                D = sets[j][X[j]][2] if m < c else 0
                return figs[j]["in"] + figs[j]["act"] - D

            mem, _ = ref.memory_from_order(lists[r], held, lambda j, X=X: sets[j][X[j]][3],
                                           lambda m: m < c, M, P)
            least = mem if least is None else min(least, mem)
            if mem <= dev["memory_bytes"]:
                fits.append((X, mem))
        per_rank.append(fits)
        short.append(least - dev["memory_bytes"])
    if any(not f for f in per_rank):
        return [], max(short)
    out = []
    for pick in itertools.product(*per_rank):
        X = {}
        for x, _ in pick:
            X.update(x)

        def dur(a, X=X):
            j, k, m = a
            sp = g.devices[order[rk[j]]].get("speed", 1.0)
            R = sets[j][X[j]][1] if m < c else 0.0
            fg = figs[j]
            return {"F": fg["f"], "B": fg["b"] + R, "I": fg["b"] - fg["w"] + R,
                    "W": fg["w"]}[k] / sp / M

        end = ref.simulate(lists, V, dur, delta)
        step = max(end.values())
        memfrac = max(mem / g.devices[order[r]]["memory_bytes"]
                      for r, (_, mem) in enumerate(pick))
        ck = tuple((len(sets[j][X[j]][0]), sets[j][X[j]][0]) for j in range(V))
        key = (step, memfrac, ref.SCHEDULES.index(s), v, S, cuts, order, ck)
        out.append((key, {"schedule": s, "S": S, "v": v, "order": order, "cuts": cuts,
                          "X": [sets[j][X[j]][0] for j in range(V)]}))
    return out, None


def brute_force(g):
    plans, least_short = [], None
    for s, S, v, orders in configurations(g):
        V = S * v
        for order in orders:
            for cuts in itertools.combinations(range(1, len(g.units)), V - 1):
                found, short = plans_of(g, s, S, v, order, cuts)
                plans += found
                if short is not None:
                    least_short = short if least_short is None else min(least_short, short)
    if not plans:
        return None, least_short
    best_step = min(k[0] for k, _ in plans)
    near = [(k, p) for k, p in plans if k[0] <= best_step * (1 + REL) + 1e-12]
    best_frac = min(k[1] for k, _ in near)
    near = [(k, p) for k, p in near if k[1] <= best_frac * (1 + REL) + 1e-15]
    return min(near, key=lambda kp: kp[0][2:]), None


# -- the result, checked -----------------------------------------------------------------

def retime(result):
    """The step from the result document alone."""
    parts = result["partitions"]
    summ = result["summary"]
    M = summ["microbatches"]
    c = {"auto": M, "always": M, "except_last": M - 1, "never": 0}[summ["checkpoint"]]
    lists = [[(int(m.group(1)), m.group(2), int(m.group(3)))
              for m in (re.fullmatch(r"(\d+)([FBIW])(\d+)", a) for a in row)]
             for row in result["schedule"]["actions"]]

    def dur(a):
        j, k, m = a
        p = parts[j]
        rec = p["recompute_ms"] if p["checkpointed"] and m < c else 0.0
        return {"F": p["forward_ms"], "B": p["backward_ms"] + rec,
                "I": p["input_grad_ms"] + rec, "W": p["weight_grad_ms"]}[k]

    end = ref.simulate(lists, len(parts), dur, [p["send_ms"] for p in parts])
    busy = [sum(dur(a) for a in row) for row in lists]
    return max(end.values()), busy


def check_plan(g, result, want):
    parts, summ = result["partitions"], result["summary"]
    S, v = want["S"], want["v"]
    V, M, c = S * v, g.M, g.c()
    assert summ["schedule"] == want["schedule"]
    assert (summ["stages"], summ["virtual_stages"], summ["microbatches"]) == (S, v, M)
    assert summ["optimal"] is True and summ["gap"] == 0
    assert summ["lower_bound_ms"] == summ["step_ms"]
    assert summ["unit_depth"] == g.depth and summ["checkpoint"] == g.ckpt
    assert [u for p in parts for u in p["units"]] == g.unit_names
    bounds = (0,) + want["cuts"] + (len(g.units),)
    assert [len(p["units"]) for p in parts] == [bounds[j + 1] - bounds[j] for j in range(V)]
    names = [d["name"] for d in g.devices]
    assert [rk["device"] for rk in result["ranks"]] == [names[d] for d in want["order"]]
    lists = ref.actions(want["schedule"], S, v, M)
    assert result["schedule"] == {"name": want["schedule"], "virtual_stages": v,
                                  "actions": [[ref.action_name(a) for a in l] for l in lists]}
    rk = [ref.rank_of(want["schedule"], S, j) for j in range(V)]
    figs = []
    for j, p in enumerate(parts):
        fig = g.stage(bounds[j], bounds[j + 1])
        figs.append(fig)
        dev = g.devices[want["order"][rk[j]]]
        sp = dev.get("speed", 1.0)
        assert p["rank"] == rk[j] and p["device"] == dev["name"]
        X = want["X"][j]
        ck = [g.unit_names[u] for u in X] if c > 0 else []
        assert p["checkpointed"] == ck, (j, p["checkpointed"], ck)
        R = sum(fig["uf"][u - bounds[j]] for u in X) if g.ckpt == "auto" else fig["f"]
        D = (sum(fig["d"][u - bounds[j]] for u in X) if g.ckpt == "auto"
             else 0 if g.ckpt == "never" else fig["act"])
        expect = {"forward_ms": fig["f"] / sp / M, "backward_ms": fig["b"] / sp / M,
                  "input_grad_ms": (fig["b"] - fig["w"]) / sp / M,
                  "weight_grad_ms": fig["w"] / sp / M,
                  "recompute_ms": R / sp / M if ck else 0.0,
                  "send_ms": (1000 * g.live(bounds[j + 1]) / M / g.rate
                              if j + 1 < V and rk[j] != rk[j + 1] else 0.0)}
        expect["time_ms"] = expect["forward_ms"] + expect["backward_ms"] + expect["recompute_ms"]
        for k, val in expect.items():
            assert close(p[k], val), (j, k, p[k], val)
        assert p["param_memory_bytes"] == math.ceil(g.pf * fig["params"])
        assert p["input_memory_bytes"] == fig["in"] // M
        assert p["activation_memory_bytes"] == (fig["act"] - D) // M
        assert p["param_bytes"] == fig["params"]
        assert p["nodes"] == fig["members"]
    for r, rank in enumerate(result["ranks"]):
        mine = [j for j in range(V) if rk[j] == r]
        assert rank["rank"] == r and rank["stages"] == mine
        P = g.pf * g.params([x for j in mine for x in figs[j]["members"]])

        def held(j, m):
            X = want["X"][j]
            D = 0
            if m < c:
                D = (sum(figs[j]["d"][u - bounds[j]] for u in X) if g.ckpt == "auto"
                     else figs[j]["act"])
            return figs[j]["in"] + figs[j]["act"] - D

        def trans(j):
            X = want["X"][j]
            if g.ckpt == "auto":
                return max([figs[j]["d"][u - bounds[j]] for u in X], default=0)
            return figs[j]["act"] if g.ckpt != "never" else 0

        mem, own = ref.memory_from_order(lists[r], held, trans, lambda m: m < c, M, P)
        assert rank["memory_bytes"] == mem <= rank["device_memory_bytes"]
        for j in mine:
            assert parts[j]["memory_bytes"] == ref.whole_bytes(
                own.get(j, 0), g.pf * figs[j]["params"], M)
    step, busy = retime(result)
    assert close(step, summ["step_ms"])
    for rank, b in zip(result["ranks"], busy):
        assert close(rank["busy_ms"], b)
    assert close(summ["bottleneck_ms"], max(busy))
    assert close(summ["bubble_fraction"], 1 - sum(busy) / (S * summ["step_ms"]))


CASES = [random_request(random.Random(7000 + i)) for i in range(N_CASES)]


@pytest.mark.parametrize("index", range(N_CASES))
def test_random_case_matches_brute_force(index):
    req = CASES[index]
    g = ref.Graph(req)
    status, result, problem, stderr = run_plan(partd_bin(), req)
    pointer = invalid_pointer(g)
    if pointer:
        assert status == 2, stderr
        assert pointer in [e["pointer"] for e in problem["errors"]], problem
        return
    best, least_short = brute_force(g)
    if best is None:
        assert status == 3, (stderr, result and result["summary"])
        # the detail says it for people (MiB, GiB), the member exactly
        assert problem["short_bytes"] == least_short, (problem, least_short)
        assert problem["short_bytes"] == problem["memory_bytes"] - problem["device_memory_bytes"]
        return
    assert status == 0, stderr
    key, want = best
    assert close(result["summary"]["step_ms"], key[0]), (result["summary"], key, want)
    check_plan(g, result, want)


def test_cases_cover_the_interesting_outcomes():
    """The seeded cases reach every outcome and every schedule, so the
    comparison above is not vacuous."""
    outcomes, schedules = set(), set()
    for req in CASES:
        g = ref.Graph(req)
        if invalid_pointer(g):
            outcomes.add("422")
            continue
        best, _ = brute_force(g)
        if best is None:
            outcomes.add("infeasible")
            continue
        outcomes.add("plan")
        schedules.add(best[1]["schedule"])
        if any(best[1]["X"]) and g.ckpt == "auto":
            outcomes.add("checkpointed")
        if best[1]["S"] > 1:
            outcomes.add("pipelined")
    assert outcomes == {"422", "infeasible", "plan", "checkpointed", "pipelined"}, outcomes
    assert len(schedules) >= 4, schedules
