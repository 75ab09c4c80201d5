#!/usr/bin/env python3
"""Predicted against measured: partd's step_ms beside a real training step.

The whole path a user takes, with its real tools:
  1. `python -m partd.exporter bench/bench_step.py:model --mode training ...`
     exports a small model (an input projection, BENCH_BLOCKS residual MLP
     blocks of width 128, a head; a batch of 64 rows) with the exporter's
     CPU timings of every node: forward, input gradient and weight gradient,
     each node timed alone. It runs on one thread pinned to one core, as
     each rank below runs;
  2. for each schedule of the issue's real runs (1F1B; Interleaved1F1B and
     InterleavedZeroBubble with two stages per rank), that request with the
     schedule set is planned by `build/partd plan` (two ranks, 4
     microbatches, no checkpointing, devices in the given order): the plan's
     split and order, and its predicted summary.step_ms;
  3. `build/partd export --format pytorch` writes each rank's actions as
     PyTorch's CSV;
  4. two processes, one per rank, each pinned to a core of its own, run the
     CSV with partd.runtime.PipelineRank over gloo on loopback (real sends
     and receives, F, B, I and W as the CSV says) on the stages of
     partd.apply.split; after BENCH_WARMUP steps, BENCH_STEPS steps are
     timed, each from a barrier to the later rank's end.
Prints the commands, then per schedule partd's predicted step_ms beside
the measured step (median, min, max) and their ratio. Beside them, c: the
unsplit model's step on one rank (every microbatch's forward and backward
in turn, measured the same way) over the sum of the exporter's node times,
and the prediction times c, which takes out what the node times miss of the
real compute and leaves the pipeline's own part of the gap. The figures
are a CPU run on a shared 2-core machine (the load average is printed), and
the step model is an approximation of it: see README.md, "Predicted and
measured step". Settings: BENCH_BLOCKS (8), BENCH_STEPS (10), BENCH_WARMUP
(2), PARTD_BIN (build/partd). Exits non-zero only when it cannot measure.

`python3 bench/bench_step.py --worker ...` is one rank (started by the
bench, not by hand).
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from torch import nn

ROOT = pathlib.Path(__file__).resolve().parents[1]
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
BATCH, WIDTH, HIDDEN, MICROBATCHES, RANKS = 64, 128, 512, 4, 2
SCHEDULES = (("1F1B", 1), ("Interleaved1F1B", 2), ("InterleavedZeroBubble", 2))


class Block(nn.Module):
    """x + W2 gelu(W1 layernorm(x)): a transformer's MLP half."""

    def __init__(self, width, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, hidden)
        self.act = nn.GELU()
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.down(self.act(self.up(self.norm(x))))


class StepModel(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.embed = nn.Linear(WIDTH, WIDTH)
        self.blocks = nn.ModuleList([Block(WIDTH, HIDDEN) for _ in range(blocks)])
        self.head = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def model():
    """The exporter's FACTORY (bench/bench_step.py:model)."""
    torch.manual_seed(0)
    return StepModel(int(os.environ.get("BENCH_BLOCKS", "8")))


def batch():
    g = torch.Generator().manual_seed(7)
    return torch.randn(BATCH, WIDTH, generator=g), torch.randn(BATCH, WIDTH, generator=g)


# -- one rank --------------------------------------------------------------------


def worker(rank, world, init_file, cases_file, out_file):
    import torch.distributed as dist
    import torch.nn.functional as F

    from partd import apply as pa
    from partd import runtime

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world)
    cases = json.loads(pathlib.Path(cases_file).read_text())
    steps, warmup = int(os.environ.get("BENCH_STEPS", "10")), int(os.environ.get("BENCH_WARMUP", "2"))
    out = {}
    for name, case in cases.items():
        m = model()
        x, y = batch()
        split = pa.split(m, case["result"], x[:1])
        pr = runtime.PipelineRank(dict(pa.stages(split)), case["csv"], rank, F.mse_loss,
                                  tied=pa.tied(case["result"], split))
        times = []
        for i in range(warmup + steps):
            m.zero_grad(set_to_none=True)
            dist.barrier()
            t0 = time.perf_counter()
            pr.step(x if 0 in pr.stages else None, y if pr.last in pr.stages else None)
            took = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
            dist.all_reduce(took, op=dist.ReduceOp.MAX)  # the step ends with the later rank
            if i >= warmup:
                times.append(took.item() * 1000.0)
        out[name] = times
    if rank == 0:
        out["unsplit"] = unsplit(steps, warmup)
    dist.barrier()
    dist.destroy_process_group()
    pathlib.Path(out_file).write_text(json.dumps(out))


def unsplit(steps, warmup):
    """The same step on one rank, the model whole: every microbatch's
    forward and backward in turn (ms per step)."""
    import torch.nn.functional as F

    m = model()
    x, y = batch()
    times = []
    for i in range(warmup + steps):
        m.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        for xm, ym in zip(torch.tensor_split(x, MICROBATCHES), torch.tensor_split(y, MICROBATCHES)):
            (F.mse_loss(m(xm), ym) / MICROBATCHES).backward()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1000.0)
    return times


# -- the bench ---------------------------------------------------------------------


