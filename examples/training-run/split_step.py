#!/usr/bin/env python3
"""From plan to training run, in one process: export ResNet-18, plan a
training step over three devices with `partd plan`, split the model into
the plan's stages, checkpoint the units the plan checkpoints, and take
optimizer steps on the split model, checking it against the unsplit one.

    PYTHONPATH=python /usr/bin/python3 examples/training-run/split_step.py [PARTD_BIN]
"""

import copy
import json
import subprocess
import sys

import torch
import torchvision

from partd import apply, exporter


def main(partd="build/partd"):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
    request = exporter.export_request(
        model, x, "3x512MiB",
        {"mode": "training", "training": {"stages": 3, "microbatches": 4, "checkpoint": "always"}},
        timing_runs=1)
    plan = subprocess.run([partd, "plan", "-"], input=json.dumps(request), text=True,
                          capture_output=True)
    if plan.returncode != 0:
        sys.exit(f"partd plan failed ({plan.returncode}): {plan.stderr.strip()[:500]}")
    result = json.loads(plan.stdout)

    reference = copy.deepcopy(model)
    split = apply.split(model, result, x)           # stage_0, stage_1, stage_2
    apply.checkpoint(split, result)                 # the checkpointed units recompute
    for k, stage in apply.stages(split):
        part = result["partitions"][k]
        print(f"stage_{k} on {part['device']}: units {', '.join(part['units'])}; "
              f"checkpointed {len(part['checkpointed'])}")
    print("tied:", apply.tied(result, split) or "none")

    for name, net in (("split", split), ("model", reference)):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        net.train()
        losses = []
        for _ in range(2):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        print(f"{name}: losses {losses[0]:.6f} {losses[1]:.6f}")
        if name == "split":
            split_losses = losses
    if any(abs(a - b) > 1e-5 for a, b in zip(split_losses, losses)):
        sys.exit("the split model trains differently from the model")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
