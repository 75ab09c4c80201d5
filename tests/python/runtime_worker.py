#!/usr/bin/env python3
"""One process of tests/python/test_runtime.py (run by it, not by pytest).

    runtime_worker.py CASES.json OUT.json gloo RANK WORLD INIT_FILE
    runtime_worker.py CASES.json OUT.json pipe INIT_FILE

gloo: for every case of CASES.json (model, plan, pytorch CSV, batch), this
rank builds the model, splits it by the plan, runs its row of the CSV with
partd.runtime.PipelineRank over gloo on loopback, and compares the loss (on
the last stage's rank) and the gradients of every parameter its stages hold
with one step of the unsplit model on the same batch.
pipe: every case (model, fairscale export) through torch's Pipe with RPC
initialised here, compared the same way.
OUT.json gets, per case, the largest differences and what was compared.
"""

import copy
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

import models
from partd import apply as pa
from partd import runtime


def build(case):
    return getattr(models, case["model"])(**case.get("kwargs", {}))


def batch(case):
    g = torch.Generator().manual_seed(7)
    if case["input"] == "tokens":
        x = torch.randint(0, case["vocab"], (case["batch"], case["context"]), generator=g)
        y = torch.randint(0, case["vocab"], (case["batch"], case["context"]), generator=g)
        return x, y
    x = torch.randn(case["batch"], case["features"], generator=g)
    return x, torch.randn(case["batch"], case["outputs"], generator=g)


def loss_fn(case):
    if case["input"] == "tokens":
        return lambda out, y: F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return F.mse_loss


def reference(case, model, x, y, microbatches):
    """Loss and gradients of the unsplit model: the mean of the
    microbatches' losses, as the pipeline defines a step's loss."""
    model = copy.deepcopy(model)
    fn = loss_fn(case)
    losses = [fn(model(xm), ym) for xm, ym in zip(torch.tensor_split(x, microbatches),
                                                   torch.tensor_split(y, microbatches))]
    loss = torch.stack(losses).mean()
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()}


def compare(model, modules, loss, ref_loss, ref_grads):
    names = {id(p): n for n, p in model.named_parameters()}
    checked, worst = set(), 0.0
    for module in modules:
        for p in module.parameters():
            name = names[id(p)]
            if p.grad is None:
                raise AssertionError(f"{name}: no gradient")
            worst = max(worst, (p.grad - ref_grads[name]).abs().max().item())
            checked.add(name)
    out = {"grad_err": worst, "params": sorted(checked)}
    if loss is not None:
        out["loss_err"] = abs(loss.item() - ref_loss.item())
    return out


def run_gloo(cases, rank, world, init_file):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world)
    out = {}
    for name, case in cases.items():
        model = build(case)
        x, y = batch(case)
        schedule = runtime.parse_csv(case["csv"])
        ref_loss, ref_grads = reference(case, model, x, y, schedule.n_microbatches)
        split = pa.split(model, case["result"], x[:1])
        stages = dict(pa.stages(split))
        rank_of = runtime.PipelineRank(stages, schedule, rank, loss_fn(case),
                                       tied=pa.tied(case["result"], split))
        model.zero_grad(set_to_none=True)
        loss = rank_of.step(x if 0 in rank_of.stages else None,
                            y if rank_of.last in rank_of.stages else None)
        out[name] = compare(model, rank_of.stages.values(), loss, ref_loss, ref_grads)
        dist.barrier()
    dist.destroy_process_group()
    return out


def run_pipe(cases, init_file):
    from torch.distributed import rpc

    options = rpc.TensorPipeRpcBackendOptions(init_method=f"file://{init_file}")
    rpc.init_rpc("worker", rank=0, world_size=1, rpc_backend_options=options)
    out = {}
    try:
        for name, case in cases.items():
            model = build(case)
            x, y = batch(case)
            export = json.loads(case["export"])
            # the mean over the whole batch is the mean over equal microbatches
            ref_loss, ref_grads = reference(case, model, x, y, 1)
            layers = pa.layers(model, case["result"], x[:1])
            pipe = runtime.pipe(layers, export)
            loss = loss_fn(case)(pipe(x).local_value(), y)
            loss.backward()
            out[name] = compare(model, [model], loss, ref_loss, ref_grads)
            out[name]["partitions"] = len(pipe.partitions)
            out[name]["checkpoint"] = pipe.checkpoint
            out[name]["chunks"] = pipe.chunks
    finally:
        rpc.shutdown()
    return out


def main(argv):
    cases_file, out_file, mode, *rest = argv
    with open(cases_file) as f:
        cases = json.load(f)
    torch.set_num_threads(1)  # two processes on a shared machine
    if mode == "gloo":
        rank, world, init_file = int(rest[0]), int(rest[1]), rest[2]
        out = run_gloo(cases, rank, world, init_file)
    else:
        out = run_pipe(cases, rest[0])
    with open(out_file, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    sys.exit(main(sys.argv[1:]))
