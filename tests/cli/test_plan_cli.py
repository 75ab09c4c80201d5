"""`partd plan` and `partd version` as a user runs them."""
import json
import os
import subprocess

import pytest

PARTD = os.environ.get("PARTD_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build", "partd"))

REQUEST = {
    "graph": {"name": "chain", "nodes": [
        {"name": "x", "op": "placeholder", "output_bytes": 10},
        {"name": "a", "op": "call_module", "inputs": ["x"], "output_bytes": 10, "param_bytes": 30},
        {"name": "b", "op": "call_module", "inputs": ["a"], "output_bytes": 10, "param_bytes": 50},
        {"name": "c", "op": "call_function", "inputs": ["b"], "output_bytes": 10},
        {"name": "d", "op": "call_function", "inputs": ["c"], "output_bytes": 10},
        {"name": "out", "op": "output", "inputs": ["d"]}]},
    "devices": [{"name": "g0", "memory_bytes": 100}, {"name": "g1", "memory_bytes": 80}],
    "options": {"mode": "size_based"},
}


def run(args, stdin=None):
    return subprocess.run([PARTD] + args, input=stdin, capture_output=True)


@pytest.fixture
def request_file(tmp_path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    return path


def test_plan_file_to_stdout(request_file):
    r = run(["plan", str(request_file)])
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["mode"] == "size_based"
    assert [p["nodes"] for p in result["partitions"]] == [["a"], ["b", "c"], ["d"]]
    assert r.stderr == b""


def test_plan_stdin_to_output_file(tmp_path):
    out = tmp_path / "result.json"
    r = run(["plan", "-", "-o", str(out)], stdin=json.dumps(REQUEST).encode())
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""
    assert json.loads(out.read_text())["summary"]["partitions"] == 3


def test_plan_without_argument_reads_stdin():
    r = run(["plan"], stdin=json.dumps(REQUEST).encode())
    assert r.returncode == 0
    assert json.loads(r.stdout)["summary"]["partitions"] == 3


def test_same_request_gives_identical_bytes(request_file):
    assert run(["plan", str(request_file)]).stdout == run(["plan", str(request_file)]).stdout


def test_invalid_request_exits_2_with_problem_on_stderr(tmp_path):
    bad = dict(REQUEST, devices=[])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    r = run(["plan", str(path)])
    assert r.returncode == 2
    assert r.stdout == b""
    problem = json.loads(r.stderr)
    assert problem["status"] == 422
    assert {"pointer": "/devices", "message": "at least one device is required"} in problem["errors"]


def test_malformed_json_exits_2():
    r = run(["plan"], stdin=b"{not json")
    assert r.returncode == 2
    assert json.loads(r.stderr)["status"] == 400


def test_infeasible_exits_3(tmp_path):
    tight = dict(REQUEST, devices=[{"name": "g0", "memory_bytes": 60}, {"name": "g1", "memory_bytes": 60}])
    path = tmp_path / "tight.json"
    path.write_text(json.dumps(tight))
    r = run(["plan", str(path)])
    assert r.returncode == 3
    problem = json.loads(r.stderr)
    assert "Devices have no enough memory" in problem["detail"]


def test_missing_file_exits_1(tmp_path):
    r = run(["plan", str(tmp_path / "nope.json")])
    assert r.returncode == 1
    assert b"cannot read" in r.stderr


def test_output_to_unwritable_place_exits_1(request_file, tmp_path):
    r = run(["plan", str(request_file), "-o", str(tmp_path / "no" / "such" / "dir.json")])
    assert r.returncode == 1
    assert b"cannot write" in r.stderr


def test_version():
    r = run(["version"])
    assert r.returncode == 0
    assert r.stdout.startswith(b"partd ")
    assert b"partd-planner/" in r.stdout


def test_unknown_command():
    r = run(["frobnicate"])
    assert r.returncode == 1
    assert b"unknown command" in r.stderr


def test_readme_requests_plan():
    """Every JSON request in README.md is valid and plans."""
    import re
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    requests = [b for b in re.findall(r"```json\n(.*?)```", readme, re.S) if '"devices"' in b]
    assert requests
    for text in requests:
        r = run(["plan"], stdin=text.encode())
        assert r.returncode == 0, r.stderr


# -- -o never replaces what is not a regular file -------------------------------

def test_output_into_a_fifo_writes_into_it_and_keeps_it(request_file, tmp_path):
    import stat
    import threading
    fifo = tmp_path / "result.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    r = run(["plan", str(request_file), "-o", str(fifo)])
    reader.join(timeout=60)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO, not a regular file
    assert json.loads(got[0])["mode"] == "size_based"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["request.json", "result.fifo"]


def test_output_into_dev_null_leaves_the_device(request_file):
    import stat
    before = os.stat("/dev/null")
    r = run(["plan", str(request_file), "-o", "/dev/null"])
    assert r.returncode == 0, r.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_output_through_a_symlink_replaces_its_target(request_file, tmp_path):
    target = tmp_path / "target.json"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    r = run(["plan", str(request_file), "-o", str(link)])
    assert r.returncode == 0, r.stderr
    assert link.is_symlink()
    assert json.loads(target.read_text())["mode"] == "size_based"
    assert (target.stat().st_mode & 0o777) == 0o640  # the file keeps its mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "request.json",
                                                          "target.json"]


