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
PYPKG = os.path.join(ROOT, "python")
HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(ROOT, "tests", "support")
for path in (PYPKG, HERE, SUPPORT):
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


# Members of contract v3 the exporter writes (graph.batch_size, a node's
# weight_grad_ms). A partd build that does not read them yet answers 422
# "unknown member"; run_exported() plans the exporter's requests without
# them on such a build, so the Python side is tested before and after the C
# side takes them. Remove once every build reads v3.
V3_GRAPH_MEMBERS = ("batch_size",)
V3_NODE_MEMBERS = ("weight_grad_ms",)
_READS_V3 = {}


def reads_v3(binary):
    """Whether `binary` accepts graph.batch_size and weight_grad_ms."""
    if binary not in _READS_V3:
        probe = json.loads(json.dumps(TINY_REQUEST))
        probe["graph"]["batch_size"] = 1
        probe["graph"]["nodes"][1].update(backward_ms=0.0, weight_grad_ms=0.0)
        _READS_V3[binary] = run_plan(binary, probe)[0] == 0
    return _READS_V3[binary]


def for_binary(binary, request):
    """`request` as `binary` can read it (see V3_GRAPH_MEMBERS)."""
    if reads_v3(binary):
        return request
    request = json.loads(json.dumps(request))
    graph = request["graph"]
    for key in V3_GRAPH_MEMBERS:
        graph.pop(key, None)
    for node in graph["nodes"]:
        for key in V3_NODE_MEMBERS:
            node.pop(key, None)
    return request


def run_exported(binary, request):
    """run_plan() of a request the exporter made."""
    return run_plan(binary, for_binary(binary, request))


def run_export(binary, result, fmt, *args):
    """`partd export - --format fmt` of a result dict: the export's text
    (an AssertionError with the problem when partd refuses it)."""
    proc = subprocess.run([binary, "export", "-", "--format", fmt, *args],
                          input=json.dumps(result), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"partd export --format {fmt}: {proc.stderr[:2000]}"
    return proc.stdout
