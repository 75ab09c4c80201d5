"""The schedules' tables: for every schedule and many (ranks S, stages per
rank v, microbatches M), the actions partd's result lists for each rank
are the ones training_reference.py builds from the contract's words, the
placement puts every stage on the rank the contract says, and the
conditions refuse exactly what the contract says (422 naming the schedule,
or the member that breaks it). partd plans one unit per stage here, on S
identical devices in the given order, so the schedule is all that varies.
"""

import json
import subprocess

import pytest

import training_reference as ref
from partd_testlib import partd_bin

# (S, v, M) for each schedule: v = 1 for GPipe and 1F1B, 2 for the V
# schedules, 1 to 3 for the looped ones; M around S so that warm-ups,
# rounds and conditions all change.
CASES = []
for name in ref.SCHEDULES:
    vs = [ref.fixed_v(name)] if ref.fixed_v(name) else [1, 2, 3]
    for S in range(1, 6):
        for v in vs:
            for M in sorted({1, S - 1, S, 2 * S, 2 * S + 1, 3 * S}):
                if M >= 1:
                    CASES.append((name, S, v, M))


def request(S, v, M, name):
    units = S * v
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": 8}]
    prev = "x"
    for u in range(units):
        nodes.append({"name": f"n{u}", "op": "call_module", "module": f"layers.{u}",
                      "inputs": [prev], "output_bytes": 8, "latency_ms": 1.0 + u % 3,
                      "param_bytes": 4})
        prev = f"n{u}"
    nodes.append({"name": "output", "op": "output", "inputs": [prev]})
    training = {"schedule": name, "stages": S, "microbatches": M, "unit_depth": 2,
                "checkpoint": "never"}
    if ref.fixed_v(name) is None:
        training["virtual_stages"] = v
    return {"graph": {"nodes": nodes},
            "devices": [{"name": f"d{r}", "memory_bytes": 10 ** 9} for r in range(S)],
            "options": {"mode": "training", "training": training}}


def plan_many(reqs):
    """partd plan on each request: (exit status, result or problem)."""
    out = []
    for req in reqs:
        p = subprocess.run([partd_bin(), "plan", "-"], input=json.dumps(req),
                           capture_output=True, text=True, timeout=60)
        out.append((p.returncode, json.loads(p.stdout if p.returncode == 0 else p.stderr)))
    return out


@pytest.mark.parametrize("name", ref.SCHEDULES)
def test_actions_match_the_contract(name):
    cases = [c for c in CASES if c[0] == name]
    answers = plan_many([request(S, v, M, name) for _, S, v, M in cases])
    ran = refused = 0
    for (_, S, v, M), (status, doc) in zip(cases, answers):
        if not ref.allows(name, S, v, M):
            assert status == 2, (name, S, v, M)
            assert any(e["pointer"] == "/options/training/schedule" for e in doc["errors"])
            refused += 1
            continue
        assert status == 0, (name, S, v, M, doc)
        want = [[ref.action_name(a) for a in lst] for lst in ref.actions(name, S, v, M)]
        assert doc["schedule"] == {"name": name, "virtual_stages": v, "actions": want}, \
            (name, S, v, M)
        for j, part in enumerate(doc["partitions"]):
            assert part["rank"] == ref.rank_of(name, S, j)
        ran += 1
    assert ran >= 10
    if name in ("1F1B", "DualPipeV", "Interleaved1F1B"):
        assert refused > 0


def test_the_reference_is_pytorchs_order_in_a_few_cases():
    """Spot checks of the reference itself against PyTorch's classes
    (schedules.py), orders copied by hand (tests/lib/training/
    test_training_schedule.c checks partd's C against the same)."""
    def names(name, S, v, M):
        return [" ".join(ref.action_name(a) for a in lst) for lst in ref.actions(name, S, v, M)]
    assert names("1F1B", 3, 1, 4) == ["0F0 0F1 0F2 0B0 0F3 0B1 0B2 0B3",
                                      "1F0 1F1 1B0 1F2 1B1 1F3 1B2 1B3",
                                      "2F0 2B0 2F1 2B1 2F2 2B2 2F3 2B3"]
    assert names("Interleaved1F1B", 2, 2, 4) == [
        "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3",
        "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3"]
    assert names("ZBVZeroBubble", 2, 2, 3) == [
        "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0I0 0W0 3F2 3I2 3W2 0I1 0W1 0I2 0W2",
        "1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1I1 2I2 1I2 1W1 2W2 1W2"]
    assert names("DualPipeV", 2, 2, 4) == [
        "0F0 0F1 0F2 3F0 3I0 3W0 3F1 0F3 3B1 3F2 0B0 3B2 3F3 0B1 3B3 0I2 0W2 0I3 0W3",
        "1F0 2F0 1F1 2F1 1F2 2B0 2F2 1B0 1F3 2B1 2F3 1B1 2B2 1B2 2I3 1I3 2W3 1W3"]
    assert names("InterleavedZeroBubble", 2, 2, 4)[1] == (
        "1F0 1F1 3F0 3I0 3F1 3I1 3W0 1F2 1I0 3W1 1F3 1I1 1W0 3F2 3I2 1W1 3F3 3I3 3W2 1I2 "
        "3W3 1I3 1W2 1W3")
