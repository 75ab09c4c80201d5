"""Helpers shared by the Python tool tests (paths, the partd binary,
`partd plan` on a request dict).

PARTD_BIN names the partd binary (default: build/partd under the tree root).
Test modules import this module, never `conftest`: tests/integration has a
conftest of its own, and one pytest run collects both directories.
"""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools")
HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(ROOT, "tests", "support")
for path in (TOOLS, HERE, SUPPORT):
    if path not in sys.path:
        sys.path.insert(0, path)

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def partd_bin():
    return os.environ.get("PARTD_BIN") or os.path.join(ROOT, "build", "partd")


TINY_REQUEST = {
    "graph": {"name": "tiny", "nodes": [
        {"name": "x", "op": "placeholder", "output_bytes": 4},
        {"name": "relu", "op": "call_function", "target": "torch.relu",
         "inputs": ["x"], "output_bytes": 4},
        {"name": "output", "op": "output", "inputs": ["relu"]}]},
    "devices": [{"name": "gpu0", "memory_bytes": 1024}],
    "options": {"mode": "size_based"},
}


def run_plan(binary, request):
    """Runs `partd plan -` on a request dict.

    Returns (exit status, parsed stdout document or None, parsed stderr
    problem document or None, raw stderr)."""
    proc = subprocess.run([binary, "plan", "-"], input=json.dumps(request),
                          capture_output=True, text=True, timeout=300)
    result = problem = None
    try:
        if proc.returncode == 0:
            result = json.loads(proc.stdout)
        else:
            problem = json.loads(proc.stderr)
    except ValueError:
        pass
    return proc.returncode, result, problem, proc.stderr
