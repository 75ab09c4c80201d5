#!/usr/bin/env python3
"""Times the exporter on a 6-block transformer of width 256 (GPT-2-shaped,
tests/python/models.py: 4 heads, 1000-token vocabulary, 2 x 128 tokens): the
whole command, from `import torch` to the written request, for a training
request (forward, input- and weight-gradient per node), a pipeline request
(forwards only) and SAC module statistics. Prints wall-clock and CPU seconds
of each (CPU time counts every thread) and the machine's load, since on a
shared machine the wall clock says more about the neighbours than about the
exporter.

    /usr/bin/python3 bench/bench_export.py [--runs N] [--exporter CMD]

--exporter: the command to time instead of `python3 -m partd.exporter`, e.g.
an older exporter for a before/after comparison:
    git show efe0c17:tools/partd_export.py > /tmp/old_export.py
    bench/bench_export.py --exporter "/usr/bin/python3 /tmp/old_export.py"
"""

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "tests", "python", "models.py") + ":gpt2"
KWARGS = {"vocab": 1000, "positions": 128, "width": 256, "layers": 6, "heads": 4}
CASES = [("training", ["--mode", "training"]),
         ("pipeline", ["--mode", "pipeline"]),
         ("module-info", ["--module-info"])]


def run_once(cmd, extra, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(cmd + [MODEL, "--kwargs", json.dumps(KWARGS), "--input", "2,128:int64",
                                 "--devices", "2x8GiB", *extra, "-o", out],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"exporter failed: {proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--exporter", default=f"{sys.executable} -m partd.exporter")
    args = p.parse_args()
    cmd = shlex.split(args.exporter)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "req.json")
        for name, extra in CASES:
            for _ in range(args.runs):
                load = os.getloadavg()[0]
                wall, cpu = run_once(cmd, extra, out)
                print(f"export {name:12s} {wall:6.1f} s wall {cpu:6.1f} s cpu "
                      f"(load {load:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
