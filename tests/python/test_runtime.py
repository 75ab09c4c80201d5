"""partd.runtime against the unsplit model, with Debian's torch and no mocks:
the `pytorch` CSV export run rank by rank in two processes that send and
receive over gloo on loopback (1F1B; Interleaved1F1B with two stages per
rank; InterleavedZeroBubble, whose backward is split into I and W), and the
`fairscale` export through torch's Pipe with RPC. Plans come from the real
`partd plan` (training plans of each schedule), the exports from the real
`partd export`. The runs start three processes: marked slow."""

import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")

import models  # noqa: E402
from partd import exporter as pe  # noqa: E402
from partd import runtime  # noqa: E402
from partd.apply import ApplyError  # noqa: E402
from partd_testlib import HERE, PYPKG, PYTHON, run_export, run_exported  # noqa: E402

GPT = {"model": "gpt_mha", "kwargs": {"dropout": 0.0}, "input": "tokens", "vocab": 128,
       "context": 16, "batch": 8}
MLP = {"model": "mlp_seq", "input": "features", "features": 16, "outputs": 4, "batch": 8}
TIMEOUT = 600


def _plan(binary, case, devices, options, **export):
    model = getattr(models, case["model"])(**case.get("kwargs", {}))
    if case["input"] == "tokens":
        x = torch.zeros(case["batch"], case["context"], dtype=torch.long)
    else:
        x = torch.zeros(case["batch"], case["features"])
    request = pe.export_request(model, x, devices, options, **export)
    status, result, _, stderr = run_exported(binary, request)
    assert status == 0, stderr[:1000]
    return result


def _gloo_cases(binary):
    """Training plans of the GPT on two ranks, one per schedule (v = 2 for
    the interleaved ones: four stages of whole units at depth 2), each
    rank's order exported as PyTorch's CSV."""
    cases = {}
    for name, v in (("1F1B", 1), ("Interleaved1F1B", 2), ("InterleavedZeroBubble", 2)):
        training = {"mode": "training", "training": {
            "schedule": name, "stages": 2, "virtual_stages": v, "microbatches": 4,
            "device_order": "given", "checkpoint": "never", "unit_depth": 2}}
        result = _plan(binary, GPT, "2x1GiB", training, timing=False)
        assert result["schedule"]["name"] == name
        assert len(result["partitions"]) == 2 * v
        cases[name] = dict(GPT, result=result, csv=run_export(binary, result, "pytorch"))
    return cases


def _pipe_training(checkpoint, unit_depth=1):
    return {"mode": "training", "training": {"schedule": "gpipe", "stages": 2, "microbatches": 4,
                                             "unit_depth": unit_depth, "checkpoint": checkpoint}}


def _pipe_cases(binary):
    """The nn.Sequential MLP planned for GPipe, checkpointing all but the
    last microbatch and every one, exported for Pipe."""
    mlp = _plan(binary, MLP, "2x1GiB", _pipe_training("except_last"), timing_runs=1)
    always = _plan(binary, MLP, "2x1GiB", _pipe_training("always"), timing=False)
    return {name: dict(MLP, result=result, export=run_export(binary, result, "fairscale"))
            for name, result in (("mlp", mlp), ("mlp_always", always))}