def run(cmd, **kw):
    print("$ " + " ".join(str(c) for c in cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"bench_step: {cmd[0]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout


def pinned(core, cmd):
    """cmd on one core when this machine has it (taskset), else as is."""
    if len(os.sched_getaffinity(0)) > core and os.path.exists("/usr/bin/taskset"):
        return ["taskset", "-c", str(core), *cmd]
    return cmd


def export_request(tmp, env):
    req = tmp / "request.json"
    run(pinned(0, [PYTHON, "-m", "partd.exporter", f"{pathlib.Path(__file__).resolve()}:model",
                   "--input", f"{BATCH},{WIDTH}", "--devices", f"{RANKS}x1GiB",
                   "--mode", "training", "--training-schedule", "1F1B",
                   "--training-stages", str(RANKS), "--training-microbatches", str(MICROBATCHES),
                   "--training-device-order", "given", "--training-checkpoint", "never",
                   "--training-unit-depth", "2", "-o", str(req)]), env=env)
    return json.loads(req.read_text())


def readable(partd, request, tmp):
    """The request as this partd build reads it: one that does not read
    graph.batch_size yet (contract v3) plans the same graph without it."""
    probe = tmp / "probe.json"
    probe.write_text(json.dumps(request))
    proc = subprocess.run([partd, "plan", str(probe)], capture_output=True, text=True)
    if proc.returncode == 2 and '"/graph/batch_size"' in proc.stderr:
        request = json.loads(json.dumps(request))
        del request["graph"]["batch_size"]
        print("(this partd does not read graph.batch_size yet: planned without it)")
    return request


def plan_and_export(partd, request, name, v, tmp):
    req = dict(request, options={"mode": "training", "training": dict(
        request["options"]["training"], schedule=name, virtual_stages=v)})
    path, result, csv = tmp / f"{name}.request.json", tmp / f"{name}.json", tmp / f"{name}.csv"
    path.write_text(json.dumps(req))
    run([partd, "plan", str(path), "-o", str(result)])
    run([partd, "export", str(result), "--format", "pytorch", "-o", str(csv)])
    return json.loads(result.read_text()), csv.read_text()


def measure(cases, tmp, env):
    cases_file = tmp / "cases.json"
    cases_file.write_text(json.dumps(cases))
    procs = [subprocess.Popen(pinned(r, [PYTHON, __file__, "--worker", str(r), str(RANKS),
                                         str(tmp / "gloo.init"), str(cases_file),
                                         str(tmp / f"rank{r}.json")]),
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(RANKS)]
    for r, p in enumerate(procs):
        output, _ = p.communicate(timeout=3600)
        if p.returncode != 0:
            sys.exit(f"bench_step: rank {r} exited {p.returncode}:\n{output[-3000:]}")
    return json.loads((tmp / "rank0.json").read_text())


def main():
    partd = os.environ.get("PARTD_BIN") or str(ROOT / "build" / "partd")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(ROOT / "bench")]),
           "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="partd-bench-step-") as d:
        tmp = pathlib.Path(d)
        t0 = time.perf_counter()
        request = readable(partd, export_request(tmp, env), tmp)
        nodes = [n for n in request["graph"]["nodes"] if n["op"].startswith("call_")]
        fwd = sum(n["latency_ms"] for n in nodes)
        bwd = sum(n.get("backward_ms", 0) for n in nodes)
        print(f"exported {len(nodes)} operations in {time.perf_counter() - t0:.1f} s "
              f"(forward {fwd:.2f} ms, backward {bwd:.2f} ms, of it weight gradients "
              f"{sum(n.get('weight_grad_ms', 0) for n in nodes):.2f} ms, for the whole batch "
              "on one thread)")
        cases = {}
        for name, v in SCHEDULES:
            result, csv = plan_and_export(partd, request, name, v, tmp)
            cases[name] = {"result": result, "csv": csv}
        times = measure(cases, tmp, env)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    one = times["unsplit"]
    calib = statistics.median(one) / (fwd + bwd)
    print(f"the unsplit model on one rank, every microbatch in turn: median "
          f"{statistics.median(one):.2f} ms a step (min {min(one):.2f}, max {max(one):.2f}); "
          f"the exporter's node times add up to {fwd + bwd:.2f} ms: c = {calib:.2f}")
    print(f"{'schedule':<22} {'stages':>6} {'predicted ms':>13} {'measured ms':>12} "
          f"{'min':>8} {'max':>8} {'measured/predicted':>19} {'predicted x c':>14}")
    for name, v in SCHEDULES:
        s = cases[name]["result"]["summary"]
        t = times[name]
        med = statistics.median(t)
        print(f"{name:<22} {RANKS}x{v:<4} {s['step_ms']:>13.2f} {med:>12.2f} {min(t):>8.2f} "
              f"{max(t):>8.2f} {med / s['step_ms']:>19.2f} {s['step_ms'] * calib:>14.2f}")
        units = [p["units"] for p in cases[name]["result"]["partitions"]]
        print(f"  stages {units}; predicted bubble {s['bubble_fraction']:.2f}; "
              f"{len(t)} steps timed")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:7])
        sys.exit(0)
    sys.exit(main())