def test_output_that_cannot_be_written_is_exit_1_and_leaves_nothing(request_file, tmp_path):
    r = run(["plan", str(request_file), "-o", str(tmp_path / "missing-dir" / "out.json")])
    assert r.returncode == 1
    assert b"cannot write" in r.stderr
    r = run(["plan", str(request_file), "-o", str(tmp_path)])  # a directory
    assert r.returncode == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["request.json"]


GPT2_SAC = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "gpt2-sac", "request.json")


def plan_gpt2_sac(tmp_path, budget, **sac):
    request = json.load(open(GPT2_SAC))
    request["options"]["sac"].update(memory_budget_bytes=budget, **sac)
    path = tmp_path / f"gpt2-sac-{budget}.json"
    path.write_text(json.dumps(request))
    return run(["plan", str(path)])


@pytest.mark.parametrize("sac", [{}, {"frontier_points": 4}])
def test_sac_budget_below_the_least_peak_exits_3(tmp_path, sac):
    r = plan_gpt2_sac(tmp_path, 1000, **sac)
    assert r.returncode == 3, r.stderr
    assert r.stdout == b""
    problem = json.loads(r.stderr)
    assert problem["type"] == "urn:partd:problem:infeasible"
    assert problem["status"] == 422
    assert problem["budget_bytes"] == 1000
    least = problem["min_peak_memory_bytes"]
    assert 1000 < least < problem["baseline_peak_memory_bytes"]
    assert problem["errors"][0]["pointer"] == "/options/sac/memory_budget_bytes"

    # the least peak is the boundary: one byte less fails, the least peak plans
    below = plan_gpt2_sac(tmp_path, least - 1, **sac)
    assert below.returncode == 3
    assert json.loads(below.stderr)["min_peak_memory_bytes"] == least
    at = plan_gpt2_sac(tmp_path, least, **sac)
    assert at.returncode == 0, at.stderr
    result = json.loads(at.stdout)["sac"]
    assert result["status"] in ("optimal", "feasible")
    assert result["peak_memory_bytes"] <= least


def test_plan_summary_detail_leaves_out_the_node_lists(tmp_path):
    """options.result.detail "summary": written to a file and to stdout, the
    same document as the full one without nodes, inputs, outputs and tensors."""
    devices = [{"name": "g0", "memory_bytes": 1000}, {"name": "g1", "memory_bytes": 1000}]
    full_request = dict(REQUEST, devices=devices, options={"mode": "pipeline"})
    summary_request = dict(full_request, options={"mode": "pipeline",
                                                  "result": {"detail": "summary"}})
    full = run(["plan", "-"], stdin=json.dumps(full_request).encode())
    assert full.returncode == 0, full.stderr
    out = tmp_path / "summary.json"
    r = run(["plan", "-", "-o", str(out)], stdin=json.dumps(summary_request).encode())
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]  # no temp left
    summary = json.loads(out.read_bytes())
    assert out.read_bytes() == run(["plan", "-"], stdin=json.dumps(summary_request).encode()).stdout
    assert out.read_bytes().endswith(b"}\n")
    expected = json.loads(full.stdout)
    for part in expected["partitions"]:
        for k in ("nodes", "inputs", "outputs"):
            del part[k]
    for boundary in expected["boundaries"]:
        del boundary["tensors"]
    assert summary == expected
    assert len(summary["partitions"]) == 2


def test_plan_result_detail_is_validated():
    bad = dict(REQUEST, options={"result": {"detail": "brief", "nodes": True}})
    r = run(["plan", "-"], stdin=json.dumps(bad).encode())
    assert r.returncode == 2
    problem = json.loads(r.stderr)
    pointers = {e["pointer"] for e in problem["errors"]}
    assert pointers == {"/options/result/detail", "/options/result/nodes"}


def test_output_into_a_full_device_exits_1_with_the_reason(request_file):
    """The result is streamed into the output: a write that fails (ENOSPC on
    /dev/full) is exit 1 with the reason, never a success."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    r = run(["plan", str(request_file), "-o", "/dev/full"])
    assert r.returncode == 1
    assert b"cannot write /dev/full" in r.stderr and b"No space left" in r.stderr


def test_plan_loads_neither_server_nor_solver(request_file):
    """The HTTP server, the PostgreSQL client, libsystemd and the MILP
    solver are loaded when used (partd/dynlib.h), so `partd plan` on a
    plan without a solve starts without them and their dependencies."""
    r = subprocess.run([PARTD, "plan", str(request_file)], capture_output=True,
                       env=dict(os.environ, LD_DEBUG="files"))
    assert r.returncode == 0, r.stderr
    loaded = {line.split("file=")[1].split()[0] for line in r.stderr.decode().splitlines()
              if "file=" in line}
    assert any(name.startswith("libjansson") for name in loaded), loaded
    for lazy in ("libmicrohttpd", "libpq", "libsystemd", "libCbc"):
        assert not any(name.startswith(lazy) for name in loaded), (lazy, sorted(loaded))