@pytest.fixture(scope="module")
def runs(partd_plan_bin, tmp_path_factory):
    """Both kinds of run, once: two gloo processes and one Pipe process,
    side by side; {kind: {case: figures}} and the cases."""
    tmp = tmp_path_factory.mktemp("runtime")
    cases = {"gloo": _gloo_cases(partd_plan_bin), "pipe": _pipe_cases(partd_plan_bin)}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PYPKG, HERE]),
           "GLOO_SOCKET_IFNAME": "lo"}
    worker = os.path.join(HERE, "runtime_worker.py")
    procs = {}
    for kind in cases:
        (tmp / f"{kind}.json").write_text(json.dumps(cases[kind]))
    for rank in range(2):
        procs[("gloo", rank)] = subprocess.Popen(
            [PYTHON, worker, str(tmp / "gloo.json"), str(tmp / f"gloo-{rank}.out"), "gloo",
             str(rank), "2", str(tmp / "gloo.init")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    procs[("pipe", 0)] = subprocess.Popen(
        [PYTHON, worker, str(tmp / "pipe.json"), str(tmp / "pipe-0.out"), "pipe",
         str(tmp / "pipe.init")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    failed = []
    for key, proc in procs.items():
        try:
            output, _ = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for p in procs.values():
                p.kill()
            pytest.fail(f"{key} did not finish in {TIMEOUT} s (a schedule that deadlocks?)")
        if proc.returncode != 0:
            failed.append(f"{key} exited {proc.returncode}:\n{output[-3000:]}")
    assert not failed, "\n".join(failed)
    figures = {"gloo": [json.loads((tmp / f"gloo-{r}.out").read_text()) for r in range(2)],
               "pipe": json.loads((tmp / "pipe-0.out").read_text())}
    return figures, cases


@pytest.mark.slow
@pytest.mark.parametrize("schedule", ["1F1B", "Interleaved1F1B", "InterleavedZeroBubble"])
def test_pytorch_csv_runs_rank_by_rank_like_the_unsplit_model(runs, schedule):
    figures, cases = runs
    per_rank = [f[schedule] for f in figures["gloo"]]
    model = models.gpt_mha(**GPT["kwargs"])
    every = {n for n, _ in model.named_parameters()}
    # every parameter was compared on some rank, the tied embedding on both
    assert set().union(*(set(f["params"]) for f in per_rank)) == every
    assert all("tok.weight" in f["params"] for f in per_rank)
    for f in per_rank:
        assert f["grad_err"] < 1e-5
    assert [f.get("loss_err") for f in per_rank][1] < 1e-6  # the last stage is on rank 1
    csv = cases["gloo"][schedule]["csv"]
    if schedule == "InterleavedZeroBubble":
        assert "I" in csv and "W" in csv and "B" not in csv
    if schedule == "Interleaved1F1B":
        assert len(runtime.parse_csv(csv).stage_to_rank) == 4


@pytest.mark.slow
@pytest.mark.parametrize("case", ["mlp", "mlp_always"])
def test_fairscale_export_runs_through_pipe(runs, case):
    figures, cases = runs
    f = figures["pipe"][case]
    export = json.loads(cases["pipe"][case]["export"])
    assert f["partitions"] == len(export["balance"]) == 2
    assert f["chunks"] == export["chunks"] == 4
    assert f["checkpoint"] == export["checkpoint"]
    assert f["grad_err"] < 1e-5 and f["loss_err"] < 1e-6
    model = getattr(models, cases["pipe"][case]["model"])(**cases["pipe"][case].get("kwargs", {}))
    assert set(f["params"]) == {n for n, _ in model.named_parameters()}


def test_fairscale_export_of_tied_weights_apart_is_refused(partd_plan_bin):
    """The GPT ties its embedding to its head, which a two-stage plan puts
    on two devices: Pipe refuses a parameter shared by partitions on
    distinct devices (verify_splitting), and so does the export, naming it,
    rather than hand Pipe a model it would not run."""
    result = _plan(partd_plan_bin, GPT, "2x1GiB", _pipe_training("always", unit_depth=2),
                   timing=False)
    proc = subprocess.run([partd_plan_bin, "export", "-", "--format", "fairscale"],
                          input=json.dumps(result), capture_output=True, text=True)
    assert proc.returncode == 2
    errors = json.loads(proc.stderr)["errors"]
    tied = [t["param"] for t in result["tied_params"]]
    assert "tok.weight" in tied
    assert [e["pointer"] for e in errors] == [f"/tied_params/{i}" for i in range(len(tied))]
    assert "verify_splitting" in errors[tied.index("tok.weight")]["message"]


# -- what the runtime refuses --------------------------------------------------------


@pytest.mark.parametrize("csv,message", [
    ("0F0,0B0\n0F1,0B1\n", "stage 0 is on ranks 0 and 1"),
    ("0F0,0F0,0B0\n", "0F0 appears twice"),
    ("0B0,0F0\n", "before 0F0"),
    ("0F0,0I0\n", "needs F and B, or F, I and W"),
    ("0F0,0W0,0I0\n", "before 0I0"),
    ("0F0,0B0,0I0,0W0\n", "both B and I"),
    ("0F0,0B0,0X1\n", "not a compute action"),
    ("0F0,0B0\n1F0\n", "stage 1 microbatch 0 needs"),
])
def test_bad_schedules_are_refused(csv, message):
    with pytest.raises(runtime.ScheduleError, match=message):
        runtime.parse_csv(csv)


def test_empty_cells_are_idle_slots():
    s = runtime.parse_csv("0F0,,0F1,0B0,0B1\n,1F0,1B0,1F1,1B1\n")
    assert s.stage_to_rank == {0: 0, 1: 1} and s.n_microbatches == 2
    assert [str(a) for a in s.actions[1]] == ["1F0", "1B0", "1F1", "1B1"]


def test_a_balance_for_another_model_is_refused():
    with pytest.raises(ApplyError, match="counts 5 layers, the module has 15"):
        runtime.pipe(models.mlp_seq(), {"balance": [2, 3], "chunks": 2})
