"""Allocation failure is an error, not a crash.

`partd plan` of every example runs with the Nth allocation failing (the
LD_PRELOAD shim tests/faults/failmalloc.c, built by the Makefile as
build/tests/libfailmalloc.so), for N over the whole run: the first 50
allocations one by one, then points spread evenly up to the last. Every run
must end cleanly: exit 0 with the same result as without the failure (the
allocation was retried or not needed), or exit 1 with a one-line message on
stderr and nothing on stdout. Never a signal, never exit 2 or 3 (an invalid
request or an infeasible plan that are not), never a partial result.
"""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PARTD = os.environ.get("PARTD_BIN", str(ROOT / "build" / "partd"))
SHIM = os.environ.get("PARTD_FAILMALLOC", str(ROOT / "build" / "tests" / "libfailmalloc.so"))

# Spread points per example; the examples take about 1,000 to 20,000
# allocations and a run about 15 ms, so the whole file takes well under a
# minute.
SPREAD = 60
FIRST = 50

EXAMPLES = ["resnet50", "resnet50-size_based", "gpt2-small", "vit_b_16", "gpt2-sac"]
# The SAC solver (CBC, C++) runs in a child process (lib/solver_child.c);
# an allocation failure inside CBC aborts that child, whose C++ runtime says
# so on stderr ("terminate called ... std::bad_alloc"), and partd plan
# exits 1 with its own one-line message after it.
SOLVER_LINES = ("terminate called after throwing", "  what():")


def clean_failure(r):
    """Exit 1, nothing on stdout, and one line of partd's own on stderr
    (after the solver child's words, when it was the one that failed)."""
    lines = r.stderr.decode(errors="replace").splitlines()
    return (r.returncode == 1 and r.stdout == b"" and lines and lines[-1].startswith("partd")
            and all(line.startswith(SOLVER_LINES) for line in lines[:-1]))


def run(request, env_extra):
    env = dict(os.environ, LD_PRELOAD=SHIM, **env_extra)
    return subprocess.run([PARTD, "plan", str(request)], env=env, capture_output=True,
                          timeout=120)


def count_allocations(request, tmp_path):
    counter = tmp_path / "count"
    r = run(request, {"PARTD_FAIL_COUNT_FILE": str(counter)})
    assert r.returncode == 0, r.stderr
    return int(counter.read_text()), r.stdout


def failure_points(total):
    spread = {1 + (total - 1) * k // (SPREAD - 1) for k in range(SPREAD)}
    return sorted(spread | set(range(1, min(FIRST, total) + 1)))


def sanitizer_runtime(binary):
    """"libasan"/"libtsan" when the binary links a sanitizer runtime, which
    must come first in the process: an LD_PRELOAD shim cannot."""
    data = pathlib.Path(binary).read_bytes()
    for name in (b"libasan.so", b"libtsan.so"):
        if name in data:
            return name.decode().split(".")[0]
    return None


@pytest.fixture(scope="module")
def shim():
    runtime = sanitizer_runtime(PARTD)
    if runtime:
        pytest.skip(f"the allocation shim cannot be preloaded before {runtime}; "
                    "the plain build runs these tests")
    if not os.path.exists(SHIM):
        pytest.fail(f"{SHIM} is missing: build it with `make {os.path.relpath(SHIM, ROOT)}`")
    return SHIM


def test_shim_fails_the_allocation_it_is_told_to(shim, tmp_path):
    """The shim works: failing the first allocation of a run changes it."""
    request = ROOT / "examples" / "resnet50" / "request.json"
    total, _ = count_allocations(request, tmp_path)
    # the streaming decoder makes a few hundred allocations for a request
    # (a jansson tree took thousands): the count is counted, not guessed
    assert total > 100
    r = run(request, {"PARTD_FAIL_AT": "1"})
    assert r.returncode == 1
    assert r.stdout == b""


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_allocation_failure_is_a_clean_exit(shim, tmp_path, example):
    request = ROOT / "examples" / example / "request.json"
    total, expected = count_allocations(request, tmp_path)
    assert expected == (ROOT / "examples" / example / "result.json").read_bytes()
    bad = []
    for n in failure_points(total):
        r = run(request, {"PARTD_FAIL_AT": str(n)})
        if r.returncode == 0 and r.stdout == expected:
            continue
        if clean_failure(r):
            continue
        bad.append((n, r.returncode, r.stdout[:80], r.stderr[:300]))
    assert not bad, f"{len(bad)} of {len(failure_points(total))} failure points of {total}: {bad[:5]}"
